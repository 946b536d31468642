/* SPDX-License-Identifier: MIT */
/* fuzz_decode_in.c — bytes through kv-decode's input framing: format
 * detection, the frame-message reader (with a small frame limit so the
 * oversize path runs too) and the capture-line payload_b64 locator.
 *
 * Invariants checked (abort() otherwise): the reader never reports more
 * bytes than the input holds, a message's payload lies inside its frame
 * buffer, and a located payload_b64 value lies inside the line. Each line
 * is also read as a capture line, both ways with the first byte's low bit
 * as --hash-strings: the reader (scanner verdicts, the skeleton json-c
 * parses, extra members copied as text) must say what json-c on the whole
 * line says, the same message and column or the same x_capture. */
#define _GNU_SOURCE /* fmemopen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "common/base64.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "events/decode_in.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const known[] = {
    "seq", "topic", "source", "payload_len", "payload_b64", "worker_id", NULL};

/* The extra members of o as kv-decode wrote them before the skeleton. */
static char *
oracle_extras(struct json_object *o, int hash_strings, size_t *len)
{
	struct kvp_jw t;
	const char *p;
	char *out = NULL;
	int any = 0;

	kvp_jw_init(&t, NULL, hash_strings, 0);
	json_object_object_foreach(o, k, v)
	{
		const char *const *kk;

		for (kk = known; *kk != NULL && strcmp(*kk, k) != 0; kk++)
			;
		if (*kk != NULL)
			continue;
		if (!any)
			kvp_jw_obj_begin(&t);
		any = 1;
		kvp_jw_key(&t, k);
		kvp_jw_json(&t, v);
	}
	*len = 0;
	if (any) {
		kvp_jw_obj_end(&t);
		p = kvp_jw_pending(&t, len);
		out = malloc(*len + 1);
		if (out == NULL)
			abort();
		memcpy(out, p, *len);
	}
	kvp_jw_fini(&t);
	return out;
}

/* json-c on the whole line (payload_b64 cut out as the reader cuts it):
 * 0 with *extras, or -1 with d. */
static int
oracle(struct json_tokener *tok, char *line, size_t len, int hash_strings,
       char **extras, size_t *elen, struct kvp_diag *d)
{
	struct kvp_din_capture cap = {0};
	size_t ps, pe, n = len, got;
	unsigned char *buf = NULL;
	struct json_object *o;
	int cut = 0;

	if (kvp_din_find_payload(line, len, &ps, &pe) &&
	    (buf = malloc(kvp_base64_decoded_max(pe - ps) + 1)) != NULL &&
	    kvp_base64_decode(line + ps, pe - ps, buf, &got, d) == 0) {
		memmove(line + ps, line + pe, len - pe);
		n = len - (pe - ps);
		line[n] = '\0';
		cut = 1;
	}
	free(buf);
	kvp_diag_clear(d);
	o = kvp_json_parse_object(tok, line, n, d);
	if (o == NULL) {
		if (cut && d->col > (long)ps)
			d->col += (long)(pe - ps);
		return -1;
	}
	if (kvp_din_capture(o, &cap, d) != 0) {
		d->col = 0;
		json_object_put(o);
		return -1;
	}
	*extras = oracle_extras(o, hash_strings, elen);
	json_object_put(o);
	return 0;
}

/* One line read by the reader and by the oracle. */
static void
check_line(struct json_tokener *tok, const char *line, size_t len,
           int hash_strings)
{
	struct kvp_din_opts o = {KVP_DIN_JSONL, 1 << 20, NULL, 0};
	char *a = malloc(len + 2), *b = malloc(len + 2), *ex = NULL;
	struct kvp_din_batch bt;
	struct kvp_diag d1, d2;
	struct kvp_wire *w = kvp_wire_new();
	struct kvp_din r;
	size_t elen = 0;
	FILE *f;
	int rc, want;

	if (a == NULL || b == NULL || w == NULL)
		abort();
	memcpy(a, line, len);
	a[len] = '\n';
	memcpy(b, line, len);
	b[len] = '\0';
	f = fmemopen(a, len + 1, "r");
	if (f == NULL || kvp_din_open(&r, f, &o) != 0)
		abort();
	r.hash_strings = hash_strings;
	r.skel.min = 0; /* every line takes the skeleton path */
	kvp_diag_clear(&d1);
	rc = kvp_din_next(&r, w, &bt, &d1);
	want = oracle(tok, b, len, hash_strings, &ex, &elen, &d2);
	if (rc == KVP_DIN_NOMEM || rc == KVP_DIN_IOERR)
		abort();
	if (want < 0 && (rc != KVP_DIN_BAD || strcmp(d1.msg, d2.msg) != 0 ||
	                 d1.col != d2.col))
		abort();
	/* after the capture fields, only the payload can go wrong */
	if (want == 0 && rc == KVP_DIN_BAD &&
	    strcmp(bt.stage, "msgpack") != 0 &&
	    strncmp(d1.msg, "payload", 7) != 0)
		abort();
	if (want == 0 && (bt.extras_len != elen ||
	                  (elen > 0 && memcmp(bt.extras, ex, elen) != 0)))
		abort();
	free(ex);
	kvp_din_close(&r);
	kvp_wire_free(w);
	fclose(f);
	free(a);
	free(b);
}

/* Every line of data (after its first byte) as a capture line, read alone
 * (so a byte order mark, skipped in a first line, is left out here). */
static void
check_lines(const uint8_t *data, size_t size)
{
	struct json_tokener *tok = json_tokener_new();
	const char *p = (const char *)data + 1,
	           *end = (const char *)data + size;

	if (tok == NULL)
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		if (n > 0 && p[n - 1] != '\r' && !kvp_line_is_blank(p, n) &&
		    memchr(p, '\0', n) == NULL &&
		    !(n >= 13 && memcmp(p, "{\"rec\":\"lost\"", 13) == 0) &&
		    !(n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0))
			check_line(tok, p, n, data[0] & 1);
		p += n + 1;
	}
	json_tokener_free(tok);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kvp_din_frames r;
	struct kvp_din_msg m;
	struct kvp_diag d;
	size_t s = 0, e = 0;
	FILE *f;
	int rc, n = 0;

	if (kvp_din_find_payload((const char *)data, size, &s, &e) &&
	    (s > e || e > size))
		abort();
	if (size == 0)
		return 0;
	check_lines(data, size);
	f = fmemopen((void *)data, size, "rb");
	if (f == NULL)
		return 0;
	(void)kvp_din_detect(f);
	kvp_din_frames_init(&r, f, 256);
	do {
		rc = kvp_din_frames_next(&r, &m, &d);
		if (r.off > size || m.start > size)
			abort();
		if (rc == KVP_DIN_MSG && (m.len == 0 || m.len > 256 ||
		                          m.topic == NULL || m.payload == NULL))
			abort();
	} while ((rc == KVP_DIN_MSG || rc == KVP_DIN_BAD) && ++n < 1000);
	kvp_din_frames_fini(&r);
	fclose(f);
	return 0;
}
