/* SPDX-License-Identifier: MIT */
/* fuzz_cap_order.c — kv-capture's per-stream order (lib/capture/cap_order.c)
 * driven directly, without sockets: one or two streams built by hand, the
 * transport's replay callbacks replaced by stubs whose success the input
 * chooses, the lines written to an open_memstream() buffer.
 *
 * Input: 5 header bytes (flags; max_held_msgs, max_held_bytes, max_line,
 * all small so the limits are reached; the pattern of replay requests
 * that succeed), then operations of one opcode byte and a few argument
 * bytes each: a live message (seq one past the last, a small gap, a large
 * gap, a step back = a restart, or any 8-byte seq; a payload that is a
 * msgpack batch, raw bytes, empty, or about max_line so that its line
 * would be too long), a replayed message (in, below or past the range
 * asked for), a replay end marker, a replay timeout, the filled check,
 * the stop (no more replays) and messages taken at the stop unwritten.
 * The input ends as kvp_cap_finish does: pending replays end (the held
 * messages written), then kvp_cap_left_.
 *
 * Invariants checked (abort() otherwise), as kv-capture(1) and
 * capture.h state them:
 * - the output is whole lines, each one JSON object, each data line at
 *   most max_line bytes; every data line is a message the harness sent
 *   on that stream with that seq, source and payload (base64 of it);
 * - per stream, from the start or a restart line up to the next restart
 *   line (and before the stream went mixed: "written as they come"), the
 *   seqs of the data lines and the lost ranges (from <= to) are strictly
 *   increasing with no hole: each line starts one past where the one
 *   before ended (a gap is filled or written as lost), except the lost
 *   line for messages taken at the stop and not written, which only
 *   comes later; the line after a restart line starts at its first_seq;
 *   restart lines go back (first_seq <= last_seq) and number epochs 2, 3..;
 * - the counters agree with the lines: written_live and written_replay
 *   with the data lines of each source, filled with the replayed ones,
 *   lost_ranges and lost_seqs with the lost lines, epochs with the restart
 *   lines, bytes (and events, for generated batches) with the payloads;
 *   written + dups <= received <= written + dups + bad (a message is
 *   written, dropped as a duplicate, or too big, written as lost);
 * - after every operation a stream that is not replaying holds nothing,
 *   one replaying with nothing held is a --from-start replay, and at most
 *   max_held_msgs messages are held; after the finish none is.
 */
#define _GNU_SOURCE /* open_memstream */
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_internal.h"
#include "common/base64.h"
#include "common/ndjson.h"
#include "kvpipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 512
#define MAX_PAY 4096
#define NSTREAMS 2

/* A message handed to cap_order.c: a data line must be one of these. */
struct sent {
	uint32_t stream;
	uint32_t replay;
	uint64_t seq;
	uint64_t hash; /* of topic and payload */
	size_t plen;
	uint64_t events; /* UINT64_MAX: raw bytes, not counted here */
};

/* What the lines of one stream say. */
struct tally {
	int has_last, want_first;
	uint64_t last, first;
	uint64_t live, replay, lost, lost_seqs, restarts, bytes, events;
	int events_unknown;
	int went_mixed;
	size_t mixed_off; /* lines from this offset on may be unordered */
};

struct harness {
	const uint8_t *p;
	size_t n, i;
	struct kvp_cap *c;
	char *buf;
	size_t len;
	FILE *out;
	int nstreams;
	uint64_t cursor[NSTREAMS]; /* the last live seq sent */
	int dealer[NSTREAMS];      /* a replay request is open */
	int leaving;               /* taking messages at the stop */
	uint8_t ask_bits;
	unsigned ask_i;
	size_t left_off; /* where kvp_cap_left_'s lines begin */
	struct sent *sent;
	size_t nsent;
	unsigned char pay[MAX_PAY];
	struct tally t[NSTREAMS];
};

static struct harness *H;

static const char *const topics[] = {"", "kv", "kv@rank/1", "q\"\\\n\x01t"};

static unsigned
byte(struct harness *h)
{
	return h->i < h->n ? h->p[h->i++] : 0;
}

static uint64_t
fnv(uint64_t x, const void *v, size_t n)
{
	const unsigned char *b = v;

	for (size_t i = 0; i < n; i++)
		x = (x ^ b[i]) * 1099511628211ULL;
	return x;
}

