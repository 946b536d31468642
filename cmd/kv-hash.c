/* SPDX-License-Identifier: MIT */
/* kv-hash — add Dynamo's block and sequence hashes (or an engine's block
 * hashes, --scheme) to token records; --detect names the scheme of a
 * captured KV event stream. */
#include <argp.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fe/cli.h"
#include "fe/err.h"
#include "common/diag.h"
#include "common/blockhash.h"
#include "hash/detect.h"
#include "hash/engine_hash.h"
#include "hash/engine_rec.h"
#include "hash/hash_record.h"
#include "hash/mooncake_out.h"
#include "kvpipe.h"
#include "common/jsonw.h"
#include "common/ndjson.h"

enum {
	OPT_BLOCK_SIZE = 0x2000,
	OPT_LORA,
	OPT_NAMESPACE,
	OPT_EAGLE,
	OPT_CHAIN_SEED,
	OPT_SEED,
	OPT_TOKENS_KEY,
	OPT_ONLY_HASHES,
	OPT_NO_OVERRIDES,
	OPT_LOCAL_KEY,
	OPT_SEQ_KEY,
	OPT_SCHEME,
	OPT_DETECT,
	OPT_FORMAT,
	OPT_EXPECT,
	OPT_CROSS_STREAM,
	OPT_SEED_SEARCH,
	OPT_MAX_SECONDS,
	OPT_TO_MOONCAKE,
	OPT_PARTIAL_TAIL,
	OPT_BLOCK_OFFSETS,
};

#define MAX_SEEDS 64

struct opts {
	struct kvp_cli cli;
	struct kvp_hashrec_opts h;
	int only_hashes;
	const char *local_key;
	const char *seq_key;
	char **files;
	int n_files;
	enum kvp_scheme scheme;
	const char *seeds[MAX_SEEDS]; /* --seed, in order */
	size_t n_seeds;
	int detect;
	int text;
	int cross;
	char expect_seed[256];
	struct kvp_detect_opts dopt;
	int to_mooncake;
};

static const char doc[] =
    "Add Dynamo's KV-router block hashes (XXH3-64 local hashes and chained "
    "sequence hashes) to NDJSON records holding token ids.\v"
    "Each record is written back with \"block_hashes\" (local) and "
    "\"sequence_hashes\" appended; only full blocks are hashed. Records "
    "from kv-decode that carry no tokens are copied unchanged. See "
    "kv-hash(1) and kvpipe-records(5).";

static const char args_doc[] = "[FILE...]";

