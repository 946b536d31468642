#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Independent model of SGLang's engine-owned multimodal page hashes (issue
29 section 2, docs/spec/engine-hashes.md section 2.4), for the tests: the
expected values of tests/kv-hash-sglang.bats come from here (hashlib), not
from kvpipe's C code.

A page (block_size atoms; under EAGLE an atom is a bigram of two raw
tokens) that touches no media span hashes as SGLang's text pages do:
sha256(prior || u32-LE token ...). A page that touches one hashes the
tagged record
    prior (32 bytes, absent at the root)
    b"sglang-mm-cache-key-v1\\0"
    u8 bigram flag (0 or 1)
    u64-LE page length in atoms
    per atom, per raw position of the atom (1, or 2 under EAGLE):
        0x00 || u32-LE token             outside every span
        0x01 || identity (32 bytes) || u64-LE (offset + pos - start)
The published i64 is the digest's first 8 bytes, big-endian, signed
(printed here as its u64 two's complement, as kv-hash writes it), mixed
with a LoRA seed as for text pages.

Usage: sglang_mm_model.py JSON, JSON an object with tokens, block_size,
optional mm_spans [[start, end, "sha256:" + 64 hex, offset], ...], eagle,
partial_tail, parent_sha256, cache_salt, lora_name. Prints
{"block_hashes": [...], "block_hashes_sha256": [...]}.
"""
import hashlib
import json
import sys


def identity_at(spans, pos):
    for start, end, ident, off in spans:
        if start <= pos < end:
            return ident, off + pos - start
    return None


def page_digest(prior, raw, spans, a, n, eagle):
    parts = 2 if eagle else 1
    lo, hi = a, a + n + (1 if eagle else 0)
    if not any(e > lo and s < hi for s, e, _, _ in spans):
        data = prior + b"".join(
            raw[a + i + j].to_bytes(4, "little")
            for i in range(n)
            for j in range(parts)
        )
        return hashlib.sha256(data).digest()
    data = bytearray(prior)
    data += b"sglang-mm-cache-key-v1\0"
    data += bytes([1 if eagle else 0])
    data += n.to_bytes(8, "little")
    for i in range(n):
        for j in range(parts):
            pos = a + i + j
            hit = identity_at(spans, pos)
            if hit is None:
                data += b"\0" + raw[pos].to_bytes(4, "little")
            else:
                data += b"\1" + hit[0] + hit[1].to_bytes(8, "little")
    return hashlib.sha256(bytes(data)).digest()


def main():
    req = json.loads(sys.argv[1])
    raw = req["tokens"]
    bs = req["block_size"]
    eagle = bool(req.get("eagle"))
    spans = [
        (s, e, bytes.fromhex(ident[len("sha256:"):]), off)
        for s, e, ident, off in req.get("mm_spans", [])
    ]
    atoms = len(raw) - 1 if eagle and raw else len(raw)
    prior = b""
    if req.get("parent_sha256"):
        prior = bytes.fromhex(req["parent_sha256"])
    elif req.get("cache_salt"):
        prior = hashlib.sha256(
            b"sglang-cache-salt-v1\0" + req["cache_salt"].encode()
        ).digest()
    count = -(-atoms // bs) if req.get("partial_tail") else atoms // bs
    digests = []
    for k in range(count):
        a = k * bs
        prior = page_digest(prior, raw, spans, a, min(bs, atoms - a), eagle)
        digests.append(prior)
    pub = [int.from_bytes(d[:8], "big") for d in digests]
    if req.get("lora_name"):
        seed = hashlib.sha256(
            b"sglang-kv-event-lora-v1\0" + req["lora_name"].encode()
        ).digest()
        pub = [
            int.from_bytes(
                hashlib.sha256(seed + p.to_bytes(8, "big")).digest()[:8], "big"
            )
            for p in pub
        ]
    print(
        json.dumps(
            {
                "block_hashes": pub,
                "block_hashes_sha256": [d.hex() for d in digests],
            },
            separators=(",", ":"),
        )
    )


if __name__ == "__main__":
    main()