static int
ask_stub(struct kvp_cap *c, struct cap_stream *s, uint64_t start)
{
	int ok;

	if (c->stopping || start != s->expected)
		abort(); /* no replay at the stop; a gap starts at expected */
	if (s->replay[0] == '\0')
		return -1;
	ok = (H->ask_bits >> (H->ask_i++ & 7)) & 1;
	if (ok)
		H->dealer[s->idx] = 1;
	return ok ? 0 : -1;
}

static void
drop_stub(struct kvp_cap *c, struct cap_stream *s)
{
	(void)c;
	H->dealer[s->idx] = 0; /* the answer to it is never read */
}

static void
note_stub(void *ctx, const char *stream, const char *msg)
{
	(void)ctx;
	if (msg == NULL || msg[0] == '\0' ||
	    (stream != NULL && strncmp(stream, "tcp://", 6) != 0 &&
	     strncmp(stream, "ipc://", 6) != 0))
		abort();
}

/* A payload in h->pay of the kind the byte q says; its length, and the
 * number of events kv-capture counts in it in *events. */
static size_t
make_payload(struct harness *h, unsigned q, uint64_t *events)
{
	unsigned char *b = h->pay;
	size_t k = q & 15, n = 0, max = h->c->o.max_line;

	*events = k;
	switch (q >> 5) {
	case 0:
	case 1: /* [ts (float64), [k events], nil] */
		b[n++] = 0x93;
		b[n++] = 0xcb;
		memset(b + n, 0x41, 8);
		n += 8;
		b[n++] = (unsigned char)(0x90 | k);
		break;
	case 2: /* [ts (fixint), array16 of k] */
		b[n++] = 0x92;
		b[n++] = 0x05;
		b[n++] = 0xdc;
		b[n++] = 0;
		b[n++] = (unsigned char)k;
		break;
	case 3: /* [ts (float32), array32 of k] */
		b[n++] = 0x92;
		b[n++] = 0xca;
		memset(b + n, 0x40, 4);
		n += 4;
		b[n++] = 0xdd;
		memset(b + n, 0, 3);
		n += 3;
		b[n++] = (unsigned char)k;
		break;
	case 4: /* raw bytes of the input */
		*events = UINT64_MAX;
		for (k = q & 31; n < k && h->i < h->n;)
			b[n++] = h->p[h->i++];
		return n;
	case 5:
		*events = 0;
		return 0;
	default: /* near the size whose line is too long */
		*events = 0;
		n = max * 3 / 4 - 200 + (q & 31) * 16;
		n = n > MAX_PAY ? MAX_PAY : n;
		memset(b, 0xa5, n);
		return n;
	}
	for (size_t e = 0; e < k; e++)
		b[n++] = (unsigned char)(e + 1);
	if (q >> 5 <= 1)
		b[n++] = 0xc0;
	return n;
}

/* A live seq after h->cursor[si]: mode and argument from two bytes. */
static uint64_t
live_seq(struct harness *h, int si, unsigned a)
{
	uint64_t cur = h->cursor[si], seq = 0;

	switch (a >> 5) {
	case 0:
	case 1:
	case 2:
		return cur + 1; /* in order */
	case 3:
		return cur + 2 + (a & 7); /* a small gap */
	case 4:
		return cur + 1000 + (uint64_t)(a & 31) * 977; /* a large gap */
	case 5:
		return cur - (a & 15); /* back: a restart (or a dup) */
	case 6:
		return a & 7; /* a publisher starting again from 0 */
	default:
		for (int i = 0; i < 8; i++)
			seq = seq << 8 | byte(h);
		return seq;
	}
}

static void
record(struct harness *h, int si, int replay, uint64_t seq, const char *topic,
       size_t tlen, size_t plen, uint64_t events)
{
	struct sent *e;

	if (h->nsent == MAX_OPS)
		abort();
	e = &h->sent[h->nsent++];
	e->stream = (uint32_t)si;
	e->replay = (uint32_t)replay;
	e->seq = seq;
	e->hash = fnv(fnv(14695981039346656037ULL, topic, tlen), h->pay, plen);
	e->plen = plen;
	e->events = events;
}

static int
op_live(struct harness *h, struct cap_stream *s, unsigned op)
{
	int si = (int)s->idx;
	uint64_t seq = live_seq(h, si, byte(h)), events;
	const char *topic = topics[(op >> 4) & 3];
	size_t plen = make_payload(h, byte(h), &events);

	h->cursor[si] = seq;
	if (h->leaving) {
		kvp_cap_taken_(s, seq);
		return 0;
	}
	record(h, si, 0, seq, topic, strlen(topic), plen, events);
	return kvp_cap_live_(h->c, s, seq, (double)h->i, topic, strlen(topic),
	                     h->pay, plen);
}

