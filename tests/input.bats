#!/usr/bin/env bats
# The input layer (lib/common/input.c) and what fe/ builds on it, in every
# tool: gzip and zstd input by magic bytes (files, standard input, option
# files), damaged compressed input, a UTF-8 BOM, --progress and the -k
# totals line. Test inputs are compressed with the gzip and zstd programs.
load test_helper

TOOLS="kv-decode kv-normalize kv-hash mm-expand"

setup() {
	D=$BATS_TEST_TMPDIR
	cp "$FIX/demo/capture.jsonl" "$D/kv-decode.in"
	"$KVP_BIN/kv-decode" "$FIX/demo/capture.jsonl" >"$D/kv-normalize.in"
	for i in $(seq 0 39); do
		echo "{\"tokens\":[$i,1,2,3,4,5,6,7,8]}"
	done >"$D/kv-hash.in"
	cp "$FIX/mm-expand/demo.ndjson" "$D/mm-expand.in"
	"$KVP_BIN/kv-normalize" --block-size 4 "$D/kv-normalize.in" >"$D/events.in"
	cp "$FIX/demo/requests.ndjson" "$D/requests.in"
}

args_for() {
	case $1 in
	kv-hash | kv-normalize) echo --block-size 4 ;;
	esac
}

# run_tool TOOL ARGS... — TOOL with its required options, stderr apart.
run_tool() {
	local t=$1
	shift
	# shellcheck disable=SC2046
	run --separate-stderr kvp "$t" $(args_for "$t") "$@"
}

# zip CODEC — compresses stdin to stdout (CODEC: gz or zst).
zip() {
	case $1 in
	gz) gzip -c ;;
	zst) zstd -q -c ;;
	esac
}

# damaged IN CODEC OUT — OUT: the first half of IN's lines as one complete
# member (gzip) or frame (zstd), then the rest as another cut in half.
# Prints the number of lines in the complete part.
damaged() {
	local in=$1 codec=$2 out=$3 n k
	n=$(wc -l <"$in")
	k=$(((n + 1) / 2))
	head -n "$k" "$in" | zip "$codec" >"$out"
	tail -n +$((k + 1)) "$in" | zip "$codec" >"$D/rest"
	head -c $(($(stat -c %s "$D/rest") / 2)) "$D/rest" >>"$out"
	head -n "$k" "$in" >"$D/first"
	echo "$k"
}

# bats test_tags=valgrind
@test "plain = .gz = .zst = compressed standard input, in every line tool" {
	for t in $TOOLS; do
		in=$D/$t.in
		gzip -c "$in" >"$in.gz"
		zstd -q -c "$in" >"$in.zst"
		run_tool "$t" "$in"
		[ "$status" -eq 0 ] || fail "$t: plain exit $status"
		want=$output
		[ -n "$want" ] || fail "$t: no output"
		for f in "$in.gz" "$in.zst"; do
			run_tool "$t" "$f"
			[ "$status" -eq 0 ] || fail "$t $f: exit $status: $stderr"
			[ "$output" = "$want" ] || fail "$t: $f differs"
			[ -z "$stderr" ] || fail "$t $f: stderr: $stderr"
			run_tool "$t" <"$f"
			[ "$output" = "$want" ] || fail "$t: stdin from $f differs"
			run_tool "$t" - <"$f"
			[ "$output" = "$want" ] || fail "$t: - from $f differs"
		done
	done
}

@test "byte-identical output files: plain, gzip, zstd" {
	for t in $TOOLS; do
		in=$D/$t.in
		gzip -c "$in" >"$in.gz"
		zstd -q -c "$in" >"$in.zst"
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") -o "$D/o.plain" "$in"
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") -o "$D/o.gz" "$in.gz"
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") -o "$D/o.zst" <"$in.zst"
		cmp "$D/o.plain" "$D/o.gz" || fail "$t: gzip output differs"
		cmp "$D/o.plain" "$D/o.zst" || fail "$t: zstd output differs"
	done
}

