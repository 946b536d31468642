/* SPDX-License-Identifier: MIT */
/*
 * cap_order.c — kv-capture's per-stream order: seq gaps, holding live
 * messages while a replay fills the gap, duplicates, epochs, and the
 * capture lines (docs/spec/kv-events.md §5). No libzmq here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/capture_internal.h"
#include "common/base64.h"
#include "kvpipe.h"

#define NOTE_MS 1000    /* restart notices: at most one a second */
#define MIX_WINDOW 1024 /* seqs past a restart's start: interleaving */

int64_t
kvp_cap_now_ms_(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

double
kvp_cap_wall_(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)(t.tv_nsec / 1000) / 1e6;
}

void
kvp_cap_note_(struct kvp_cap *c, struct cap_stream *s, const char *fmt, ...)
{
	va_list ap;

	if (c->note == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(c->scratch, sizeof c->scratch, fmt, ap);
	va_end(ap);
	c->note(c->note_ctx, s != NULL ? s->name : NULL, c->scratch);
}

/* The number of events of a batch [ts, events, ...] or {..}: the length
 * of its second element when that is an array, else 0. */
static uint64_t
count_events(const unsigned char *p, size_t n)
{
	size_t i = 1;

	if (n < 2 || (p[0] & 0xf0) != 0x90 || (p[0] & 0x0f) < 2)
		return 0;
	if (p[i] == 0xcb)
		i += 9;
	else if (p[i] == 0xca)
		i += 5;
	else if (p[i] <= 0x7f)
		i += 1;
	else
		return 0;
	if (i >= n)
		return 0;
	if ((p[i] & 0xf0) == 0x90)
		return p[i] & 0x0f;
	if (p[i] == 0xdc && i + 2 < n)
		return (uint64_t)p[i + 1] << 8 | p[i + 2];
	if (p[i] == 0xdd && i + 4 < n)
		return (uint64_t)p[i + 1] << 24 | (uint64_t)p[i + 2] << 16 |
		       (uint64_t)p[i + 3] << 8 | p[i + 4];
	return 0;
}

static void
stream_keys(struct kvp_cap *c, const struct cap_stream *s)
{
	if (s->has_worker)
		kvp_jw_kv_hash(&c->jw, "worker_id", s->worker);
	if (s->has_rank)
		kvp_jw_kv_i64(&c->jw, "dp_rank", s->rank);
	kvp_jw_kv_str(&c->jw, "endpoint", s->name);
}

/* Lines saved_base.. that the output now holds leave the ring. */
static void
ring_settle(struct kvp_cap *c, uint64_t saved)
{
	while (c->ring_n > 0 && c->saved_base < saved) {
		c->ring_head = (c->ring_head + 1) % c->ring_cap;
		c->ring_n--;
		c->saved_base++;
	}
	if (c->ring_n == 0)
		c->saved_base = saved;
}

/* The line just written, until the output holds it. */
static int
ring_push(struct kvp_cap *c, const struct cap_line *l)
{
	if (c->saved_fn == NULL)
		return 0;
	ring_settle(c, c->saved_fn(c->saved_ctx));
	if (c->ring_n == c->ring_cap) {
		size_t nc = c->ring_cap ? c->ring_cap * 2 : 1024;
		struct cap_line *r = malloc(nc * sizeof *r);

		if (r == NULL)
			return -1;
		for (size_t i = 0; i < c->ring_n; i++)
			r[i] = c->ring[(c->ring_head + i) % c->ring_cap];
		free(c->ring);
		c->ring = r;
		c->ring_cap = nc;
		c->ring_head = 0;
	}
	c->ring[(c->ring_head + c->ring_n++) % c->ring_cap] = *l;
	return 0;
}

void
kvp_cap_set_saved(struct kvp_cap *c, kvp_cap_saved_fn fn, void *ctx)
{
	c->saved_fn = fn;
	c->saved_ctx = ctx;
}

void
kvp_cap_settle(struct kvp_cap *c, uint64_t lines)
{
	ring_settle(c, lines);
	for (; c->ring_n > 0; c->ring_n--) {
		const struct cap_line *l = &c->ring[c->ring_head];
		struct kvp_cap_stats *st = &c->s[l->stream]->st;

		c->ring_head = (c->ring_head + 1) % c->ring_cap;
		if (l->kind == CAP_LINE_OTHER)
			continue;
		if (l->kind == CAP_LINE_LIVE)
			st->written_live--;
		else
			st->written_replay--;
		st->bytes -= l->bytes;
		st->events -= l->events;
		st->unsaved++;
	}
}

static int
end_line(struct kvp_cap *c, const struct cap_line *l)
{
	FILE *f;

	c->part_bytes += c->jw.len + 1;
	if (kvp_jw_end_record(&c->jw) != KVP_OK || ring_push(c, l) != 0) {
		c->failed = 1;
		return -1;
	}
	if (c->rotate == 0 || c->part_bytes < c->rotate)
		return 0;
	c->part_bytes = 0;
	f = c->rotate_fn(c->rotate_ctx);
	if (f == NULL) {
		c->failed = 1;
		return -1;
	}
	c->out = f;
	c->jw.f = f;
	return 0;
}

void
kvp_cap_set_rotate(struct kvp_cap *c, uint64_t bytes, kvp_cap_rotate_fn fn,
                   void *ctx)
{
	c->rotate = fn != NULL ? bytes : 0;
	c->rotate_fn = fn;
	c->rotate_ctx = ctx;
	c->part_bytes = 0;
}

static int write_lost(struct kvp_cap *c, struct cap_stream *s, uint64_t from,
                      uint64_t to);

/* One capture line. */
static int
write_msg(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, double ts,
          const void *topic, size_t tlen, const void *payload, size_t plen,
          int replay)
{
	struct kvp_jw *w = &c->jw;
	size_t blen = kvp_base64_encoded_len(plen);
	struct cap_line l;
	char *p;

	if (c->done)
		return 0;
	if (payload == NULL) /* too big for a line: its seq is lost */
		return write_lost(c, s, seq, seq);
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "source", replay ? "replay" : "live");
	kvp_jw_kv_double(w, "recv_ts", ts);
	kvp_jw_key(w, "topic");
	kvp_jw_strn(w, topic, tlen);
	kvp_jw_kv_u64(w, "seq", seq);
	kvp_jw_kv_u64(w, "payload_len", plen);
	kvp_jw_key(w, "payload_b64");
	kvp_jw_raw(w, "\"", 1);
	p = kvp_jw_reserve(w, blen + 1);
	if (p == NULL) {
		kvp_jw_discard(w);
		c->failed = 1;
		errno = ENOMEM;
		return -1;
	}
	kvp_base64_encode(payload, plen, p);
	kvp_jw_commit(w, blen);
	kvp_jw_raw(w, "\"", 1);
	kvp_jw_obj_resume(w);
	stream_keys(c, s);
	kvp_jw_obj_end(w);
	l.stream = s->idx;
	l.kind = replay ? CAP_LINE_REPLAY : CAP_LINE_LIVE;
	l.bytes = plen;
	l.events = count_events(payload, plen);
	if (end_line(c, &l) != 0)
		return -1;
	if (replay)
		s->st.written_replay++;
	else
		s->st.written_live++;
	s->st.bytes += plen;
	s->st.events += l.events;
	c->written++;
	if (c->o.count != 0 && c->written >= c->o.count)
		c->done = 1;
	return 0;
}

