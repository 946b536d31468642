#!/usr/bin/python3
# kv-decode-ref.py < capture.jsonl — the reference the kv-decode benchmark
# compares against: what an operator writes today with python3-msgpack and
# json. Decodes each capture line's batch and prints one JSON object per
# event with kv-decode's main fields (hashes folded to u64, bigram tokens
# flattened). Not a full implementation: no error records, no gap tracking.
import base64
import json
import sys

import msgpack

M = (1 << 64) - 1


def h(v):
    if v is None:
        return None
    if isinstance(v, bytes):
        return int.from_bytes(v[-8:], "big")
    return v & M


def toks(t):
    if t and isinstance(t[0], list):
        return [t[0][0]] + [p[1] for p in t]
    return t


out = sys.stdout
dumps = json.dumps
for line in sys.stdin:
    cap = json.loads(line)
    batch = msgpack.unpackb(base64.b64decode(cap["payload_b64"]), strict_map_key=False)
    ts, events = batch[0], batch[1]
    rank = batch[2] if len(batch) > 2 else None
    for i, ev in enumerate(events):
        if isinstance(ev, dict):
            typ = ev["type"]
            e = ev
            enc = "map"
        else:
            typ = ev[0]
            f = ["type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
                 "lora_id", "medium", "lora_name", "extra_keys"]
            e = dict(zip(f, ev))
            enc = "array"
        rec = {"rec": "event", "seq": cap["seq"], "topic": cap.get("topic", ""),
               "source": cap.get("source"), "ts": ts, "dp_rank": rank,
               "worker_id": cap.get("worker_id", 0), "idx": i, "enc": enc, "type": typ}
        if typ == "BlockStored":
            t = toks(e.get("token_ids") or [])
            rec.update(block_hashes=[h(x) for x in e["block_hashes"]],
                       parent_block_hash=h(e.get("parent_block_hash")),
                       token_ids=t,
                       wide_tokens=sum(1 for x in t if x > 0xFFFFFFFF),
                       block_size=e.get("block_size"), lora_id=e.get("lora_id"),
                       lora_name=e.get("lora_name"), medium=e.get("medium"),
                       extra_keys=e.get("extra_keys"))
        elif typ == "BlockRemoved":
            rec.update(block_hashes=[h(x) for x in e["block_hashes"]],
                       medium=e.get("medium"))
        out.write(dumps(rec, separators=(",", ":")) + "\n")
