/* SPDX-License-Identifier: MIT */
/*
 * decode_in.c — kv-decode's input framing; see decode_in.h for the
 * contract.
 */
#define _GNU_SOURCE /* memmem */
#include <json.h>

#include <stdlib.h>
#include <string.h>

#include "events/decode_in.h"
#include "common/ndjson.h"

enum kvp_din_format
kvp_din_detect(FILE *f)
{
	int ch = getc(f);

	if (ch == EOF)
		return KVP_DIN_JSONL;
	ungetc(ch, f);
	if (ch == 0x00)
		return KVP_DIN_FRAMES;
	if ((ch >= 0x80 && ch <= 0x9f) || (ch >= 0xdc && ch <= 0xdf))
		return KVP_DIN_RAW;
	return KVP_DIN_JSONL;
}

/* See decode_in.h. */
int
kvp_din_find_payload(const char *line, size_t len, size_t *s, size_t *e)
{
	static const char key[] = "\"payload_b64\"";
	size_t i = 0;
	int depth = 0;

	while (i < len) {
		char ch = line[i];

		if (ch == '"') {
			size_t j = i + 1, k;
			const char *q;

			while (j < len && line[j] != '"')
				j += line[j] == '\\' ? 2 : 1;
			if (j >= len)
				return 0;
			if (depth != 1 || j - i + 1 != sizeof key - 1 ||
			    memcmp(line + i, key, sizeof key - 1) != 0) {
				i = j + 1;
				continue;
			}
			for (k = j + 1;
			     k < len && (line[k] == ' ' || line[k] == '\t');
			     k++)
				;
			if (k >= len || line[k] != ':')
				return 0;
			for (k++;
			     k < len && (line[k] == ' ' || line[k] == '\t');
			     k++)
				;
			if (k >= len || line[k] != '"')
				return 0;
			q = memchr(line + k + 1, '"', len - k - 1);
			if (q == NULL)
				return 0;
			*s = k + 1;
			*e = (size_t)(q - line);
			return memmem(q, len - *e, key, sizeof key - 1) == NULL;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']')
			depth--;
		i++;
	}
	return 0;
}

int
kvp_din_capture(struct json_object *o, struct kvp_din_capture *cap,
                struct kvp_diag *d)
{
	struct json_object *v;

	cap->has_seq = 0;
	if (kvp_json_req_u64(o, "seq", KVP_U64_STRING, &cap->seq, d) != 0)
		return -1;
	cap->has_seq = 1;
	cap->topic = "";
	cap->topic_len = 0;
	if (kvp_json_get(o, "topic", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0, "\"topic\" is not a string");
		cap->topic = json_object_get_string(v);
		cap->topic_len = (size_t)json_object_get_string_len(v);
	}
	cap->source = NULL;
	if (kvp_json_opt_str(o, "source", &cap->source, d) != 0)
		return -1;
	if (kvp_json_opt_u64(o, "worker_id", KVP_U64_HASH, &cap->worker, NULL,
	                     d) != 0)
		return -1;
	cap->has_plen = 0;
	if (kvp_json_opt_u64(o, "payload_len", 0, &cap->plen, &cap->has_plen,
	                     d) != 0)
		return -1;
	if (kvp_json_req_str(o, "payload_b64", &cap->b64, d) != 0)
		return -1;
	json_object_object_get_ex(o, "payload_b64", &v);
	cap->b64_len = (size_t)json_object_get_string_len(v);
	return 0;
}

/* ---- frames ----------------------------------------------------------- */

static uint32_t
get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/* Reads n bytes into dst (or discards them when dst is NULL). Returns the
 * number read (short at end of input) or -1 on a read error. */
static long long
read_exact(FILE *f, unsigned char *dst, size_t n)
{
	unsigned char tmp[8192];
	size_t done = 0;

	while (done < n) {
		size_t want = n - done, got;

		if (dst == NULL && want > sizeof tmp)
			want = sizeof tmp;
		got = fread(dst ? dst + done : tmp, 1, want, f);
		done += got;
		if (got < want) {
			if (ferror(f))
				return -1;
			break;
		}
	}
	return (long long)done;
}

