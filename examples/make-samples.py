#!/usr/bin/python3
# make-samples.py [OUTDIR] — writes the generated sample files of examples/
# with Debian's python3-msgpack (the other samples are hand-written or links
# to test fixtures; see README):
#   w1.bin, w2.bin     raw msgpack batch streams (no capture envelope): the
#                      payloads of worker 1's and worker 2's lines of
#                      capture.jsonl, concatenated, as a subscriber that
#                      dumps payloads to one file per worker would write them.
#   mm-requests.ndjson multimodal requests for mm-expand (Qwen2.5-VL with two
#                      images, Kimi-K3, an unsupported model, a missing image
#                      file, a text-only request).
#   mm-capture.jsonl   a capture of two SGLang workers serving Qwen2.5-VL at
#                      block size 16: worker 1 cached the "cat" request
#                      (SGLang pad values, which fit in u32); worker 2 is a
#                      newer build with wide pad values (above 2^32), so the
#                      router's Stage-1 exclusion drops its blocks from the
#                      image on; plus a REMOTE block and a sliding-window group,
#                      which kv-normalize filters.
import base64
import hashlib
import json
import os
import struct
import sys

import msgpack

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else here


def dump(name, records):
    with open(os.path.join(out, name), "w") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


# --- w1.bin, w2.bin: raw streams from capture.jsonl --------------------------
raw = {}
with open(os.path.join(here, "capture.jsonl")) as f:
    for line in f:
        rec = json.loads(line)
        raw.setdefault(rec["worker_id"], []).append(base64.b64decode(rec["payload_b64"]))
for w in (1, 2):
    with open(os.path.join(out, "w%d.bin" % w), "wb") as f:
        f.write(b"".join(raw[w]))

# --- mm-requests.ndjson ---------------------------------------------------------
QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"
QWEN_PP = {"min_pixels": 3136, "max_pixels": 12845056}
IMAGE_PAD = 151655                      # Qwen2.5-VL's image placeholder
# <|im_start|>system\n You are a helpful assistant. Describe images briefly
# and accurately, in one sentence. <|im_end|>\n (24 tokens: block 0 is text)
SYSTEM = [151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13, 60785, 5335,
          26753, 323, 29257, 11, 304, 825, 11652, 13, 2308, 5029, 13, 151645, 198]
USER = [151644, 872, 198]
VISION = [151652, IMAGE_PAD, 151653]    # <|vision_start|> pad <|vision_end|>
QUESTION = [3838, 374, 304, 419, 2168, 30]  # What is in this image?
ASSISTANT = [151645, 198, 151644, 77091, 198]
PROMPT = SYSTEM + USER + VISION + QUESTION + ASSISTANT
CAT = {"url": "https://example.com/cat.jpg", "width": 224, "height": 224,
       "mm_hash": "6b2f0d6c5a1e9f37"}
DOG = {"url": "https://example.com/dog.jpg", "width": 224, "height": 224,
       "mm_hash": "d41c8e0f2a7b3359"}
requests = [
    {"id": "cat", "model": QWEN, "preprocessor_config": QWEN_PP,
     "token_ids": PROMPT, "images": [CAT]},
    {"id": "dog", "model": QWEN, "preprocessor_config": QWEN_PP,
     "token_ids": PROMPT, "images": [DOG]},
    {"id": "k3", "model": "moonshotai/Kimi-K3", "token_ids": [163587, 1010, 163605, 1011, 163588],
     "images": [{"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAABAAAAAMACAIAAAAAAAAA"}]},
    {"id": "llama4", "model": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
     "token_ids": [200000, 1, 2, 200090, 3], "images": [{"url": "https://example.com/a.png", "width": 640, "height": 480}]},
    {"id": "no-such-file", "model": QWEN, "preprocessor_config": QWEN_PP,
     "token_ids": PROMPT, "images": [{"path": "no-such-file.jpg"}]},
    {"id": "text-only", "model": QWEN, "token_ids": SYSTEM + USER + QUESTION + ASSISTANT},
]
dump("mm-requests.ndjson", requests)

# --- mm-capture.jsonl -------------------------------------------------------------
BS = 16
# A 224x224 image at Qwen2.5-VL's factor 28 (patch 14, merge 2) is
# (224/28)^2 = 64 tokens.
N_PADS = 64


def expand(pad):
    i = PROMPT.index(IMAGE_PAD)
    return PROMPT[:i] + [pad] * N_PADS + PROMPT[i + 1:]


def pad_u32(mm_hash):                   # SGLang: 1_000_000 + low 30 bits
    return 1000000 + (int(mm_hash, 16) & (2**30 - 1))


def pad_wide(mm_hash):                  # illustrative: any id above 2^32 - 1
    return 2**32 + (int(mm_hash, 16) & (2**32 - 1))


def chain(tokens, parent):
    """SGLang-like block hashes: sha256 over (parent, tokens), signed i64."""
    hs = []
    for i in range(0, len(tokens) - len(tokens) % BS, BS):
        d = hashlib.sha256(struct.pack(">Q", (parent or 0) & (2**64 - 1)) +
                           struct.pack("<%dQ" % BS, *tokens[i:i + BS])).digest()
        parent = int.from_bytes(d[:8], "big", signed=True)
        hs.append(parent)
    return hs


def store(tokens, parent, **extra):
    full = tokens[:len(tokens) - len(tokens) % BS]
    ev = {"type": "BlockStored", "block_hashes": chain(full, parent),
          "parent_block_hash": parent, "token_ids": full, "block_size": BS,
          "lora_id": None, "medium": "GPU"}
    ev.update(extra)
    return ev


lines = []
ts = 1767229200.0


def emit(worker, seq, events):
    global ts
    ts += 0.5
    p = msgpack.packb([ts, events, 0])
    lines.append({"source": "live", "recv_ts": round(ts + 0.002, 3), "topic": "kv-events",
                  "seq": seq, "payload_len": len(p),
                  "payload_b64": base64.b64encode(p).decode(), "worker_id": worker})


cat = expand(pad_u32(CAT["mm_hash"]))
dog = expand(pad_wide(DOG["mm_hash"]))
answer = [32, 3893, 5562, 374, 20446, 389, 264, 3241, 84051, 13, 151645, 198,
          151644, 872, 198, 3838, 1894, 374, 432, 30, 151645, 198, 151644, 77091]
emit(1, 0, [{"type": "AllBlocksCleared"}])
emit(1, 1, [store(cat, None)])
emit(1, 2, [store([7] * BS, None, locality="REMOTE")])
emit(2, 0, [{"type": "AllBlocksCleared"}])
s = store(dog, None)
emit(2, 1, [s])
emit(2, 2, [store(dog[len(s["token_ids"]):] + answer, s["block_hashes"][-1])])
emit(2, 3, [store(SYSTEM[:BS], None, group_idx=1, kv_cache_spec_kind="sliding_window",
                  kv_cache_spec_sliding_window=128)])
dump("mm-capture.jsonl", lines)
