#!/usr/bin/env python3
# lru_model.py — an independent model of route-score's bounded caches, for
# tests/route-score-policies.bats. It re-simulates an LRU cache at each
# capacity separately (no stack distances), given which worker each request
# went to, so it checks both --capacity-blocks and --mrc.
#
#   lru_model.py sim TRACE ASSIGN CAP...   ASSIGN: one worker id per line
#       → {"hits": {cap: [per request]}, "workers": {cap: {w: hits}},
#          "fleet": {cap: hits}, "accesses": {w: n}, "evictions": {cap: n},
#          "final": {cap: {w: [prefix, ...]}}}        (cap "inf": unbounded)
#   lru_model.py events EVENTS             → {w: [prefix, ...]} after
#       replaying RouterEvent stores/removals (blocks named by the
#       hash_ids prefix they stand for)
#
# Rules modelled (route-score(1), "Comparing policies"): a request's blocks
# are touched deepest first, root last; a hit refreshes, a miss inserts and,
# over capacity, evicts the least recently touched block; a request's hits
# are the longest prefix of its blocks present when it arrives. A block is
# named by its prefix of hash_ids (what a chained sequence hash encodes).
import json
import sys
from collections import OrderedDict


def load_trace(path):
    return [json.loads(l)["hash_ids"] for l in open(path) if l.strip()]


def simulate(reqs, assign, cap):
    caches, hits, evictions = {}, [], 0
    for ids, w in zip(reqs, assign):
        c = caches.setdefault(w, OrderedDict())  # last = most recent
        blocks = [tuple(ids[: i + 1]) for i in range(len(ids))]
        k = 0
        while k < len(blocks) and blocks[k] in c:
            k += 1
        hits.append(k)
        for b in reversed(blocks):
            if b in c:
                c.move_to_end(b)
            else:
                c[b] = True
                if cap != "inf" and len(c) > cap:
                    c.popitem(last=False)
                    evictions += 1
    return hits, caches, evictions


def cmd_sim(trace, assign_path, caps):
    reqs = load_trace(trace)
    assign = [l.strip() for l in open(assign_path) if l.strip()]
    out = {"hits": {}, "workers": {}, "fleet": {}, "accesses": {},
           "evictions": {}, "final": {}}
    for ids, w in zip(reqs, assign):
        out["accesses"][w] = out["accesses"].get(w, 0) + len(ids)
    for cap in caps:
        cv = cap if cap == "inf" else int(cap)
        hits, caches, ev = simulate(reqs, assign, cv)
        per_w = {}
        for h, w in zip(hits, assign):
            per_w[w] = per_w.get(w, 0) + h
        out["hits"][cap] = hits
        out["workers"][cap] = per_w
        out["fleet"][cap] = sum(hits)
        out["evictions"][cap] = ev
        out["final"][cap] = {w: sorted(list(map(list, c)))
                             for w, c in caches.items()}
    print(json.dumps(out, sort_keys=True, separators=(",", ":")))


def cmd_events(path):
    name, held = {}, {}  # block_hash → prefix; worker → set of prefixes
    for line in open(path):
        ev = json.loads(line)
        w = str(ev["worker_id"])
        s = held.setdefault(w, set())
        data = ev["event"]["data"]
        if "stored" in data:
            st = data["stored"]
            parent = st["parent_hash"]
            prefix = [] if parent is None else list(name[parent])
            for b in st["blocks"]:
                prefix = prefix + [b["tokens_hash"]]
                name[b["block_hash"]] = tuple(prefix)
                s.add(tuple(prefix))
        else:
            for h in data["removed"]["block_hashes"]:
                s.remove(name[h])
    print(json.dumps({w: sorted(list(map(list, s))) for w, s in held.items()},
                     sort_keys=True, separators=(",", ":")))


if __name__ == "__main__":
    if sys.argv[1] == "sim":
        cmd_sim(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        cmd_events(sys.argv[2])
