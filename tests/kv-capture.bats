#!/usr/bin/env bats
# kv-capture against a real publisher on 127.0.0.1: tests/kvpub.py (python3-zmq,
# python3-msgpack) follows the wire of docs/spec/kv-events.md §1 (PUB, ROUTER
# replay buffer, end marker; replies with and without the topic frame). It
# sends nothing before it sees the subscription (an XPUB socket), so no test
# depends on start-up timing. Expected seqs and sources follow from the
# publisher's knobs (which seqs it skips live, which buffer entries it drops),
# worked out by hand in each test.
load test_helper

PY=/usr/bin/python3

setup() {
	D=$BATS_TEST_TMPDIR
	cd "$D" || return 1
	PIDS=()
}

# Every process a test started is stopped: SIGTERM, then SIGKILL after 5 s
# (a kv-capture stuck on a full pipe, as before issue 28.6, ignores TERM).
teardown() {
	local p i
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		for i in $(seq 100); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.05
		done
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# pub NAME ARGS...: starts tests/kvpub.py in the background; once it has
# bound, P is its PUB port and R its replay port (of rank 0).
pub() {
	local name=$1 i
	shift
	$PY "$KVP_ROOT/tests/kvpub.py" "$@" >"$D/$name.out" 2>"$D/$name.err" &
	PIDS+=($!)
	for i in $(seq 600); do
		[ -s "$D/$name.out" ] && break
		sleep 0.05
	done
	read -r P R <"$D/$name.out" || fail "publisher $name did not start: $(cat "$D/$name.err")"
}

# cap ARGS...: kv-capture with a safety --duration (a test never hangs).
cap() {
	run --separate-stderr timeout 60 "$KVP_BIN/kv-capture" --duration 30 "$@"
}

# seqs FILE [RANK]: "seq source" of each capture line (of one dp_rank),
# "lost FROM TO" for lost lines and "restart LAST FIRST" for restart lines.
seqs() {
	jq -r --argjson r "${2:-null}" 'select($r == null or .dp_rank == $r) |
		if .rec == "lost" then "lost \(.from) \(.to)"
		elif .rec == "restart" then "restart \(.last_seq) \(.first_seq)"
		else "\(.seq) \(.source)" end' "$1"
}

# want FROM TO [SEQ=SOURCE...]: "seq live" for FROM..TO, with the named seqs'
# sources replaced (or dropped, with SEQ=-).
want() {
	local from=$1 to=$2 s
	shift 2
	for ((s = from; s <= to; s++)); do
		local src=live e
		for e in "$@"; do
			[ "${e%%=*}" = "$s" ] && src=${e#*=}
		done
		[ "$src" = - ] || echo "$s $src"
	done
}

# no_gap FILE N: kv-decode reads FILE: N events, no gap or error record.
no_gap() {
	run --separate-stderr kvp kv-decode "$1"
	assert_success
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq "$2" ] || fail "want $2 events: $output"
	! grep -qE '"rec":"(gap|stale|error)"' <<<"$output" || fail "gap or error record: $output"
}

@test "everything is captured in seq order, the payloads byte for byte" {
	pub p --count 50
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R,worker=7" --count 50 -o cap.jsonl
	assert_success
	[ -z "$output" ]
	[[ "$stderr" == *"127.0.0.1:$P: 50 written (50 live, 0 replay)"* ]] || fail "$stderr"
	diff <(seqs cap.jsonl) <(want 0 49)
	# the payload is the publisher's batch [seq, [one store], rank]
	$PY -c '
import base64, json, sys, msgpack
for n, line in enumerate(open(sys.argv[1])):
    r = json.loads(line)
    b = base64.b64decode(r["payload_b64"])
    assert len(b) == r["payload_len"], n
    ts, evs, rank = msgpack.unpackb(b)
    assert ts == r["seq"] == n and rank == 0 and len(evs) == 1, r
    assert r["topic"] == "kv-events" and r["worker_id"] == 7, r
    assert r["endpoint"] == "tcp://127.0.0.1:" + sys.argv[2], r
' cap.jsonl "$P"
	no_gap cap.jsonl 50
}

@test "skipped seqs are filled from replay (reply without topic frame) and marked" {
	pub p --count 30 --skip 3,4,10
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 30 -o cap.jsonl
	assert_success
	diff <(seqs cap.jsonl) <(want 0 29 3=replay 4=replay 10=replay)
	[[ "$stderr" == *"30 written (27 live, 3 replay)"*"2 gaps (3 seqs filled), 0 lost"*"replies without topic"* ]] || fail "$stderr"
	# the stream's topic is written on 3-frame replies too
	[ "$(jq -r 'select(.source=="replay") | .topic' cap.jsonl | sort -u)" = kv-events ]
	no_gap cap.jsonl 30
}

@test "replies with the topic frame (vLLM) fill gaps the same way" {
	pub p --count 30 --skip 0,7,8 --replay-topic --topic kv@pod@m
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --topic kv@ --count 28 -o cap.jsonl
	assert_success
	# seq 0 is never seen live: the stream starts at seq 1 (no --from-start)
	diff <(seqs cap.jsonl) <(want 1 28 7=replay 8=replay)
	[[ "$stderr" == *"replies with topic"* ]] || fail "$stderr"
	[ "$(jq -r .topic cap.jsonl | sort -u)" = kv@pod@m ]
	no_gap cap.jsonl 28
}

@test "a range the publisher no longer buffers is a lost line; kv-decode shows the gap" {
	# live: 0 1 2 then 5; the replay of [3, 4] starts at 5 (5 oldest dropped)
	pub p --count 20 --skip 3,4 --drop-oldest 5
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 18 -o cap.jsonl
	assert_success
	diff <(seqs cap.jsonl) <(want 0 2; echo "lost 3 4"; want 5 19)
	[[ "$stderr" == *"18 written (18 live, 0 replay)"*"1 lost ranges (2 seqs)"* ]] || fail "$stderr"
	run --separate-stderr kvp kv-decode cap.jsonl
	assert_success
	[ "$(grep -c '"rec":"gap"' <<<"$output")" -eq 1 ]
	grep -q '"rec":"gap".*"expected":3,"got":5' <<<"$output" || fail "$output"
}

@test "no replay endpoint, or one that does not answer: lost, reported, the capture goes on" {
	pub p --count 12 --skip 5 --no-replay
	cap --endpoint "tcp://127.0.0.1:$P" --count 11 -o cap.jsonl
	assert_success
	diff <(seqs cap.jsonl) <(want 0 4; echo "lost 5 5"; want 6 11)
	[[ "$stderr" == *"no replay endpoint"* ]] || fail "$stderr"
	# a replay address nobody serves: the request times out
	pub q --count 12 --skip 5 --no-replay
	start=$(date +%s)
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$((P + 1))" --replay-timeout 0.3 --count 11 -o cap2.jsonl
	assert_success
	diff <(seqs cap2.jsonl) <(want 0 4; echo "lost 5 5"; want 6 11)
	[[ "$stderr" == *"did not answer within 300 ms"* ]] || fail "$stderr"
	[ $(($(date +%s) - start)) -lt 10 ]
}

@test "--from-start replays what was sent before the subscriber, merged with live" {
	pub p --count 20 --presend 3
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 17 -o live.jsonl
	assert_success
	diff <(seqs live.jsonl) <(want 3 19)
	pub q --count 20 --presend 3
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --from-start --count 20 -o cap.jsonl
	assert_success
	# seqs 3.. may come live or from the replay (whichever is first): each once
	diff <(seqs cap.jsonl | head -3) <(want 0 2 0=replay 1=replay 2=replay)
	diff <(jq .seq cap.jsonl) <(seq 0 19)
	no_gap cap.jsonl 20
}

@test "dp=0-1: one stream per rank on port + rank, each in order" {
	pub p --ranks 2 --count 15 --skip 4
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R,dp=0-1,worker=3" --count 30 -o cap.jsonl
	assert_success
	for r in 0 1; do
		diff <(seqs cap.jsonl $r) <(want 0 14 4=replay) || fail "rank $r"
		[ "$(jq -r "select(.dp_rank == $r) | .endpoint" cap.jsonl | sort -u)" = "tcp://127.0.0.1:$((P + r))" ]
	done
	# the envelope's rank (kv-decode) is the capture's dp_rank
	run --separate-stderr kvp kv-decode cap.jsonl
	assert_success
	[ "$(jq -c 'select(.rec == "event") | [.dp_rank, .worker_id]' <<<"$output" | sort -u | tr -d '\n')" = "[0,3][1,3]" ]
	no_gap cap.jsonl 30
}

@test "--bind: a publisher that connects (vLLM with a concrete host) is captured" {
	port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	timeout 60 "$KVP_BIN/kv-capture" --bind "tcp://127.0.0.1:$port" --count 25 --duration 30 -o cap.jsonl 2>cap.err &
	cpid=$!
	pub p --connect "tcp://127.0.0.1:$port" --count 25 --no-replay
	wait "$cpid" || fail "exit $?: $(cat cap.err)"
	diff <(seqs cap.jsonl) <(want 0 24)
	no_gap cap.jsonl 25
}

@test "SIGTERM mid-stream loses nothing: lines = messages received, the last line whole, exit 0" {
	pub p --count 0 --rate 3000
	"$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --duration 30 -o cap.jsonl 2>cap.err &
	cpid=$!
	for i in $(seq 100); do
		[ "$(stat -c %s cap.jsonl 2>/dev/null || echo 0)" -gt 100000 ] && break
		sleep 0.05
	done
	kill -TERM "$cpid"
	wait "$cpid" || fail "exit $?: $(cat cap.err)"
	n=$(wc -l <cap.jsonl)
	[ "$n" -gt 300 ] || fail "only $n lines"
	[ "$(tail -c 1 cap.jsonl | xxd -p)" = 0a ]
	jq -e . cap.jsonl >/dev/null
	grep -q "stopped by signal 15" cap.err
	grep -q "127.0.0.1:$P: $n written ($n live, 0 replay)" cap.err || fail "$(cat cap.err)"
	diff <(jq .seq cap.jsonl) <(seq 0 $((n - 1)))
	no_gap cap.jsonl "$n"
}

@test ".zst and .gz output (by suffix or --compress) decode like plain output" {
	pub p --count 40 --linger 60
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 40 -o cap.jsonl.zst
	assert_success
	zstd -t -q cap.jsonl.zst
	zstd -dc cap.jsonl.zst >plain.jsonl
	diff <(seqs plain.jsonl) <(want 0 39)
	no_gap cap.jsonl.zst 40
	# --compress with no suffix, to stdout: everything replayed (--from-start)
	timeout 60 "$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" \
		--from-start --count 40 --duration 30 --compress gzip >out.bin 2>err
	gzip -t out.bin
	[ "$(gzip -dc <out.bin | jq -r .source | sort | uniq -c | tr -s ' ')" = " 40 replay" ]
	no_gap out.bin 40
}

@test "--rotate starts FILE.1, FILE.2, ...; together they hold every line once" {
	pub p --count 60
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 60 --rotate 2k -o cap.jsonl
	assert_success
	[ -s cap.jsonl.1 ] && [ -s cap.jsonl.2 ] || fail "$(ls)"
	cat cap.jsonl $(ls cap.jsonl.* | sort -t. -k3 -n) >all.jsonl
	diff <(seqs all.jsonl) <(want 0 59)
}

@test "nothing blocks forever: no publisher, --duration ends it with exit 0" {
	start=$(date +%s)
	cap --endpoint "tcp://127.0.0.1:9,replay=tcp://127.0.0.1:10" --from-start --replay-timeout 0.2 --duration 0.6
	assert_success
	[ -z "$output" ]
	[[ "$stderr" == *"did not answer"* ]] || fail "$stderr"
	[ $(($(date +%s) - start)) -lt 10 ]
}

@test "malformed endpoints and options are usage errors (exit 2, nothing on stdout)" {
	for a in "--endpoint foo" "--endpoint tcp://host" "--endpoint tcp://host:0" \
		"--endpoint tcp://host:99999" "--endpoint tcp://*:5557" \
		"--endpoint tcp://h:5557,replay=udp://h:1" "--endpoint tcp://h:5557,dp=3-1" \
		"--endpoint tcp://h:5557,dp=x" "--endpoint tcp://h:65535,dp=0-1" \
		"--endpoint tcp://h:5557,color=red" "--endpoint tcp://h:5557,worker=-1" \
		"--bind foo" "--compress lz4 --endpoint tcp://h:1" "--count 0 --endpoint tcp://h:1" \
		"--duration -1 --endpoint tcp://h:1" "--rotate 1k --endpoint tcp://h:1" \
		"--replay-timeout 0 --endpoint tcp://h:1" "--max-held 0 --endpoint tcp://h:1" \
		"--max-held 1x --endpoint tcp://h:1" "--max-held-msgs 0 --endpoint tcp://h:1" "--stop-timeout 0 --endpoint tcp://h:1" "" "tcp://h:1"; do
		# shellcheck disable=SC2086
		run --separate-stderr "$KVP_BIN/kv-capture" $a
		[ "$status" -eq 2 ] || fail "'$a': exit $status"
		[ -z "$output" ] || fail "'$a': stdout"
		[[ "$stderr" == "kv-capture: "* ]] || fail "'$a': $stderr"
	done
	run --separate-stderr "$KVP_BIN/kv-capture" --compress lz4 --endpoint tcp://h:1
	[[ "$stderr" == *"(choices: none, gzip, zstd)"* ]] || fail "$stderr"
}

@test "scale-out: GNU parallel on 4 capture files writes what the sequential run writes" {
	pub p --ranks 4 --count 25 --events 2
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R,dp=0-3,worker=1" --count 100 -o all.jsonl
	assert_success
	mkdir captures seq
	for r in 0 1 2 3; do
		jq -c "select(.dp_rank == $r)" all.jsonl | zstd -q -o "captures/w$r.jsonl.zst"
	done
	PATH=$KVP_BIN:$PATH parallel --will-cite kv-decode {} '|' kv-normalize --block-size 4 '>' {.}.events.ndjson ::: captures/*.jsonl.zst
	for f in captures/*.jsonl.zst; do
		b=$(basename "$f" .zst)
		kvp kv-decode "$f" | kvp kv-normalize --block-size 4 >"seq/$b.events.ndjson"
		cmp "captures/$b.events.ndjson" "seq/$b.events.ndjson" || fail "$b differs"
		[ "$(wc -l <"seq/$b.events.ndjson")" -eq 50 ] || fail "$b: $(wc -l <"seq/$b.events.ndjson") events"
	done
}

@test "malformed messages are reported once, counted, and their seqs filled from replay" {
	pub p --count 20 --malformed 4,9
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 20 -o cap.jsonl
	assert_success
	diff <(seqs cap.jsonl) <(want 0 19 4=replay 9=replay)
	[ "$(grep -c 'message with 2 frame(s) skipped' <<<"$stderr")" -eq 1 ] || fail "$stderr"
	[[ "$stderr" == *" 2 malformed"* ]] || fail "$stderr"
	no_gap cap.jsonl 20
}

@test "a seq going backwards (engine restart) starts a new epoch, reported" {
	pub p --count 20 --restart-after 12
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 20 -o cap.jsonl
	assert_success
	diff <(seqs cap.jsonl) <(want 0 11; echo "restart 11 0"; want 0 7)
	[[ "$stderr" == *"seq went back from 11 to 0: the publisher restarted (epoch 2)"* ]] || fail "$stderr"
	[[ "$stderr" == *"0 duplicates, 0 malformed, 0 gaps (0 seqs filled), 0 lost ranges (0 seqs), 1 restarts"* ]] || fail "$stderr"
}

@test "issue 28.8: a restart line in the capture; kv-decode resets the stream there (--drop-stale keeps the new run)" {
	pub p --count 20 --restart-after 12
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R,worker=5,dp=0" --count 20 -o cap.jsonl
	assert_success
	[ -z "$output" ]
	jq -c 'select(.rec == "restart") | [.stream, .topic, .last_seq, .first_seq, .epoch, .worker_id, .dp_rank, (.recv_ts | type)]' cap.jsonl >r.json
	[ "$(cat r.json)" = "[\"tcp://127.0.0.1:$P\",\"kv-events\",11,0,2,5,0,\"number\"]" ] || fail "$(cat r.json)"
	# kv-decode: a restart record where the new run begins, no stale record,
	# and --drop-stale keeps all 20 events (it dropped the new run's 8)
	run --separate-stderr kvp kv-decode --drop-stale cap.jsonl
	assert_success
	[ -z "$stderr" ] || fail "$stderr"
	[ "$(grep -c '"rec":"event"' <<<"$output")" -eq 20 ] || fail "$output"
	! grep -qE '"rec":"(gap|stale|error)"' <<<"$output" || fail "$output"
	[ "$(grep -v '"rec":"event"' <<<"$output")" = '{"rec":"restart","stream":"kv-events:0:5","expected":12,"got":0,"topic":"kv-events","dp_rank":0,"worker_id":5}' ] || fail "$output"
	# the record comes just before the new run's first event (seq 0 again)
	[ "$(grep -A1 '"rec":"restart"' <<<"$output" | tail -1 | jq -c '[.seq, .idx]')" = "[0,0]" ]
	# kv-normalize passes it on, like gap and stale records
	run --separate-stderr bash -c '"$1/kv-decode" cap.jsonl | "$1/kv-normalize" --block-size 4' _ "$KVP_BIN"
	assert_success
	[ "$(grep -c '"rec":"restart"' <<<"$output")" -eq 1 ] || fail "$output $stderr"
}

@test "--progress prints a line per stream once a second; a publisher that goes away is reported once" {
	pub p --count 0 --rate 200
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --duration 2.6 --progress -o cap.jsonl
	assert_success
	[ "$(grep -cE "^kv-capture: tcp://127.0.0.1:$P: [0-9]+ msg/s, [0-9]+ events, [0-9]+ bytes, 0 seqs filled, 0 lost ranges$" <<<"$stderr")" -ge 2 ] || fail "$stderr"
	# the publisher exits after sending (--linger 0): ZMQ reconnects, one notice
	pub q --count 5 --linger 0.2
	cap --endpoint "tcp://127.0.0.1:$P" --duration 2
	assert_success
	[ "$(grep -c 'the publisher went away' <<<"$stderr")" -eq 1 ] || fail "$stderr"
	[ "$(wc -l <<<"$output")" -eq 5 ]
}

# The replay of seq 5 is answered only after seq 70 (--replay-hold): 31
# held messages (seqs 6..36) give it up, and 5 is lost. The replay of 60
# then asked for must get its own answer: the answer to the first request,
# which comes first, must not end it (the socket that asked is closed).
@test "issue 28.3: a replay given up at the held limit: its late end marker does not end the next replay" {
	pub p --count 81 --rate 200 --skip 5,60 --replay-hold 70
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --max-held-msgs 30 --count 80 -o cap.jsonl
	assert_success
	[ -z "$output" ]
	diff <(seqs cap.jsonl) <(want 0 4; echo "lost 5 5"; want 6 80 60=replay)
	[ "$(grep -c 'giving the replay up' <<<"$stderr")" -eq 1 ] || fail "$stderr"
	[[ "$stderr" == *"127.0.0.1:$P: over 30 messages held waiting for replay: giving the replay up"* ]] || fail "$stderr"
	[[ "$stderr" == *"80 written (79 live, 1 replay)"*"2 gaps (1 seqs filled), 1 lost ranges (1 seqs)"* ]] || fail "$stderr"
	# the byte limit, named as such (about 90 bytes a message: 5 is given
	# up after some 34, 60 waits for about 15)
	pub q --count 81 --rate 200 --skip 5,60 --replay-hold 70
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --max-held 3k --count 80 -o cap2.jsonl
	assert_success
	diff <(seqs cap2.jsonl) <(want 0 4; echo "lost 5 5"; want 6 80 60=replay)
	[[ "$stderr" == *"127.0.0.1:$P: over 3072 bytes held waiting for replay: giving the replay up"* ]] || fail "$stderr"
	[[ "$stderr" != *"messages held"* ]] || fail "$stderr"
}

# A replay endpoint that never sends the end marker and repeats seq 0 every
# 50 ms. Before the fix, every such reply put the deadline off and a
# filled range stayed open until the end marker: the held messages came
# out only at --duration (20 s here).
@test "issue 28.4: a filled range completes at once; replies outside the range do not put the deadline off" {
	pub p --count 40 --rate 100 --skip 5 --replay-trickle 0.05
	start=$(date +%s)
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --replay-timeout 5 --count 40 --duration 20 -o cap.jsonl
	assert_success
	[ $(($(date +%s) - start)) -lt 12 ] || fail "took $(($(date +%s) - start)) s"
	diff <(seqs cap.jsonl) <(want 0 39 5=replay)
	[[ "$stderr" == *"40 written (39 live, 1 replay)"*"1 gaps (1 seqs filled), 0 lost ranges"* ]] || fail "$stderr"
	[[ "$stderr" != *"did not answer"* ]] || fail "$stderr"
	# the answer lacks seq 5 (the 6 oldest dropped): only seq 0 comes,
	# again and again, outside the range; the request times out after 0.5 s
	pub q --count 40 --rate 100 --skip 5 --drop-oldest 6 --replay-trickle 0.05
	start=$(date +%s)
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --replay-timeout 0.5 --count 39 --duration 20 -o cap2.jsonl
	assert_success
	[ $(($(date +%s) - start)) -lt 12 ] || fail "took $(($(date +%s) - start)) s"
	diff <(seqs cap2.jsonl) <(want 0 4; echo "lost 5 5"; want 6 39)
	[[ "$stderr" == *"did not answer within 500 ms"* ]] || fail "$stderr"
	[[ "$stderr" == *"39 written (39 live, 0 replay)"*"1 lost ranges (1 seqs)"* ]] || fail "$stderr"
}

# capture_bg ARGS...: kv-capture in the background (stdout cap.out unless
# -o, stderr cap.err); CPID is its pid.
capture_bg() {
	"$KVP_BIN/kv-capture" --duration 60 "$@" >cap.out 2>cap.err &
	CPID=$!
	PIDS+=($CPID)
}

# wait_size FILE BYTES: until FILE has BYTES (at most 30 s).
wait_size() {
	local i
	for i in $(seq 600); do
		[ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.05
	done
	fail "$1 did not reach $2 bytes"
}

# wait_exit PID SECONDS: its exit status, or fail after SECONDS.
wait_exit() {
	local i
	for i in $(seq $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$1" 2>/dev/null; then
		fail "pid $1 still running after $2 s: $(cat cap.err)"
		return 1
	fi
	wait "$1"
}

@test "issue 28.6: SIGHUP stops like SIGTERM: summary, exit 0, .zst output ended, the last line whole" {
	pub p --count 0 --rate 2000
	capture_bg --endpoint "tcp://127.0.0.1:$P" -o cap.jsonl
	wait_size cap.jsonl 60000
	kill -HUP "$CPID"
	wait_exit "$CPID" 30
	n=$(wc -l <cap.jsonl)
	[ "$(tail -c 1 cap.jsonl | xxd -p)" = 0a ]
	grep -q "stopped by signal 1$" cap.err || fail "$(cat cap.err)"
	grep -q "127.0.0.1:$P: $n written ($n live, 0 replay)" cap.err || fail "$(cat cap.err)"
	[ ! -s cap.out ]
	# compressed: the stream is ended (zstd -t), every line in it
	capture_bg --endpoint "tcp://127.0.0.1:$P" -o cap.jsonl.zst
	wait_size cap.jsonl.zst 2000
	kill -HUP "$CPID"
	wait_exit "$CPID" 30
	zstd -t -q cap.jsonl.zst
	n=$(zstd -dc cap.jsonl.zst | wc -l)
	grep -q "127.0.0.1:$P: $n written" cap.err || fail "$(cat cap.err)"
}

@test "issue 28.6: a reader that goes away (SIGPIPE) is an output error: exit 2, message, summary" {
	pub p --count 0 --rate 2000
	set +e
	timeout 60 "$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P" --duration 30 2>cap.err | head -n 5 >head.out
	st=${PIPESTATUS[0]}
	set -e
	[ "$st" -eq 2 ] || fail "exit $st: $(cat cap.err)"
	[ "$(wc -l <head.out)" -eq 5 ]
	grep -q "^kv-capture: write error on stdout: Broken pipe ([0-9]* whole lines in it)$" cap.err || fail "$(cat cap.err)"
	grep -q "127.0.0.1:$P: [0-9]* written" cap.err || fail "$(cat cap.err)"
}

# The reader of the fifo never reads: once it holds 64 KiB, kv-capture's
# writes block. The first SIGTERM waits for the output (nothing is given up
# on one signal); the next one stops it at once.
@test "issue 28.6: with a full output pipe a second SIGTERM stops it within a second (exit 2, reported)" {
	pub p --count 0 --rate 5000 --payload-pad 200
	mkfifo fifo
	$PY -c '
import fcntl, os, struct, sys, termios, time
fd = os.open(sys.argv[1], os.O_RDONLY)
while True:
    n = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    if n >= 65536:
        break
    time.sleep(0.02)
open(sys.argv[2], "w").write("full\n")
time.sleep(600)
' fifo full &
	PIDS+=($!)
	capture_bg --endpoint "tcp://127.0.0.1:$P" -o fifo
	wait_size full 1
	kill -TERM "$CPID"
	# still blocked: the first signal waits for the output
	sleep 1
	kill -0 "$CPID" || fail "exited at the first signal: $(cat cap.err)"
	t0=$(date +%s%N)
	kill -TERM "$CPID"
	status=0
	wait_exit "$CPID" 10 || status=$?
	t1=$(date +%s%N)
	[ "$status" -eq 2 ] || fail "exit $status: $(cat cap.err)"
	[ $(((t1 - t0) / 1000000)) -lt 3000 ] || fail "took $(((t1 - t0) / 1000000)) ms"
	grep -q "stopped by signal 15" cap.err || fail "$(cat cap.err)"
	grep -q "fifo.*second signal" cap.err || fail "$(cat cap.err)"
	grep -q "127.0.0.1:$P: [0-9]* written" cap.err || fail "$(cat cap.err)"
}

# slow_reader FIFO OUT GO BYTES: reads nothing from FIFO until file GO
# exists, then BYTES at a time (every 50 ms; 0: as fast as it can) into
# OUT until the writer closes.
slow_reader() {
	$PY -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
out = open(sys.argv[2], "wb")
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
n = int(sys.argv[4])
while True:
    b = os.read(fd, n or 1 << 20)
    if not b:
        break
    out.write(b)
    if n:
        time.sleep(0.05)
out.close()
' "$@" &
	PIDS+=($!)
	RPID=$!
}

# covers FILE: the seqs of FILE's lines and lost ranges, in file order, are
# 0, 1, 2, ... with none twice and none missing; prints the last.
covers() {
	jq -r 'if .rec == "lost" then "\(.from) \(.to)" else "\(.seq) \(.seq)" end' "$1" |
		awk 'BEGIN { next_seq = 0 }
			$1 != next_seq { print "at " NR ": " $1 " after " next_seq - 1; bad = 1; exit 1 }
			{ next_seq = $2 + 1 }
			END { if (!bad) print next_seq - 1 }'
}

# 150,000 messages wait in the sockets (the output pipe is not read until
# the stop): at most 65,536 of them were written before, and "0 lost".
@test "issue 28.1: at a stop everything queued is written, until empty (no round limit)" {
	pub p --count 100000 --no-replay --hwm 200000
	mkfifo fifo
	slow_reader fifo out.jsonl go 0
	capture_bg --endpoint "tcp://127.0.0.1:$P" -o fifo
	for i in $(seq 1200); do grep -q '^sent ' p.err && break; sleep 0.05; done
	grep -q '^sent 100000 ' p.err || fail "publisher: $(cat p.err)"
	kill -TERM "$CPID"
	touch go
	wait_exit "$CPID" 90
	wait "$RPID"
	# (a loaded publisher may drop a few at its high-water mark: those
	# are gaps, lost lines in the middle)
	last=$(covers out.jsonl) || fail "$last"
	[ "$last" -ge 99000 ] || fail "up to $last only: $(cat cap.err)"
	n=$(grep -vc '"rec":"lost"' out.jsonl)
	grep -q "127.0.0.1:$P: $n written ($n live, 0 replay)" cap.err || fail "$(cat cap.err)"
	! grep -q "at the stop" cap.err || fail "$(cat cap.err)"
	[ ! -s cap.out ]
}

@test "issue 28.1: what the stop bound leaves queued is a lost line and counted, never dropped silently" {
	pub p --count 150000 --no-replay --hwm 200000
	mkfifo fifo
	slow_reader fifo out.jsonl go 65536
	capture_bg --endpoint "tcp://127.0.0.1:$P" --stop-timeout 0.2 -o fifo
	for i in $(seq 1200); do grep -q '^sent ' p.err && break; sleep 0.05; done
	grep -q '^sent 150000 ' p.err || fail "publisher: $(cat p.err)"
	kill -TERM "$CPID"
	touch go
	wait_exit "$CPID" 60
	wait "$RPID"
	# 0.. written, then one lost range to the last seq taken
	last=$(covers out.jsonl) || fail "$last"
	[ "$(tail -1 out.jsonl | jq -r .rec)" = lost ] || fail "$(tail -1 out.jsonl | cut -c1-200)"
	n=$(grep -vc '"rec":"lost"' out.jsonl)
	nl=$(grep -c '"rec":"lost"' out.jsonl)
	lost=$(jq -s 'map(select(.rec == "lost") | .to - .from + 1) | add' out.jsonl)
	read -r from to < <(tail -1 out.jsonl | jq -r '"\(.from) \(.to)"')
	[ "$to" -eq "$last" ] || fail "$from $to $last"
	k=$(sed -nE "s/.*127.0.0.1:$P: ([0-9]+) messages still queued at the stop after 200 ms: seqs $from to $to written as lost$/\1/p" cap.err)
	[ -n "$k" ] && [ "$k" -gt 0 ] && [ "$k" -le $((to - from + 1)) ] || fail "$(cat cap.err)"
	grep -q "127.0.0.1:$P: $n written ($n live, 0 replay),.* $nl lost ranges ($lost seqs), 0 restarts; $k taken at the stop and not written;" cap.err || fail "$(cat cap.err)"
	grep -q "stopped by signal 15" cap.err
}

# A file size limit (ulimit -f, 2 MiB) stands in for a full disk: the
# writes fail with EFBIG as they would with ENOSPC.
@test "issue 28.5: a write error leaves whole lines only (plain, .zst, .gz); the summary counts what is in the file" {
	pub p --count 0 --rate 5000 --noise 1000 --no-replay
	for f in cap.jsonl cap.jsonl.zst cap.jsonl.gz; do
		run --separate-stderr timeout 60 bash -c 'trap "" XFSZ; ulimit -f 2048; exec "$@"' _ \
			"$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P" --duration 30 -o "$f"
		[ "$status" -eq 2 ] || fail "$f: exit $status: $stderr"
		[ -z "$output" ]
		case $f in
		*.zst) zstd -t -q "$f"; zstd -dc "$f" >plain ;;
		*.gz) gzip -t "$f"; gzip -dc "$f" >plain ;;
		*) cp "$f" plain ;;
		esac
		n=$(wc -l <plain)
		[ "$n" -gt 0 ] || fail "$f: no line"
		[ "$(tail -c 1 plain | xxd -p)" = 0a ] || fail "$f: a torn last line"
		jq -e . plain >/dev/null
		[[ "$stderr" == *"write error on $f: File too large ($n whole lines in it)"* ]] || fail "$f: $stderr"
		[[ "$stderr" == *"127.0.0.1:$P: $n written ($n live, 0 replay)"*" written but not in the output; replies"* ]] || fail "$f: $stderr"
		run --separate-stderr kvp kv-decode "$f"
		assert_success
		[ "$(grep -c '"rec":"event"' <<<"$output")" -eq $((2 * n)) ] || fail "$f: $(grep -vc '"rec":"event"' <<<"$output") other records"
	done
	# SIGXFSZ (not ignored by the caller) is the same write error
	run --separate-stderr timeout 60 bash -c 'ulimit -f 2048; exec "$@"' _ \
		"$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P" --duration 30 -o cap.jsonl
	[ "$status" -eq 2 ] || fail "exit $status: $stderr"
	[[ "$stderr" == *"write error on cap.jsonl: File too large ($(wc -l <cap.jsonl) whole lines in it)"* ]] || fail "$stderr"
}

# Lines of about 400 bytes; seqs 5 and 9 carry 8,000 bytes more, whose
# lines (11 kB) are over --max-line-bytes 10000 (kv-decode's limit too;
# a frame over it libzmq would refuse, dropping the connection).
@test "issue 28.2: a message too big for --max-line-bytes is malformed and its seq lost, live or replayed" {
	pub p --count 20 --skip 9 --big 5,9 --big-size 8000
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --max-line-bytes 10000 --count 18 -o cap.jsonl
	assert_success
	[ -z "$output" ]
	diff <(seqs cap.jsonl) <(want 0 4; echo "lost 5 5"; want 6 8; echo "lost 9 9"; want 10 19)
	[ "$(grep -c 'would make a line over 10000 bytes' <<<"$stderr")" -eq 1 ] || fail "$stderr"
	[[ "$stderr" == *"127.0.0.1:$P: seq 5: a message of 80"*" bytes would make a line over 10000 bytes: written as lost and counted as malformed"* ]] || fail "$stderr"
	[[ "$stderr" == *"18 written (18 live, 0 replay)"*"2 malformed, 1 gaps (0 seqs filled), 2 lost ranges (2 seqs)"* ]] || fail "$stderr"
	[ "$(awk '{ if (length($0) > m) m = length($0) } END { print m }' cap.jsonl)" -le 10000 ]
	run --separate-stderr kvp kv-decode --max-line-bytes 10000 cap.jsonl
	assert_success
	[ "$(grep -c '"rec":"gap"' <<<"$output")" -eq 2 ]
}

# Frames of 1 MB, 20 a second, while the output pipe is not read: the SUB
# socket's queue comes down to --max-held / 1 MB = 4 messages instead of
# taking all 40 (about 56 MB with their line).
@test "issue 28.2: large frames: the socket queue is bounded in bytes (peak memory)" {
	pub p --count 40 --rate 20 --noise 1000000 --no-replay
	mkfifo fifo
	slow_reader fifo out.jsonl go 0
	# (ASan: no quarantine, which would keep the freed frames)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0 /usr/bin/time -f %M -o rss \
		"$KVP_BIN/kv-capture" --endpoint "tcp://127.0.0.1:$P" --duration 60 --max-held 4M -o fifo 2>cap.err &
	CPID=$!
	PIDS+=($CPID)
	for i in $(seq 1200); do grep -q '^sent ' p.err && break; sleep 0.05; done
	grep -q '^sent 40 ' p.err || fail "publisher: $(cat p.err)"
	sleep 0.5
	kill -TERM "$(pgrep -P "$CPID")"
	touch go
	wait_exit "$CPID" 60
	wait "$RPID"
	grep -q "stopped by signal 15" cap.err || fail "$(cat cap.err)"
	n=$(wc -l <out.jsonl)
	grep -q "127.0.0.1:$P: $n written ($n live, 0 replay)" cap.err || fail "$(cat cap.err)"
	# measured: 12.5 MB (47 MB before)
	kb=$(cat rss)
	[ "$kb" -lt 30000 ] || fail "peak RSS $kb kB: $(cat cap.err)"
}

# Two publishers connect to one --bind address, both from seq 0, 2000
# messages each: their seqs interleave. Before, every turn looked like a
# restart or a gap: thousands of stderr lines, restart and lost lines.
@test "issue 28.7: two publishers on one --bind: interleaving said once, every message written as it came" {
	ORDER=ahead two_publishers
}

@test "issue 28.7: two publishers on one --bind in step (each seq twice): the same" {
	ORDER=step two_publishers
}

two_publishers() {
	port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# b a little after a (a's seqs ahead), or both waiting for the
	# capture (in step: each seq twice in a row)
	if [ "$ORDER" = step ]; then
		pub a --connect "tcp://127.0.0.1:$port" --count 2000 --rate 1000 --no-replay
		pub b --connect "tcp://127.0.0.1:$port" --count 2000 --rate 1000 --no-replay
		capture_bg --bind "tcp://127.0.0.1:$port" --count 4000 -o cap.jsonl
	else
		capture_bg --bind "tcp://127.0.0.1:$port" --count 4000 -o cap.jsonl
		pub a --connect "tcp://127.0.0.1:$port" --count 2000 --rate 1000 --no-replay
		pub b --connect "tcp://127.0.0.1:$port" --count 2000 --rate 1000 --no-replay
	fi
	wait_exit "$CPID" 60
	[ "$(grep -c '"source":"live"' cap.jsonl)" -eq 4000 ]
	[ "$(grep -c 'two or more publishers interleave' cap.err)" -eq 1 ] || fail "$(head -20 cap.err)"
	[ "$(grep -c 'seq went back' cap.err)" -le 3 ] || fail "$(head -20 cap.err)"
	[ "$(wc -l <cap.err)" -le 8 ] || fail "$(head -20 cap.err)"
	[ "$(grep -c '"rec":"restart"' cap.jsonl)" -le 2 ] || fail "$(grep -c '"rec":"restart"' cap.jsonl) restart lines"
	[ "$(grep -c '"rec":"lost"' cap.jsonl)" -le 2 ] || fail "$(grep -c '"rec":"lost"' cap.jsonl) lost lines"
	# each publisher's seqs 0..1999 are all there, once
	[ "$(jq -r 'select(.seq != null) | .seq' cap.jsonl | sort -n | uniq -c | awk '$1 != 2' | wc -l)" -eq 0 ]
	grep -q "4000 written (4000 live, 0 replay).*; [0-9]* written as they came (publishers interleave)" cap.err || fail "$(cat cap.err)"
}

@test "issue 28.7: a publisher restarting again and again: at most a notice a second, every restart in the capture" {
	pub p --count 200 --restart-after 10
	cap --endpoint "tcp://127.0.0.1:$P,replay=tcp://127.0.0.1:$R" --count 200 -o cap.jsonl
	assert_success
	[ "$(grep -c '"rec":"restart"' cap.jsonl)" -eq 19 ]
	n=$(grep -c 'seq went back' <<<"$stderr")
	[ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "$stderr"
	[[ "$stderr" == *"200 written (200 live, 0 replay)"*"0 lost ranges (0 seqs), 19 restarts;"* ]] || fail "$stderr"
	[[ "$stderr" != *"interleave"* ]] || fail "$stderr"
}
