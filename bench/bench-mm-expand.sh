#!/bin/sh
# bench-mm-expand.sh — mm-expand throughput (issue 6):
#  1. 10,000 requests with one to four images each, half from image files
#     (the real JPEGs of tests/fixtures/images and generated PNG headers),
#     half as data: URLs; families K2.5, K3, Qwen2.5, Qwen3;
#     bar: >= 5,000 requests/s.
#  2. tokenizer throughput (--encode, Kimi split, BPE) in MB/s on ~8 MB of
#     text with a synthetic vocabulary (every byte + the corpus' words).
#  3. videos (issue 29 §1): 10,000 Qwen3-VL / Qwen3.5 requests with one or
#     two videos given by metadata (4 to 64 frames, 240p to 1080p, some
#     with timestamps), timestamps encoded with the fixtures' video
#     vocabulary; bar: >= 5,000 requests/s.
#  4. the file path's cost per video: 200 requests, each naming its own
#     copy of a 4 s 320x240 10 fps H.264 mp4 (ffmpeg's CLI makes it) or
#     Matroska file (no frame count in the header: packets counted), less
#     the same requests given as metadata.
# Baseline in the same run: jq -c . over the same input files.
set -e
. bench/timing.sh
: "${KVP_BIN:=$PWD/build/bin}"
: "${BENCH_TMP:?run through make bench, or set BENCH_TMP}"
PY=/usr/bin/python3
IMGS=tests/fixtures/images

"$PY" - "$BENCH_TMP" "$IMGS" <<'PYEOF'
import base64, json, os, random, struct, sys
tmp, imgs = sys.argv[1], sys.argv[2]
rnd = random.Random(6)
def png(w, h):
    return (b'\x89PNG\r\n\x1a\n' + struct.pack('>I', 13) + b'IHDR' +
            struct.pack('>II', w, h) + b'\x08\x02\x00\x00\x00' + b'\0' * 4)
sizes = [(224, 224), (448, 448), (640, 480), (1024, 768), (600, 400),
         (1280, 720), (800, 1200), (300, 200)]
files = [os.path.join(imgs, f) for f in sorted(os.listdir(imgs)) if f.endswith('.jpg')]
assert files, imgs + ': no JPEGs'
for i, (w, h) in enumerate(sizes):
    p = os.path.join(tmp, 'gen%d.png' % i)
    open(p, 'wb').write(png(w, h))
    files.append(p)
urls = ['data:image/png;base64,' + base64.b64encode(png(w + k, h)).decode()
        for k in range(8) for (w, h) in sizes]
fams = [('kimi_k25', 163605), ('kimi_k3', 163605), ('qwen2_vl', 151655),
        ('qwen3_vl', 151655)]
with open(os.path.join(tmp, 'req.ndjson'), 'w') as f:
    for i in range(10000):
        fam, ph = fams[i % 4]
        n = 1 + i % 4
        toks = [rnd.randrange(1, 150000) for _ in range(rnd.randrange(20, 200))]
        for k in range(n):
            toks.insert(rnd.randrange(len(toks) + 1), ph)
        ims = []
        for k in range(n):
            if (i + k) % 2:
                ims.append({'path': files[rnd.randrange(len(files))]})
            else:
                ims.append({'url': urls[rnd.randrange(len(urls))]})
        f.write(json.dumps({'id': i, 'family': fam, 'token_ids': toks,
                            'block_size': 64, 'images': ims},
                           separators=(',', ':')) + '\n')
# tokenizer corpus: this repository's C sources and man pages, repeated
# (lib/ has a folder per stage)
text = ''
for d in ('lib', 'fe', 'man', 'cmd'):
    for top, dirs, fns in sorted(os.walk(d)):
        for fn in sorted(fns):
            text += open(os.path.join(top, fn), encoding='utf-8', errors='replace').read()
words = set()
import re
for m in re.finditer(r' ?[A-Za-z]+', text):
    words.add(m.group(0))
vocab = [bytes([b]) for b in range(256)]
seen = set(vocab)
for w in sorted(words):
    b = w.encode()
    for j in range(2, len(b) + 1):
        if b[:j] not in seen:
            seen.add(b[:j]); vocab.append(b[:j])
with open(os.path.join(tmp, 'vocab.tiktoken'), 'w') as f:
    for r, t in enumerate(vocab):
        f.write(base64.b64encode(t).decode() + ' ' + str(r) + '\n')
total = 0
with open(os.path.join(tmp, 'text.ndjson'), 'w') as f:
    while total < 8 << 20:
        for j in range(0, len(text), 4096):
            chunk = text[j:j + 4096]
            f.write(json.dumps({'text': chunk}) + '\n')
            total += len(chunk.encode())
open(os.path.join(tmp, 'text.bytes'), 'w').write(str(total))
PYEOF

REQ=$BENCH_TMP/req.ndjson
n=$(wc -l <"$REQ")
t_mm=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' '$REQ' >/dev/null")
t_jq=$(best_time 3 sh -c "jq -c . '$REQ' >/dev/null")
rps=$(printf '%.0f' "$(echo "$n / $t_mm" | bc -l)")
echo "mm-expand: $n requests (1-4 images, files + data: URLs) in ${t_mm}s = $rps requests/s"
echo "baseline jq -c . on the same input: ${t_jq}s; mm-expand/jq time ratio $(ratio "$t_mm" "$t_jq")"
if [ "$rps" -ge 5000 ]; then
	echo "bar (>= 5000 requests/s): met"
else
	echo "bar (>= 5000 requests/s): NOT met"
	st=1
fi