/* {"rec":"lost",...} for seqs [from, to]. */
static int
write_lost(struct kvp_cap *c, struct cap_stream *s, uint64_t from, uint64_t to)
{
	struct kvp_jw *w = &c->jw;

	s->st.lost_ranges++;
	s->st.lost_seqs += to - from + 1;
	if (c->done)
		return 0;
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "lost");
	kvp_jw_kv_str(w, "stream", s->name);
	kvp_jw_kv_u64(w, "from", from);
	kvp_jw_kv_u64(w, "to", to);
	kvp_jw_kv_double(w, "recv_ts", kvp_cap_wall_());
	if (s->has_worker)
		kvp_jw_kv_hash(w, "worker_id", s->worker);
	if (s->has_rank)
		kvp_jw_kv_i64(w, "dp_rank", s->rank);
	kvp_jw_obj_end(w);
	return end_line(c, &(struct cap_line){s->idx, CAP_LINE_OTHER, 0, 0});
}

/* {"rec":"restart",...}: the publisher started again (seq went back from
 * last to first, received at ts); kv-decode resets the stream's seq
 * tracking there. */
static int
write_restart(struct kvp_cap *c, struct cap_stream *s, uint64_t last,
              uint64_t first, double ts, const void *topic, size_t tlen)
{
	struct kvp_jw *w = &c->jw;

	if (c->done)
		return 0;
	kvp_jw_obj_begin(w);
	kvp_jw_kv_str(w, "rec", "restart");
	kvp_jw_kv_str(w, "stream", s->name);
	kvp_jw_key(w, "topic");
	kvp_jw_strn(w, topic, tlen);
	kvp_jw_kv_u64(w, "last_seq", last);
	kvp_jw_kv_u64(w, "first_seq", first);
	kvp_jw_kv_u64(w, "epoch", s->st.epochs + 1);
	kvp_jw_kv_double(w, "recv_ts", ts);
	if (s->has_worker)
		kvp_jw_kv_hash(w, "worker_id", s->worker);
	if (s->has_rank)
		kvp_jw_kv_i64(w, "dp_rank", s->rank);
	kvp_jw_obj_end(w);
	return end_line(c, &(struct cap_line){s->idx, CAP_LINE_OTHER, 0, 0});
}

