#!/usr/bin/python3
# gen-kv-capture.py N_EVENTS > capture.jsonl — a capture (docs/spec/kv-events.md
# §5) of N_EVENTS BlockStored events, 4 per batch, 128 tokens each (8 blocks
# of 16), full-width u64 hashes (vLLM) and negative i64 hashes (SGLang),
# alternating vLLM array-form and SGLang map-form workers.
import base64
import json
import random
import sys

import msgpack

n = int(sys.argv[1])
rnd = random.Random(42)
# 4096 distinct 128-token prompts, drawn at random (keeps generation fast)
pool = [[rnd.randrange(150000) for _ in range(128)] for _ in range(4096)]
out = sys.stdout
seq = {1: 0, 2: 0}
done = 0
while done < n:
    worker = 1 + (done // 4) % 2
    evs = []
    for _ in range(min(4, n - done)):
        toks = pool[rnd.randrange(len(pool))]
        if worker == 1:
            hs = [rnd.getrandbits(64) for _ in range(8)]
            evs.append(["BlockStored", hs, rnd.getrandbits(64), toks, 16, None,
                        "GPU", None, [None] * 8, 0, "full_attention"])
        else:
            hs = [rnd.getrandbits(64) - (1 << 63) for _ in range(8)]
            evs.append({"type": "BlockStored", "block_hashes": hs,
                        "parent_block_hash": rnd.getrandbits(64) - (1 << 63),
                        "token_ids": toks, "block_size": 16, "lora_id": None,
                        "medium": "GPU"})
        done += 1
    p = msgpack.packb([1700000000.0 + done / 1000, evs, 0])
    out.write(json.dumps({"source": "live", "recv_ts": 1700000000.5 + done / 1000,
                          "topic": "kv-events", "seq": seq[worker],
                          "payload_len": len(p),
                          "payload_b64": base64.b64encode(p).decode(),
                          "worker_id": worker}) + "\n")
    seq[worker] += 1