static const struct argp_option options[] = {
    {NULL, 0, NULL, 0, "Hashing:", 1},
    {"block-size", OPT_BLOCK_SIZE, "N", 0,
     "Tokens per KV block (required unless records carry block_size)", 0},
    {"kv-block-size", 0, NULL, OPTION_ALIAS, NULL, 0},
    {"lora", OPT_LORA, "NAME", 0,
     "LoRA adapter name salting the seed (sglang: mixed into each hash)", 0},
    {"lora-name", 0, NULL, OPTION_ALIAS, NULL, 0},
    {"namespace", OPT_NAMESPACE, "NS", 0,
     "Cache namespace (cache_salt) salting the seed", 0},
    {"eagle", OPT_EAGLE, "WHEN", OPTION_ARG_OPTIONAL,
     "EAGLE windows of block-size + 1 tokens: auto (default: records with "
     "token_layout \"bigram\" or is_eagle true), always (bare --eagle), "
     "never",
     0},
    {"scheme", OPT_SCHEME, "NAME", 0,
     "Hash scheme: dynamo (default), vllm-sha256-cbor, vllm-sha256, "
     "vllm-xxhash-cbor, vllm-xxhash, vllm-sha256-cbor-64bit, sglang, "
     "sglang-legacy, trtllm-v1, llmd-fnv, sglang-mm",
     0},
    {"partial-tail", OPT_PARTIAL_TAIL, NULL, 0,
     "sglang, sglang-mm: also hash a trailing partial block, as "
     "sgl-router's hash parity fixture does (the engine publishes full "
     "pages only)",
     0},
    {"block-offsets", OPT_BLOCK_OFFSETS, "use|ignore", 0,
     "a sparse store's block_offsets: hash block i over the chunk it "
     "names (use, default) or take the chunks in order, as Dynamo's "
     "decoder (ignore)",
     0},
    {"seed", OPT_SEED, "S", 0,
     "dynamo: base seed of the local hash (default 1337); engine schemes: "
     "the engine's seed text (vLLM PYTHONHASHSEED, default vllm-none-hash; "
     "llm-d HashSeed); --detect: one more seed to try (repeatable)",
     0},
    {"chain-seed", OPT_CHAIN_SEED, "S", 0,
     "Seed of the sequence-hash chain (default 1337; some Dynamo "
     "versions use 0)",
     0},
    {"no-record-overrides", OPT_NO_OVERRIDES, NULL, 0,
     "Ignore block_size, lora_name, cache_namespace, cache_salt, "
     "token_layout and is_eagle in records; use the options only",
     0},
    {NULL, 0, NULL, 0, "Detecting the scheme of a capture:", 2},
    {"detect", OPT_DETECT, NULL, 0,
     "Read kv-decode records and write one verdict per stream", 0},
    {"format", OPT_FORMAT, "FMT", 0,
     "--detect output: ndjson (default) or text", 0},
    {"expect", OPT_EXPECT, "SCHEME:SEED:BLOCK_SIZE", 0,
     "The consumer's configuration; name the first differing field, exit 1 "
     "when a stream differs",
     0},
    {"cross-stream", OPT_CROSS_STREAM, NULL, 0,
     "Compare the first hashes of equal root stores across streams", 0},
    {"seed-search", OPT_SEED_SEARCH, NULL, 0,
     "Try every decimal vLLM seed 0..4294967295 on streams no known seed "
     "fits (all cores)",
     0},
    {"max-seconds", OPT_MAX_SECONDS, "N", 0,
     "Bound of --seed-search (default 60)", 0},
    {NULL, 0, NULL, 0, "Records:", 3},
    {"tokens-key", OPT_TOKENS_KEY, "KEY", 0,
     "Read token ids from KEY (default: \"tokens\", then \"token_ids\")", 0},
    {"only-hashes", OPT_ONLY_HASHES, NULL, 0,
     "Write only the two hash arrays, not the record", 0},
    {"local-key", OPT_LOCAL_KEY, "KEY", 0,
     "Name of the local-hash key (default block_hashes; tokens_hash on "
     "kv-decode events)",
     0},
    {"sequence-key", OPT_SEQ_KEY, "KEY", 0,
     "Name of the sequence-hash key (default sequence_hashes)", 0},
    {"to-mooncake", OPT_TO_MOONCAKE, NULL, 0,
     "Write Mooncake trace lines (timestamp, input_length, output_length, "
     "hash_ids: dense ids of the sequence hashes) instead",
     0},
    {0}};

static const char *const eagle_names[] = {"always", "auto", "never", NULL};
static const int eagle_modes[] = {KVP_EAGLE_ALWAYS, KVP_EAGLE_AUTO,
                                  KVP_EAGLE_NEVER};

static const char *const formats[] = {"ndjson", "text", NULL};

static const char *const offsets_modes[] = {"use", "ignore", NULL};

/* SCHEME:SEED:BLOCK_SIZE; the seed is everything between the first and
 * the last colon. */
