/* SPDX-License-Identifier: MIT */
/*
 * fuzz_hash_record.c — kv-hash's record parsing, differentially: every line
 * goes through kvp_hashrec_line() (strict scanner + fast token path + raw
 * copy) and through plain json-c + kvp_hashrec_run() + kvp_hashrec_write();
 * the status, the message and the output bytes must be identical, with
 * and without --hash-strings. A mismatch aborts.
 */
#define _GNU_SOURCE 1
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/blockhash.h"
#include "hash/hash_record.h"
#include "common/jsonw.h"
#include "common/ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
one(struct kvp_hashrec *fast, struct kvp_hashrec *slow,
    const struct kvp_hashrec_opts *o, struct json_tokener *tok,
    const char *line, size_t len, int hash_strings, int only)
{
	struct kvp_diag d1 = {{0}, 0}, d2 = {{0}, 0};
	char *b1 = NULL, *b2 = NULL;
	size_t n1 = 0, n2 = 0;
	FILE *f1 = open_memstream(&b1, &n1), *f2 = open_memstream(&b2, &n2);
	struct kvp_jw w1, w2;
	struct json_object *rec;
	int rc1, rc2;

	if (f1 == NULL || f2 == NULL)
		abort();
	kvp_jw_init(&w1, f1, hash_strings, 0);
	kvp_jw_init(&w2, f2, hash_strings, 0);
	rc1 = kvp_hashrec_line(fast, o, line, len, &d1);
	if (rc1 >= 0)
		kvp_hashrec_write_line(&w1, fast, rc1, line, "block_hashes",
		                       "sequence_hashes", only);
	rec = kvp_json_parse_object(tok, line, len, &d2);
	rc2 = rec == NULL ? -1 : kvp_hashrec_run(slow, o, rec, &d2);
	if (rc2 == 0)
		kvp_hashrec_write(&w2, only ? NULL : rec, slow, "block_hashes",
		                  "sequence_hashes");
	else if (rc2 == 1 && !only)
		kvp_hashrec_write(&w2, rec, NULL, NULL, NULL);
	if (rec != NULL)
		json_object_put(rec);
	kvp_jw_fini(&w1);
	kvp_jw_fini(&w2);
	fclose(f1);
	fclose(f2);
	if (rc1 != rc2 || strcmp(d1.msg, d2.msg) != 0 || d1.col != d2.col ||
	    n1 != n2 || memcmp(b1, b2, n1) != 0) {
		fprintf(stderr,
		        "mismatch: rc %d/%d\nmsg %s / %s\nfast: %.*s\nslow: "
		        "%.*s\n",
		        rc1, rc2, d1.msg, d2.msg, (int)n1, b1, (int)n2, b2);
		abort();
	}
	free(b1);
	free(b2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_hashrec fast, slow;
	struct kvp_hashrec_opts o;
	struct json_tokener *tok;
	FILE *in;
	struct kvp_lines r;
	char *line;
	size_t len;
	int rc;

	if (size == 0)
		return 0;
	in = fmemopen((void *)data, size, "r");
	if (in == NULL)
		return 0;
	tok = json_tokener_new();
	kvp_hashrec_init(&fast);
	kvp_hashrec_init(&slow);
	kvp_hashrec_opts_init(&o);
	o.block_size = 2;
	/* the first byte picks a few options */
	if (data[0] & 1)
		o.tokens_key = "t";
	if (data[0] & 2)
		o.eagle = KVP_EAGLE_ALWAYS;
	if (data[0] & 4)
		o.record_overrides = 0;
	if (data[0] & 8)
		o.lora = "adapter-a";
	kvp_lines_init(&r, in, 4096);
	while ((rc = kvp_lines_next(&r, &line, &len)) != KVP_LINE_EOF &&
	       rc != KVP_LINE_IOERR) {
		if (rc != KVP_LINE_OK)
			continue;
		one(&fast, &slow, &o, tok, line, len, 0, 0);
		one(&fast, &slow, &o, tok, line, len, 1, 0);
		one(&fast, &slow, &o, tok, line, len, 0, 1);
	}
	kvp_lines_fini(&r);
	kvp_hashrec_fini(&fast);
	kvp_hashrec_fini(&slow);
	json_tokener_free(tok);
	fclose(in);
	return 0;
}
