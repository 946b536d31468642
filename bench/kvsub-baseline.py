#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The baseline of bench-kv-capture.sh: the least a subscriber can do, a
pyzmq SUB socket that receives N messages and keeps nothing. Prints
"MESSAGES PAYLOAD_BYTES SECONDS" (first to last message)."""
import sys
import time

import zmq

addr, n = sys.argv[1], int(sys.argv[2])
s = zmq.Context().socket(zmq.SUB)
s.setsockopt(zmq.RCVHWM, 100000)
s.setsockopt(zmq.SUBSCRIBE, b"")
s.connect(addr)
got = size = 0
t0 = None
poller = zmq.Poller()
poller.register(s, zmq.POLLIN)
while got < n:
    if not poller.poll(20000):
        break
    fr = s.recv_multipart()
    if t0 is None:
        t0 = time.monotonic()
    got += 1
    size += len(fr[-1])
print(got, size, "%.6f" % (time.monotonic() - (t0 or time.monotonic())))