static void
parse_expect(struct argp_state *st, struct opts *o, const char *arg)
{
	const char *a = strchr(arg, ':'), *b = strrchr(arg, ':');
	char name[64];
	char *seed = o->expect_seed;

	if (a == NULL || a == b || (size_t)(a - arg) >= sizeof name ||
	    (size_t)(b - a - 1) >= sizeof o->expect_seed)
		argp_error(st, "--expect: '%s' is not SCHEME:SEED:BLOCK_SIZE",
		           arg);
	memcpy(name, arg, (size_t)(a - arg));
	name[a - arg] = '\0';
	memcpy(seed, a + 1, (size_t)(b - a - 1));
	seed[b - a - 1] = '\0';
	o->dopt.has_expect = 1;
	o->dopt.expect_scheme = (enum kvp_scheme)kvp_opt_keyword(
	    st, "--expect", "scheme", name, kvp_scheme_names);
	o->dopt.expect_seed = seed;
	o->dopt.expect_bs = kvp_opt_block_size(st, b + 1);
}

/* Options that depend on each other. */
static void
key_end(struct argp_state *st, struct opts *o)
{
	if (!o->detect &&
	    (o->dopt.has_expect || o->cross || o->dopt.seed_search || o->text))
		argp_error(st, "--expect, --cross-stream, --seed-search and "
		               "--format need --detect");
	if (o->detect && o->scheme != KVP_SCHEME_DYNAMO)
		argp_error(st, "--detect tries every scheme: drop --scheme");
	if (o->to_mooncake &&
	    (o->detect || o->only_hashes || o->scheme != KVP_SCHEME_DYNAMO))
		argp_error(st, "--to-mooncake excludes --detect, --only-hashes "
		               "and --scheme");
	if (o->to_mooncake) /* a request's blocks: all of them, in order */
		o->h.ignore_offsets = 1;
	if (o->h.partial_tail && !kvp_scheme_has_partial_tail(o->scheme))
		argp_error(st, "--partial-tail needs --scheme sglang or "
		               "sglang-mm");
	if (o->detect)
		return;
	if (o->n_seeds > 1)
		argp_error(st, "--seed: one seed unless --detect");
	if (o->scheme == KVP_SCHEME_DYNAMO && o->n_seeds == 1)
		o->h.seed = kvp_opt_u64(st, "--seed", o->seeds[0], UINT64_MAX);
}

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
		o->h.block_size = kvp_opt_block_size(st, arg);
		break;
	case OPT_LORA:
		o->h.lora = arg;
		break;
	case OPT_NAMESPACE:
		o->h.ns = arg;
		break;
	case OPT_EAGLE:
		o->h.eagle =
		    arg == NULL ? KVP_EAGLE_ALWAYS
		                : eagle_modes[kvp_opt_keyword(
		                      st, "--eagle", "mode", arg, eagle_names)];
		break;
	case OPT_SEED:
		if (o->n_seeds == MAX_SEEDS)
			argp_error(st, "--seed: at most %d seeds", MAX_SEEDS);
		o->seeds[o->n_seeds++] = arg;
		break;
	case OPT_SCHEME:
		o->scheme = (enum kvp_scheme)kvp_opt_keyword(
		    st, "--scheme", "scheme", arg, kvp_scheme_names);
		break;
	case OPT_DETECT:
		o->detect = 1;
		break;
	case OPT_FORMAT:
		o->text =
		    kvp_opt_keyword(st, "--format", "format", arg, formats);
		break;
	case OPT_EXPECT:
		parse_expect(st, o, arg);
		break;
	case OPT_CROSS_STREAM:
		o->cross = 1;
		break;
	case OPT_SEED_SEARCH:
		o->dopt.seed_search = 1;
		break;
	case OPT_MAX_SECONDS:
		o->dopt.max_seconds = kvp_opt_double(st, "--max-seconds", arg);
		if (!(o->dopt.max_seconds > 0))
			argp_error(st, "--max-seconds: must be above 0");
		break;
	case OPT_CHAIN_SEED:
		o->h.chain_seed =
		    kvp_opt_u64(st, "--chain-seed", arg, UINT64_MAX);
		break;
	case OPT_NO_OVERRIDES:
		o->h.record_overrides = 0;
		break;
	case OPT_TOKENS_KEY:
		o->h.tokens_key = arg;
		break;
	case OPT_ONLY_HASHES:
		o->only_hashes = 1;
		break;
	case OPT_LOCAL_KEY:
		o->local_key = arg;
		break;
	case OPT_SEQ_KEY:
		o->seq_key = arg;
		break;
	case OPT_TO_MOONCAKE:
		o->to_mooncake = 1;
		break;
	case OPT_PARTIAL_TAIL:
		o->h.partial_tail = 1;
		break;
	case OPT_BLOCK_OFFSETS:
		o->h.ignore_offsets = kvp_opt_keyword(
		    st, "--block-offsets", "mode", arg, offsets_modes);
		o->dopt.ignore_offsets = o->h.ignore_offsets;
		break;
	case ARGP_KEY_ARGS:
		o->files = st->argv + st->next;
		o->n_files = st->argc - st->next;
		break;
	case ARGP_KEY_END:
		key_end(st, o);
		if (o->local_key != NULL &&
		    strcmp(o->local_key, o->seq_key) == 0)
			argp_error(st, "--local-key and --sequence-key must "
			               "differ");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {{&kvp_cli_argp, 0, NULL, 0}, {0}};
