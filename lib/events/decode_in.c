/* SPDX-License-Identifier: MIT */
/*
 * decode_in.c — kv-decode's input framing: the three framings behind one
 * reader; see decode_in.h for the contract.
 */
#define _GNU_SOURCE /* memmem */
#include <json.h>

#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/jscan.h"
#include "common/jskel.h"
#include "common/jsonw.h"
#include "common/ndjson.h"
#include "common/util.h"
#include "events/decode_in.h"
#include "events/wire_stream.h"

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
		if (cap->topic_len > KVP_DIN_MAX_TOPIC)
			return kvp_diag_set(
			    d, 0,
			    "\"topic\" is %zu bytes; at most %d "
			    "are accepted",
			    cap->topic_len, KVP_DIN_MAX_TOPIC);
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

/* Reads frame i of flen bytes into its buffer (the first four frames,
 * when not too large) or past it. Returns KVP_DIN_MSG, KVP_DIN_EOF when
 * the input ends inside it, KVP_DIN_IOERR or KVP_DIN_NOMEM. */
static int
read_frame(struct kvp_din_frames *r, uint32_t i, uint32_t flen)
{
	struct kvp_din_frame *fr = &r->fr[i < 4 ? i : 0];
	long long got;

	if (i < 4 && flen <= r->max_frame) {
		if (fr->cap < flen) {
			void *p = realloc(fr->p, flen);

			if (p == NULL)
				return KVP_DIN_NOMEM;
			fr->p = p;
			fr->cap = flen;
		}
		got = read_exact(r->f, fr->p, flen);
		fr->len = flen;
	} else {
		got = read_exact(r->f, NULL, flen);
		if (i < 4)
			fr->len = SIZE_MAX;
	}
	if (got < 0)
		return KVP_DIN_IOERR;
	if ((uint64_t)got < flen)
		return KVP_DIN_EOF;
	r->off += flen;
	return KVP_DIN_MSG;
}

/* Reads a u32 BE length. Returns KVP_DIN_MSG, KVP_DIN_EOF (no byte at
 * all), KVP_DIN_FATAL (a truncated one) or KVP_DIN_IOERR. */
static int
read_u32(struct kvp_din_frames *r, uint32_t *v)
{
	unsigned char hdr[4];
	long long got = read_exact(r->f, hdr, 4);

	if (got < 0)
		return KVP_DIN_IOERR;
	if (got < 4)
		return got == 0 ? KVP_DIN_EOF : KVP_DIN_FATAL;
	r->off += 4;
	*v = get_be32(hdr);
	return KVP_DIN_MSG;
}

/* Reads one message's frames; *nf gets their number. Returns
 * KVP_DIN_MSG, KVP_DIN_EOF, KVP_DIN_FATAL (d set), KVP_DIN_IOERR or
 * KVP_DIN_NOMEM. */
static int
read_message(struct kvp_din_frames *r, uint32_t *nf, struct kvp_diag *d)
{
	uint32_t i, flen;
	int rc = read_u32(r, nf);

	if (rc == KVP_DIN_EOF || rc == KVP_DIN_IOERR)
		return rc;
	if (rc != KVP_DIN_MSG)
		goto truncated;
	if (*nf > KVP_DIN_MAX_FRAMES) {
		kvp_diag_set(d, 0,
		             "frame count %u is implausible (over %d); cannot "
		             "resynchronise",
		             *nf, KVP_DIN_MAX_FRAMES);
		return KVP_DIN_FATAL;
	}
	for (i = 0; i < *nf; i++) {
		rc = read_u32(r, &flen);
		if (rc == KVP_DIN_MSG)
			rc = read_frame(r, i, flen);
		if (rc == KVP_DIN_IOERR || rc == KVP_DIN_NOMEM)
			return rc;
		if (rc != KVP_DIN_MSG)
			goto truncated;
	}
	return KVP_DIN_MSG;
truncated:
	kvp_diag_set(d, 0, "truncated message at end of input");
	return KVP_DIN_FATAL;
}

