/* SPDX-License-Identifier: MIT */
/*
 * capbench_pub.c — the fast publisher of bench-kv-capture.sh (the test
 * suite's tests/kvpub.py cannot send 100,000 messages/s). The same wire
 * (docs/spec/kv-events.md §1): an XPUB socket (it waits for the subscription,
 * so nothing is sent before the subscriber is there) sending [topic, seq
 * (8 bytes BE), payload], payload one msgpack batch [ts, [BlockStored],
 * 0]; a ROUTER replay socket over a ring of the last N batches answering
 * ["", start] with ["", seq, payload]... and the end marker.
 *
 *   capbench_pub COUNT RATE [PAD]   (RATE 0: as fast as possible)
 *
 * Prints "PUB_PORT REPLAY_PORT" on stdout once bound, "sent N in T s" on
 * stderr when done, then answers replays for 20 s or until killed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
be64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (56 - 8 * i));
}

/* The batch of seq into p; returns its size. */
static size_t
batch(unsigned char *p, uint64_t seq, size_t pad)
{
	static const unsigned char tag[] = "\xab"
	                                   "BlockStored";
	double ts = (double)seq;
	uint64_t bits;
	size_t n = 0;

	memcpy(&bits, &ts, 8);
	p[n++] = 0x93;
	p[n++] = 0xcb;
	be64(p + n, bits);
	n += 8;
	p[n++] = 0x91;
	p[n++] = 0x97;
	memcpy(p + n, tag, sizeof tag - 1);
	n += sizeof tag - 1;
	p[n++] = 0x91;
	p[n++] = 0xcf;
	be64(p + n, seq * 1000 + 1);
	n += 8;
	memcpy(p + n, "\xc0\x94\x01\x02\x03\x04\x04\xc0", 8);
	n += 8;
	if (pad > 0) { /* medium: a long str 32 */
		p[n++] = 0xdb;
		p[n++] = (unsigned char)(pad >> 24);
		p[n++] = (unsigned char)(pad >> 16);
		p[n++] = (unsigned char)(pad >> 8);
		p[n++] = (unsigned char)pad;
		memset(p + n, 'x', pad);
		n += pad;
	} else {
		memcpy(p + n, "\xa3GPU", 4);
		n += 4;
	}
	p[n++] = 0x00;
	return n;
}

struct ring {
	unsigned char *buf; /* slot i at buf + i * slot */
	size_t *len;
	size_t slot, n;
	uint64_t next; /* seqs [next - n', next) are kept */
};

static void
answer(void *router, const struct ring *r)
{
	zmq_msg_t id;
	unsigned char req[16], end[8];
	int more;

	memset(end, 0xff, 8);
	for (;;) {
		zmq_msg_init(&id);
		if (zmq_msg_recv(&id, router, ZMQ_DONTWAIT) < 0) {
			zmq_msg_close(&id);
			return;
		}
		int a = zmq_recv(router, req, sizeof req, 0); /* "" */
		int b = zmq_recv(router, req, sizeof req, 0); /* start */
		size_t ms = sizeof more;
		zmq_getsockopt(router, ZMQ_RCVMORE, &more, &ms);
		(void)a;
		if (b == 8 && !more) {
			uint64_t start = 0, lo;

			for (int i = 0; i < 8; i++)
				start = start << 8 | req[i];
			lo = r->next > r->n ? r->next - r->n : 0;
			for (uint64_t s = start > lo ? start : lo; s < r->next;
			     s++) {
				unsigned char sb[8];
				size_t k = s % r->n;

				be64(sb, s);
				zmq_send(router, zmq_msg_data(&id),
				         zmq_msg_size(&id), ZMQ_SNDMORE);
				zmq_send(router, "", 0, ZMQ_SNDMORE);
				zmq_send(router, sb, 8, ZMQ_SNDMORE);
				zmq_send(router, r->buf + k * r->slot,
				         r->len[k], 0);
			}
			zmq_send(router, zmq_msg_data(&id), zmq_msg_size(&id),
			         ZMQ_SNDMORE);
			zmq_send(router, "", 0, ZMQ_SNDMORE);
			zmq_send(router, end, 8, ZMQ_SNDMORE);
			zmq_send(router, "", 0, 0);
		}
		zmq_msg_close(&id);
	}
}

static int
port_of(void *s)
{
	char ep[256];
	size_t n = sizeof ep;

	zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, ep, &n);
	return (int)strtol(strrchr(ep, ':') + 1, NULL, 10);
}

int
main(int argc, char **argv)
{
	uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	double rate = argc > 2 ? strtod(argv[2], NULL) : 0;
	size_t pad = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	void *ctx = zmq_ctx_new(), *pub = zmq_socket(ctx, ZMQ_XPUB),
	     *router = zmq_socket(ctx, ZMQ_ROUTER);
	int hwm = 100000, linger = 2000;
	struct ring r;
	char sub[256];
	double t0, end;

	r.slot = pad + 128;
	r.n = pad > 0 ? 64 : (count < 1000000 ? count + 1 : 1000000);
	r.buf = malloc(r.n * r.slot);
	r.len = calloc(r.n, sizeof *r.len);
	r.next = 0;
	zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
	zmq_setsockopt(pub, ZMQ_LINGER, &linger, sizeof linger);
	hwm = 0; /* a ROUTER drops at its high-water mark: keep every reply */
	zmq_setsockopt(router, ZMQ_SNDHWM, &hwm, sizeof hwm);
	hwm = 100000;
	if (r.buf == NULL || zmq_bind(pub, "tcp://127.0.0.1:*") != 0 ||
	    zmq_bind(router, "tcp://127.0.0.1:*") != 0)
		return 2;
	printf("%d %d\n", port_of(pub), port_of(router));
	fflush(stdout);
	if (zmq_recv(pub, sub, sizeof sub, 0) < 1) /* the subscription */
		return 2;
	t0 = now();
	for (uint64_t seq = 0; seq < count; seq++) {
		size_t k = seq % r.n;
		unsigned char sb[8];

		r.len[k] = batch(r.buf + k * r.slot, seq, pad);
		r.next = seq + 1;
		be64(sb, seq);
		zmq_send(pub, "kv-events", 9, ZMQ_SNDMORE);
		zmq_send(pub, sb, 8, ZMQ_SNDMORE);
		zmq_send(pub, r.buf + k * r.slot, r.len[k], 0);
		if ((seq & 255) == 255) {
			answer(router, &r);
			double ahead =
			    rate > 0 ? (double)(seq + 1) / rate - (now() - t0)
			             : 0;

			if (ahead > 0) {
				struct timespec ts = {0, (long)(ahead * 1e9) %
				                             1000000000};

				ts.tv_sec = (time_t)ahead;
				nanosleep(&ts, NULL);
			}
		}
	}
	fprintf(stderr, "sent %llu in %.3f s\n", (unsigned long long)count,
	        now() - t0);
	end = now() + 20;
	while (now() < end) {
		zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};

		if (zmq_poll(&it, 1, 50) > 0)
			answer(router, &r);
	}
	zmq_close(pub);
	zmq_close(router);
	zmq_ctx_term(ctx);
	return 0;
}