static int
hold(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, double ts,
     const void *topic, size_t tlen, const void *payload, size_t plen)
{
	struct cap_msg *m;

	(void)c;
	if (s->head + s->n == s->cap) {
		if (s->head > 0) {
			memmove(s->held, s->held + s->head,
			        s->n * sizeof *s->held);
			s->head = 0;
		} else {
			size_t nc = s->cap ? s->cap * 2 : 64;
			void *p = realloc(s->held, nc * sizeof *s->held);

			if (p == NULL)
				return -1;
			s->held = p;
			s->cap = nc;
		}
	}
	m = malloc(sizeof *m + tlen + plen);
	if (m == NULL)
		return -1;
	m->seq = seq;
	m->ts = ts;
	m->tlen = tlen;
	m->plen = plen;
	m->big = payload == NULL;
	memcpy(m->data, topic, tlen);
	if (plen > 0)
		memcpy(m->data + tlen, payload, plen);
	s->held[s->head + s->n++] = m;
	s->held_bytes += sizeof *m + tlen + plen;
	return 0;
}

/* A gap [expected, seq): ask for it, or give it up as lost. 1 when a
 * replay was asked for (the message at seq must wait), 0, or -1. */
static int
gap(struct kvp_cap *c, struct cap_stream *s, uint64_t seq)
{
	s->st.gaps++;
	if (!c->stopping && s->replay[0] != '\0' &&
	    c->ask_replay(c, s, s->expected) == 0) {
		s->replaying = 1;
		s->hi = seq - 1;
		s->deadline = kvp_cap_now_ms_() + c->o.replay_timeout_ms;
		return 1;
	}
	if (s->replay[0] == '\0' && !s->noted_noreplay) {
		s->noted_noreplay = 1;
		kvp_cap_note_(c, s,
		              "seqs %llu to %llu missed and no replay endpoint "
		              "to ask: written as lost",
		              (unsigned long long)s->expected,
		              (unsigned long long)seq - 1);
	}
	if (write_lost(c, s, s->expected, seq - 1) != 0)
		return -1;
	s->expected = seq;
	return 0;
}