@test "the magic bytes decide, not the name" {
	cp "$D/kv-hash.in" "$D/plain.gz"
	zstd -q -c "$D/kv-hash.in" >"$D/zstd.txt"
	gzip -c "$D/kv-hash.in" >"$D/gzip.zst"
	run_tool kv-hash "$D/kv-hash.in"
	want=$output
	for f in plain.gz zstd.txt gzip.zst; do
		run_tool kv-hash "$D/$f"
		[ "$status" -eq 0 ] || fail "$f: exit $status"
		[ "$output" = "$want" ] || fail "$f differs"
	done
}

@test "concatenated gzip members and multi-frame zstd are read whole" {
	for t in $TOOLS; do
		in=$D/$t.in
		n=$(wc -l <"$in")
		k=$(((n + 1) / 2))
		head -n "$k" "$in" | gzip -c >"$D/m.gz"
		tail -n +$((k + 1)) "$in" | gzip -c >>"$D/m.gz"
		head -n "$k" "$in" | zstd -q -c >"$D/m.zst"
		tail -n +$((k + 1)) "$in" | zstd -q -c >>"$D/m.zst"
		run_tool "$t" "$in"
		want=$output
		run_tool "$t" "$D/m.gz"
		[ "$status" -eq 0 ] && [ "$output" = "$want" ] || fail "$t: gzip members: $status $stderr"
		run_tool "$t" <"$D/m.zst"
		[ "$status" -eq 0 ] && [ "$output" = "$want" ] || fail "$t: zstd frames: $status $stderr"
	done
}

@test "route-score: --events and --requests files and standard input, compressed" {
	run --separate-stderr kvp route-score --block-size 4 --events "$D/events.in" --requests "$D/requests.in"
	assert_success
	want=$output
	gzip -c "$D/events.in" >"$D/events.gz"
	zstd -q -c "$D/events.in" >"$D/events.zst"
	gzip -c "$D/requests.in" >"$D/requests.gz"
	zstd -q -c "$D/requests.in" >"$D/requests.zst"
	for e in events.in events.gz events.zst; do
		for r in requests.in requests.gz requests.zst; do
			run --separate-stderr kvp route-score --block-size 4 --events "$D/$e" --requests "$D/$r"
			[ "$status" -eq 0 ] || fail "$e $r: exit $status: $stderr"
			[ "$output" = "$want" ] || fail "$e $r: output differs"
		done
	done
	run --separate-stderr kvp route-score --block-size 4 --requests "$D/requests.gz" <"$D/events.zst"
	assert_success
	[ "$output" = "$want" ]
	run --separate-stderr kvp route-score --block-size 4 --events "$D/events.gz" --requests - <"$D/requests.zst"
	assert_success
	[ "$output" = "$want" ]
}

@test "a truncated .gz or .zst: exit 1, the byte offset, every earlier record kept" {
	for codec in gz zst; do
		name=gzip
		[ "$codec" = zst ] && name=zstd
		for t in $TOOLS; do
			damaged "$D/$t.in" "$codec" "$D/t.$codec" >/dev/null
			size=$(stat -c %s "$D/t.$codec")
			run_tool "$t" "$D/first"
			first=$output
			run_tool "$t" "$D/$t.in"
			full=$output
			run_tool "$t" "$D/t.$codec"
			[ "$status" -eq 1 ] || fail "$t $codec: exit $status, want 1"
			[ "$stderr" = "$t: $D/t.$codec: truncated $name input at byte $size" ] ||
				fail "$t $codec: stderr: $stderr"
			[[ "$output" == "$first"* ]] || fail "$t $codec: records before the damage are missing"
			[[ "$full" == "$output"* ]] || fail "$t $codec: output is not a prefix of the full output"
			# compressed standard input: the same, named "-"
			run_tool "$t" <"$D/t.$codec"
			[ "$status" -eq 1 ] || fail "$t $codec stdin: exit $status"
			[ "$stderr" = "$t: -: truncated $name input at byte $size" ] || fail "$t stdin: $stderr"
		done
	done
}

