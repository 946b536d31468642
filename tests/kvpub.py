#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""kvpub.py: a KV-event publisher for kv-capture's tests and benchmark.

It follows the wire of vLLM's and SGLang's ZmqEventPublisher
(docs/spec/kv-events.md §1), written from the spec, not from their code:
  - PUB (an XPUB socket here, so that the script sees the subscriber join
    and sends nothing before it: no slow-joiner losses) sends
    [topic, seq (8 bytes big-endian), payload], one msgpack batch
    [ts, [event...], dp_rank] per message;
  - a ROUTER replay socket keeps the last --buffer-steps (seq, payload)
    pairs; a request [identity, "", start (8 bytes BE)] is answered with
    [identity, "", seq, payload] for every buffered seq >= start (with
    --replay-topic: [identity, "", topic, seq, payload], as vLLM does since
    it added the topic), then the end marker, seq 0xff x 8 and an empty
    payload, in the same shape;
  - DP rank r publishes on port + r (PUB and replay).

Knobs for the tests: --skip SEQS is never sent live (as a full high-water
mark would drop it) but is buffered; --drop-oldest K drops the K oldest
buffer entries before each replay answer (a buffer that wrapped);
--presend K sends seqs 0..K-1 before anyone subscribes (SGLang's startup
batch); --malformed SEQS sends those as 2-frame messages (no seq frame);
--restart-after N starts again at seq 0 after every N messages (--count
counts messages sent); --big SEQS --big-size N pads those seqs with N bytes;
--noise N adds N random hex characters to every batch; --connect ADDR connects the PUB socket to a kv-capture --bind
instead of binding; --no-replay has no replay socket; --replay-hold K
answers replay requests as the buffer was when each came, but sends the
answers (in order) only once seq K has been sent live (a slow replay
thread); --replay-trickle S sends answers without the end marker, then
the oldest buffered entry again every S seconds to whoever asked (a
replay endpoint trickling seqs outside the range asked for).