/* The message in the frames just read: KVP_DIN_MSG, KVP_DIN_BAD, or
 * KVP_DIN_EOF for a replay's end marker (skipped). */
static int
take_message(struct kvp_din_frames *r, uint32_t nf, struct kvp_din_msg *m,
             struct kvp_diag *d)
{
	const struct kvp_din_frame *fr = r->fr, *topic, *seq, *payload;

	if (nf != 3 && !(nf == 4 && fr[0].len == 0)) {
		kvp_diag_set(d, 0,
		             "message has %u frame(s); expected 3 (topic, seq, "
		             "payload) or 4 with an empty first frame (replay)",
		             nf);
		return KVP_DIN_BAD;
	}
	if (nf == 4)
		m->source = "replay";
	topic = &fr[nf - 3];
	seq = &fr[nf - 2];
	payload = &fr[nf - 1];
	if (seq->len != 8) {
		kvp_diag_set(d, 0, "sequence frame has %zu bytes; needs 8",
		             seq->len == SIZE_MAX ? (size_t)0 : seq->len);
		return KVP_DIN_BAD;
	}
	m->has_seq = 1;
	m->seq = (uint64_t)get_be32(seq->p) << 32 | get_be32(seq->p + 4);
	if (topic->len == SIZE_MAX || payload->len == SIZE_MAX) {
		if (r->max_flag != NULL)
			kvp_diag_set(d, 0, "frame larger than %zu bytes (%s)",
			             r->max_frame, r->max_flag);
		else
			kvp_diag_set(d, 0, "frame larger than %zu bytes",
			             r->max_frame);
		return KVP_DIN_BAD;
	}
	if (payload->len == 0) {
		if (m->seq == UINT64_MAX)
			return KVP_DIN_EOF; /* the end of a replay */
		kvp_diag_set(d, 0, "empty payload");
		return KVP_DIN_BAD;
	}
	if (topic->len > KVP_DIN_MAX_TOPIC) {
		kvp_diag_set(d, 0,
		             "topic frame is %zu bytes; at most %d are "
		             "accepted",
		             topic->len, KVP_DIN_MAX_TOPIC);
		return KVP_DIN_BAD;
	}
	m->topic = topic->p != NULL ? (const char *)topic->p : "";
	m->topic_len = topic->len;
	m->payload = payload->p;
	m->len = payload->len;
	return KVP_DIN_MSG;
}

int
kvp_din_frames_next(struct kvp_din_frames *r, struct kvp_din_msg *m,
                    struct kvp_diag *d)
{
	for (;;) {
		uint32_t nf;
		int rc;

		memset(m, 0, sizeof *m);
		m->start = r->off;
		rc = read_message(r, &nf, d);
		if (rc != KVP_DIN_MSG)
			return rc;
		rc = take_message(r, nf, m, d);
		if (rc != KVP_DIN_EOF)
			return rc;
	}
}

/* ---- one reader over the three framings ------------------------------- */

int
kvp_din_open(struct kvp_din *r, FILE *f, const struct kvp_din_opts *o)
{
	memset(r, 0, sizeof *r);
	r->o = *o;
	r->f = f;
	if (r->o.format == KVP_DIN_AUTO)
		r->o.format = kvp_din_detect(f);
	switch (r->o.format) {
	case KVP_DIN_FRAMES:
		kvp_din_frames_init(&r->frames, f, o->max_bytes);
		r->frames.max_flag = o->max_flag;
		return 0;
	case KVP_DIN_RAW:
		r->stream = kvp_wire_stream_new(f, o->max_bytes, o->max_flag);
		return r->stream == NULL ? -1 : 0;
	default:
		r->o.format = KVP_DIN_JSONL;
		kvp_jskel_init(&r->skel);
		kvp_lines_init(&r->lines, f, o->max_bytes);
		r->tok = json_tokener_new();
		return r->tok == NULL ? -1 : 0;
	}
}