@test "route-score: a truncated --requests .zst or --events .gz is bad data" {
	run --separate-stderr kvp route-score --block-size 4 --events "$D/events.in" --requests "$D/requests.in"
	full=("${lines[@]}")
	k=$(damaged "$D/requests.in" zst "$D/r.zst")
	run --separate-stderr kvp route-score --block-size 4 --events "$D/events.in" --requests "$D/r.zst"
	assert_failure 1
	assert_equal "$stderr" "route-score: $D/r.zst: truncated zstd input at byte $(stat -c %s "$D/r.zst")"
	for ((i = 0; i < k; i++)); do
		assert_equal "${lines[$i]}" "${full[$i]}"
	done
	damaged "$D/events.in" gz "$D/e.gz" >/dev/null
	run --separate-stderr kvp route-score --block-size 4 --events "$D/e.gz" --requests "$D/requests.in"
	assert_failure 1
	assert_equal "$stderr" "route-score: $D/e.gz: truncated gzip input at byte $(stat -c %s "$D/e.gz")"
}

@test "-k: a truncated file is reported and the next file is read" {
	damaged "$D/kv-hash.in" gz "$D/t.gz" >/dev/null
	gzip -c "$D/kv-hash.in" >"$D/ok.gz"
	run_tool kv-hash -k "$D/t.gz" "$D/ok.gz"
	assert_failure 1
	[[ "${stderr_lines[0]}" == "kv-hash: $D/t.gz: truncated gzip input at byte "* ]]
	[[ "${stderr_lines[1]}" == "kv-hash: "*" records in, "*" written, 0 skipped, 1 errors (0 not shown)" ]]
	[ "$(printf '%s\n' "$output" | tail -n 40)" = "$(kvp kv-hash --block-size 4 "$D/kv-hash.in")" ]
}

@test "a corrupt zstd frame or gzip member: exit 1, corrupt at a byte offset, earlier records kept" {
	for t in $TOOLS; do
		in=$D/$t.in
		n=$(wc -l <"$in")
		k=$(((n + 1) / 2))
		head -n "$k" "$in" >"$D/first"
		head -n "$k" "$in" | zstd -q -c >"$D/c.zst"
		s1=$(stat -c %s "$D/c.zst")
		tail -n +$((k + 1)) "$in" | zstd -q -c >"$D/rest.zst"
		# overwrite bytes of the second frame's first block
		s2=$(stat -c %s "$D/rest.zst")
		printf '\377\377\377\377\377\377\377\377' |
			dd of="$D/rest.zst" bs=1 seek=$((s2 / 2)) conv=notrunc 2>/dev/null
		cat "$D/rest.zst" >>"$D/c.zst"
		run_tool "$t" "$D/first"
		first=$output
		run_tool "$t" "$D/c.zst"
		[ "$status" -eq 1 ] || fail "$t: exit $status, want 1"
		[[ "$stderr" =~ ^$t:\ $D/c.zst:\ corrupt\ zstd\ input\ at\ byte\ ([0-9]+)$ ]] ||
			fail "$t: stderr: $stderr"
		at=${BASH_REMATCH[1]}
		[ "$at" -ge "$s1" ] && [ "$at" -lt $((s1 + s2)) ] || fail "$t: byte $at outside the second frame"
		[[ "$output" == "$first"* ]] || fail "$t: records before the damage are missing"
	done
	# trailing garbage after a gzip member
	{ gzip -c "$D/kv-hash.in"; echo garbage; } >"$D/g.gz"
	size=$(($(stat -c %s "$D/g.gz") - 8))
	run_tool kv-hash "$D/g.gz"
	assert_failure 1
	assert_equal "$stderr" "kv-hash: $D/g.gz: corrupt gzip input at byte $size"
	[ "$output" = "$(kvp kv-hash --block-size 4 "$D/kv-hash.in")" ]
}

