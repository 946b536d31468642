/* SPDX-License-Identifier: MIT */
/*
 * cap_zmq.c — kv-capture's sockets: endpoint specs, one SUB socket (and a
 * monitor) per stream, the replay DEALER, and the poll loop. The only
 * libzmq user of the tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "capture/capture_internal.h"
#include "common/num.h"
#include "kvpipe.h"

#define RCV_HWM 100000 /* messages a SUB socket queues (vLLM's hwm) */
#define MIN_HWM 4      /* ... at least, whatever their size */
#define MAX_PARTS 8    /* frames kept of one message */
#define BURST 1024     /* messages taken from a socket per round */
#define MAX_RANKS 1024
#define DISCARD_MS 1000 /* taking what is queued past the stop bound */

static int poll_arrays(struct kvp_cap *c);

/* ---- specs ------------------------------------------------------------- */

/* tcp://HOST:PORT (HOST "*" only when binding), ipc://PATH, inproc://NAME;
 * *port is the tcp port, 0 for the others. */
static int
check_addr(const char *a, int bind, unsigned *port, struct kvp_diag *d)
{
	const char *colon, *e;
	uint64_t v;

	*port = 0;
	if (strncmp(a, "ipc://", 6) == 0 || strncmp(a, "inproc://", 9) == 0) {
		if (strchr(a, '/')[2] == '\0')
			return kvp_diag_set(d, 0, "%s: no path", a);
		return 0;
	}
	if (strncmp(a, "tcp://", 6) != 0)
		return kvp_diag_set(d, 0,
		                    "%s: not a tcp://HOST:PORT, ipc:// or "
		                    "inproc:// address",
		                    a);
	colon = strrchr(a + 6, ':');
	if (colon == NULL || colon == a + 6)
		return kvp_diag_set(d, 0, "%s: expected tcp://HOST:PORT", a);
	if (!bind && colon - (a + 6) == 1 && a[6] == '*')
		return kvp_diag_set(d, 0,
		                    "%s: a wildcard host only listens (use "
		                    "--bind)",
		                    a);
	if (kvp_num_parse_u64(colon + 1, 65535, &v, &e) != 0 || v == 0 ||
	    v > 65535)
		return kvp_diag_set(d, 0, "%s: bad port '%s'", a, colon + 1);
	*port = (unsigned)v;
	return 0;
}

static int
parse_dp(const char *v, struct kvp_cap_spec *sp, struct kvp_diag *d)
{
	char lo[32];
	const char *dash = strchr(v, '-'), *e;
	uint64_t a, b;
	size_t n = dash ? (size_t)(dash - v) : strlen(v);

	if (n == 0 || n >= sizeof lo)
		return kvp_diag_set(d, 0, "dp=%s: expected RANK or A-B", v);
	memcpy(lo, v, n);
	lo[n] = '\0';
	if (kvp_num_parse_u64(lo, INT32_MAX, &a, &e) != 0 ||
	    kvp_num_parse_u64(dash ? dash + 1 : lo, INT32_MAX, &b, &e) != 0 ||
	    a > b || b - a >= MAX_RANKS || b > INT32_MAX)
		return kvp_diag_set(d, 0,
		                    "dp=%s: expected RANK or A-B with A <= B "
		                    "(at most %d ranks)",
		                    v, MAX_RANKS);
	sp->has_dp = 1;
	sp->dp_lo = (uint32_t)a;
	sp->dp_hi = (uint32_t)b;
	return 0;
}

