/* SPDX-License-Identifier: MIT */
/* test_normalize.c — the record fast path agrees with the json-c path on
 * random records (block_offsets and the BlockInactive and BlockTransferred
 * types included); the normalizer frees a rank's state on AllBlocksCleared
 * and keeps its tracked ids within the capacity. */
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ndjson.h"
#include "events/normalize.h"
#include "events/event_reader.h"
#include "events/normalize_out.h"
#include "unit.h"

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : rng;
}

static const char *
pick(const char *const *v, size_t n)
{
	return v[rnd(n)];
}

#define PICK(v) pick(v, sizeof v / sizeof v[0])

/* A random value for a key: usually the right type, sometimes not. */
static void
val(char *b, size_t cap, const char *key)
{
	static const char *const odd[] = {"null",
	                                  "1.5",
	                                  "-3",
	                                  "\"7\"",
	                                  "[1,2]",
	                                  "{}",
	                                  "true",
	                                  "\"\"",
	                                  "18446744073709551615",
	                                  "18446744073709551616",
	                                  "[-1]",
	                                  "[null]",
	                                  "[[\"a\",1]]",
	                                  "\"0x10\"",
	                                  "[1.0]",
	                                  "\"caf\\u00e9\""};
	static const char *const strs[] = {
	    "\"GPU\"",    "\"CPU\"",      "\"\"",       "\"LOCAL\"",
	    "\"REMOTE\"", "\"flat\"",     "\"bigram\"", "\"full_attention\"",
	    "\"mamba\"",  "\"tenant-a\"", "\"event\"",  "\"BlockStored\""};
	size_t n = 0;

	if (rnd(40) == 0) {
		snprintf(b, cap, "%s", PICK(odd));
		return;
	}
	if (!strcmp(key, "block_hashes") || !strcmp(key, "token_ids")) {
		int k = (int)rnd(6);

		n += (size_t)snprintf(b + n, cap - n, "[");
		for (int i = 0; i < k; i++)
			n += (size_t)snprintf(
			    b + n, cap - n, "%s%llu", i ? "," : "",
			    (unsigned long long)(rnd(3) ? rnd(100) : rnd(0)));
		snprintf(b + n, cap - n, "]");
	} else if (!strcmp(key, "extra_keys")) {
		snprintf(b, cap, "%s",
		         rnd(2) ? "[null,null]"
		                : "[[\"dynamo-cache-salt:x\"]]");
	} else if (!strcmp(key, "type")) {
		static const char *const t[] = {"\"BlockStored\"",
		                                "\"BlockRemoved\"",
		                                "\"AllBlocksCleared\"",
		                                "\"Ignored\"",
		                                "\"Foo\"",
		                                "\"BlockInactive\"",
		                                "\"BlockTransferred\""};
		snprintf(b, cap, "%s", PICK(t));
	} else if (!strcmp(key, "block_offsets")) {
		static const char *const o[] = {"null", "[0]",  "[0,2]",
		                                "[]",   "[-1]", "[\"1\"]"};
		snprintf(b, cap, "%s", PICK(o));
	} else if (!strcmp(key, "rec")) {
		snprintf(b, cap, "%s", rnd(8) ? "\"event\"" : "\"batch\"");
	} else if (!strcmp(key, "token_layout") || !strcmp(key, "medium") ||
	           !strcmp(key, "lora_name") || !strcmp(key, "cache_salt") ||
	           !strcmp(key, "kv_cache_spec_kind") ||
	           !strcmp(key, "locality") || !strcmp(key, "topic")) {
		snprintf(b, cap, "%s", PICK(strs));
	} else if (!strcmp(key, "x_capture")) {
		static const char *const x[] = {
		    "{\"recv_ts\":1.0}",
		    "{\"a\":[1,{\"b\":null}],\"c\":[]}",
		    "[]",
		    "{}",
		    "[[[]]]",
		    "{\"a\":\"\\n\"}"};
		snprintf(b, cap, "%s", PICK(x));
	} else if (!strcmp(key, "ts")) {
		snprintf(b, cap, "%s", rnd(2) ? "1.5" : "1e3");
	} else if (!strcmp(key, "dp_rank")) {
		static const char *const r[] = {
		    "0", "1", "-1", "null", "4294967295", "-2147483649"};
		snprintf(b, cap, "%s", PICK(r));
	} else {
		snprintf(b, cap, "%llu",
		         (unsigned long long)(rnd(2) ? rnd(5) : rnd(0)));
	}
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
same_ev(const struct kvp_nev *a, const struct kvp_nev *b)
{
	return a->seq == b->seq && a->idx == b->idx &&
	       a->worker_id == b->worker_id && a->has_rank == b->has_rank &&
	       a->rank == b->rank && a->type == b->type &&
	       a->n_hashes == b->n_hashes &&
	       (a->n_hashes == 0 ||
	        !memcmp(a->hashes, b->hashes, a->n_hashes * 8)) &&
	       a->has_parent == b->has_parent &&
	       (!a->has_parent || a->parent == b->parent) &&
	       a->n_tokens == b->n_tokens &&
	       (a->n_tokens == 0 ||
	        !memcmp(a->tokens, b->tokens, a->n_tokens * 8)) &&
	       a->eagle == b->eagle && a->block_size == b->block_size &&
	       same_str(a->lora_name, b->lora_name) && same_str(a->ns, b->ns) &&
	       a->has_medium == b->has_medium &&
	       same_str(a->medium, b->medium) && a->has_group == b->has_group &&
	       (!a->has_group || a->group_idx == b->group_idx) &&
	       same_str(a->kind, b->kind) &&
	       same_str(a->locality, b->locality) &&
	       a->n_mm_blocks == b->n_mm_blocks &&
	       a->n_offsets == b->n_offsets &&
	       (a->offsets == NULL) == (b->offsets == NULL) &&
	       (a->n_offsets == 0 ||
	        !memcmp(a->offsets, b->offsets, a->n_offsets * 8));
}

static void
test_fast_path_agrees(void)
{
	static const char *const keys[] = {"rec",
	                                   "seq",
	                                   "idx",
	                                   "worker_id",
	                                   "dp_rank",
	                                   "type",
	                                   "block_hashes",
	                                   "parent_block_hash",
	                                   "token_ids",
	                                   "block_size",
	                                   "token_layout",
	                                   "lora_name",
	                                   "medium",
	                                   "cache_salt",
	                                   "extra_keys",
	                                   "group_idx",
	                                   "kv_cache_spec_kind",
	                                   "locality",
	                                   "topic",
	                                   "ts",
	                                   "x_capture",
	                                   "block_offsets"};
	struct json_tokener *tok = json_tokener_new();
	struct kvp_event_reader_buf fb, jb;
	size_t fast = 0, mismatch = 0, total = 20000;

	kvp_event_reader_buf_init(&fb);
	kvp_event_reader_buf_init(&jb);
	for (size_t it = 0; it < total; it++) {
		char line[4096], copy[4096], v[512];
		size_t n = 0;
		struct kvp_nev fe, je;
		struct kvp_diag d;
		struct json_object *o;
		int first = 1;

		n += (size_t)snprintf(line + n, sizeof line - n, "{");
		for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			/* Required keys nearly always; others half the time. */
			if (rnd(k < 6 ? 30 : 2) == 0)
				continue;
			val(v, sizeof v, keys[k]);
			n += (size_t)snprintf(line + n, sizeof line - n,
			                      "%s\"%s\":%s", first ? "" : ",",
			                      keys[k], v);
			first = 0;
		}
		n += (size_t)snprintf(line + n, sizeof line - n, "}");
		memcpy(copy, line, n + 1);
		if (kvp_event_reader_from_line(copy, n, &fb, &fe) != 0)
			continue;
		fast++;
		o = kvp_json_parse_object(tok, line, n, &d);
		if (o == NULL ||
		    kvp_event_reader_from_json(o, &jb, &je, &d) != 0 ||
		    !same_ev(&fe, &je)) {
			if (mismatch++ < 5)
				fprintf(stderr, "fast/json differ: %s\n", line);
		}
		if (o != NULL)
			json_object_put(o);
	}
	CHECK_U64(mismatch, 0);
	/* The generator must exercise the fast path, not only declines. */
	CHECK(fast > total / 20);
	printf("fast path took %zu of %zu random records\n", fast, total);
	kvp_event_reader_buf_fini(&fb);
	kvp_event_reader_buf_fini(&jb);
	json_tokener_free(tok);
}