void
kvp_din_close(struct kvp_din *r)
{
	switch (r->o.format) {
	case KVP_DIN_FRAMES:
		kvp_din_frames_fini(&r->frames);
		break;
	case KVP_DIN_RAW:
		kvp_wire_stream_free(r->stream);
		break;
	default:
		kvp_lines_fini(&r->lines);
		if (r->tok != NULL)
			json_tokener_free(r->tok);
		break;
	}
	if (r->obj != NULL)
		json_object_put(r->obj);
	free(r->buf);
	kvp_jskel_fini(&r->skel);
	free(r->raw);
	free(r->extras);
	memset(r, 0, sizeof *r);
}

/* Loads the payload p[0, len) into w. */
static int
load(struct kvp_wire *w, const void *p, size_t len, struct kvp_din_batch *b,
     struct kvp_diag *d)
{
	b->size = len;
	if (kvp_wire_load(w, p, len, d) != 0) {
		b->stage = "msgpack";
		d->col = 0;
		return KVP_DIN_BAD;
	}
	return KVP_DIN_MSG;
}

static int
grow_buf(struct kvp_din *r, size_t need)
{
	void *p;

	if (need <= r->buf_cap)
		return 0;
	p = realloc(r->buf, need);
	if (p == NULL)
		return -1;
	r->buf = p;
	r->buf_cap = need;
	return 0;
}

/* The fast path: payload_b64 decoded straight from the line into r->buf
 * and cut out of it (it spanned [*ps, *pe)), so that json-c parses a small
 * object. Returns the payload's size, or SIZE_MAX when the line takes the
 * plain path. */
static size_t
cut_payload(struct kvp_din *r, char *line, size_t *len, size_t *ps, size_t *pe)
{
	struct kvp_diag d;
	size_t n = SIZE_MAX;

	if (!kvp_din_find_payload(line, *len, ps, pe) ||
	    grow_buf(r, kvp_base64_decoded_max(*pe - *ps)) != 0 ||
	    kvp_base64_decode(line + *ps, *pe - *ps, r->buf, &n, &d) != 0)
		return SIZE_MAX;
	memmove(line + *ps, line + *pe, *len - *pe);
	*len -= *pe - *ps;
	return n;
}

/* The payload of the capture line parsed into r->obj: fast_len bytes
 * already in r->buf, or payload_b64 decoded now. */
static int
capture_payload(struct kvp_din *r, struct kvp_wire *w,
                const struct kvp_din_capture *cap, size_t fast_len,
                struct kvp_din_batch *b, struct kvp_diag *d)
{
	size_t len = fast_len;

	if (fast_len == SIZE_MAX || cap->b64_len != 0) {
		if (grow_buf(r, kvp_base64_decoded_max(cap->b64_len)) != 0)
			return KVP_DIN_NOMEM;
		if (kvp_base64_decode(cap->b64, cap->b64_len, r->buf, &len,
		                      d) != 0) {
			char msg[sizeof d->msg];

			snprintf(msg, sizeof msg, "%s", d->msg);
			kvp_diag_set(d, 0, "payload_b64: %s", msg);
			return KVP_DIN_BAD;
		}
	}
	if (cap->has_plen && cap->plen != len) {
		kvp_diag_set(d, 0,
		             "payload_len is %llu but payload_b64 decodes to "
		             "%zu bytes",
		             (unsigned long long)cap->plen, len);
		return KVP_DIN_BAD;
	}
	return load(w, r->buf, len, b, d);
}

/* kv-capture's {"rec":"lost",...} line: the range it names shows up as a
 * gap in the seqs around it, so the line itself carries no batch. */
static int
is_lost_line(const char *line, size_t len)
{
	static const char pre[] = "{\"rec\":\"lost\"";

	return len >= sizeof pre - 1 && memcmp(line, pre, sizeof pre - 1) == 0;
}

/* kv-capture's {"rec":"restart",...} line: the publisher started again. */
static int
is_restart_line(const char *line, size_t len)
{
	static const char pre[] = "{\"rec\":\"restart\"";

	return len >= sizeof pre - 1 && memcmp(line, pre, sizeof pre - 1) == 0;
}