void
kvp_din_frames_init(struct kvp_din_frames *r, FILE *f, size_t max_frame)
{
	memset(r, 0, sizeof *r);
	r->f = f;
	r->max_frame = max_frame;
}

void
kvp_din_frames_fini(struct kvp_din_frames *r)
{
	for (int i = 0; i < 4; i++)
		free(r->fr[i].p);
	memset(r, 0, sizeof *r);
}

int
kvp_din_frames_next(struct kvp_din_frames *r, struct kvp_din_msg *m,
                    struct kvp_diag *d)
{
	struct kvp_din_frame *fr = r->fr;

	for (;;) {
		unsigned char hdr[4];
		uint32_t nf, i;
		long long got;
		const struct kvp_din_frame *topic, *seq, *payload;

		memset(m, 0, sizeof *m);
		m->start = r->off;
		got = read_exact(r->f, hdr, 4);
		if (got < 0)
			return KVP_DIN_IOERR;
		if (got == 0)
			return KVP_DIN_EOF;
		if (got < 4)
			goto truncated;
		r->off += 4;
		nf = get_be32(hdr);
		if (nf > KVP_DIN_MAX_FRAMES) {
			kvp_diag_set(d, 0,
			             "frame count %u is implausible (over %d); "
			             "cannot resynchronise",
			             nf, KVP_DIN_MAX_FRAMES);
			return KVP_DIN_FATAL;
		}
		for (i = 0; i < nf; i++) {
			uint32_t flen;

			got = read_exact(r->f, hdr, 4);
			if (got < 0)
				return KVP_DIN_IOERR;
			if (got < 4)
				goto truncated;
			r->off += 4;
			flen = get_be32(hdr);
			if (i < 4 && flen <= r->max_frame) {
				if (fr[i].cap < flen) {
					void *p = realloc(fr[i].p, flen);

					if (p == NULL)
						return KVP_DIN_NOMEM;
					fr[i].p = p;
					fr[i].cap = flen;
				}
				got = read_exact(r->f, fr[i].p, flen);
				fr[i].len = flen;
			} else {
				got = read_exact(r->f, NULL, flen);
				if (i < 4)
					fr[i].len = SIZE_MAX;
			}
			if (got < 0)
				return KVP_DIN_IOERR;
			if ((uint64_t)got < flen)
				goto truncated;
			r->off += flen;
		}
		if (nf == 3) {
			topic = &fr[0];
			seq = &fr[1];
			payload = &fr[2];
		} else if (nf == 4 && fr[0].len == 0) {
			topic = &fr[1];
			seq = &fr[2];
			payload = &fr[3];
			m->source = "replay";
		} else {
			kvp_diag_set(
			    d, 0,
			    "message has %u frame(s); expected 3 (topic, "
			    "seq, payload) or 4 with an empty first "
			    "frame (replay)",
			    nf);
			return KVP_DIN_BAD;
		}
		if (seq->len != 8) {
			kvp_diag_set(
			    d, 0, "sequence frame has %zu bytes; needs 8",
			    seq->len == SIZE_MAX ? (size_t)0 : seq->len);
			return KVP_DIN_BAD;
		}
		m->has_seq = 1;
		m->seq =
		    (uint64_t)get_be32(seq->p) << 32 | get_be32(seq->p + 4);
		if (topic->len == SIZE_MAX || payload->len == SIZE_MAX) {
			kvp_diag_set(d, 0,
			             "frame larger than %zu bytes "
			             "(--max-line-bytes)",
			             r->max_frame);
			return KVP_DIN_BAD;
		}
		if (payload->len == 0) {
			if (m->seq == UINT64_MAX)
				continue; /* end of a replay */
			kvp_diag_set(d, 0, "empty payload");
			return KVP_DIN_BAD;
		}
		m->topic = (const char *)topic->p;
		m->topic_len = topic->len;
		if (m->topic == NULL)
			m->topic = "";
		m->payload = payload->p;
		m->len = payload->len;
		return KVP_DIN_MSG;
	}
truncated:
	kvp_diag_set(d, 0, "truncated message at end of input");
	return KVP_DIN_FATAL;
}
