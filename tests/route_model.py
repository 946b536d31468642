#!/usr/bin/python3
"""Independent model of route-score (docs/spec/route-score.md §2–§3), for the
cross-check in tests/route-score.bats. Written from the spec, not from the
C code: a naive index (a dict from prefix path to holder set, per-holder
dicts from external hash to path), the §3.1 cost with own-load tracking
(§3.4), temperature-0 argmin with lowest-(worker, rank) ties.

  route_model.py gen --seed S [--score legacy] [--approx]
        random stream on stdout
  route_model.py check [--score legacy] [--approx TTL_S MAX] IN OUT
        replays IN and compares every decision in OUT (route-score
        --block-size 4 output): candidates, overlaps, logits, choice.

Requests carry explicit block_hashes and sequence_hashes, so no xxhash is
needed. Block size 4.

Approximate mode (§3.4, route-score --approx --ttl TTL_S
--approx-max-blocks MAX): the chosen worker is assumed to hold the
request's blocks until ts + TTL; a block touched again with a new expiry
is queued again, its older queue entry going stale; before each request
the entries due by its timestamp go, and whenever more than MAX pairs are
held the oldest entries go until 80% remain. Streams for it (gen
--approx) carry ts_ms; on even seeds requests bring no sequence_hashes
(the tool chains its own; the model names a block by its path) and no
event is sent, odd seeds mix events in.
"""
import collections
import json
import random
import sys

BS = 4


class Model:
    def __init__(self, legacy=False, approx=None):
        self.legacy = legacy
        self.approx = approx  # None, or (ttl_ms, max pairs)
        self.now = 0
        self.exp = {}         # (h, ext) -> expiry of its assumed block
        self.queue = collections.deque()  # (expiry, h, ext), oldest first
        self.holders = {}     # path -> set of (w, r)
        self.ext = {}         # (w, r) -> {ext: path}
        self.cursor = {}      # (w, r) -> last event id
        self.cands = set()
        self.prefill = {}     # (w, r) -> active prefill tokens
        self.blocks = {}      # (w, r) -> {seq: refcount}
        self.active = {}      # request id -> [cand, prefill, done, seqs]

    # -- index --
    def _drop(self, h, path):
        s = self.holders.get(path)
        if s is not None:
            s.discard(h)

    def store(self, h, parent, blocks):
        m = self.ext.setdefault(h, {})
        exts = [e for e, _ in blocks]
        if len(set(exts)) != len(exts) or (parent is not None and parent in exts):
            return "self_reference"
        if parent is None:
            base = ()
        elif parent in m:
            base = m[parent]
        else:
            return "parent_not_found"
        path = base
        for e, loc in blocks:
            path = path + (loc,)
            old = m.get(e)
            if old is not None and old != path:
                self._drop(h, old)
            m[e] = path
            self.holders.setdefault(path, set()).add(h)
        return "ok"

    def remove(self, h, exts):
        m = self.ext.setdefault(h, {})
        for e in exts:
            if e in m:
                self._drop(h, m.pop(e))

    def clear(self, h):
        for e in list(self.ext.get(h, {})):
            self.remove(h, [e])

    def match(self, local):
        score = {}
        for d in range(len(local)):
            hs = self.holders.get(tuple(local[:d + 1]))
            if not hs:
                break
            moved = False
            for h in hs:
                if self.legacy:
                    score[h] = score.get(h, 0) + 1
                    moved = True
                elif score.get(h, 0) == d:
                    score[h] = d + 1
                    moved = True
            if not moved:
                break
        return score

    def tree_size(self, h):
        return sum(1 for p, s in self.holders.items() if h in s)

    # -- events --
    def event(self, h, eid):
        last = self.cursor.get(h)
        if eid is not None and last is not None and eid <= last:
            return False  # stale
        if eid is not None:
            self.cursor[h] = eid  # gaps are applied (default)
        self.cands.add(h)
        return True

    def free(self, rid):
        c, pf, done, seqs = self.active.pop(rid)
        if not done:
            self.prefill[c] -= pf
        b = self.blocks[c]
        for s in seqs:
            b[s] -= 1
            if b[s] == 0:
                del b[s]

    def remove_worker(self, w):
        for h in sorted(self.cands):
            if h[0] != w:
                continue
            self.clear(h)
            self.cands.discard(h)
            self.cursor.pop(h, None)
            for rid in [k for k, v in self.active.items() if v[0] == h]:
                self.free(rid)

    # -- approximate mode --
    def expire(self):
        ttl, cap = self.approx
        target = cap - cap // 5
        pruning = len(self.exp) > cap
        while self.queue:
            exp, h, e = self.queue[0]
            if pruning and len(self.exp) <= target:
                pruning = False
            if not pruning and (ttl == 0 or exp > self.now):
                break
            self.queue.popleft()
            if self.exp.get((h, e)) == exp:
                del self.exp[(h, e)]
                self.remove(h, [e])

    def assume(self, h, local, seqs):
        if self.store(h, None, list(zip(seqs, local))) != "ok":
            return
        exp = self.now + self.approx[0]
        for e in seqs:
            if self.exp.get((h, e)) != exp:
                self.exp[(h, e)] = exp
                self.queue.append((exp, h, e))
        self.expire()

    # -- routing --
    def route(self, rid, local, seqs, isl, commit=True, ts=None):
        if ts is not None and ts > self.now:
            self.now = ts
        if self.approx:
            self.expire()
        score = self.match(local)
        rows = []
        for h in sorted(self.cands):
            o = score.get(h, 0)
            p = self.prefill.get(h, 0)
            b = self.blocks.get(h, {})
            d = len(b)
            n = sum(1 for s in seqs if s not in b)
            logit = 1.0 * max(0.0, (p + isl) / BS - o) + d + n
            rows.append((h, o, logit))
        if not rows:
            return rows, None
        lo = min(r[2] for r in rows)
        chosen = [r for r in rows if r[2] == lo][0]
        if commit:
            h, o = chosen[0], chosen[1]
            if rid in self.active:
                self.free(rid)
            pf = max(0, isl - o * BS)
            self.prefill[h] = self.prefill.get(h, 0) + pf
            b = self.blocks.setdefault(h, {})
            for s in seqs:
                b[s] = b.get(s, 0) + 1
            self.active[rid] = [h, pf, False, list(seqs)]
            if self.approx and seqs:
                self.assume(h, local, seqs)
        return rows, chosen[0]


