#!/usr/bin/python3
"""Synthetic inputs for bench/bench-route-score.sh (deterministic).

  gen_route_score.py mooncake N > trace.jsonl
      Mooncake-like trace (docs/spec/route-score.md §4.1 format): N requests in
      400 conversations; each turn repeats its conversation's prefix and
      adds 1-8 new 512-token blocks (a conversation restarts past 48
      blocks); 3 shared 4-block system prompts; 280 ms apart. Sized like
      the bundled synthetic_trace_head500.jsonl (about 26 blocks per
      request, 500 requests in 139 s).
  gen_route_score.py stream EVENTS REQUESTS > stream.ndjson
      kv-normalize-shaped RouterEvents (stores of 4-16 block chains under
      known parents, removals) for 16 workers, interleaved with pre-hashed
      requests that follow stored paths.
"""
import json
import random
import sys


def mooncake(n):
    rnd = random.Random(42)
    nxt = [1000]
    system = [list(range(k * 100, k * 100 + 4)) for k in range(3)]
    convs = []
    for _ in range(400):
        convs.append(list(rnd.choice(system)))
    out = sys.stdout
    for i in range(n):
        j = rnd.randrange(len(convs))
        c = convs[j]
        if len(c) > 48:
            c = convs[j] = list(rnd.choice(system))
        for _ in range(rnd.randint(1, 8)):
            c.append(nxt[0])
            nxt[0] += 1
        ids = list(c)
        out.write(json.dumps({"timestamp": i * 280, "input_length": len(ids) * 512 - rnd.randint(0, 511),
                              "output_length": rnd.randint(1, 400), "hash_ids": ids}) + "\n")


def stream(nev, nreq):
    rnd = random.Random(7)
    workers = 16
    paths = {w: [] for w in range(workers)}  # (exts, locals) chains
    eid = [0] * workers
    nxt = [1]
    out = sys.stdout
    total = nev + nreq
    ev = rq = 0
    while ev + rq < total:
        if rq < nreq and (ev >= nev or rnd.random() < nreq / total):
            w = rnd.randrange(workers)
            if paths[w] and rnd.random() < 0.8:
                ex, lo = rnd.choice(paths[w])
                lo = lo[: rnd.randint(1, len(lo))] + [rnd.randrange(1 << 63) for _ in range(rnd.randint(0, 4))]
            else:
                lo = [rnd.randrange(1 << 63) for _ in range(rnd.randint(1, 16))]
            out.write(json.dumps({"type": "request", "request_id": "q%d" % rq, "block_hashes": lo,
                                  "input_length": len(lo) * 16}) + "\n")
            rq += 1
            continue
        w = rnd.randrange(workers)
        eid[w] += 1
        if paths[w] and rnd.random() < 0.2:
            ex, lo = paths[w].pop(rnd.randrange(len(paths[w])))
            data = {"removed": {"block_hashes": ex[-rnd.randint(1, len(ex)):]}}
        else:
            parent = None
            pex, plo = [], []
            if paths[w] and rnd.random() < 0.6:
                pex, plo = rnd.choice(paths[w])
                parent = pex[-1]
            k = rnd.randint(4, 16)
            ex = [nxt[0] + j for j in range(k)]
            nxt[0] += k
            lo = [rnd.randrange(1 << 63) for _ in range(k)]
            paths[w].append((pex + ex, plo + lo))
            if len(paths[w]) > 64:
                paths[w].pop(0)
            data = {"stored": {"parent_hash": parent, "start_position": None,
                               "blocks": [{"block_hash": e, "tokens_hash": l, "mm_extra_info": None}
                                          for e, l in zip(ex, lo)]}}
        out.write(json.dumps({"worker_id": w, "storage_tier": "device", "residency_domain": "worker",
                              "event": {"event_id": eid[w], "data": data, "dp_rank": 0},
                              "x": {"seq": eid[w], "idx": 0, "action": "pass", "kept": 1, "excluded": 0}}) + "\n")
        ev += 1


if __name__ == "__main__":
    if sys.argv[1] == "mooncake":
        mooncake(int(sys.argv[2]))
    else:
        stream(int(sys.argv[2]), int(sys.argv[3]))