/* kv-decode's record shapes (docs/spec/kv-events.md §6.3, as kv-decode
 * writes them from a capture) take the fast path. */
static void
test_fast_path_takes_decode_records(void)
{
	static const char *const lines[] = {
	    "{\"rec\":\"event\",\"seq\":1,\"topic\":\"kv-events\",\"source\":"
	    "\"live\",\"ts\":0,\"dp_rank\":0,\"worker_id\":0,\"idx\":0,\"enc\":"
	    "\"array\",\"type\":\"BlockStored\",\"block_hashes\":[11,12],"
	    "\"parent_block_hash\":null,\"token_ids\":[10,11,12,13],"
	    "\"token_layout\":\"flat\",\"wide_tokens\":0,\"block_size\":2,"
	    "\"lora_id\":null,\"lora_name\":null,\"medium\":\"GPU\","
	    "\"cache_salt\":null,\"session_id\":null,\"extra_keys\":null,"
	    "\"group_idx\":null,\"kv_cache_spec_kind\":null,"
	    "\"kv_cache_spec_sliding_window\":null,\"locality\":null,"
	    "\"hash_repr\":\"uint\",\"source_kind\":null,"
	    "\"x_capture\":{\"recv_ts\":1.0}}",
	    "{\"rec\":\"event\",\"seq\":2,\"topic\":\"\",\"source\":null,"
	    "\"ts\":1.5,\"dp_rank\":1,\"worker_id\":0,\"idx\":0,\"enc\":"
	    "\"map\","
	    "\"type\":\"BlockRemoved\",\"block_hashes\":[18446744073709551615],"
	    "\"medium\":\"GPU\",\"group_idx\":0,\"kv_cache_spec_kind\":null,"
	    "\"locality\":null,\"hash_repr\":\"int\",\"x_unknown_keys\":"
	    "[\"foo\"]}",
	    "{\"rec\":\"event\",\"seq\":3,\"topic\":\"\",\"source\":null,"
	    "\"ts\":1.5,\"dp_rank\":null,\"worker_id\":5,\"idx\":2,\"enc\":"
	    "\"array\",\"type\":\"AllBlocksCleared\",\"source_kind\":null}",
	};
	struct kvp_event_reader_buf b;
	struct kvp_nev ev;

	kvp_event_reader_buf_init(&b);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		char copy[2048];
		size_t n = strlen(lines[i]);

		memcpy(copy, lines[i], n + 1);
		CHECK(kvp_event_reader_from_line(copy, n, &b, &ev) == 0);
	}
	kvp_event_reader_buf_fini(&b);
}