def gen(seed, legacy=False, approx=False):
    rnd = random.Random(seed)
    workers = [(w, r) for w in (1, 2, 3) for r in (0, 1)][: rnd.randint(2, 6)]
    pure = approx and seed % 2 == 0  # no events, no sequence_hashes
    ts = 0
    eid = {h: 0 for h in workers}
    exts = {h: [] for h in workers}
    paths = [()]
    prefix_id = {}
    nextext = [1000]
    m = Model(legacy)
    out = []
    if rnd.random() < 0.5 or pure:
        out.append({"type": "worker", "worker_id": 9})
        apply(m, out[-1])
    if pure:
        workers = [(w, 0) for w in (1, 2, 3)]
        for w, _ in workers:
            out.append({"type": "worker", "worker_id": w})
            apply(m, out[-1])
    for i in range(400):
        x = rnd.random()
        if pure and x < 0.555:  # no events
            x = 0.6 + x / 2
        elif approx and 0.55 <= x < 0.555:
            x = 0.7  # no remove_worker: which requests it frees depends on TTLs
        h = rnd.choice(workers)
        w, r = h
        if x < 0.40:
            parent = None
            if exts[h] and rnd.random() < 0.7:
                parent = rnd.choice(exts[h])
            elif rnd.random() < 0.05:
                parent = 424242  # unknown
            blocks = []
            for _ in range(rnd.randint(1, 4)):
                if rnd.random() < 0.03 and blocks:
                    e = blocks[0]["block_hash"]  # self reference
                else:
                    nextext[0] += 1
                    e = nextext[0]
                blocks.append({"block_hash": e, "tokens_hash": rnd.randint(1, 4)})
            exts[h] += [b["block_hash"] for b in blocks]
            eid[h] += 1
            ev = {"type": "stored", "worker_id": w, "dp_rank": r,
                  "event_id": eid[h], "parent_hash": parent, "blocks": blocks}
            if rnd.random() < 0.5:  # Dynamo RouterEvent shape
                ev = {"worker_id": w, "event": {"event_id": eid[h], "dp_rank": r, "data": {
                    "stored": {"parent_hash": parent, "blocks": blocks}}}}
            out.append(ev)
        elif x < 0.52 and exts[h]:
            rm = rnd.sample(exts[h], min(len(exts[h]), rnd.randint(1, 3)))
            if rnd.random() < 0.1:
                rm.append(999999)
            eid[h] += 1
            out.append({"type": "removed", "worker_id": w, "dp_rank": r,
                        "event_id": eid[h], "block_hashes": rm})
        elif x < 0.54:
            eid[h] += 1
            if rnd.random() < 0.5:
                out.append({"type": "cleared", "worker_id": w, "dp_rank": r,
                            "event_id": eid[h]})
            else:
                out.append({"worker_id": w, "event": {"event_id": eid[h], "dp_rank": r,
                                                      "data": "cleared"}})
            exts[h] = []
            if rnd.random() < 0.5:
                eid[h] = 0  # a restarted worker counts from 0 again
        elif x < 0.55:
            out.append({"type": "stored", "worker_id": w, "dp_rank": r,
                        "event_id": max(1, eid[h] - 1), "parent_hash": None,
                        "blocks": [{"block_hash": 5, "tokens_hash": 1}]})  # stale
        elif x < 0.555:
            out.append({"type": "remove_worker", "worker_id": w})
            for hh in workers:
                if hh[0] == w:
                    eid[hh] = 0
                    exts[hh] = []
        elif x < 0.62 and m.active:
            rid = rnd.choice(sorted(m.active))
            out.append({"type": rnd.choice(["free", "free", "prefill_done"]),
                        "request_id": rid})
        else:
            n = rnd.randint(0, 6)
            loc = [rnd.randint(1, 4) for _ in range(n)]
            seqs = []
            for k in range(n):
                seqs.append(prefix_id.setdefault(tuple(loc[:k + 1]),
                                                 len(prefix_id) + 1))
            rid = "r%d" % i
            rec = {"type": "request", "request_id": rid, "block_hashes": loc,
                   "sequence_hashes": seqs, "input_length": n * BS + rnd.randint(0, 3)}
            if pure:
                del rec["sequence_hashes"]
            if approx:
                ts += rnd.choice([0, 0, 500, 2000, 4000])
                rec["ts_ms"] = ts
            if rnd.random() < 0.1:
                rec["commit"] = False
            out.append(rec)
        apply(m, out[-1])
    for rec in out:
        print(json.dumps(rec))