TXT=$BENCH_TMP/text.ndjson
bytes=$(cat "$BENCH_TMP/text.bytes")
t_tok=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --encode --tokenizer 'tiktoken:$BENCH_TMP/vocab.tiktoken' '$TXT' >/dev/null")
t_jq2=$(best_time 3 sh -c "jq -c . '$TXT' >/dev/null")
echo "tokenizer: $bytes bytes of text in ${t_tok}s = $(printf '%.1f' "$(echo "$bytes / $t_tok / 1048576" | bc -l)") MB/s ($(wc -l <"$BENCH_TMP/vocab.tiktoken") ranks, Kimi split)"
echo "baseline jq -c . on the same text records: ${t_jq2}s; tokenizer/jq time ratio $(ratio "$t_tok" "$t_jq2")"

# ---- 3. videos given by metadata ---------------------------------------------
VTOK=tiktoken:tests/fixtures/mm-expand/video.tiktoken
"$PY" - "$BENCH_TMP" <<'PYEOF'
import json, os, random, sys
tmp = sys.argv[1]
rnd = random.Random(29)
sizes = [(426, 240), (640, 360), (854, 480), (1280, 720), (1920, 1080)]
fams = [('qwen3_vl', 151652, 151656, 151653), ('qwen3_5', 248053, 248057, 248054)]
with open(os.path.join(tmp, 'vreq.ndjson'), 'w') as f:
    for i in range(10000):
        fam, vs, v, ve = fams[i % 2]
        n = 1 + i % 2
        toks = [rnd.randrange(1, 150000) for _ in range(rnd.randrange(20, 200))]
        vids = []
        for k in range(n):
            at = rnd.randrange(len(toks) + 1)
            toks[at:at] = [vs, v, ve] if k % 2 else [v]
            w, h = sizes[rnd.randrange(len(sizes))]
            frames = rnd.choice([4, 8, 16, 31, 32, 64])
            m = {'frames': frames, 'width': w, 'height': h, 'fps': 2,
                 'url': 'https://example.com/v%d.mp4' % rnd.randrange(100)}
            if i % 3 == 0:
                m['fps'] = 29.97
                m['timestamps'] = [j * 0.5 for j in range(frames)]
            vids.append(m)
        f.write(json.dumps({'id': i, 'family': fam, 'token_ids': toks,
                            'block_size': 64, 'videos': vids},
                           separators=(',', ':')) + '\n')
PYEOF
VREQ=$BENCH_TMP/vreq.ndjson
n=$(wc -l <"$VREQ")
exact=$("$KVP_BIN/mm-expand" --tokenizer "$VTOK" "$VREQ" | grep -c '"status":"exact"')
t_v=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --tokenizer '$VTOK' '$VREQ' >/dev/null")
t_vjq=$(best_time 3 sh -c "jq -c . '$VREQ' >/dev/null")
vrps=$(printf '%.0f' "$(echo "$n / $t_v" | bc -l)")
echo "videos (metadata): $n requests (1-2 videos, 4-64 frames, $exact exact) in ${t_v}s = $vrps requests/s"
echo "baseline jq -c . on the same input: ${t_vjq}s; mm-expand/jq time ratio $(ratio "$t_v" "$t_vjq")"
if [ "$exact" -eq "$n" ] && [ "$vrps" -ge 5000 ]; then
	echo "bar (>= 5000 video requests/s, all exact): met"
else
	echo "bar (>= 5000 video requests/s, all exact): NOT met"
	st=1
fi

# ---- 4. the file path: FFmpeg's cost per video -------------------------------
VD=$BENCH_TMP/videos
mkdir -p "$VD"
for ext in mp4 mkv; do
	ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=320x240:rate=10 -t 4 \
		-c:v libx264 -pix_fmt yuv420p "$VD/src.$ext"
done
"$PY" - "$BENCH_TMP" "$VD" <<'PYEOF'
import json, os, shutil, sys
tmp, vd = sys.argv[1], sys.argv[2]
for ext in ('mp4', 'mkv'):
    with open(os.path.join(tmp, 'vfile-%s.ndjson' % ext), 'w') as f, \
         open(os.path.join(tmp, 'vmeta-%s.ndjson' % ext), 'w') as g:
        for i in range(200):
            p = os.path.join(vd, 'v%03d.%s' % (i, ext))
            shutil.copyfile(os.path.join(vd, 'src.' + ext), p)
            rec = {'id': i, 'family': 'qwen3_vl', 'token_ids': [1, 151656, 2]}
            f.write(json.dumps(dict(rec, videos=[{'path': p}])) + '\n')
            g.write(json.dumps(dict(rec, videos=[{'frames': 40, 'width': 320,
                    'height': 240, 'fps': 10, 'mm_hash': i}])) + '\n')
PYEOF
for ext in mp4 mkv; do
	F=$BENCH_TMP/vfile-$ext.ndjson
	M=$BENCH_TMP/vmeta-$ext.ndjson
	grid=$("$KVP_BIN/mm-expand" --tokenizer "$VTOK" "$F" | head -1 | sed 's/.*"video_grids":\(\[\[[0-9,]*\]\]\).*/\1/')
	t_f=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --tokenizer '$VTOK' '$F' >/dev/null")
	t_m=$(best_time 3 sh -c "'$KVP_BIN/mm-expand' --tokenizer '$VTOK' '$M' >/dev/null")
	per=$(printf '%.2f' "$(echo "($t_f - $t_m) * 1000 / 200" | bc -l)")
	echo "videos ($ext files, $(wc -c <"$VD/src.$ext") bytes, 40 frames, grid $grid): 200 in ${t_f}s against ${t_m}s as metadata: ${per} ms per video read with FFmpeg"
done
exit ${st:-0}