@test "kv-decode: compressed frames and raw msgpack streams decode like plain ones" {
	hex2bin 93cb00000000000000009198ab426c6f636b53746f726564920b0cc0940a0b0c0d02c0a3475055c000 >"$D/raw"
	cat "$D/raw" "$D/raw" >"$D/raw2"
	run --separate-stderr kvp kv-decode "$D/raw2"
	assert_success
	want=$output
	zstd -q -c "$D/raw2" >"$D/raw2.zst"
	run --separate-stderr kvp kv-decode "$D/raw2.zst"
	assert_success
	[ "$output" = "$want" ]
	run --separate-stderr kvp kv-decode --in raw <"$D/raw2.zst"
	assert_success
	[ "$output" = "$want" ]
	# a raw stream cut inside the compressed data: the first batch stays
	gzip -c "$D/raw" >"$D/r.gz"
	gzip -c "$D/raw" | head -c 20 >>"$D/r.gz"
	run --separate-stderr kvp kv-decode "$D/r.gz"
	assert_failure 1
	[ "${lines[0]}" = "${want%%$'\n'*}" ]
	assert_equal "$stderr" "kv-decode: $D/r.gz: truncated gzip input at byte $(stat -c %s "$D/r.gz")"
}

@test "empty compressed input: no output, exit 0" {
	for t in $TOOLS; do
		: | gzip -c >"$D/e.gz"
		: | zstd -q -c >"$D/e.zst"
		run_tool "$t" "$D/e.gz"
		[ "$status" -eq 0 ] && [ -z "$output" ] && [ -z "$stderr" ] || fail "$t: gz: $status $stderr"
		run_tool "$t" <"$D/e.zst"
		[ "$status" -eq 0 ] && [ -z "$output" ] && [ -z "$stderr" ] || fail "$t: zst: $status $stderr"
	done
}

@test "mm-expand: compressed --tokenizer and --special-tokens files" {
	M=$FIX/mm-expand
	rec='{"id":"x","family":"kimi_k3","tokens":[1,2,3]}'
	run --separate-stderr kvp mm-expand --tokenizer "tiktoken:$M/tiny.tiktoken" --special-tokens "$M/specials-k3.json" <<<"$rec"
	want=$output
	want_status=$status
	gzip -c "$M/tiny.tiktoken" >"$D/tok.gz"
	zstd -q -c "$M/specials-k3.json" >"$D/sp.zst"
	run --separate-stderr kvp mm-expand --tokenizer "tiktoken:$D/tok.gz" --special-tokens "$D/sp.zst" <<<"$rec"
	[ "$status" -eq "$want_status" ]
	[ "$output" = "$want" ]
	head -c 30 "$D/tok.gz" >"$D/tok-cut.gz"
	run --separate-stderr kvp mm-expand --tokenizer "tiktoken:$D/tok-cut.gz" <<<"$rec"
	assert_failure 2
	assert_equal "$stderr" "mm-expand: --tokenizer: $D/tok-cut.gz: truncated gzip input at byte 30"
}

@test "a UTF-8 byte order mark at the start of the input is skipped" {
	for t in $TOOLS; do
		in=$D/$t.in
		run_tool "$t" "$in"
		want=$output
		{ printf '\357\273\277'; cat "$in"; } >"$D/bom"
		run_tool "$t" "$D/bom"
		[ "$status" -eq 0 ] || fail "$t: exit $status: $stderr"
		[ "$output" = "$want" ] || fail "$t: output differs with a BOM"
		gzip -c "$D/bom" >"$D/bom.gz"
		run_tool "$t" <"$D/bom.gz"
		[ "$output" = "$want" ] || fail "$t: output differs with a BOM, compressed"
	done
	# only at the start: a BOM on a later line is still an error
	{ head -n 1 "$D/kv-hash.in"; printf '\357\273\277'; head -n 1 "$D/kv-hash.in"; } >"$D/bom2"
	run_tool kv-hash "$D/bom2"
	assert_failure 1
	[[ "$stderr" == "kv-hash: $D/bom2:2:1: invalid JSON"* ]]
}