def apply(m, rec):
    """Applies one record; returns (rows, chosen) for requests, else None."""
    t = rec.get("type")
    if t is None and "event" in rec:
        ev = rec["event"]
        h = (rec["worker_id"], ev.get("dp_rank") or 0)
        if m.event(h, ev.get("event_id")):
            data = ev["data"]
            if "stored" in data:
                st = data["stored"]
                m.store(h, st.get("parent_hash"),
                        [(b["block_hash"], b["tokens_hash"]) for b in st["blocks"]])
            elif data == "cleared":
                m.clear(h)
                m.cursor.pop(h, None)
        return None
    if t == "worker":
        m.cands.add((rec["worker_id"], 0))
    elif t in ("stored", "removed", "cleared"):
        h = (rec["worker_id"], rec.get("dp_rank", 0))
        if not m.event(h, rec.get("event_id")):
            return None
        if t == "stored":
            m.store(h, rec.get("parent_hash"),
                    [(b["block_hash"], b["tokens_hash"]) for b in rec["blocks"]])
        elif t == "removed":
            m.remove(h, rec["block_hashes"])
        else:
            m.clear(h)
            m.cursor.pop(h, None)  # a clear resets the cursor (§2.4)
    elif t == "remove_worker":
        m.remove_worker(rec["worker_id"])
    elif t == "free":
        m.free(rec["request_id"])
    elif t == "prefill_done":
        a = m.active[rec["request_id"]]
        if not a[2]:
            m.prefill[a[0]] -= a[1]
            a[2] = True
    elif t == "request":
        loc = rec["block_hashes"]
        # without sequence_hashes a block is named by its path
        seqs = rec.get("sequence_hashes") or [tuple(loc[:k + 1]) for k in range(len(loc))]
        return m.route(rec["request_id"], loc, seqs, rec["input_length"],
                       rec.get("commit", True), rec.get("ts_ms"))
    return None


def check(inp, outp, legacy, approx=None):
    m = Model(legacy, approx)
    decisions = [json.loads(l) for l in open(outp) if '"decision"' in l]
    k = 0
    bad = 0
    for line in open(inp):
        rec = json.loads(line)
        res = apply(m, rec)
        if rec.get("type") != "request":
            continue
        rows, chosen = res
        if k >= len(decisions):
            k += 1
            continue
        d = decisions[k]
        k += 1
        got = [((c["worker_id"], c["dp_rank"]), c["overlap_blocks"], c["logit"])
               for c in d["candidates"]]
        want = [(h, o, float(l)) for h, o, l in rows]
        gch = d["chosen"] and (d["chosen"]["worker_id"], d["chosen"]["dp_rank"])
        if d["request_id"] != rec["request_id"] or got != want or gch != chosen:
            bad += 1
            if bad <= 3:
                print("mismatch at %s:\n  model %s -> %s\n  tool  %s -> %s"
                      % (rec["request_id"], want, chosen, got, gch), file=sys.stderr)
    if k != len(decisions):
        print("decision count: model %d, tool %d" % (k, len(decisions)), file=sys.stderr)
        return 1
    print("%d decisions compared, %d mismatches" % (k, bad), file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "gen" and argv[2] == "--seed":
        rest = argv[4:]
        gen(int(argv[3]), rest[:2] == ["--score", "legacy"], "--approx" in rest)
        return 0
    if len(argv) >= 4 and argv[1] == "check":
        legacy, approx = False, None
        args = argv[2:]
        while args and args[0] in ("--score", "--approx"):
            if args[0] == "--score":
                legacy = args[1] == "legacy"
                args = args[2:]
            else:
                approx = (int(args[1]) * 1000, int(args[2]))
                args = args[3:]
        return check(args[0], args[1], legacy, approx)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