/* A replayed seq: in the range asked for, below it, around its top. */
static uint64_t
replay_seq(struct harness *h, const struct cap_stream *s, unsigned a)
{
	uint64_t top = s->hi != CAP_NO_HI ? s->hi : h->cursor[s->idx];

	switch (a >> 6) {
	case 0:
		return s->expected + (a & 7);
	case 1:
		return top + (a & 7) - 3;
	case 2:
		return s->expected - 1 - (a & 7);
	default:
		return h->cursor[s->idx] + (a & 31) - 16;
	}
}

static int
op_replayed(struct harness *h, struct cap_stream *s, unsigned op)
{
	uint64_t seq = replay_seq(h, s, byte(h)), events;
	size_t plen = make_payload(h, byte(h), &events);
	const char *topic = s->has_topic ? s->topic : "";
	size_t tlen = s->has_topic ? s->topic_len : 0;

	if (op & 0x10) { /* the 4-frame shape: a topic of its own */
		topic = topics[(op >> 5) & 3];
		tlen = strlen(topic);
	}
	if (!h->dealer[s->idx] || h->leaving || seq == UINT64_MAX)
		return 0; /* no socket to read it from; an end marker */
	record(h, (int)s->idx, 1, seq, topic, tlen, plen, events);
	return kvp_cap_replayed_(h->c, s, seq, (double)h->i, topic, tlen,
	                         h->pay, plen);
}

static void
check_held(const struct kvp_cap *c, const struct cap_stream *s)
{
	if (!s->replaying && s->n != 0)
		abort();
	if (s->replaying && s->n == 0 && s->hi != CAP_NO_HI)
		abort();
	if (s->n > c->o.max_held_msgs)
		abort();
}

/* One operation; -1 on a write error (which a memstream never has). */
static int
op(struct harness *h, unsigned o)
{
	struct cap_stream *s = h->c->s[(o >> 3 & 1) % (unsigned)h->nstreams];

	switch (o & 7) {
	case 0:
	case 1:
	case 2:
		return op_live(h, s, o);
	case 3:
	case 4:
		return op_replayed(h, s, o);
	case 5: /* the end marker, or (odd) a replay timeout */
		if (!h->dealer[s->idx] || h->leaving)
			return 0;
		if (o & 0x10)
			drop_stub(h->c, s);
		return kvp_cap_replay_end_(h->c, s);
	case 6:
		return kvp_cap_replay_filled_(h->c, s);
	default:
		if (o & 0x10) /* stopping: messages are taken, not written */
			h->leaving = h->c->stopping;
		h->c->stopping = 1;
		return 0;
	}
}

static struct cap_stream *
new_stream(struct kvp_cap *c, const char *name, const char *replay, int keys)
{
	struct cap_stream *s = calloc(1, sizeof *s);

	if (s == NULL)
		abort();
	snprintf(s->name, sizeof s->name, "%s", name);
	snprintf(s->replay, sizeof s->replay, "%s", replay);
	s->idx = (uint32_t)c->n;
	s->worker = UINT64_MAX - c->n;
	s->has_worker = keys;
	s->rank = (int32_t)c->n;
	s->has_rank = keys;
	c->s[c->n++] = s;
	return s;
}

/* The session, as kvp_cap_new and kvp_cap_add make it (no libzmq). */
static struct kvp_cap *
new_cap(struct harness *h)
{
	struct kvp_cap *c = calloc(1, sizeof *c);
	unsigned f = byte(h);

	if (c == NULL || (c->s = calloc(NSTREAMS, sizeof *c->s)) == NULL)
		abort();
	c->cap = NSTREAMS;
	c->o.replay_timeout_ms = 2000;
	c->o.stop_timeout_ms = 5000;
	c->o.max_held_msgs = 1 + (byte(h) & 15);
	c->o.max_held_bytes = 48 + byte(h) * 16;
	c->o.max_line = 300 + byte(h) * 8;
	h->ask_bits = (uint8_t)byte(h);
	c->note = note_stub;
	c->ask_replay = ask_stub;
	c->drop_replay = drop_stub;
	kvp_jw_init(&c->jw, h->out, f & 0x20, 0);
	c->out = h->out;
	new_stream(c, "tcp://127.0.0.1:5557",
	           f & 1 ? "tcp://127.0.0.1:5558" : "", f & 0x10);
	h->nstreams = 1;
	if (f & 2) {
		new_stream(c, "ipc:///tmp/kv_dp1",
		           f & 4 ? "ipc:///tmp/r_dp1" : "", f & 0x10);
		h->nstreams = 2;
	}
	if ((f & 8) && c->s[0]->replay[0] != '\0') { /* --from-start */
		struct cap_stream *s = c->s[0];

		s->started = 1;
		s->expected = 0;
		s->replaying = 1;
		s->hi = CAP_NO_HI;
		h->dealer[0] = 1;
	}
	return c;
}