static void
test_clear_frees_state(void)
{
	struct kvp_norm_opts o;
	struct kvp_norm *n;
	struct kvp_nout out;
	struct kvp_diag d;
	uint64_t hashes[4], tokens[8];
	struct kvp_nev ev;

	kvp_norm_opts_init(&o);
	o.kv_block_size = 2;
	o.capacity = 6;
	n = kvp_norm_new(&o);
	CHECK(n != NULL);
	for (uint64_t round = 0; round < 3; round++) {
		for (uint64_t i = 0; i < 5; i++) {
			memset(&ev, 0, sizeof ev);
			ev.type = KVP_EV_STORED;
			ev.worker_id = 9;
			ev.block_size = 2;
			for (int j = 0; j < 4; j++)
				hashes[j] = round * 1000 + i * 10 + (uint64_t)j;
			for (int j = 0; j < 8; j++)
				tokens[j] = j == 2 ? (uint64_t)1 << 32 : 5;
			ev.hashes = hashes;
			ev.n_hashes = 4;
			ev.tokens = tokens;
			ev.n_tokens = 8;
			ev.ns = "tenant";
			CHECK(kvp_norm_process(n, &ev, &out, &d) == 0);
			CHECK(kvp_norm_tracked(n) <= o.capacity);
		}
		CHECK(kvp_norm_tracked(n) > 0);
		CHECK(kvp_norm_ns_entries(n) > 0);
		memset(&ev, 0, sizeof ev);
		ev.type = KVP_EV_CLEARED;
		ev.worker_id = 9;
		CHECK(kvp_norm_process(n, &ev, &out, &d) == 0);
		CHECK_U64(kvp_norm_tracked(n), 0);
		CHECK_U64(kvp_norm_ns_entries(n), 0);
		CHECK_U64(kvp_norm_streams(n), 1);
	}
	kvp_norm_free(n);
}