/* A restart line: the stream it names (topic, worker_id) in *b. */
static int
restart_line(struct kvp_din *r, char *line, size_t len, struct kvp_din_batch *b,
             struct kvp_diag *d)
{
	struct json_object *v;

	if (r->obj != NULL)
		json_object_put(r->obj);
	r->obj = kvp_json_parse_object(r->tok, line, len, d);
	if (r->obj == NULL)
		return KVP_DIN_BAD;
	b->whole = 1;
	b->capture = r->obj;
	d->col = 0;
	if (kvp_json_get(r->obj, "topic", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return kvp_diag_set(d, 0, "\"topic\" is not a string"),
			       KVP_DIN_BAD;
		b->topic = json_object_get_string(v);
		b->topic_len = (size_t)json_object_get_string_len(v);
		if (b->topic_len > KVP_DIN_MAX_TOPIC)
			return kvp_diag_set(
			           d, 0,
			           "\"topic\" is %zu bytes; at most %d "
			           "are accepted",
			           b->topic_len, KVP_DIN_MAX_TOPIC),
			       KVP_DIN_BAD;
	}
	if (kvp_json_opt_u64(r->obj, "worker_id", KVP_U64_HASH, &b->worker,
	                     NULL, d) != 0)
		return KVP_DIN_BAD;
	return KVP_DIN_RESTART;
}

/* ---- capture lines without a big tree -------------------------------------
 * json-c parses a skeleton of the line: the values of the capture-line keys
 * as they are (containers, whose type alone counts, empty), the other
 * members' small values as they are, and their container values, when
 * written as json-c would write them back (compact, no escapes, no
 * objects, no minus sign, integers under 16 digits), as a 0 standing for
 * their text, which x_capture copies. */

static const char *const capture_keys[] = {
    "seq", "topic", "source", "payload_len", "payload_b64", "worker_id", NULL};

static int
is_capture_key(const char *k, size_t n)
{
	for (const char *const *kk = capture_keys; *kk != NULL; kk++)
		if (strlen(*kk) == n && memcmp(*kk, k, n) == 0)
			return 1;
	return 0;
}

/* Nesting left for a member's value (the line is one level). */
#define MEMBER_DEPTH (KVP_JSON_MAX_DEPTH - 1)

/* What json-c writes back as the same text (kvp_jw_json()). */
#define NOT_CANONICAL                                                          \
	(KVP_JSCAN_WS | KVP_JSCAN_ESC | KVP_JSCAN_NONASCII |                   \
	 KVP_JSCAN_OBJECT | KVP_JSCAN_NEG | KVP_JSCAN_BIGINT)

/* An extra member's key k: earlier text-kept values of it are dropped
 * (json-c keeps the last value). */
static void
raw_supersede(struct kvp_din *r, const char *line, const char *key, size_t klen)
{
	for (size_t i = 0; i < r->n_raw; i++)
		if (r->raw[i].klen == klen &&
		    memcmp(line + r->raw[i].key, key, klen) == 0)
			r->raw[i].dead = 1;
}

/* One member's value at the cursor into the skeleton (kvp_jskel_build()). */
static int
sk_value(struct kvp_jskel *s, struct kvp_jscan *c, const char *key, size_t klen,
         void *ctx)
{
	struct kvp_din *r = ctx;
	const char *line = c->s;
	size_t at = c->i;
	int ch = kvp_jscan_peek(c), known = is_capture_key(key, klen);

	c->flags = 0;
	if (kvp_jscan_check(c, MEMBER_DEPTH) != KVP_JSCAN_OK)
		return -1;
	if (!known)
		raw_supersede(r, line, key, klen);
	if (ch != '[' && ch != '{')
		return kvp_jskel_put(s, line + at, c->i - at);
	if (known)
		return kvp_jskel_put(s, ch == '[' ? "[]" : "{}", 2);
	if ((c->flags & NOT_CANONICAL) || r->n_raw == KVP_DIN_MAX_RAW)
		return kvp_jskel_put(s, line + at, c->i - at);
	if (r->raw == NULL &&
	    (r->raw = calloc(KVP_DIN_MAX_RAW, sizeof *r->raw)) == NULL)
		return -2;
	r->raw[r->n_raw++] =
	    (struct kvp_din_raw){(size_t)(key - line), klen, at, c->i - at, 0};
	return kvp_jskel_put(s, "0", 1);
}

/* The capture line (payload_b64 cut out) into r->obj: 0, -1 with d set,
 * or -2 on OOM. */
static int
parse_capture(struct kvp_din *r, const char *line, size_t len,
              struct kvp_diag *d)
{
	int rc;

