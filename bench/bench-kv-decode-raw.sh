#!/bin/sh
# kv-decode raw-stream memory (issue 15 item 6): one batch of 15 MB and one
# of 30 MB (an array of nils, an envelope error), read raw and as a frames
# file. Raw streams are split with kvpipe's own scanner, so peak memory
# follows the batch size as with frames. Bar: raw peak RSS <= 4x the batch,
# and the 30 MB batch takes <= 2.2x the time of the 15 MB one.
set -e
cd "$(dirname "$0")/.."
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:=$(mktemp -d)}"
mk() { # mk N_NILS FILE: raw batch and its frames file (FILE.frames)
	/usr/bin/python3 - "$1" "$2" <<'PY'
import struct, sys
n, path = int(sys.argv[1]), sys.argv[2]
b = b"\xdd" + struct.pack(">I", n) + b"\xc0" * n
open(path, "wb").write(b)
fr = struct.pack(">I", 3) + struct.pack(">I", 0) + struct.pack(">I", 8) + bytes(8)
open(path + ".frames", "wb").write(fr + struct.pack(">I", len(b)) + b)
PY
}
rss() { /usr/bin/time -f %M "$KVP_BIN/kv-decode" "$@" -o /dev/null 2>&1 >/dev/null | tail -1; }
mk 15000000 "$BENCH_TMP/nils-15"
mk 30000000 "$BENCH_TMP/nils-30"
t15=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' --in raw '$BENCH_TMP/nils-15' >/dev/null 2>&1; true")
t30=$(best_time 3 sh -c "'$KVP_BIN/kv-decode' --in raw '$BENCH_TMP/nils-30' >/dev/null 2>&1; true")
r15=$(rss --in raw "$BENCH_TMP/nils-15")
r30=$(rss --in raw "$BENCH_TMP/nils-30")
f30=$(rss --in frames "$BENCH_TMP/nils-30.frames")
bytes=$(wc -c <"$BENCH_TMP/nils-30")
lim=$((bytes * 4 / 1024))
r=$(ratio "$t30" "$t15")
echo "kv-decode raw batch memory: one batch of 15M and 30M nils"
echo "  raw 15 MB   ${t15}s  peak RSS ${r15} KiB"
echo "  raw 30 MB   ${t30}s  peak RSS ${r30} KiB (frames: ${f30} KiB)"
echo "  time ratio (2x the batch): ${r}x; raw/frames memory $(ratio "$r30" "$f30")x"
if [ "$r30" -le "$lim" ] && [ "$(echo "$r <= 2.2" | bc -l)" = 1 ]; then
	echo "  bar (raw peak <= 4x the batch = $lim KiB, 2x the batch -> <= 2.2x the time): met"
else
	echo "  bar (raw peak <= 4x the batch = $lim KiB, 2x the batch -> <= 2.2x the time): NOT met"
fi
