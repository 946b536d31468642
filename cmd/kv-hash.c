/* SPDX-License-Identifier: MIT */
/* kv-hash — add Dynamo's block and sequence hashes to token records. */
#include <argp.h>
#include <stdlib.h>
#include <string.h>

#include "fe/cli.h"
#include "fe/err.h"
#include "common/diag.h"
#include "common/blockhash.h"
#include "hash/hash_record.h"
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
};

struct opts {
	struct kvp_cli cli;
	struct kvp_hashrec_opts h;
	int only_hashes;
	const char *local_key;
	const char *seq_key;
	char **files;
	int n_files;
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
    {"lora", OPT_LORA, "NAME", 0, "LoRA adapter name salting the seed", 0},
    {"namespace", OPT_NAMESPACE, "NS", 0,
     "Cache namespace (cache_salt) salting the seed", 0},
    {"eagle", OPT_EAGLE, "WHEN", OPTION_ARG_OPTIONAL,
     "EAGLE windows of block-size + 1 tokens: auto (default: records with "
     "token_layout \"bigram\" or is_eagle true), always (bare --eagle), "
     "never",
     0},
    {"seed", OPT_SEED, "S", 0, "Base seed of the local hash (default 1337)", 0},
    {"chain-seed", OPT_CHAIN_SEED, "S", 0,
     "Seed of the sequence-hash chain (default 1337; some Dynamo "
     "versions use 0)",
     0},
    {"no-record-overrides", OPT_NO_OVERRIDES, NULL, 0,
     "Ignore block_size, lora_name, cache_namespace, cache_salt, "
     "token_layout and is_eagle in records; use the options only",
     0},
    {NULL, 0, NULL, 0, "Records:", 2},
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
    {0}};

static const char *const eagle_names[] = {"always", "auto", "never", NULL};
static const int eagle_modes[] = {KVP_EAGLE_ALWAYS, KVP_EAGLE_AUTO,
                                  KVP_EAGLE_NEVER};

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
		o->h.seed = kvp_opt_u64(st, "--seed", arg, UINT64_MAX);
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
	case ARGP_KEY_ARGS:
		o->files = st->argv + st->next;
		o->n_files = st->argc - st->next;
		break;
	case ARGP_KEY_END:
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
	kvp_hashrec_write_line(r->w, r->hr, rc, line,
	                       o->local_key     ? o->local_key
	                       : o->only_hashes ? "block_hashes"
	                                        : kvp_hashrec_local_key(r->hr),
	                       o->seq_key, o->only_hashes);
	/* Stop at the first failed write; kvp_cli_close_output() names it. */
	return kvp_jw_ok(r->w) ? 0 : -2;
}

static int
hash_file(void *ctx, const char *path)
{
	struct run *r = ctx;

	return kvp_cli_each_line(path, &r->o->cli, hash_line, r, NULL);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct kvp_hashrec hr;
	struct kvp_jw w;
	FILE *out;
	struct run r;
	int status;

	kvp_cli_begin(argc, argv);
	kvp_cli_uses("xxhash", kvp_hash_lib_version());
	memset(&o, 0, sizeof o);
	kvp_cli_init(&o.cli);
	kvp_hashrec_opts_init(&o.h);
	o.local_key = NULL; /* per record: kvp_hashrec_local_key() */
	o.seq_key = "sequence_hashes";
	argp_parse(&argp, argc, argv, 0, NULL, &o);

	out = kvp_cli_open_output(&o.cli);
	if (out == NULL)
		return KVP_EXIT_TROUBLE;
	kvp_hashrec_init(&hr);
	kvp_jw_init(&w, out, o.cli.hash_strings, o.cli.unbuffered);
	r = (struct run){&o, &hr, &w};
	status = kvp_cli_each_file(o.files, o.n_files, &o.cli, hash_file, &r);
	kvp_hashrec_fini(&hr);
	kvp_jw_fini(&w);
	if (kvp_cli_close_output(out, &o.cli) != 0)
		status = KVP_EXIT_TROUBLE;
	return status;
}