	r->n_raw = 0;
	switch (len < r->skel.min ? 0 : kvp_json_check_line(line, len, d)) {
	case -1:
		return -1;
	case 1:
		rc = kvp_jskel_build(&r->skel, line, len, sk_value, r);
		if (rc == -2)
			return -2;
		if (rc == 0 &&
		    (r->obj = kvp_json_parse_object(r->tok, r->skel.buf,
		                                    r->skel.len, d)) != NULL)
			return 0;
		break;
	default:
		break;
	}
	r->n_raw = 0;
	r->obj = kvp_json_parse_object(r->tok, line, len, d);
	return r->obj != NULL ? 0 : -1;
}

static const struct kvp_din_raw *
find_raw(const struct kvp_din *r, const char *line, const char *k)
{
	size_t n = strlen(k);

	for (size_t i = 0; i < r->n_raw; i++)
		if (!r->raw[i].dead && r->raw[i].klen == n &&
		    memcmp(line + r->raw[i].key, k, n) == 0)
			return &r->raw[i];
	return NULL;
}

/* The capture line's extra members rendered into r->extras (length 0:
 * none). 0, or -2 on OOM. */
static int
render_extras(struct kvp_din *r, const char *line)
{
	struct kvp_jw t;
	const char *p;
	size_t n;
	int any = 0, st = 0;

	r->extras_len = 0;
	kvp_jw_init(&t, NULL, r->hash_strings, 0);
	json_object_object_foreach(r->obj, k, v)
	{
		const struct kvp_din_raw *x;

		if (is_capture_key(k, strlen(k)))
			continue;
		if (!any)
			kvp_jw_obj_begin(&t);
		any = 1;
		kvp_jw_key(&t, k);
		if ((x = find_raw(r, line, k)) != NULL)
			kvp_jw_raw_value(&t, line + x->val, x->vlen);
		else
			kvp_jw_json(&t, v);
	}
	if (any) {
		kvp_jw_obj_end(&t);
		p = kvp_jw_pending(&t, &n);
		if (t.failed ||
		    kvp_grow(&r->extras, &r->extras_cap, n + 1, 1) != 0) {
			st = -2;
		} else {
			memcpy(r->extras, p, n);
			r->extras_len = n;
		}
	}
	kvp_jw_fini(&t);
	return st;
}

/* One non-blank capture line. */
static int
capture_line(struct kvp_din *r, struct kvp_wire *w, char *line, size_t len,
             struct kvp_din_batch *b, struct kvp_diag *d)
{
	struct kvp_din_capture cap = {0};
	size_t ps = 0, pe = 0, fast_len = cut_payload(r, line, &len, &ps, &pe);
	int rc;