/* Issue 15: salted stores never removed keep at most ns_capacity namespace
 * entries per (worker, rank) (the map had no cap: 3M salted hashes held
 * 108 MB); past it the rank is in fallback and AllBlocksCleared recovers. */
static void
test_ns_capacity(void)
{
	struct kvp_norm_opts o;
	struct kvp_norm *n;
	struct kvp_nout out;
	struct kvp_diag d;
	uint64_t hashes[4], tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct kvp_nev ev;
	unsigned warned = 0;

	kvp_norm_opts_init(&o);
	o.kv_block_size = 2;
	o.ns_capacity = 100;
	n = kvp_norm_new(&o);
	CHECK(n != NULL);
	for (uint64_t i = 0; i < 10000; i++) {
		memset(&ev, 0, sizeof ev);
		ev.type = KVP_EV_STORED;
		ev.block_size = 2;
		for (int j = 0; j < 4; j++)
			hashes[j] = i * 10 + (uint64_t)j;
		ev.hashes = hashes;
		ev.n_hashes = 4;
		ev.tokens = tokens;
		ev.n_tokens = 8;
		ev.ns = i % 2 ? "tenant-a" : "tenant-b";
		CHECK(kvp_norm_process(n, &ev, &out, &d) == 0);
		CHECK(out.kind == KVP_NOUT_EVENT);
		if (out.warn & KVP_NW_NS_FALLBACK)
			warned++;
		CHECK(kvp_norm_ns_entries(n) <= o.ns_capacity);
	}
	CHECK_U64(warned, 1);
	/* 2 namespaces + 24 stores of 4 hashes fit in 100 */
	CHECK_U64(kvp_norm_ns_entries(n), 96);
	memset(&ev, 0, sizeof ev);
	ev.type = KVP_EV_CLEARED;
	CHECK(kvp_norm_process(n, &ev, &out, &d) == 0);
	CHECK_U64(kvp_norm_ns_entries(n), 0);
	kvp_norm_free(n);
}

static void
test_tiers(void)
{
	enum kvp_tier t;

	CHECK(kvp_norm_tier(NULL, &t) == 0 && t == KVP_TIER_DEVICE);
	CHECK(kvp_norm_tier("", &t) == 0 && t == KVP_TIER_DEVICE);
	CHECK(kvp_norm_tier("CPU_TIER1", &t) == 0 && t == KVP_TIER_HOST_PINNED);
	CHECK(kvp_norm_tier("NVME", &t) == 0 && t == KVP_TIER_DISK);
	CHECK(kvp_norm_tier("NETWORK", &t) == 0 && t == KVP_TIER_EXTERNAL);
	CHECK(kvp_norm_tier("gpu", &t) == -1);
	CHECK(kvp_norm_tier("OBJ", &t) == -1);
	CHECK_STR(kvp_norm_tier_name(KVP_TIER_HOST_PINNED), "host_pinned");
}

int
main(void)
{
	test_fast_path_agrees();
	test_fast_path_takes_decode_records();
	test_clear_frees_state();
	test_ns_capacity();
	test_tiers();
	return UNIT_DONE();
}
