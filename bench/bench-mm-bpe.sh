#!/bin/sh
# bench-mm-bpe.sh — mm-expand --encode BPE merging scales as n log n
# (issue 15 item 4: the old merge loop rescanned every pair per merge, so
# 200 KB of "ab" took 23 s).
#  One piece of N letters "abab...": the vocabulary holds every byte and
#  "ab" repeated 1, 2, 4, ... 256 times (ranks in that order), so merging
#  takes N/2 + N/4 + ... (about N) merges, level by level; every new
#  candidate sorts after the ones queued, so the merge queue's sorted run
#  takes them all: linear.
#  bar: doubling N (2 MiB -> 4 MiB of text) costs <= 2.2x the time.
#  The two sizes are timed alternately, best of 5 each.
#  Also shown, with no bar: random a/b text with every a/b string of 2 to 8
#  letters ranked at random, where most candidates go through the heap
#  (O(n log n): about 2.1-2.2x per doubling here).
# Baseline in the same run: jq -c . over the same input files.
set -e
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:?run through make bench, or set BENCH_TMP}"
PY=/usr/bin/python3

"$PY" - "$BENCH_TMP" <<'PYEOF'
import base64, json, os, sys
tmp = sys.argv[1]
vocab = [bytes([b]) for b in range(256)]
k = 1
while k <= 256:
    vocab.append(b'ab' * k)
    k *= 2
with open(os.path.join(tmp, 'bpe.tiktoken'), 'w') as f:
    for r, t in enumerate(vocab):
        f.write(base64.b64encode(t).decode() + ' ' + str(r) + '\n')
for name, n in (('bpe1', 1 << 20), ('bpe2', 2 << 20)):
    with open(os.path.join(tmp, name + '.ndjson'), 'w') as f:
        f.write(json.dumps({'id': name, 'text': 'ab' * n}) + '\n')
import itertools, random
rnd = random.Random(15)
multi = [''.join(p).encode() for L in range(2, 9)
         for p in itertools.product('ab', repeat=L)]
rnd.shuffle(multi)
with open(os.path.join(tmp, 'rnd.tiktoken'), 'w') as f:
    for r, t in enumerate([bytes([b]) for b in range(256)] + multi):
        f.write(base64.b64encode(t).decode() + ' ' + str(r) + '\n')
for name, n in (('rnd1', 1 << 20), ('rnd2', 2 << 20)):
    with open(os.path.join(tmp, name + '.ndjson'), 'w') as f:
        text = ''.join(rnd.choice('ab') for _ in range(n))
        f.write(json.dumps({'id': name, 'text': text}) + '\n')
PYEOF

V=$BENCH_TMP/bpe.tiktoken
t1= t2=
for i in 1 2 3 4 5; do
	a=$(best_time 1 sh -c "'$KVP_BIN/mm-expand' --encode --tokenizer 'tiktoken:$V' '$BENCH_TMP/bpe1.ndjson' >/dev/null")
	b=$(best_time 1 sh -c "'$KVP_BIN/mm-expand' --encode --tokenizer 'tiktoken:$V' '$BENCH_TMP/bpe2.ndjson' >/dev/null")
	if [ -z "$t1" ] || [ "$(echo "$a < $t1" | bc -l)" = 1 ]; then t1=$a; fi
	if [ -z "$t2" ] || [ "$(echo "$b < $t2" | bc -l)" = 1 ]; then t2=$b; fi
done
j1=$(best_time 3 sh -c "jq -c . '$BENCH_TMP/bpe1.ndjson' >/dev/null")
j2=$(best_time 3 sh -c "jq -c . '$BENCH_TMP/bpe2.ndjson' >/dev/null")
R=$BENCH_TMP/rnd.tiktoken
u1=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --encode --tokenizer 'tiktoken:$R' '$BENCH_TMP/rnd1.ndjson' >/dev/null")
u2=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --encode --tokenizer 'tiktoken:$R' '$BENCH_TMP/rnd2.ndjson' >/dev/null")
r=$(ratio "$t2" "$t1")
echo "BPE: one 2 MiB piece of \"ab\" in ${t1}s, 4 MiB in ${t2}s: doubling ratio $r"
echo "baseline jq -c . on the same lines: ${j1}s, ${j2}s (ratio $(ratio "$j2" "$j1")); mm-expand/jq time ratio at 4 MiB $(ratio "$t2" "$j2")"
echo "BPE, random a/b (heap path, no bar): 1 MiB in ${u1}s, 2 MiB in ${u2}s: doubling ratio $(ratio "$u2" "$u1")"
if [ "$(echo "$r <= 2.2" | bc -l)" = 1 ]; then
	echo "bar (doubling the input <= 2.2x the time): met"
else
	echo "bar (doubling the input <= 2.2x the time): NOT met"
	exit 1
fi