@test "--progress: a line on stderr only, erased at exit; stdout identical" {
	for t in $TOOLS; do
		in=$D/$t.in
		zstd -q -c "$in" >"$in.zst"
		run_tool "$t" --no-progress "$in.zst"
		want=$output
		[ -z "$stderr" ] || fail "$t --no-progress: stderr: $stderr"
		run_tool "$t" --progress "$in.zst"
		[ "$status" -eq 0 ] || fail "$t: exit $status"
		[ "$output" = "$want" ] || fail "$t: stdout differs with --progress"
		[[ "$stderr" == $'\r'"$t: "*" records, "*"/s, "*" of "*"%), ETA "* ]] || fail "$t: progress line: $stderr"
		# erased: the last thing written is a carriage return after blanks
		[[ "$stderr" == *$'\r' ]] || fail "$t: progress line not erased"
		[[ "$stderr" != *$'\n'* ]] || fail "$t: progress wrote a newline"
		# without a known size (a pipe): no total, no ETA
		run_tool "$t" --progress < <(cat "$in")
		[ "$output" = "$want" ] || fail "$t: stdout differs with --progress on stdin"
		[[ "$stderr" == *" records, "* && "$stderr" != *ETA* ]] || fail "$t: stdin progress: $stderr"
		# -o: the file is the same too
		run_tool "$t" --progress -o "$D/o" "$in.zst"
		[ "$(cat "$D/o")" = "$want" ] || fail "$t: -o file differs with --progress"
	done
	# route-score: both inputs
	run --separate-stderr kvp route-score --no-progress --block-size 4 --events "$D/events.in" --requests "$D/requests.in"
	want=$output
	run --separate-stderr kvp route-score --progress --block-size 4 --events "$D/events.in" --requests "$D/requests.in"
	[ "$output" = "$want" ]
	[[ "$stderr" == $'\r'"route-score: "*" records, "* ]]
	# off by default without a terminal
	run_tool kv-hash "$D/kv-hash.in"
	[ -z "$stderr" ]
}

@test "--progress: a message erases the line first" {
	printf '{"tokens":[1,2,3,4]}\n{bad\n' >"$D/m"
	run_tool kv-hash --progress "$D/m"
	assert_failure 1
	[[ "$stderr" == *$'\r'"kv-hash: $D/m:2:2: invalid JSON"* ]]
}

@test "-k: the totals line, in every tool; without -k none" {
	for t in $TOOLS route-score; do
		case $t in
		route-score) g=$(head -n 1 "$D/requests.in") ;;
		*) g=$(head -n 1 "$D/$t.in") ;;
		esac
		a=
		[ "$t" = route-score ] && a="--block-size 4 --workers 2"
		printf '%s\n{bad\n\n%s\n' "$g" "$g" >"$D/mixed"
		# shellcheck disable=SC2086
		run_tool "$t" $a -k "$D/mixed"
		[ "$status" -eq 1 ] || fail "$t: exit $status"
		assert_equal "${stderr_lines[-1]}" "$t: 3 records in, 2 written, 1 skipped, 1 errors (0 not shown)"
		# shellcheck disable=SC2086
		run_tool "$t" $a -k --max-errors 0 "$D/mixed"
		assert_equal "${stderr_lines[-1]}" "$t: 3 records in, 2 written, 1 skipped, 1 errors (1 not shown)"
		# shellcheck disable=SC2086
		run_tool "$t" $a "$D/mixed"
		[ "$status" -eq 1 ] || fail "$t: exit $status"
		[[ "$stderr" != *"records in"* ]] || fail "$t: totals without -k"
		# shellcheck disable=SC2086
		run_tool "$t" $a -k "$D/$t.in"
		[ "$t" = route-score ] || [[ "${stderr_lines[-1]}" == "$t: "*" records in, "*" written, 0 skipped, 0 errors (0 not shown)" ]] ||
			fail "$t: clean -k run: $stderr"
	done
}

@test "a directory as input is a read error: exit 2" {
	run_tool kv-hash "$D"
	assert_failure 2
	assert_equal "$stderr" "kv-hash: $D: read error: Is a directory"
}