static int
spec_key(char *kv, struct kvp_cap_spec *sp, struct kvp_diag *d)
{
	char *v = strchr(kv, '=');
	const char *e;

	if (v == NULL)
		return kvp_diag_set(d, 0, "'%s': expected KEY=VALUE", kv);
	*v++ = '\0';
	if (strcmp(kv, "replay") == 0) {
		if (strlen(v) >= sizeof sp->replay)
			return kvp_diag_set(d, 0, "replay address too long");
		memcpy(sp->replay, v, strlen(v) + 1);
		return 0;
	}
	if (strcmp(kv, "worker") == 0) {
		if (kvp_num_parse_u64(v, UINT64_MAX, &sp->worker, &e) != 0)
			return kvp_diag_set(d, 0, "worker=%s: not a u64", v);
		sp->has_worker = 1;
		return 0;
	}
	if (strcmp(kv, "dp") == 0)
		return parse_dp(v, sp, d);
	return kvp_diag_set(
	    d, 0, "unknown key '%s' (choices: replay, worker, dp)", kv);
}

int
kvp_cap_parse_spec(const char *s, int bind, struct kvp_cap_spec *sp,
                   struct kvp_diag *d)
{
	char buf[4 * KVP_CAP_ADDR_MAX], *save = NULL, *tok;
	unsigned port, rport;

	memset(sp, 0, sizeof *sp);
	sp->bind = bind;
	if (strlen(s) >= sizeof buf)
		return kvp_diag_set(d, 0, "too long");
	memcpy(buf, s, strlen(s) + 1);
	tok = strtok_r(buf, ",", &save);
	if (tok == NULL || strlen(tok) >= sizeof sp->addr)
		return kvp_diag_set(d, 0, "'%s': no address", s);
	memcpy(sp->addr, tok, strlen(tok) + 1);
	while ((tok = strtok_r(NULL, ",", &save)) != NULL)
		if (spec_key(tok, sp, d) != 0)
			return KVP_BAD;
	if (check_addr(sp->addr, bind, &port, d) != 0 ||
	    (sp->replay[0] != '\0' &&
	     check_addr(sp->replay, 0, &rport, d) != 0))
		return KVP_BAD;
	if (sp->has_dp && ((port != 0 && port + sp->dp_hi > 65535) ||
	                   (sp->replay[0] != '\0' && rport != 0 &&
	                    rport + sp->dp_hi > 65535)))
		return kvp_diag_set(d, 0, "dp=%u-%u: port + rank over 65535",
		                    sp->dp_lo, sp->dp_hi);
	return KVP_OK;
}

/* addr for DP rank r: tcp port + r, else a "_dp<r>" suffix. */
static void
rank_addr(const char *a, int has_dp, uint32_t r, char *out)
{
	const char *colon = strrchr(a, ':');
	unsigned port;

	if (!has_dp || a[0] == '\0') {
		snprintf(out, KVP_CAP_ADDR_MAX, "%s", a);
		return;
	}
	if (strncmp(a, "tcp://", 6) == 0) {
		port = (unsigned)strtoul(colon + 1, NULL, 10);
		snprintf(out, KVP_CAP_ADDR_MAX, "%.*s:%u", (int)(colon - a), a,
		         port + r);
	} else {
		snprintf(out, KVP_CAP_ADDR_MAX, "%.200s_dp%u", a, r);
	}
}

/* ---- sockets ----------------------------------------------------------- */

static void
close_sock(void **s)
{
	if (*s != NULL)
		zmq_close(*s);
	*s = NULL;
}

static int
zfail(struct kvp_diag *d, const char *what)
{
	kvp_diag_set(d, 0, "%s: %s", what, zmq_strerror(errno));
	return errno == ENOMEM ? KVP_FAIL : KVP_BAD;
}

/* A frame over max_line bytes cannot fit in a capture line: libzmq
 * refuses it (and drops the connection, which reconnects) rather than
 * take it into memory. */
static void
set_max_msg(struct kvp_cap *c, void *sock)
{
	int64_t max = (int64_t)c->o.max_line;

	zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof max);
}

