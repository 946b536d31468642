/* SPDX-License-Identifier: MIT */
/* fuzz_ndjson.c — bytes through the line reader, the JSON parser and the
 * u64 readers, then back out through the writer. */
#include <json.h>
#include <stdio.h>

#include "common/jsonw.h"
#include "common/ndjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *in, *out;
	struct kvp_lines r;
	struct json_tokener *tok;
	struct kvp_jw w;
	char *line;
	size_t len;
	int rc;

	if (size == 0)
		return 0;
	in = fmemopen((void *)data, size, "r");
	out = fopen("/dev/null", "w");
	if (in == NULL || out == NULL)
		return 0;
	tok = json_tokener_new();
	kvp_lines_init(&r, in, 4096);
	kvp_jw_init(&w, out, 1, 0);
	while ((rc = kvp_lines_next(&r, &line, &len)) != KVP_LINE_EOF &&
	       rc != KVP_LINE_IOERR) {
		struct kvp_diag d;
		struct json_object *o, *v;
		uint64_t u;

		if (rc != KVP_LINE_OK)
			continue;
		o = kvp_json_parse_object(tok, line, len, &d);
		if (o == NULL)
			continue;
		json_object_object_foreach(o, k, val)
		{
			(void)k;
			(void)kvp_json_u64(val, KVP_U64_HASH, "v", &u, &d);
		}
		if (kvp_json_get(o, "a", &v))
			(void)kvp_json_u64(v, 0, "a", &u, &d);
		kvp_jw_json(&w, o);
		kvp_jw_end_record(&w);
		json_object_put(o);
	}
	kvp_lines_fini(&r);
	json_tokener_free(tok);
	kvp_jw_fini(&w);
	fclose(in);
	fclose(out);
	return 0;
}
