/* SPDX-License-Identifier: MIT */
/* fuzz_mm.c — a request record (one JSON object) through the record
 * reader, kvp_mm_expand and the output writer (kvp_mm_expand_record), with the
 * bytes:1000 dims tokenizer. Image paths are not followed: the fuzzer would
 * otherwise read arbitrary files. */
#define _GNU_SOURCE /* memmem */
#include <json.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "mm/mm.h"
#include "mm/mm_io.h"
#include "mm/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *rec;
	struct kvp_diag d;
	struct kvp_tokenizer *t = kvp_tok_new(NULL, &d);
	struct kvp_mm_opts o = {16, 0, KVP_MM_ENCODED, 1u << 26, 1u << 20, t};
	struct kvp_mm *m = t != NULL ? kvp_mm_new(&o) : NULL;
	struct kvp_mm_reqbuf b;
	struct kvp_jw w = {0};
	FILE *out = fopen("/dev/null", "w");

	if (tok == NULL || m == NULL || out == NULL ||
	    memmem(data, size, "path", 4) != NULL)
		goto done;
	kvp_tok_set_bytes(t, 1000);
	(void)kvp_tok_add_kimi_specials(t, &d);
	kvp_jw_init(&w, out, 0, 0);
	kvp_mm_reqbuf_init(&b);
	rec = kvp_json_parse_object(tok, (const char *)data, size, &d);
	if (rec != NULL) {
		(void)kvp_mm_expand_record(m, &b, rec, &w, &d);
		json_object_put(rec);
	}
	kvp_mm_reqbuf_fini(&b);
done:
	kvp_jw_fini(&w);
	if (out != NULL)
		fclose(out);
	kvp_mm_free(m);
	kvp_tok_free(t);
	if (tok != NULL)
		json_tokener_free(tok);
	return 0;
}