static const struct sent *
find_sent(const struct harness *h, uint32_t si, int replay, uint64_t seq,
          uint64_t hash, size_t plen)
{
	for (size_t i = 0; i < h->nsent; i++) {
		const struct sent *e = &h->sent[i];

		if (e->stream == si && e->replay == (uint32_t)replay &&
		    e->seq == seq && e->hash == hash && e->plen == plen)
			return e;
	}
	return NULL;
}

static uint32_t
stream_of(const struct harness *h, struct json_object *o, const char *key)
{
	const char *name;
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    (name = json_object_get_string(v)) == NULL)
		abort();
	for (int i = 0; i < h->nstreams; i++)
		if (strcmp(h->c->s[i]->name, name) == 0)
			return (uint32_t)i;
	abort();
}

static uint64_t
u64_of(struct json_object *o, const char *key)
{
	struct kvp_diag d;
	uint64_t v;

	if (kvp_json_req_u64(o, key, 0, &v, &d) != 0)
		abort();
	return v;
}

static const char *
str_of(struct json_object *o, const char *key, size_t *len)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		abort();
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

/* A data line: its seq, after checking it is a message sent. */
static uint32_t
data_line(struct harness *h, struct json_object *o, size_t len, uint64_t *seq)
{
	uint32_t si = stream_of(h, o, "endpoint");
	struct tally *t = &h->t[si];
	size_t slen, tlen, blen, plen;
	const char *src = str_of(o, "source", &slen);
	const char *topic = str_of(o, "topic", &tlen);
	const char *b64 = str_of(o, "payload_b64", &blen);
	int replay = strcmp(src, "replay") == 0;
	unsigned char *pay = malloc(kvp_base64_decoded_max(blen) + 1);
	const struct sent *e;
	struct kvp_diag d;

	if (pay == NULL || len > h->c->o.max_line ||
	    (!replay && strcmp(src, "live") != 0) ||
	    kvp_base64_decode(b64, blen, pay, &plen, &d) != 0 ||
	    plen != u64_of(o, "payload_len"))
		abort();
	*seq = u64_of(o, "seq");
	e = find_sent(h, si, replay, *seq,
	              fnv(fnv(14695981039346656037ULL, topic, tlen), pay, plen),
	              plen);
	free(pay);
	if (e == NULL)
		abort(); /* a line for a message never sent */
	*(replay ? &t->replay : &t->live) += 1;
	t->bytes += plen;
	if (e->events == UINT64_MAX)
		t->events_unknown = 1;
	else
		t->events += e->events;
	return si;
}

/* The order rule for a line covering [lo, hi] of stream si at offset. */
static void
order(struct harness *h, uint32_t si, size_t off, uint64_t lo, uint64_t hi)
{
	struct tally *t = &h->t[si];

	if (t->went_mixed && off >= t->mixed_off)
		return;
	if (t->want_first && lo != t->first)
		abort(); /* the restart line is just before the new run */
	if (t->has_last && off < h->left_off &&
	    (t->last == UINT64_MAX || lo != t->last + 1))
		abort(); /* out of order, written twice, or a hole */
	if (t->has_last && off >= h->left_off && lo <= t->last)
		abort();
	t->want_first = 0;
	t->has_last = 1;
	t->last = hi;
}

static void
rec_line(struct harness *h, struct json_object *o, size_t off)
{
	size_t len;
	const char *rec = str_of(o, "rec", &len);
	uint32_t si = stream_of(h, o, "stream");
	struct tally *t = &h->t[si];

	if (strcmp(rec, "lost") == 0) {
		uint64_t from = u64_of(o, "from"), to = u64_of(o, "to");

		if (from > to)
			abort();
		t->lost++;
		t->lost_seqs += to - from + 1;
		order(h, si, off, from, to);
	} else if (strcmp(rec, "restart") == 0) {
		uint64_t last = u64_of(o, "last_seq");

		t->first = u64_of(o, "first_seq");
		if (t->first > last || u64_of(o, "epoch") != t->restarts + 2)
			abort();
		t->restarts++;
		t->has_last = 0;
		t->want_first = 1;
	} else {
		abort();
	}
}

