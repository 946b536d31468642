/* SPDX-License-Identifier: MIT */
/*
 * mm-expand — router-side multimodal prompt expansion, offline.
 *
 * Reads NDJSON request records (token ids, images, videos, model family;
 * see kvpipe-records(5)) and writes one record per request: exact or
 * fallback with a reason code, per-image token counts, dims, mm hashes and
 * pad values, per-video grids and counts, the routing token ids Dynamo's KV
 * router would hash, and the block and sequence hashes. With --encode it is a
 * tokenizer instead:
 * {"text": ...} in, token ids out.
 *
 * Fails on: malformed records (FILE:LINE message, exit 1, -k to go on),
 * an unreadable input, vocabulary or special-token file, or an unwritable
 * output (exit 2). Problems with an image (missing file, corrupt header,
 * invalid base64, over the pixel limit) are per-record fallbacks.
 */
#include <argp.h>
#include <stdlib.h>
#include <string.h>

#include "common/diag.h"
#include "common/jsonw.h"
#include "common/num.h"
#include "common/blockhash.h"
#include "fe/cli.h"
#include "fe/err.h"
#include "kvpipe.h"
#include "mm/image.h"
#include "mm/mm.h"
#include "mm/mm_io.h"
#include "mm/tokenizer.h"
#include "mm/video.h"

enum {
	OPT_BLOCK_SIZE = 0x100,
	OPT_CHAIN_SEED,
	OPT_TOKENIZER,
	OPT_PATTERN,
	OPT_SPECIALS,
	OPT_POLICY,
	OPT_MAX_PIXELS,
	OPT_MAX_BYTES,
	OPT_ENCODE,
	OPT_VIDEO_RESIZE,
	OPT_MAX_VIDEO_BYTES,
};

struct opts {
	struct kvp_cli cli;
	struct kvp_mm_opts mm;
	const char *tokenizer;
	const char *pattern;
	const char *specials;
	int encode;
	char **files;
	int nfiles;
};

static const struct argp_option options[] = {
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "KV block size for records without block_size (default 16)", 0},
    {"kv-block-size", 0, NULL, OPTION_ALIAS, NULL, 0},
    {"chain-seed", OPT_CHAIN_SEED, "S", 0,
     "seed of the sequence-hash chain (default 0; older Dynamo: 1337)", 0},
    {"tokenizer", OPT_TOKENIZER, "SPEC", 0,
     "dims tokenizer: bytes:BASE (default bytes:1000) or tiktoken:PATH", 0},
    {"dims-tokenizer", 0, NULL, OPTION_ALIAS, NULL, 0},
    {"pattern", OPT_PATTERN, "P", 0,
     "split pattern: kimi (default), cl100k, o200k, qwen or a PCRE2 regex", 0},
    {"special-tokens", OPT_SPECIALS, "FILE", 0,
     "special-token table: kimi (default), none, or a JSON file", 0},
    {"policy", OPT_POLICY, "P", 0,
     "dims policy for records without dims_policy: encoded (default) or "
     "exif_transposed",
     0},
    {"max-image-pixels", OPT_MAX_PIXELS, "N", 0,
     "refuse images with more pixels, from the header (default 178956970; "
     "0: no limit)",
     0},
    {"max-image-bytes", OPT_MAX_BYTES, "N", 0,
     "largest image file or data: payload read (default 67108864)", 0},
    {"video-resize", OPT_VIDEO_RESIZE, "RULE", 0,
     "video budget rule for records without video_resize: round-half-even "
     "(default) or legacy-ceil",
     0},
    {"max-video-bytes", OPT_MAX_VIDEO_BYTES, "N", 0,
     "largest video file or data: payload read (default 1073741824)", 0},
    {"encode", OPT_ENCODE, NULL, 0,
     "tokenizer mode: read {\"text\": ...} records, write token ids", 0},
    {0}};

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};

static const char *const policy_names[] = {"encoded", "exif_transposed", NULL};
static const int policies[] = {KVP_MM_ENCODED, KVP_MM_EXIF_TRANSPOSED};
static const char *const rule_names[] = {"round-half-even", "legacy-ceil",
                                         NULL};