static int
open_sub(struct kvp_cap *c, struct cap_stream *s, struct kvp_diag *d)
{
	int hwm = RCV_HWM, zero = 0;
	const char *topic = c->o.topic ? c->o.topic : "";
	char mon[64];

	s->sub = zmq_socket(c->zctx, ZMQ_SUB);
	if (s->sub == NULL)
		return zfail(d, "zmq_socket");
	zmq_setsockopt(s->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
	s->hwm = hwm;
	set_max_msg(c, s->sub);
	zmq_setsockopt(s->sub, ZMQ_LINGER, &zero, sizeof zero);
	zmq_setsockopt(s->sub, ZMQ_SUBSCRIBE, topic, strlen(topic));
	snprintf(mon, sizeof mon, "inproc://kvp-capture-mon-%zu", c->n);
	if (zmq_socket_monitor(s->sub, mon,
	                       ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECTED |
	                           ZMQ_EVENT_ACCEPTED) == 0 &&
	    (s->mon = zmq_socket(c->zctx, ZMQ_PAIR)) != NULL) {
		zmq_setsockopt(s->mon, ZMQ_LINGER, &zero, sizeof zero);
		if (zmq_connect(s->mon, mon) != 0)
			close_sock(&s->mon);
	}
	if ((s->bind ? zmq_bind(s->sub, s->name)
	             : zmq_connect(s->sub, s->name)) != 0)
		return zfail(d, s->name);
	return KVP_OK;
}

static int
add_stream(struct kvp_cap *c, const struct kvp_cap_spec *sp, uint32_t r,
           struct kvp_diag *d)
{
	struct cap_stream *s;

	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 8;
		void *p = realloc(c->s, nc * sizeof *c->s);

		if (p == NULL)
			return kvp_diag_set(d, 0, "out of memory"), KVP_FAIL;
		c->s = p;
		c->cap = nc;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return kvp_diag_set(d, 0, "out of memory"), KVP_FAIL;
	rank_addr(sp->addr, sp->has_dp, r, s->name);
	rank_addr(sp->replay, sp->has_dp, r, s->replay);
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->s[i]->name, s->name) == 0) {
			free(s);
			return kvp_diag_set(d, 0, "%s: given twice", sp->addr);
		}
	s->idx = (uint32_t)c->n;
	s->bind = sp->bind;
	s->worker = sp->worker;
	s->has_worker = sp->has_worker;
	s->rank = (int32_t)r;
	s->has_rank = sp->has_dp;
	c->s[c->n++] = s;
	return open_sub(c, s, d);
}

int
kvp_cap_add(struct kvp_cap *c, const struct kvp_cap_spec *sp,
            struct kvp_diag *d)
{
	uint32_t lo = sp->has_dp ? sp->dp_lo : 0,
	         hi = sp->has_dp ? sp->dp_hi : 0;

	for (uint64_t r = lo; r <= hi; r++) {
		int rc = add_stream(c, sp, (uint32_t)r, d);

		if (rc != KVP_OK)
			return rc;
	}
	if (poll_arrays(c) != 0)
		return kvp_diag_set(d, 0, "out of memory"), KVP_FAIL;
	return KVP_OK;
}

static int
ask_replay(struct kvp_cap *c, struct cap_stream *s, uint64_t start)
{
	unsigned char be[8];
	int zero = 0;

	if (s->replay[0] == '\0')
		return -1;
	if (s->dealer == NULL) {
		s->dealer = zmq_socket(c->zctx, ZMQ_DEALER);
		if (s->dealer == NULL)
			return -1;
		zmq_setsockopt(s->dealer, ZMQ_LINGER, &zero, sizeof zero);
		/* a reply is at most the publisher's buffer: take it whole
		 * (a full pipe would make its ROUTER drop the rest) */
		zmq_setsockopt(s->dealer, ZMQ_RCVHWM, &zero, sizeof zero);
		set_max_msg(c, s->dealer);
		if (zmq_connect(s->dealer, s->replay) != 0) {
			kvp_cap_note_(c, s, "replay endpoint %s: %s", s->replay,
			              zmq_strerror(errno));
			close_sock(&s->dealer);
			return -1;
		}
	}
	for (int i = 0; i < 8; i++)
		be[i] = (unsigned char)(start >> (56 - 8 * i));
	if (zmq_send(s->dealer, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) != 0 ||
	    zmq_send(s->dealer, be, 8, ZMQ_DONTWAIT) != 8) {
		kvp_cap_note_(c, s, "replay request to %s: %s", s->replay,
		              zmq_strerror(errno));
		close_sock(&s->dealer);
		return -1;
	}
	return 0;
}