static void
check_lines(struct harness *h)
{
	struct json_tokener *tok = json_tokener_new();
	size_t off = 0;

	if (tok == NULL)
		abort();
	if (h->len > 0 && h->buf[h->len - 1] != '\n')
		abort(); /* a torn last line */
	while (off < h->len) {
		char *nl = memchr(h->buf + off, '\n', h->len - off);
		size_t len = (size_t)(nl - (h->buf + off));
		struct kvp_diag d;
		struct json_object *o, *v;

		o = kvp_json_parse_object(tok, h->buf + off, len, &d);
		if (o == NULL)
			abort();
		if (json_object_object_get_ex(o, "rec", &v)) {
			rec_line(h, o, off);
		} else {
			uint64_t seq;
			uint32_t si = data_line(h, o, len, &seq);

			order(h, si, off, seq, seq);
		}
		json_object_put(o);
		off += len + 1;
	}
	json_tokener_free(tok);
}

static void
check_stats(const struct harness *h)
{
	for (int i = 0; i < h->nstreams; i++) {
		const struct cap_stream *s = h->c->s[i];
		const struct kvp_cap_stats *st = &s->st;
		const struct tally *t = &h->t[i];
		uint64_t w = st->written_live + st->written_replay;

		if (st->written_live != t->live ||
		    st->written_replay != t->replay ||
		    st->filled != t->replay || st->lost_ranges != t->lost ||
		    st->lost_seqs != t->lost_seqs ||
		    st->epochs != t->restarts || st->bytes != t->bytes ||
		    (!t->events_unknown && st->events != t->events))
			abort();
		if (w + st->dups > st->live + st->replayed ||
		    st->live + st->replayed > w + st->dups + st->bad)
			abort();
		if (s->replaying || s->n != 0 || s->held_bytes != 0 ||
		    s->has_left)
			abort();
	}
}

/* Notes where a stream went mixed: its lines from then on are unordered. */
static void
note_mixed(struct harness *h, size_t before)
{
	for (int i = 0; i < h->nstreams; i++)
		if (h->c->s[i]->mixed && !h->t[i].went_mixed) {
			h->t[i].went_mixed = 1;
			h->t[i].mixed_off = before;
		}
}

/* The end of kvp_cap_finish: pending replays end, then what was taken
 * and not written becomes a lost line. */
static void
finish(struct harness *h)
{
	struct kvp_cap *c = h->c;

	c->stopping = 1;
	for (size_t i = 0; i < c->n; i++) {
		size_t before;

		fflush(h->out);
		before = h->len;
		if (c->s[i]->replaying && kvp_cap_replay_end_(c, c->s[i]) != 0)
			abort();
		note_mixed(h, before);
	}
	fflush(h->out);
	h->left_off = h->len;
	for (size_t i = 0; i < c->n; i++)
		if (kvp_cap_left_(c, c->s[i]) != 0)
			abort();
	if (fflush(h->out) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct harness h;

	memset(&h, 0, sizeof h);
	h.p = data;
	h.n = size;
	h.out = open_memstream(&h.buf, &h.len);
	h.sent = malloc(MAX_OPS * sizeof *h.sent);
	if (h.out == NULL || h.sent == NULL)
		abort();
	H = &h;
	h.c = new_cap(&h);
	for (int k = 0; k < MAX_OPS && h.i < h.n; k++) {
		size_t before;

		fflush(h.out);
		before = h.len;
		if (op(&h, byte(&h)) != 0)
			abort();
		note_mixed(&h, before);
		for (int i = 0; i < h.nstreams; i++)
			check_held(h.c, h.c->s[i]);
	}
	finish(&h);
	check_lines(&h);
	check_stats(&h);
	for (size_t i = 0; i < h.c->n; i++)
		kvp_cap_stream_free_(h.c->s[i]);
	free(h.c->s);
	free(h.c->ring);
	kvp_jw_fini(&h.c->jw);
	free(h.c);
	fclose(h.out);
	free(h.buf);
	free(h.sent);
	return 0;
}