static const int rules[] = {KVP_MM_VIDEO_ROUND_HALF_EVEN,
                            KVP_MM_VIDEO_LEGACY_CEIL};

/* lint: table-driven */
static error_t
parse_opt(int key, char *arg, struct argp_state *st)
{
	struct opts *o = st->input;

	switch (key) {
	case ARGP_KEY_INIT:
		st->child_inputs[0] = &o->cli;
		break;
	case OPT_BLOCK_SIZE:
		o->mm.block_size =
		    (uint32_t)kvp_opt_u64(st, "--block-size", arg, UINT32_MAX);
		break;
	case OPT_CHAIN_SEED:
		o->mm.chain_seed =
		    kvp_opt_u64(st, "--chain-seed", arg, UINT64_MAX);
		break;
	case OPT_TOKENIZER:
		if (strncmp(arg, "bytes:", 6) != 0 &&
		    strncmp(arg, "tiktoken:", 9) != 0)
			argp_error(st, "--tokenizer: expected bytes:BASE or "
			               "tiktoken:PATH");
		o->tokenizer = arg;
		break;
	case OPT_PATTERN:
		o->pattern = arg;
		break;
	case OPT_SPECIALS:
		o->specials = arg;
		break;
	case OPT_POLICY:
		o->mm.policy = policies[kvp_opt_keyword(
		    st, "--policy", "policy", arg, policy_names)];
		break;
	case OPT_MAX_PIXELS:
		o->mm.max_pixels =
		    kvp_opt_u64(st, "--max-image-pixels", arg, UINT64_MAX);
		break;
	case OPT_MAX_BYTES:
		o->mm.max_image_bytes = (size_t)kvp_opt_u64(
		    st, "--max-image-bytes", arg, (uint64_t)1 << 40);
		break;
	case OPT_ENCODE:
		o->encode = 1;
		break;
	case OPT_VIDEO_RESIZE:
		o->mm.video_rule = rules[kvp_opt_keyword(
		    st, "--video-resize", "rule", arg, rule_names)];
		break;
	case OPT_MAX_VIDEO_BYTES:
		o->mm.max_video_bytes = (size_t)kvp_opt_u64(
		    st, "--max-video-bytes", arg, (uint64_t)1 << 40);
		break;
	case ARGP_KEY_ARGS:
		o->files = st->argv + st->next;
		o->nfiles = st->argc - st->next;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = {
    options,
    parse_opt,
    "[FILE...]",
    "Expand multimodal requests into Dynamo's routing token ids and block "
    "hashes.\vFILE \"-\" or none reads standard input. Records and keys: "
    "kvpipe-records(5).",
    children,
    NULL,
    NULL};

struct run {
	const struct kvp_cli *cli;
	struct kvp_mm *mm;
	struct kvp_mm_reqbuf req;
	struct kvp_tokenizer *tok;
	struct kvp_tok_ids ids;
	struct kvp_jw w;
	FILE *out;
	int encode;
};

static int
process_record(void *ctx, struct json_object *rec, struct kvp_diag *d)
{
	struct run *r = ctx;

	if (r->encode)
		return kvp_mm_encode_record(r->tok, rec, &r->ids, &r->w, d);
	return kvp_mm_expand_record(r->mm, &r->req, rec, &r->w, d);
}

static int
process_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	return kvp_cli_each_record(path, r->cli, &r->req.skel, process_record,
	                           r, NULL);
}

/* The split pattern and the vocabulary of --tokenizer SPEC; NULL after a
 * message. */
static struct kvp_tokenizer *
tokenizer_of(const struct opts *o)
{
	struct kvp_tokenizer *t;
	struct kvp_diag d = {{0}, 0};
	const char *spec = o->tokenizer != NULL ? o->tokenizer : "bytes:1000";
	uint64_t base;
	const char *err;

	t = kvp_tok_new(o->pattern, &d);
	if (t == NULL) {
		kvp_warnx("--pattern: %s (at offset %ld)", d.msg, d.col);
		return NULL;
	}
	if (strncmp(spec, "bytes:", 6) == 0) {
		if (kvp_num_parse_u64(spec + 6, UINT32_MAX - 255, &base,
		                      &err) == 0) {
			kvp_tok_set_bytes(t, (uint32_t)base);
			return t;
		}
		kvp_warnx("--tokenizer: BASE is %s", err);
	} else if (kvp_tok_load_ranks_file(t, spec + 9, &d) == 0) {
		return t;
	} else {
		kvp_warnx("--tokenizer: %s%s%s", d.col > 0 ? spec + 9 : "",
		          d.col > 0 ? ": " : "", d.msg);
	}
	kvp_tok_free(t);
	return NULL;
}

/* The dims tokenizer: --tokenizer, --pattern and --special-tokens; NULL
 * after a message. */
static struct kvp_tokenizer *
make_tokenizer(const struct opts *o)
{
	struct kvp_tokenizer *t = tokenizer_of(o);
	struct kvp_diag d = {{0}, 0};

	if (t == NULL)
		return NULL;
	if (o->specials == NULL || strcmp(o->specials, "kimi") == 0) {
		if (kvp_tok_add_kimi_specials(t, &d) != 0) {
			kvp_warnx("%s", d.msg);
			goto fail;
		}
	} else if (strcmp(o->specials, "none") != 0 &&
	           kvp_tok_load_specials(t, o->specials, &d) != 0) {
		kvp_warnx("--special-tokens: %s", d.msg);
		goto fail;
	}
	return t;
fail:
	kvp_tok_free(t);
	return NULL;
}

static void
parse_args(int argc, char *argv[], struct opts *o)
{
	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
	kvp_cli_uses("PCRE2", kvp_tok_lib_version());
	kvp_cli_uses("libexif", NULL);
	kvp_cli_uses("stb_image", NULL);
	kvp_cli_uses("FFmpeg", kvp_video_lib_version());
	memset(o, 0, sizeof *o);
	kvp_cli_init(&o->cli);
	o->mm.block_size = 16;
	o->mm.max_pixels = KVP_IMAGE_DEFAULT_MAX_PIXELS;
	o->mm.max_image_bytes = (size_t)64 << 20;
	o->mm.max_video_bytes = (size_t)1 << 30;
	argp_parse(&argp, argc, argv, 0, NULL, o);
}

static void
run_close(struct run *r)
{
	kvp_jw_fini(&r->w);
	kvp_mm_free(r->mm);
	kvp_mm_reqbuf_fini(&r->req);
	kvp_tok_free(r->tok);
	kvp_tok_ids_free(&r->ids);
}

/* Tokenizer, expansion context and output; -1 after a message. */
static int
run_open(struct run *r, struct opts *o)
{
	memset(r, 0, sizeof *r);
	r->cli = &o->cli;
	kvp_mm_reqbuf_init(&r->req);
	r->encode = o->encode;
	r->tok = make_tokenizer(o);
	if (r->tok == NULL)
		return -1;
	o->mm.tok = r->tok;
	/* the bytes: stand-in of no --tokenizer serves the K3 dims text, never
	 * a video's timestamps: those requests fall back */
	o->mm.text_tok = o->tokenizer != NULL ? r->tok : NULL;
	r->mm = kvp_mm_new(&o->mm);
	r->out = r->mm != NULL ? kvp_cli_open_output(&o->cli) : NULL;
	if (r->out == NULL) {
		if (r->mm == NULL)
			kvp_warnx("out of memory");
		run_close(r);
		return -1;
	}
	kvp_jw_init(&r->w, r->out, o->cli.hash_strings, o->cli.unbuffered);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct opts o;
	struct run r;
	int status;

	parse_args(argc, argv, &o);
	if (run_open(&r, &o) != 0)
		return KVP_EXIT_TROUBLE;
	status = kvp_cli_each_file(o.files, o.nfiles, &o.cli, process_file, &r);
	if (kvp_cli_close_output(r.out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	run_close(&r);
	return status;
}