static void
drop_replay(struct kvp_cap *c, struct cap_stream *s)
{
	(void)c;
	close_sock(&s->dealer);
}

/* ---- receiving --------------------------------------------------------- */

struct parts {
	zmq_msg_t m[MAX_PARTS];
	int n;    /* frames in the message */
	int kept; /* initialized in m */
};

static void
parts_close(struct parts *p)
{
	for (int i = 0; i < p->kept; i++)
		zmq_msg_close(&p->m[i]);
	p->kept = 0;
}

/* One whole message. 1, 0 (none waiting) or -1 (errno). */
static int
recv_parts(void *sock, struct parts *p)
{
	int more = 1;

	p->n = p->kept = 0;
	while (more) {
		zmq_msg_t *m = &p->m[p->kept < MAX_PARTS ? p->kept : 0];
		zmq_msg_t extra;

		if (p->kept == MAX_PARTS)
			m = &extra;
		zmq_msg_init(m);
		if (zmq_msg_recv(m, sock, p->n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
			int e = errno;

			zmq_msg_close(m);
			parts_close(p);
			errno = e;
			return e == EAGAIN ? 0 : -1;
		}
		more = zmq_msg_more(m);
		p->n++;
		if (m == &extra)
			zmq_msg_close(m);
		else
			p->kept++;
	}
	return 1;
}

static uint64_t
be64(const void *v)
{
	const unsigned char *b = v;
	uint64_t x = 0;

	for (int i = 0; i < 8; i++)
		x = x << 8 | b[i];
	return x;
}

static void
bad_msg(struct kvp_cap *c, struct cap_stream *s, const char *what, int n)
{
	s->st.bad++;
	if (s->noted_bad)
		return;
	s->noted_bad = 1;
	kvp_cap_note_(c, s,
	              "%s message with %d frame(s) skipped (expected %s); "
	              "further ones are counted in the summary",
	              what, n,
	              what[0] == 'l' ? "topic, 8-byte seq, payload"
	                             : "\"\", [topic,] 8-byte seq, payload");
}

/* The SUB socket queues about max_held_bytes at most: its high-water
 * mark (a count of messages) comes down as larger frames are seen. */
static void
queue_bound(struct kvp_cap *c, struct cap_stream *s, size_t size)
{
	size_t n;
	int hwm;

	if (size <= s->max_frame)
		return;
	s->max_frame = size;
	n = c->o.max_held_bytes / size;
	hwm = n < MIN_HWM ? MIN_HWM : n > RCV_HWM ? RCV_HWM : (int)n;
	if (hwm < s->hwm &&
	    zmq_setsockopt(s->sub, ZMQ_RCVHWM, &hwm, sizeof hwm) == 0)
		s->hwm = hwm;
}

static int
on_live(struct kvp_cap *c, struct cap_stream *s, struct parts *p)
{
	zmq_msg_t *m = p->m;

	if (p->n != 3 || zmq_msg_size(&m[1]) != 8) {
		bad_msg(c, s, "live", p->n);
		return 0;
	}
	queue_bound(c, s, zmq_msg_size(&m[2]));
	return kvp_cap_live_(c, s, be64(zmq_msg_data(&m[1])), kvp_cap_wall_(),
	                     zmq_msg_data(&m[0]), zmq_msg_size(&m[0]),
	                     zmq_msg_data(&m[2]), zmq_msg_size(&m[2]));
}

static int
on_replay(struct kvp_cap *c, struct cap_stream *s, struct parts *p)
{
	zmq_msg_t *m = p->m;
	const char *topic = c->o.topic ? c->o.topic : "";
	size_t tlen = strlen(topic);
	uint64_t seq;
	int k = p->n == 4 ? 2 : 1;

	if ((p->n != 3 && p->n != 4) || zmq_msg_size(&m[0]) != 0 ||
	    zmq_msg_size(&m[k]) != 8) {
		bad_msg(c, s, "replay", p->n);
		return 0;
	}
	s->st.shape = p->n;
	seq = be64(zmq_msg_data(&m[k]));
	if (seq == UINT64_MAX) {
		if (zmq_msg_size(&m[k + 1]) != 0) {
			bad_msg(c, s, "replay end", p->n);
			return 0;
		}
		return kvp_cap_replay_end_(c, s);
	}
	if (p->n == 4) {
		topic = zmq_msg_data(&m[1]);
		tlen = zmq_msg_size(&m[1]);
	} else if (s->has_topic) {
		topic = s->topic;
		tlen = s->topic_len;
	}
	return kvp_cap_replayed_(c, s, seq, kvp_cap_wall_(), topic, tlen,
	                         zmq_msg_data(&m[k + 1]),
	                         zmq_msg_size(&m[k + 1]));
}

/* A monitor event: a publisher that went away is reported once. */
static void
on_monitor(struct kvp_cap *c, struct cap_stream *s, struct parts *p)
{
	uint16_t ev;

	if (p->n < 1 || zmq_msg_size(&p->m[0]) < 2)
		return;
	memcpy(&ev, zmq_msg_data(&p->m[0]), 2);
	if (ev == ZMQ_EVENT_DISCONNECTED && !s->noted_gone) {
		s->noted_gone = 1;
		kvp_cap_note_(c, s,
		              "the publisher went away; ZMQ reconnects (not "
		              "reported again)");
	}
}

/* Takes up to BURST messages from sock. -1 on a write error. */
static int
take(struct kvp_cap *c, struct cap_stream *s, void *sock, int which)
{
	struct parts p;
	int rc = 0;

	for (int i = 0; i < BURST && rc == 0 && !c->done; i++) {
		int got = recv_parts(sock, &p);

		if (got <= 0)
			break;
		c->total_in++;
		if (which == 0)
			rc = on_live(c, s, &p);
		else if (which == 1)
			rc = on_replay(c, s, &p);
		else
			on_monitor(c, s, &p);
		parts_close(&p);
		if (which == 1 && s->dealer != sock)
			break; /* closed (and maybe opened again) */
	}
	return rc;
}

/* ---- the loop ---------------------------------------------------------- */

/* Replays past their deadline end now: the range becomes lost. */
static int
deadlines(struct kvp_cap *c, int64_t now)
{
	for (size_t i = 0; i < c->n; i++) {
		struct cap_stream *s = c->s[i];

		if (!s->replaying || now < s->deadline)
			continue;
		kvp_cap_note_(c, s,
		              "replay endpoint %s did not answer within %u ms; "
		              "the capture goes on",
		              s->replay, c->o.replay_timeout_ms);
		drop_replay(c, s); /* a late answer must not count */
		if (kvp_cap_replay_end_(c, s) != 0)
			return -1;
	}
	return 0;
}

static int
status(struct kvp_cap *c, struct kvp_diag *d)
{
	if (c->failed) {
		kvp_diag_set(d, 0, "write error: %s", strerror(errno));
		return KVP_FAIL;
	}
	return c->done ? KVP_END : KVP_OK;
}

int
kvp_cap_poll(struct kvp_cap *c, long timeout_ms, struct kvp_diag *d)
{
	zmq_pollitem_t *it = c->items;
	int64_t now = kvp_cap_now_ms_();
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < c->n; i++) {
		struct cap_stream *s = c->s[i];
		void *socks[3] = {s->sub, s->replaying ? s->dealer : NULL,
		                  s->mon};

		if (s->replaying && s->deadline - now < timeout_ms)
			timeout_ms = s->deadline > now ? s->deadline - now : 0;
		for (int j = 0; j < 3; j++)
			if (socks[j] != NULL) {
				it[k] = (zmq_pollitem_t){socks[j], 0,
				                         ZMQ_POLLIN, 0};
				c->owner[k] = i * 3 + (size_t)j;
				k++;
			}
	}
	rc = zmq_poll(it, (int)k, timeout_ms);
	if (rc < 0 && errno != EINTR)
		return zfail(d, "zmq_poll"), KVP_FAIL;
	for (size_t i = 0; rc > 0 && i < k && !c->done; i++) {
		struct cap_stream *s = c->s[c->owner[i] / 3];
		int which = (int)(c->owner[i] % 3);
		/* the socket as it is now: a replay given up meanwhile
		 * closed its DEALER */
		void *sock = which == 0   ? s->sub
		             : which == 1 ? s->dealer
		                          : s->mon;

		if ((it[i].revents & ZMQ_POLLIN) && sock != NULL &&
		    take(c, s, sock, which) != 0)
			return status(c, d);
	}
	if (deadlines(c, kvp_cap_now_ms_()) != 0)
		return status(c, d);
	return status(c, d);
}