static const struct argp argp = {options,  parse_opt, args_doc, doc,
                                 children, NULL,      NULL};

struct run {
	const struct opts *o;
	struct kvp_hashrec *hr;
	struct kvp_jw *w;
	struct kvp_erec *er; /* engine scheme, or NULL */
	struct kvp_detect *dt;
	struct json_tokener *tok;
	struct kvp_mooncake *mc; /* --to-mooncake */
};

/* Raw lines, so that kvp_hashrec_line() can take its fast path. */
static int
hash_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	const struct opts *o = r->o;
	int rc = kvp_hashrec_line(r->hr, &o->h, line, len, d);

	if (rc < 0)
		return -1;
	if (rc == 0 && r->er != NULL &&
	    kvp_erec_apply(r->er, r->hr, &o->h, d) != 0)
		return -1;
	kvp_hashrec_write_line(r->w, r->hr, rc, line,
	                       o->local_key     ? o->local_key
	                       : o->only_hashes ? "block_hashes"
	                                        : kvp_hashrec_local_key(r->hr),
	                       r->er ? NULL : o->seq_key, o->only_hashes);
	/* Stop at the first failed write; kvp_cli_close_output() names it. */
	return kvp_jw_ok(r->w) ? 0 : -2;
}

static int
hash_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	return kvp_cli_each_line(path, &r->o->cli, hash_line, r, NULL);
}

/* --to-mooncake: every record through json-c (its timestamp and output
 * length are read too); records without tokens are left out. */
static int
mooncake_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	struct json_object *rec = kvp_json_parse_object(r->tok, line, len, d);
	int rc;

	if (rec == NULL)
		return -1;
	rc = kvp_hashrec_run(r->hr, &r->o->h, rec, d);
	if (rc == 0)
		rc = kvp_mooncake_write(r->mc, r->w, rec, r->hr, d);
	json_object_put(rec);
	if (rc < 0)
		return -1;
	return kvp_jw_ok(r->w) ? 0 : -2;
}

static int
mooncake_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	return kvp_cli_each_line(path, &r->o->cli, mooncake_line, r, NULL);
}

static int
to_mooncake(struct opts *o, struct run *r)
{
	struct kvp_mooncake mc;
	int status;

	kvp_mooncake_init(&mc);
	r->mc = &mc;
	r->tok = json_tokener_new();
	if (r->tok == NULL) {
		kvp_warnx("out of memory");
		status = KVP_EXIT_TROUBLE;
	} else {
		status = kvp_cli_each_file(o->files, o->n_files, &o->cli,
		                           mooncake_file, r);
		json_tokener_free(r->tok);
	}
	kvp_mooncake_fini(&mc);
	return status;
}