	if (r->obj != NULL)
		json_object_put(r->obj);
	r->obj = NULL;
	rc = parse_capture(r, line, len, d);
	if (rc == -2)
		return KVP_DIN_NOMEM;
	if (rc != 0) {
		/* a column past the cut counts the payload back in */
		if (fast_len != SIZE_MAX && d->col > (long)ps)
			d->col += (long)(pe - ps);
		return KVP_DIN_BAD;
	}
	b->whole = 1;
	b->capture = r->obj;
	b->track = 1;
	cap.worker = r->o.worker;
	if (kvp_din_capture(r->obj, &cap, d) != 0) {
		b->has_seq = cap.has_seq;
		b->seq = cap.seq;
		d->col = 0;
		return KVP_DIN_BAD;
	}
	if (render_extras(r, line) != 0)
		return KVP_DIN_NOMEM;
	b->extras = r->extras_len > 0 ? r->extras : NULL;
	b->extras_len = r->extras_len;
	b->has_seq = 1;
	b->seq = cap.seq;
	b->topic = cap.topic;
	b->topic_len = cap.topic_len;
	b->source = cap.source;
	b->worker = cap.worker;
	return capture_payload(r, w, &cap, fast_len, b, d);
}

static int
next_line(struct kvp_din *r, struct kvp_wire *w, struct kvp_din_batch *b,
          struct kvp_diag *d)
{
	for (;;) {
		char *line;
		size_t len;
		int rc = kvp_lines_next(&r->lines, &line, &len);

		if (rc == KVP_LINE_EOF)
			return KVP_DIN_EOF;
		b->line = r->lines.lineno;
		if (rc == KVP_LINE_IOERR)
			return KVP_DIN_IOERR;
		if (rc == KVP_LINE_TOO_LONG) {
			b->read = 1;
			if (r->o.max_flag != NULL)
				kvp_diag_set(d, 0,
				             "line too long (over %zu bytes; "
				             "see %s)",
				             r->o.max_bytes, r->o.max_flag);
			else
				kvp_diag_set(d, 0,
				             "line too long (over %zu bytes)",
				             r->o.max_bytes);
			return KVP_DIN_BAD;
		}
		if (is_restart_line(line, len)) {
			b->read = 1;
			return restart_line(r, line, len, b, d);
		}
		if (!kvp_line_is_blank(line, len) && !is_lost_line(line, len)) {
			b->read = 1;
			return capture_line(r, w, line, len, b, d);
		}
	}
}

static int
next_frames(struct kvp_din *r, struct kvp_wire *w, struct kvp_din_batch *b,
            struct kvp_diag *d)
{
	struct kvp_din_msg m;
	int rc = kvp_din_frames_next(&r->frames, &m, d);

	if (rc == KVP_DIN_EOF || rc == KVP_DIN_IOERR || rc == KVP_DIN_NOMEM)
		return rc;
	b->read = 1;
	b->stage = "frame";
	b->at_offset = 1;
	b->offset = m.start;
	b->has_seq = m.has_seq;
	b->seq = m.seq;
	if (rc != KVP_DIN_MSG) {
		d->col = 0;
		return rc;
	}
	b->topic = m.topic;
	b->topic_len = m.topic_len;
	b->source = m.source;
	b->track = 1;
	b->whole = 1;
	return load(w, m.payload, m.len, b, d);
}

static int
next_raw(struct kvp_din *r, struct kvp_wire *w, struct kvp_din_batch *b,
         struct kvp_diag *d)
{
	uint64_t off = 0;
	size_t size = 0;
	int rc = kvp_wire_stream_next(r->stream, w, &off, &size, d);

	b->stage = "msgpack";
	b->at_offset = 1;
	b->offset = off;
	if (rc == 0)
		return KVP_DIN_EOF;
	if (rc == -2)
		return KVP_DIN_IOERR;
	b->read = 1;
	if (rc < 0) {
		d->col = 0;
		return KVP_DIN_FATAL; /* cannot resynchronise */
	}
	b->has_seq = 1;
	b->seq = r->ordinal++;
	b->size = size;
	b->whole = 1;
	return KVP_DIN_MSG;
}

int
kvp_din_next(struct kvp_din *r, struct kvp_wire *w, struct kvp_din_batch *b,
             struct kvp_diag *d)
{
	memset(b, 0, sizeof *b);
	b->stage = "line";
	b->topic = "";
	b->worker = r->o.worker;
	switch (r->o.format) {
	case KVP_DIN_FRAMES:
		return next_frames(r, w, b, d);
	case KVP_DIN_RAW:
		return next_raw(r, w, b, d);
	default:
		return next_line(r, w, b, d);
	}
}