int
kvp_cap_start(struct kvp_cap *c, struct kvp_diag *d)
{
	for (size_t i = 0; c->o.from_start && i < c->n; i++) {
		struct cap_stream *s = c->s[i];

		if (s->replay[0] == '\0') {
			kvp_cap_note_(
			    c, s,
			    "no replay endpoint: starts with the first "
			    "live message");
			continue;
		}
		if (ask_replay(c, s, 0) != 0)
			continue;
		s->started = 1;
		s->expected = 0;
		s->replaying = 1;
		s->hi = CAP_NO_HI;
		s->deadline = kvp_cap_now_ms_() + c->o.replay_timeout_ms;
	}
	return status(c, d);
}

/* Writes what is queued until a round finds nothing, for at most
 * stop_timeout_ms. 1 when the queues were emptied (or --count reached). */
static int
drain_queued(struct kvp_cap *c, struct kvp_diag *d)
{
	int64_t end = kvp_cap_now_ms_() + c->o.stop_timeout_ms;

	while (!c->done && !c->failed) {
		uint64_t before = c->total_in;

		kvp_cap_poll(c, 0, d);
		if (c->total_in == before)
			return 1;
		if (c->abort_now || kvp_cap_now_ms_() >= end)
			return 0;
	}
	return 1;
}

