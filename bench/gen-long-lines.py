#!/usr/bin/env python3
"""gen-long-lines.py DIR MIB — one file per shape in DIR, each one line of
about MIB MiB that is mostly small integers ("1,1,1,..."), the kinds of
line that issue 28 (item 9) measured at 36-47x their size under json-c:

  capture-extra  a kv-capture line whose extra member is the array; its
                 payload is an empty msgpack array (an envelope error)
  event-store    a kv-decode BlockStored record with a huge token_ids
  event-extra    a kv-decode record whose x_capture holds the array
  tokens-only    {"token_ids":[...]}: a request, wrong input for the
                 event readers (missing key)
  event-badtok   a BlockStored record whose last token is -1
  event-seqarr   a record whose seq is the array (wrong type)
  array          a bare top-level array (not an object)
  truncated      {"token_ids":[... without its end
  mm-request     an mm-expand request
  rs-request     a route-score request
  rs-declined    one its fast path declines (an escape in request_id)
  decision       a route-score decision whose candidates are the bulk
                 (kv-diff, kv-report)
"""
import os
import sys

out, mib = sys.argv[1], float(sys.argv[2])
n = int(mib * 1024 * 1024) // 2
ints = b"1," * (n - 1) + b"1"
EV = (b'"rec":"event","seq":0,"topic":"kv-events","source":"live","ts":1.5,'
      b'"dp_rank":0,"worker_id":1,"idx":0,"enc":"map"')
STORE = EV + (b',"type":"BlockStored","block_hashes":[7],'
              b'"parent_block_hash":null,"block_size":16,"token_layout":"flat"')
shapes = {
    "capture-extra": (b'{"seq":0,"topic":"kv-events","source":"live",'
                      b'"payload_len":1,"payload_b64":"kA==","worker_id":1,'
                      b'"x":[', b']}'),
    "event-store": (b'{' + STORE + b',"token_ids":[', b']}'),
    "event-extra": (b'{' + EV + b',"type":"BlockRemoved","block_hashes":[7],'
                    b'"x_capture":{"x":[', b']}}'),
    "tokens-only": (b'{"token_ids":[', b']}'),
    "event-badtok": (b'{' + STORE + b',"token_ids":[', b',-1]}'),
    "event-seqarr": (b'{"rec":"event","seq":[', b'],"idx":0}'),
    "array": (b'[', b']'),
    "truncated": (b'{"token_ids":[', b''),
    "mm-request": (b'{"id":"r","model":"Qwen/Qwen2.5-VL-7B-Instruct",'
                   b'"block_size":16,"token_ids":[', b']}'),
    "rs-request": (b'{"type":"request","request_id":"r","tokens":[', b']}'),
    "rs-declined": (b'{"type":"request","request_id":"r\\u0041","tokens":[',
                    b']}'),
    "decision": (b'{"rec":"decision","request_id":"r","request_blocks":4,'
                 b'"chosen":{"worker_id":1,"dp_rank":0},"overlap_blocks":2,'
                 b'"x":[', b']}'),
}
for name, (head, tail) in shapes.items():
    with open(os.path.join(out, name + ".json"), "wb") as f:
        f.write(head + ints + tail + b"\n")