/* A restart notice, at most one a second per stream (the summary counts
 * them all). */
static void
note_restart(struct kvp_cap *c, struct cap_stream *s, uint64_t seq)
{
	int64_t now = kvp_cap_now_ms_();
	char more[96] = "";

	if (s->has_restart_noted && now - s->restart_noted_ms < NOTE_MS) {
		s->restarts_unnoted++;
		return;
	}
	if (s->restarts_unnoted > 0)
		snprintf(more, sizeof more,
		         "; %llu more since the last notice, not reported one "
		         "by one",
		         (unsigned long long)s->restarts_unnoted);
	kvp_cap_note_(c, s,
	              "seq went back from %llu to %llu: the publisher "
	              "restarted (epoch %llu%s)",
	              (unsigned long long)s->last_live, (unsigned long long)seq,
	              (unsigned long long)s->st.epochs + 1, more);
	s->has_restart_noted = 1;
	s->restart_noted_ms = now;
	s->restarts_unnoted = 0;
}

/* Two publishers' seqs interleave (two engines on one --bind address):
 * after a restart from back_from to back_to, either a seq just past
 * back_from comes before the new run could have got there, or, soon, a
 * second restart finds both runs moved on (it goes back from past
 * back_from to past back_to). One engine restarting again and again
 * goes back to the same start. */
static int
interleaves(const struct cap_stream *s, uint64_t seq)
{
	if (!s->has_back || s->since_back > MIX_WINDOW)
		return 0;
	if (s->last_live < s->back_from)
		return seq > s->back_from && seq - s->back_from <= MIX_WINDOW;
	return seq <= s->last_live && seq > s->back_to &&
	       s->last_live > s->back_from;
}

/* Interleaved seqs: no order can be kept, so lines are written as they
 * come, without gaps, duplicates or restarts. */
static int
write_mixed(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, double ts,
            const void *topic, size_t tlen, const void *payload, size_t plen)
{
	if (!s->mixed) {
		s->mixed = 1;
		kvp_cap_note_(
		    c, s,
		    "seq went back from %llu to %llu, then on from "
		    "%llu: two or more publishers interleave on this "
		    "address; from now on its messages are written as "
		    "they come (no order, gaps or restarts kept; give "
		    "each publisher its own --bind address)",
		    (unsigned long long)s->back_from,
		    (unsigned long long)s->back_to, (unsigned long long)seq);
	}
	s->st.mixed++;
	return write_msg(c, s, seq, ts, topic, tlen, payload, plen, 0);
}

/*
 * The live rule, for a message not held behind a replay. 1: a replay
 * began and the message must wait (the caller holds it), 0 handled, -1.
 */
static int
live_step(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, double ts,
          const void *topic, size_t tlen, const void *payload, size_t plen)
{
	int rc;

	if (s->mixed || interleaves(s, seq))
		return write_mixed(c, s, seq, ts, topic, tlen, payload, plen);
	s->since_back++;
	if (s->has_last_live && seq <= s->last_live) {
		s->st.epochs++;
		note_restart(c, s, seq);
		s->has_back = 1;
		s->back_from = s->last_live;
		s->back_to = seq;
		s->since_back = 0;
		s->expected = seq;
		if (write_restart(c, s, s->last_live, seq, ts, topic, tlen) !=
		    0)
			return -1;
	}
	if (!s->started) {
		s->started = 1;
		s->expected = seq;
	}
	s->has_last_live = 1;
	s->last_live = seq;
	if (seq < s->expected) {
		s->st.dups++;
		return 0;
	}
	if (seq > s->expected) {
		rc = gap(c, s, seq);
		if (rc != 0)
			return rc;
	}
	s->expected = seq + 1;
	return write_msg(c, s, seq, ts, topic, tlen, payload, plen, 0);
}