/* One live message taken at the stop and not written: its seq is lost. */
static void
left_msg(struct cap_stream *s, struct parts *p)
{
	uint64_t seq;

	if (p->n != 3 || zmq_msg_size(&p->m[1]) != 8)
		return;
	seq = be64(zmq_msg_data(&p->m[1]));
	kvp_cap_taken_(s, seq);
}

/* Takes what is still queued without writing it, for at most
 * DISCARD_MS: live messages are counted (left_msg), the rest dropped. */
static void
discard_queued(struct kvp_cap *c)
{
	int64_t end = kvp_cap_now_ms_() + DISCARD_MS;
	int got = 1;

	while (got && kvp_cap_now_ms_() < end) {
		got = 0;
		for (size_t i = 0; i < c->n; i++) {
			struct cap_stream *s = c->s[i];
			void *socks[3] = {s->sub, s->dealer, s->mon};

			for (int j = 0; j < 3; j++) {
				struct parts p;

				for (int k = 0; socks[j] != NULL && k < BURST &&
				                recv_parts(socks[j], &p) > 0;
				     k++) {
					got = 1;
					if (j == 0)
						left_msg(s, &p);
					parts_close(&p);
				}
			}
		}
	}
}

int
kvp_cap_finish(struct kvp_cap *c, struct kvp_diag *d)
{
	int empty;

	c->stopping = 1; /* a gap found now is lost: no new replay */
	empty = drain_queued(c, d);
	if (!empty && !c->failed)
		discard_queued(c);
	for (size_t i = 0; i < c->n && !c->failed; i++)
		if (c->s[i]->replaying && kvp_cap_replay_end_(c, c->s[i]) != 0)
			break;
	for (size_t i = 0; i < c->n && !c->failed; i++)
		if (kvp_cap_left_(c, c->s[i]) != 0)
			break;
	if (c->out != NULL && fflush(c->out) != 0)
		c->failed = 1;
	return status(c, d) == KVP_FAIL ? KVP_FAIL : KVP_OK;
}

