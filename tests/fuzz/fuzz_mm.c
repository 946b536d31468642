/* SPDX-License-Identifier: MIT */
/* fuzz_mm.c — a request record (one JSON object) through the record
 * reader, kvp_mm_expand and the output writer (kvp_mm_expand_record), with
 * the bytes:1000 dims tokenizer, which also encodes videos' timestamp
 * texts. Image and video paths are not followed: the fuzzer would otherwise
 * read arbitrary files; video data: URLs are over the size limit (no
 * FFmpeg). The tokenizer, the expander, the JSON tokener and the output
 * file are set up once, in LLVMFuzzerInitialize, and reused as mm-expand
 * reuses them across records. */
#define _GNU_SOURCE /* memmem */
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonw.h"
#include "common/ndjson.h"
#include "mm/mm.h"
#include "mm/mm_io.h"
#include "mm/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct json_tokener *tok;
static struct kvp_tokenizer *tz;
static struct kvp_mm *mm;
static FILE *out;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct kvp_diag d;
	/* videos: metadata only (a data: URL is over the 0-byte limit) */
	struct kvp_mm_opts o = {
	    16,       0,    KVP_MM_ENCODED, 1u << 26,
	    1u << 20, NULL, NULL,           KVP_MM_VIDEO_ROUND_HALF_EVEN,
	    0};

	(void)argc, (void)argv;
	tok = json_tokener_new();
	tz = kvp_tok_new(NULL, &d);
	out = fopen("/dev/null", "w");
	if (tok == NULL || tz == NULL || out == NULL ||
	    kvp_tok_add_kimi_specials(tz, &d) != 0)
		abort();
	kvp_tok_set_bytes(tz, 1000);
	o.tok = tz;
	o.text_tok = tz;
	mm = kvp_mm_new(&o);
	if (mm == NULL)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *rec;
	struct kvp_diag d;
	struct kvp_mm_reqbuf b;
	struct kvp_jw w;

	if (memmem(data, size, "path", 4) != NULL)
		return 0;
	kvp_jw_init(&w, out, 0, 0);
	kvp_mm_reqbuf_init(&b);
	rec = kvp_json_parse_object(tok, (const char *)data, size, &d);
	if (rec != NULL) {
		(void)kvp_mm_expand_record(mm, &b, rec, &w, &d);
		json_object_put(rec);
	}
	kvp_mm_reqbuf_fini(&b);
	kvp_jw_fini(&w);
	return 0;
}