/* Too much held behind a replay: the replay is given up (its socket
 * closed, so that its late answer cannot end the next one), the range
 * written as lost, the held messages written. 0 or -1. */
static int
held_limit(struct kvp_cap *c, struct cap_stream *s)
{
	if (s->n > c->o.max_held_msgs)
		kvp_cap_note_(c, s,
		              "over %zu messages held waiting for replay: "
		              "giving the replay up",
		              c->o.max_held_msgs);
	else if (s->held_bytes > c->o.max_held_bytes)
		kvp_cap_note_(c, s,
		              "over %zu bytes held waiting for replay: "
		              "giving the replay up",
		              c->o.max_held_bytes);
	else
		return 0;
	c->drop_replay(c, s);
	return kvp_cap_replay_end_(c, s);
}

/* 1 when a message of plen bytes would make a capture line longer than
 * max_line (kv-decode's limit): it is counted as malformed and only its
 * seq kept, for a lost line in its place. */
static int
too_big(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, size_t tlen,
        size_t plen)
{
	/* the payload in base64, the topic and address escaped at worst,
	 * the keys and numbers */
	size_t est =
	    kvp_base64_encoded_len(plen) + 6 * tlen + 6 * strlen(s->name) + 256;

	if (est <= c->o.max_line)
		return 0;
	s->st.bad++;
	if (!s->noted_big) {
		s->noted_big = 1;
		kvp_cap_note_(c, s,
		              "seq %llu: a message of %zu bytes would make a "
		              "line over %zu bytes: written as lost and "
		              "counted as malformed (further ones are not "
		              "reported)",
		              (unsigned long long)seq, plen, c->o.max_line);
	}
	return 1;
}

int
kvp_cap_live_(struct kvp_cap *c, struct cap_stream *s, uint64_t seq, double ts,
              const void *topic, size_t tlen, const void *payload, size_t plen)
{
	int rc;

	s->st.live++;
	if (s->mixed)
		return write_mixed(
		    c, s, seq, ts, topic, tlen,
		    too_big(c, s, seq, tlen, plen) ? NULL : payload, plen);
	if (too_big(c, s, seq, tlen, plen)) {
		payload = NULL;
		plen = 0;
	}
	if (tlen < sizeof s->topic && (!s->has_topic || tlen != s->topic_len ||
	                               memcmp(topic, s->topic, tlen) != 0)) {
		memcpy(s->topic, topic, tlen);
		s->topic_len = tlen;
		s->has_topic = 1;
	}
	if (s->replaying) {
		if (s->n == 0 && seq < s->expected &&
		    !(s->has_last_live && seq <= s->last_live)) {
			s->st.dups++; /* the replay brought it already */
			s->has_last_live = 1;
			s->last_live = seq;
			return 0;
		}
		if (s->n == 0 && (s->hi == CAP_NO_HI || seq <= s->hi))
			s->hi = seq - 1;
		if (hold(c, s, seq, ts, topic, tlen, payload, plen) != 0)
			return -1;
		if (held_limit(c, s) != 0)
			return -1;
		return kvp_cap_replay_filled_(c, s);
	}
	rc = live_step(c, s, seq, ts, topic, tlen, payload, plen);
	if (rc == 1)
		return hold(c, s, seq, ts, topic, tlen, payload, plen);
	return rc;
}

