#!/usr/bin/env bats
# The shared options (lib/cli.c) behave the same in every tool:
# -k/--keep-going, --max-errors, -o/--output, --unbuffered, --max-line-bytes,
# --help. Each tool gets one good record of its own input kind.
load test_helper

setup() {
	B=$KVP_BIN
	D=$BATS_TEST_TMPDIR
	F=$FIX
}

# good_input TOOL — one valid input line for TOOL; args_for TOOL — its
# required options.
good_input() {
	case $1 in
	kv-decode) head -1 "$F/demo/capture.jsonl" ;;
	kv-hash) echo '{"tokens":[1,2,3,4,5]}' ;;
	kv-normalize) "$B/kv-decode" "$F/demo/capture.jsonl" | head -1 ;;
	route-score) echo '{"request_id":"a","tokens":[1,2,3,4,5]}' ;;
	mm-expand) head -1 "$F/mm-expand/demo.ndjson" ;;
	esac
}
args_for() {
	case $1 in
	kv-hash | kv-normalize) echo --block-size 4 ;;
	route-score) echo --block-size 4 --workers 2 ;;
	esac
}
TOOLS="kv-decode kv-hash kv-normalize route-score mm-expand"

# bats test_tags=valgrind
@test "-k --max-errors 1: every good record written, one message printed, exit 1" {
	for t in $TOOLS; do
		g=$(good_input "$t")
		printf '%s\n{bad\n{bad\n%s\n' "$g" "$g" >"$D/mixed"
		printf '%s\n%s\n' "$g" "$g" >"$D/good"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -k --max-errors 1 "$D/mixed"
		[ "$status" -eq 1 ] || fail "$t: exit $status, want 1"
		# kv-decode also reports bad lines in-stream as error records
		printf '%s\n' "$output" | grep -v '"rec":"error"' >"$D/o1" || true
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") "$D/good" >"$D/o2" 2>/dev/null
		cmp -s "$D/o1" "$D/o2" || fail "$t: -k output differs from the good records' output"
		[[ "$stderr" == *"$t: $D/mixed:2:2: invalid JSON"* ]] || fail "$t: no FILE:LINE:COL message: $stderr"
		[[ "$stderr" != *"mixed:3"* ]] || fail "$t: --max-errors 1 printed line 3"
		[[ "$stderr" == *"too many errors"* ]] || fail "$t: no suppression notice"
	done
}

@test "without -k a tool stops at the first bad record, after writing the good ones" {
	for t in $TOOLS; do
		g=$(good_input "$t")
		printf '%s\n{bad\n%s\n' "$g" "$g" >"$D/mixed"
		printf '%s\n' "$g" >"$D/one"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") "$D/mixed"
		[ "$status" -eq 1 ] || fail "$t: exit $status, want 1"
		printf '%s\n' "$output" | grep -v '"rec":"error"' >"$D/o1" || true
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") "$D/one" >"$D/o2" 2>/dev/null
		cmp -s "$D/o1" "$D/o2" || fail "$t: output before the bad line differs"
	done
}

@test "-o/--output and --unbuffered write the same records to the file; stdout stays empty" {
	for t in $TOOLS; do
		good_input "$t" >"$D/in"
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") "$D/in" >"$D/want" 2>/dev/null
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") --unbuffered --output "$D/out" "$D/in"
		[ "$status" -eq 0 ] || fail "$t: exit $status"
		[ -z "$output" ] || fail "$t: wrote to stdout with --output"
		cmp -s "$D/want" "$D/out" || fail "$t: --output file differs"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -o /nonexistent/dir/out "$D/in"
		[ "$status" -eq 2 ] || fail "$t: unwritable -o gave $status, want 2"
	done
}

@test "--max-line-bytes: a longer line is bad data with a message naming the line" {
	for t in $TOOLS; do
		good_input "$t" >"$D/in"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") --max-line-bytes 8 "$D/in"
		[ "$status" -eq 1 ] || fail "$t: exit $status, want 1"
		[[ "$stderr" == *"$t: $D/in:1"*"too long"* ]] || fail "$t: $stderr"
	done
}

@test "--help goes to stdout with exit 0 and lists the shared options" {
	for t in $TOOLS; do
		run --separate-stderr "$KVP_BIN/$t" --help
		[ "$status" -eq 0 ] || fail "$t --help: exit $status"
		[ -z "$stderr" ] || fail "$t --help wrote to stderr"
		for o in --keep-going --output --unbuffered --max-line-bytes --max-errors --hash-strings; do
			[[ "$output" == *"$o"* ]] || fail "$t --help lacks $o"
		done
	done
}