Prints "PUB_PORT REPLAY_PORT" (of rank 0) on the first line of stdout once
bound, and "sent N in T s" on stderr when done sending; then keeps answering
replay requests for --linger seconds (or until killed).
"""
import argparse
import os
import random
import signal
import sys
import time
from collections import deque

import msgpack
import zmq

END = b"\xff" * 8


def be(n):
    return n.to_bytes(8, "big")


def batch(seq, rank, events, pad, noise=0):
    evs = []
    for i in range(events):
        h = seq * 1000 + i * 10 + rank + 1
        evs.append(["BlockStored", [h], None, [1, 2, 3, 4], 4, None, "GPU"])
    b = msgpack.packb([float(seq), evs, rank], use_bin_type=True)
    if pad or noise:
        # one AllBlocksCleared-free way to grow a batch: a long medium
        # (--noise: random hex, which compresses only 2:1)
        evs.append(["BlockRemoved", [seq + 1], "x" * pad + os.urandom(noise // 2).hex()])
        b = msgpack.packb([float(seq), evs, rank], use_bin_type=True)
    return b


def bind_ports(ctx, ranks, replay):
    """Binds XPUB on base+r and ROUTER on rbase+r, base picked at random."""
    for _ in range(200):
        base = random.randrange(20000, 60000 - 2 * ranks)
        socks = []
        try:
            for r in range(ranks):
                s = ctx.socket(zmq.XPUB)
                socks.append(s)
                s.bind("tcp://127.0.0.1:%d" % (base + r))
            if replay:
                for r in range(ranks):
                    s = ctx.socket(zmq.ROUTER)
                    s.setsockopt(zmq.SNDHWM, 0)  # a ROUTER drops at its hwm
                    socks.append(s)
                    s.bind("tcp://127.0.0.1:%d" % (base + ranks + r))
            return base, base + ranks, socks[:ranks], socks[ranks:]
        except zmq.ZMQError:
            for s in socks:
                s.close(0)
    sys.exit("kvpub: no free ports")


class Rank:
    def __init__(self, a, r, pub, router):
        self.a, self.r, self.pub, self.router = a, r, pub, router
        self.buf = deque(maxlen=a.buffer_steps)
        self.deferred = []  # --replay-hold: answers not sent yet
        self.tricklers = []  # --replay-trickle: who asked
        self.next_trickle = 0
        self.sent_seq = -1

    def send(self, seq):
        pad = self.a.big_size if seq in self.a.big else self.a.payload_pad
        p = batch(seq, self.r, self.a.events, pad, self.a.noise)
        self.buf.append((seq, p))
        if seq in self.a.malformed:
            self.pub.send_multipart([self.a.topic, p])  # no seq frame
        elif seq not in self.a.skip:
            self.pub.send_multipart([self.a.topic, be(seq), p], copy=False)
        self.sent_seq = max(self.sent_seq, seq)

    def reply(self, frames):
        if self.a.replay_hold and self.sent_seq < self.a.replay_hold:
            self.deferred.append(frames)
            return
        for f in self.deferred:
            self.router.send_multipart(f)
        self.deferred = []
        self.router.send_multipart(frames)

    def trickle(self):
        now = time.monotonic()
        if not self.tricklers or now < self.next_trickle or not self.buf:
            return
        self.next_trickle = now + self.a.replay_trickle
        seq, p = self.buf[0]
        tp = [self.a.topic] if self.a.replay_topic else []
        for ident in self.tricklers:
            self.router.send_multipart([ident, b""] + tp + [be(seq), p])

    def flush(self):
        if self.deferred and self.sent_seq >= self.a.replay_hold:
            for f in self.deferred:
                self.router.send_multipart(f)
            self.deferred = []

    def answer(self):
        while True:
            try:
                fr = self.router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(fr) != 3 or fr[1] != b"" or len(fr[2]) != 8:
                continue
            start = int.from_bytes(fr[2], "big")
            ident = fr[0]
            entries = list(self.buf)[self.a.drop_oldest:]
            tp = [self.a.topic] if self.a.replay_topic else []
            for seq, p in entries:
                if seq >= start:
                    self.reply([ident, b""] + tp + [be(seq), p])
            if self.a.replay_trickle:
                self.tricklers.append(ident)
            else:
                self.reply([ident, b""] + tp + [END, b""])


def wait_subscribers(ranks, timeout):
    poller = zmq.Poller()
    for k in ranks:
        poller.register(k.pub, zmq.POLLIN)
    left = set(range(len(ranks)))
    end = time.monotonic() + timeout
    while left and time.monotonic() < end:
        for k in ranks:
            if k.router is not None:
                k.answer()
        for s, _ in poller.poll(20):
            i = next(i for i, k in enumerate(ranks) if k.pub is s)
            if s.recv()[:1] == b"\x01":
                left.discard(i)
    if left:
        sys.exit("kvpub: no subscriber within %g s" % timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--count", type=int, default=20, help="0: until killed")
    ap.add_argument("--rate", type=float, default=0, help="messages/s per rank; 0: as fast as possible")
    ap.add_argument("--skip", default="", help="seqs not sent live, e.g. 3,4")
    ap.add_argument("--drop-oldest", type=int, default=0)
    ap.add_argument("--malformed", default="", help="seqs sent as 2-frame messages")
    ap.add_argument("--restart-after", type=int, default=0,
                    help="after every this many messages, start again at seq 0 (an engine restart)")
    ap.add_argument("--presend", type=int, default=0)
    ap.add_argument("--replay-hold", type=int, default=0)
    ap.add_argument("--replay-trickle", type=float, default=0)
    ap.add_argument("--topic", default="kv-events")
    ap.add_argument("--replay-topic", action="store_true")
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--connect", default=None)
    ap.add_argument("--events", type=int, default=1)
    ap.add_argument("--payload-pad", type=int, default=0)
    ap.add_argument("--noise", type=int, default=0, help="random hex chars added to each batch")
    ap.add_argument("--big", default="", help="seqs padded with --big-size bytes")
    ap.add_argument("--big-size", type=int, default=0)
    ap.add_argument("--buffer-steps", type=int, default=10000)
    ap.add_argument("--hwm", type=int, default=100000)
    ap.add_argument("--linger", type=float, default=30)
    ap.add_argument("--wait-sub", type=float, default=20)
    a = ap.parse_args()
    a.topic = a.topic.encode()
    a.skip = {int(x) for x in a.skip.split(",") if x}
    a.malformed = {int(x) for x in a.malformed.split(",") if x}
    a.big = {int(x) for x in a.big.split(",") if x}
    # at once: a context still holding unsent messages would wait for them
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))

    ctx = zmq.Context()
    if a.connect:
        host, port = a.connect.rsplit(":", 1)
        pubs = []
        for r in range(a.ranks):
            s = ctx.socket(zmq.XPUB)
            s.connect("%s:%d" % (host, int(port) + r))
            pubs.append(s)
        routers = [None] * a.ranks
        print("0 0", flush=True)
    else:
        base, rbase, pubs, routers = bind_ports(ctx, a.ranks, not a.no_replay)
        if a.no_replay:
            routers = [None] * a.ranks
        print("%d %d" % (base, rbase), flush=True)
    ranks = [Rank(a, r, pubs[r], routers[r]) for r in range(a.ranks)]
    for s in pubs:
        s.setsockopt(zmq.SNDHWM, a.hwm)
        s.setsockopt(zmq.LINGER, 2000)

    for seq in range(a.presend):
        for k in ranks:
            k.send(seq)
    wait_subscribers(ranks, a.wait_sub)
    seq, t0, sent = a.presend, time.monotonic(), a.presend * len(ranks)
    while a.count == 0 or sent < a.count * len(ranks):
        for k in ranks:
            k.send(seq)
            sent += 1
        seq += 1
        if a.restart_after and sent % (a.restart_after * len(ranks)) == 0:
            seq = 0
            for k in ranks:
                k.buf.clear()
        if seq % 64 == 0 or a.rate:
            for k in ranks:
                if k.router is not None:
                    k.answer()
                    k.flush()
                    k.trickle()
        if a.rate:
            ahead = (sent / len(ranks) - a.presend) / a.rate - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    secs = time.monotonic() - t0
    print("sent %d in %.3f s" % (sent, secs), file=sys.stderr, flush=True)
    end = time.monotonic() + a.linger
    poller = zmq.Poller()
    for k in ranks:
        if k.router is not None:
            poller.register(k.router, zmq.POLLIN)
    while time.monotonic() < end:
        poller.poll(50)
        for k in ranks:
            if k.router is not None:
                k.answer()
                k.flush()
                k.trickle()


if __name__ == "__main__":
    main()