int
kvp_cap_replayed_(struct kvp_cap *c, struct cap_stream *s, uint64_t seq,
                  double ts, const void *topic, size_t tlen,
                  const void *payload, size_t plen)
{
	s->st.replayed++;
	if (!s->replaying || seq < s->expected ||
	    (s->hi != CAP_NO_HI && seq > s->hi)) {
		s->st.dups++; /* written already, or held live */
		return 0;
	}
	if (too_big(c, s, seq, tlen, plen)) {
		payload = NULL;
		plen = 0;
	}
	/* the range is being filled: the timeout counts from here (replies
	 * outside it do not put it off) */
	s->deadline = kvp_cap_now_ms_() + c->o.replay_timeout_ms;
	if (seq > s->expected && write_lost(c, s, s->expected, seq - 1) != 0)
		return -1;
	s->expected = seq + 1;
	s->st.filled += payload != NULL;
	if (write_msg(c, s, seq, ts, topic, tlen, payload, plen, 1) != 0)
		return -1;
	return kvp_cap_replay_filled_(c, s);
}

int
kvp_cap_replay_filled_(struct kvp_cap *c, struct cap_stream *s)
{
	if (!s->replaying || s->hi == CAP_NO_HI || s->expected <= s->hi)
		return 0;
	/* every seq asked for is here: done, without waiting for the end
	 * marker (the rest of the answer is not read) */
	c->drop_replay(c, s);
	return kvp_cap_replay_end_(c, s);
}

/* Writes held messages until none is left or one starts a new replay. */
static int
drain(struct kvp_cap *c, struct cap_stream *s)
{
	while (s->n > 0 && !s->replaying) {
		struct cap_msg *m = s->held[s->head];
		int rc = live_step(c, s, m->seq, m->ts, m->data, m->tlen,
		                   m->big ? NULL : m->data + m->tlen, m->plen);

		if (rc < 0)
			return -1;
		if (rc == 1)
			break; /* waits, still first */
		s->held_bytes -= sizeof *m + m->tlen + m->plen;
		free(m);
		s->head++;
		s->n--;
	}
	if (s->n == 0)
		s->head = 0;
	return 0;
}

int
kvp_cap_replay_end_(struct kvp_cap *c, struct cap_stream *s)
{
	if (!s->replaying)
		return 0;
	s->replaying = 0;
	if (s->hi != CAP_NO_HI && s->expected <= s->hi) {
		if (write_lost(c, s, s->expected, s->hi) != 0)
			return -1;
		s->expected = s->hi + 1;
	}
	/* the held messages come next, in the live rule: keep the last live
	 * seq from before them */
	if (s->n > 0) {
		s->has_last_live = s->held[s->head]->seq > 0;
		s->last_live = s->held[s->head]->seq - 1;
	}
	return drain(c, s);
}

void
kvp_cap_taken_(struct cap_stream *s, uint64_t seq)
{
	s->st.unwritten++;
	if (!s->has_left || seq < s->left_lo)
		s->left_lo = seq;
	if (!s->has_left || seq > s->left_hi)
		s->left_hi = seq;
	s->has_left = 1;
}

int
kvp_cap_left_(struct kvp_cap *c, struct cap_stream *s)
{
	uint64_t from = s->left_lo;

	if (!s->has_left)
		return 0;
	s->has_left = 0;
	/* after seq 2^64-1 expected wrapped to 0: every seq left went back
	 * (a new run, as after any restart below) */
	if (s->started && s->expected == 0 && s->has_last_live &&
	    s->last_live == UINT64_MAX)
		return 0;
	if (s->started && s->expected > from)
		from = s->expected;
	if (from > s->left_hi)
		return 0; /* written after all (held), or seqs gone back */
	kvp_cap_note_(c, s,
	              "%llu messages still queued at the stop after %u ms: "
	              "seqs %llu to %llu written as lost",
	              (unsigned long long)s->st.unwritten, c->o.stop_timeout_ms,
	              (unsigned long long)from, (unsigned long long)s->left_hi);
	if (write_lost(c, s, from, s->left_hi) != 0)
		return -1;
	s->started = 1;
	s->expected = s->left_hi + 1;
	return 0;
}

void
kvp_cap_stream_free_(struct cap_stream *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->held[s->head + i]);
	free(s->held);
	free(s);
}