static int
detect_line(void *ctx, char *line, size_t len, struct kvp_diag *d)
{
	struct run *r = ctx;
	struct json_object *rec = kvp_json_parse_object(r->tok, line, len, d);
	int rc;

	if (rec == NULL)
		return -1;
	rc = kvp_detect_record(r->dt, rec, d);
	json_object_put(rec);
	return rc < 0 ? -1 : 0;
}

static int
detect_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	return kvp_cli_each_line(path, &r->o->cli, detect_line, r, NULL);
}

/* Writes the verdicts; 1 when a stream differs from --expect. */
static int
detect_report(struct run *r)
{
	const struct kvp_verdict *v;
	int status = KVP_EXIT_OK;

	for (size_t i = 0; (v = kvp_detect_verdict(r->dt, i)) != NULL; i++) {
		kvp_detect_write(r->w, v, r->o->text);
		if (v->differs == NULL)
			continue;
		kvp_warnx("stream %s: %s differs from --expect (%s)", v->stream,
		          v->differs, v->next);
		status = KVP_EXIT_DATA;
	}
	if (r->o->cross)
		kvp_detect_write_cross(r->w, r->dt, r->o->text);
	return status;
}

static int
detect(struct opts *o, struct run *r)
{
	struct kvp_diag d;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int status, st2;

	o->dopt.seeds = o->seeds;
	o->dopt.n_seeds = o->n_seeds;
	o->dopt.threads = cpus > 0 ? (unsigned)cpus : 1;
	r->dt = kvp_detect_new(&o->dopt);
	r->tok = json_tokener_new();
	if (r->dt == NULL || r->tok == NULL) {
		kvp_warnx("out of memory");
		status = KVP_EXIT_TROUBLE;
		goto out;
	}
	status =
	    kvp_cli_each_file(o->files, o->n_files, &o->cli, detect_file, r);
	if (status == KVP_EXIT_TROUBLE)
		goto out;
	if (kvp_detect_run(r->dt, &d) < 0) {
		kvp_warnx("%s", d.msg);
		status = KVP_EXIT_TROUBLE;
		goto out;
	}
	st2 = detect_report(r);
	if (st2 > status)
		status = st2;
out:
	kvp_detect_free(r->dt);
	if (r->tok != NULL)
		json_tokener_free(r->tok);
	return status;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct kvp_hashrec hr;
	struct kvp_jw w;
	FILE *out;
	struct run r;
	struct kvp_erec er;
	struct kvp_diag d;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	kvp_hashrec_opts_init(&o.h);
	o.local_key = NULL; /* per record: kvp_hashrec_local_key() */
	o.seq_key = "sequence_hashes";
	o.dopt.max_seconds = 60;
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	if (o.scheme != KVP_SCHEME_DYNAMO &&
	    kvp_erec_init(&er, o.scheme, o.n_seeds ? o.seeds[0] : NULL, &d) !=
	        0) {
		kvp_erec_fini(&er);
		kvp_errx(KVP_EXIT_TROUBLE, "--seed: %s", d.msg);
	}
	out = kvp_cli_open_output(&o.cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_hashrec_init(&hr);
	kvp_jw_init(&w, out, o.cli.hash_strings, o.cli.unbuffered);
	r = (struct run){
	    &o,   &hr,  &w,  o.scheme != KVP_SCHEME_DYNAMO ? &er : NULL,
	    NULL, NULL, NULL};
	if (o.detect)
		status = detect(&o, &r);
	else if (o.to_mooncake)
		status = to_mooncake(&o, &r);
	else
		status = kvp_cli_each_file(o.files, o.n_files, &o.cli,
		                           hash_file, &r);
	kvp_hashrec_fini(&hr);
	if (r.er != NULL)
		kvp_erec_fini(&er);
	kvp_jw_fini(&w);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	return status;
}
