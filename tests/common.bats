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

# no_counts — route-score's summary without its error counts (the only
# difference the bad lines may make to the output)
no_counts() { sed 's/"errors":[0-9]*,"errors_not_shown":[0-9]*,//'; }

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
		printf '%s\n' "$output" | grep -v '"rec":"error"' | no_counts >"$D/o1" || true
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") "$D/good" 2>/dev/null | no_counts >"$D/o2"
		cmp -s "$D/o1" "$D/o2" || fail "$t: -k output differs from the good records' output"
		# route-score counts the 2 errors, 1 past --max-errors 1
		[ "$t" != route-score ] || [[ "$output" == *'"errors":2,"errors_not_shown":1,'* ]] || fail "$t: error counts not in the summary"
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
		printf '%s\n' "$output" | grep -v '"rec":"error"' | no_counts >"$D/o1" || true
		# shellcheck disable=SC2046
		kvp "$t" $(args_for "$t") "$D/one" 2>/dev/null | no_counts >"$D/o2"
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
		help=$output
		run --separate-stderr "$KVP_BIN/$t" -h
		[ "$status" -eq 0 ] || fail "$t -h: exit $status"
		[ "$output" = "$help" ] || fail "$t -h differs from --help"
	done
}

@test "-o naming an input file (same inode) is refused before anything is written: exit 2" {
	for t in $TOOLS; do
		good_input "$t" >"$D/in"
		cp "$D/in" "$D/before"
		ln -f "$D/in" "$D/hardlink"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -o "$D/in" "$D/in"
		[ "$status" -eq 2 ] || fail "$t: exit $status, want 2"
		[[ "$stderr" == *"$t: $D/in: the output is also an input ($D/in)"* ]] || fail "$t: $stderr"
		cmp -s "$D/in" "$D/before" || fail "$t: the input was changed"
		# another name for the same file, and the file as stdin
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -o "$D/hardlink" "$D/in"
		[ "$status" -eq 2 ] || fail "$t: hard link: exit $status, want 2"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -o "$D/in" <"$D/in"
		[ "$status" -eq 2 ] || fail "$t: stdin: exit $status, want 2"
		[[ "$stderr" == *"also an input (stdin)"* ]] || fail "$t: $stderr"
		cmp -s "$D/in" "$D/before" || fail "$t: the input was changed"
		# a different file is fine
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") -o "$D/out" "$D/in"
		[ "$status" -eq 0 ] || fail "$t: -o other file: exit $status: $stderr"
	done
}

@test "--help, --version and records to a full disk (/dev/full) exit 2 with a message" {
	for t in $TOOLS; do
		run --separate-stderr kvp "$t" --help
		[ "$status" -eq 0 ]
		run --separate-stderr sh -c "\"\$KVP_BIN/$t\" --help >/dev/full"
		[ "$status" -eq 2 ] || fail "$t --help: exit $status, want 2"
		[[ "$stderr" == *"$t: write error on stdout"* ]] || fail "$t: $stderr"
		run --separate-stderr sh -c "\"\$KVP_BIN/$t\" --version >/dev/full"
		[ "$status" -eq 2 ] || fail "$t --version: exit $status, want 2"
		good_input "$t" >"$D/in"
		run --separate-stderr sh -c "\"\$KVP_BIN/$t\" $(args_for "$t") \"$D/in\" >/dev/full"
		[ "$status" -eq 2 ] || fail "$t records: exit $status, want 2"
		[ "$(grep -c 'write error' <<<"$stderr")" -eq 1 ] || fail "$t: want one message: $stderr"
	done
}

# ontty TOOL ARGS... — runs the tool with a pseudo-terminal as stdin, sends
# Ctrl-D (end of input at the start of a line) and passes on its stderr.
ontty() {
	python3 -c '
import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE)
os.close(s)
import time
for _ in range(5):  # readers that look ahead may read past one EOF
    os.write(m, b"\x04")
    time.sleep(0.1)
_, err = p.communicate(timeout=20)
sys.stderr.write(err.decode())
sys.exit(p.returncode)' "$@"
}

@test "stdin on a terminal: the tool says on stderr what it expects" {
	for t in $TOOLS; do
		# shellcheck disable=SC2046
		run --separate-stderr ontty "$KVP_BIN/$t" $(args_for "$t")
		[[ "$stderr" == *"$t: reading records from the terminal"* ]] || fail "$t: $stderr"
		# not on a pipe
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") </dev/null
		[[ "$stderr" != *"from the terminal"* ]] || fail "$t: hint on a non-terminal"
	done
}

@test "one request shape: tokens or token_ids feed kv-hash, mm-expand and route-score alike (tokens wins)" {
	# the same 8 token ids under either key give the same block hashes in
	# all three tools (kv-hash and mm-expand at --chain-seed 1337); a
	# record with both keys uses "tokens". Hashes are compared as text
	# (jq would round them to doubles).
	i=0
	for k in tokens token_ids; do
		i=$((i + 1))
		printf '{"request_id":"r%s","id":"a","%s":[1,2,3,4,5,6,7,8]}\n' "$i" "$k"
	done >"$D/rq.ndjson"
	printf '{"request_id":"r3","id":"a","tokens":[1,2,3,4,5,6,7,8],"token_ids":[9,9,9,9]}\n' >>"$D/rq.ndjson"
	run --separate-stderr "$B/kv-hash" --block-size 4 "$D/rq.ndjson"
	assert_success
	kh=$(grep -oE '"block_hashes":\[[0-9,]*\]' <<<"$output" | sort -u)
	[ "$(wc -l <<<"$kh")" -eq 1 ]
	run --separate-stderr "$B/mm-expand" --block-size 4 --chain-seed 1337 "$D/rq.ndjson"
	assert_success
	[ "$stderr" = "" ]
	[ "$(grep -oE '"block_hashes":\[[0-9,]*\]' <<<"$output" | sort -u)" = "$kh" ]
	[ "$(grep -c '"block_hashes"' <<<"$output")" -eq 3 ]
	run --separate-stderr "$B/route-score" --block-size 4 --workers 1 --approx --ttl 0 "$D/rq.ndjson"
	assert_success
	[ "$stderr" = "" ]
	# the second and third requests hit the first's two cached blocks
	[ "$(jq -c 'select(.rec=="decision") | [.hashed_blocks, .overlap_blocks]' <<<"$output" | tr -d '\n')" = '[2,0][2,2][2,2]' ]
}

@test "issue 15: without -k, a message hidden by --max-errors is still counted at exit" {
	for t in $TOOLS; do
		g=$(good_input "$t")
		printf '%s\n{bad\n%s\n' "$g" "$g" >"$D/mixed"
		# shellcheck disable=SC2046
		run --separate-stderr kvp "$t" $(args_for "$t") --max-errors 0 "$D/mixed"
		[ "$status" -eq 1 ] || fail "$t: exit $status, want 1"
		[[ "$stderr" != *"invalid JSON"* ]] || fail "$t: --max-errors 0 printed the error"
		assert_equal "${stderr_lines[-1]}" "$t: 1 errors (1 not shown)"
	done
}