void
kvp_cap_abort(struct kvp_cap *c)
{
	c->abort_now = 1;
}

/* ---- the session ------------------------------------------------------- */

struct kvp_cap *
kvp_cap_new(const struct kvp_cap_opts *o, kvp_cap_note_fn fn, void *ctx,
            struct kvp_diag *d)
{
	struct kvp_cap *c = calloc(1, sizeof *c);

	if (c == NULL || (c->zctx = zmq_ctx_new()) == NULL) {
		free(c);
		kvp_diag_set(d, 0, "out of memory");
		return NULL;
	}
	c->o = *o;
	if (c->o.replay_timeout_ms == 0)
		c->o.replay_timeout_ms = 2000;
	if (c->o.max_held_bytes == 0)
		c->o.max_held_bytes = (size_t)256 << 20;
	if (c->o.max_line == 0)
		c->o.max_line = (size_t)64 << 20;
	if (c->o.max_held_msgs == 0)
		c->o.max_held_msgs = (size_t)1 << 20;
	if (c->o.stop_timeout_ms == 0)
		c->o.stop_timeout_ms = 5000;
	c->note = fn;
	c->note_ctx = ctx;
	c->ask_replay = ask_replay;
	c->drop_replay = drop_replay;
	kvp_jw_init(&c->jw, NULL, o->hash_strings, o->unbuffered);
	return c;
}

/* The poll arrays, sized for every stream added. */
static int
poll_arrays(struct kvp_cap *c)
{
	free(c->items);
	free(c->owner);
	c->items = calloc(c->n * 3 + 1, sizeof(zmq_pollitem_t));
	c->owner = calloc(c->n * 3 + 1, sizeof *c->owner);
	return c->items != NULL && c->owner != NULL ? 0 : -1;
}

void
kvp_cap_set_output(struct kvp_cap *c, FILE *f)
{
	c->out = f;
	c->jw.f = f;
}

void
kvp_cap_free(struct kvp_cap *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n; i++) {
		close_sock(&c->s[i]->sub);
		close_sock(&c->s[i]->dealer);
		close_sock(&c->s[i]->mon);
		kvp_cap_stream_free_(c->s[i]);
	}
	free(c->s);
	free(c->ring);
	free(c->items);
	free(c->owner);
	kvp_jw_fini(&c->jw);
	zmq_ctx_term(c->zctx);
	free(c);
}

int
kvp_cap_write_failed(const struct kvp_cap *c)
{
	return c->failed;
}

uint64_t
kvp_cap_written(const struct kvp_cap *c)
{
	return c->written;
}

size_t
kvp_cap_n_streams(const struct kvp_cap *c)
{
	return c->n;
}

const struct kvp_cap_stats *
kvp_cap_stream(const struct kvp_cap *c, size_t i, const char **name)
{
	if (name != NULL)
		*name = c->s[i]->name;
	return &c->s[i]->st;
}

const char *
kvp_cap_zmq_version(void)
{
	static char v[32];
	int a, b, p;

	zmq_version(&a, &b, &p);
	snprintf(v, sizeof v, "%d.%d.%d", a, b, p);
	return v;
}
