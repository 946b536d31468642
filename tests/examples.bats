#!/usr/bin/env bats
# Every command example of README.md, examples/README.md and the man pages
# works as written.
#
# Extraction (setup_file): the Markdown files' code blocks (indented by 4
# spaces or a tab after a blank line, or fenced with ```) and, for each man
# page, the literal displays (.Bd -literal, .Dl) of its EXAMPLES section,
# taken from `mandoc -Tmarkdown`, i.e. as a reader sees them (\e is already
# a backslash). One example is one block; it is named by its file and its
# first line (runs of white space made one space), and each test below is
# named "FILE: FIRST LINE" after the example it runs.
#
# Running: a block whose first line starts with "$ " holds commands (each
# "$ " line and its continuation lines, up to a complete shell command) and
# the output they print (the other lines); otherwise the whole block is a
# script. It runs under bash -e -o pipefail, with $KVP_BIN first on PATH,
# in a copy of examples/, so its file names are the sample files. It must
# exit 0, print nothing with "error" or "invalid" on stderr (unless listed
# in SHOWS_ERROR) and print something: the shown output when there is one
# (compared without white space), else a non-empty stdout, or, when its
# last command redirects to a file, a non-empty file.
#
# Every example must have a test here or be in SKIPPED with the reason it
# cannot run in this suite; "every example is tested or skipped" and
# "SKIPPED names only examples that exist" keep the two lists honest.
load test_helper

# Examples that cannot run here: "FILE: FIRST LINE" then the reason.
SKIPPED=(
	"README.md: make demo # build, then run the main pipeline on bundled sample data"
	"make demo and make check run make deps and make all on build/: they would rebuild under another O and flags than \$KVP_BIN, and make check runs this suite itself; the demo script is run below"
	"README.md: make -j2"
	"builds into build/ and changes directory: the suite sets PATH to \$KVP_BIN and runs in a copy of examples/ instead"
	"README.md: cmd/<tool>.c one file per binary: options (argp), main loop, exit status"
	"not a command: the source layout"
	"README.md: make deb"
	"builds a package and installs it system-wide; tests/deb.bats builds it, installs it with apt-get, checks the installed tools and removes it"
	"README.md: make asan the whole suite under ASan+UBSan"
	"make targets that build and test the project itself (this suite among them); make install is tested in docs.bats"
	"README.md: kv-capture --endpoint tcp://engine:5557,replay=tcp://engine:5558 --duration 60 -o cap.jsonl.zst && kv-decode cap.jsonl.zst | kv-normalize … | route-score …"
	"needs a running engine named engine (and … stands for the options of your deployment); kv-capture is run against a real publisher in kv-capture.bats"
	"man/kv-capture.1: kv-capture --endpoint tcp://engine:5557,replay=tcp://engine:5558 \\"
	"needs a running engine named engine; kv-capture is run against a real publisher in kv-capture.bats"
	"man/kv-capture.1: kv-capture --endpoint tcp://sg:5567,replay=tcp://sg:5577,dp=0-1,worker=3 \\"
	"needs a running SGLang engine named sg; dp ranges and --from-start are tested against a real publisher in kv-capture.bats"
	"man/kv-diff.1: python -m dynamo.replay trace.jsonl --replay-mode offline \\"
	"needs NVIDIA Dynamo's replay (python -m dynamo.replay, with its AISimulate package), not installed here; kv-diff on its rows and report is tested in dynamo-replay.bats"
	"man/kv-report.1: python -m dynamo.replay trace.jsonl --replay-mode offline \\"
	"needs NVIDIA Dynamo's replay (python -m dynamo.replay, with its AISimulate package), not installed here; kv-report on its rows and report is tested in dynamo-replay.bats"
)

# Examples meant to show an error message: "FILE: FIRST LINE" (none yet).
SHOWS_ERROR=()

# extract_md NAME < MARKDOWN: the code blocks, each as "\x1eNAME\n" + lines.
extract_md() {
	awk -v name="$1" '
	function flush() {
		while (n > 0 && blk[n] ~ /^[ \t]*$/) n--
		if (n > 0) {
			printf "\036%s\n", name
			for (i = 1; i <= n; i++) print blk[i]
		}
		n = 0
	}
	/^```/ { if (fenced) { fenced = 0; flush() } else { flush(); fenced = 1 }
		prevblank = 0; next }
	fenced { blk[++n] = $0; next }
	/^(    |\t)/ && (n > 0 || prevblank) {
		line = $0
		if (!sub(/^\t/, "", line)) line = substr(line, 5)
		blk[++n] = line; prevblank = 0; next }
	/^[ \t]*$/ { if (n > 0) blk[++n] = ""; prevblank = 1; next }
	{ flush(); prevblank = 0 }
	END { flush() }'
}

# extract DOC: the examples of one README or man page.
extract() {
	case $1 in
	*.md) extract_md "$1" <"$KVP_ROOT/$1" ;;
	*)
		mandoc -Tmarkdown "$KVP_ROOT/$1" |
			awk '/^# / { ex = ($0 == "# EXAMPLES") } ex' |
			extract_md "$1"
		;;
	esac
}

setup_file() {
	local d=$BATS_FILE_TMPDIR/examples doc
	mkdir -p "$d"
	cd "$KVP_ROOT" || return 1
	for doc in README.md examples/README.md man/*.[157]; do
		extract "$doc"
	done | awk -v d="$d" '
		/^\036/ { f = sprintf("%s/%03d", d, ++n); name = substr($0, 2); first = 1; next }
		first { key = $0; gsub(/[ \t]+/, " ", key); sub(/ $/, "", key)
			print name ": " key > (d "/index"); first = 0 }
		{ print > f }'
	[ -s "$d/index" ] || {
		echo "no examples extracted" >&2
		return 1
	}
}

# keyfile KEY: the file holding the example named KEY ("FILE: FIRST LINE").
keyfile() {
	local n
	n=$(grep -nxF -- "$1" "$BATS_FILE_TMPDIR/examples/index" | cut -d: -f1)
	[ -n "$n" ] || return 1
	[ "$(printf '%s\n' "$n" | wc -l)" -eq 1 ] || return 2
	printf '%s/%03d\n' "$BATS_FILE_TMPDIR/examples" "$n"
}

in_list() {
	local key=$1 e
	shift
	for e in "$@"; do
		[ "$e" = "$key" ] && return 0
	done
	return 1
}

# complete TEXT: TEXT is a whole shell command (no open quote, pipe or
# continuation).
complete() {
	bash -n <<<"$1" 2>/dev/null && [[ ! "$1" =~ (\||\\|\&\&)[[:space:]]*$ ]]
}

# run_example: runs the example named by this test (see the top).
run_example() {
	local key=$BATS_TEST_DESCRIPTION f script="" want="" line incmd=0 last
	f=$(keyfile "$key") || fail "no example (or more than one) named: $key"
	if in_list "$key" "${SKIPPED[@]}"; then
		fail "$key is in SKIPPED and has a test"
	fi
	if [[ "$(head -n 1 "$f")" == '$ '* ]]; then
		while IFS= read -r line; do
			if ((incmd)); then
				script+=$line$'\n'
			elif [[ "$line" == '$ '* ]]; then
				script+=${line#\$ }$'\n'
				incmd=1
			else
				want+=$line
			fi
			complete "$script" && incmd=0
		done <"$f"
	else
		script=$(cat "$f")
	fi
	rm -rf "$BATS_TEST_TMPDIR/ex"
	cp -RL "$KVP_ROOT/examples" "$BATS_TEST_TMPDIR/ex"
	cd "$BATS_TEST_TMPDIR/ex" || fail "cd"
	run --separate-stderr env PATH="$KVP_BIN:$PATH" bash -e -o pipefail -c "$script"
	printf '# script:\n%s\n# status %s\n# stdout:\n%s\n# stderr:\n%s\n' \
		"$script" "$status" "$output" "$stderr"
	[ "$status" -eq 0 ] || fail "$key: exit status $status; stderr: $stderr"
	if ! in_list "$key" "${SHOWS_ERROR[@]}" &&
		grep -qiE 'error|invalid' <<<"$stderr"; then
		fail "$key: stderr: $stderr"
	fi
	if [ -n "$want" ]; then
		[ "$(tr -d '[:space:]' <<<"$output")" = "$(tr -d '[:space:]' <<<"$want")" ] ||
			fail "$key: output differs from the one shown: $output"
		return 0
	fi
	last=$(sed '/^[[:space:]]*$/d' <<<"$script" | tail -n 1)
	if [[ "$last" =~ \>[[:space:]]*([^[:space:]\&\|\>]+)[[:space:]]*$ ]]; then
		[ -s "${BASH_REMATCH[1]}" ] || fail "$key: ${BASH_REMATCH[1]} is empty"
	else
		[ -n "$output" ] || fail "$key: no output"
	fi
}

# escape KEY: KEY as written inside @test "...".
escape() {
	local s=${1//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//\$/\\\$}
	printf '%s' "${s//\`/\\\`}"
}

@test "every example is tested or skipped, and named uniquely" {
	local key bad=""
	while IFS= read -r key; do
		[ "$(grep -cxF -- "$key" "$BATS_FILE_TMPDIR/examples/index")" -eq 1 ] ||
			bad+="two examples named: $key"$'\n'
		in_list "$key" "${SKIPPED[@]}" && continue
		grep -qxF -- "@test \"$(escape "$key")\" { run_example; }" "$BATS_TEST_FILENAME" ||
			bad+="untested: add  @test \"$(escape "$key")\" { run_example; }"$'\n'
	done <"$BATS_FILE_TMPDIR/examples/index"
	[ -z "$bad" ] || fail "$bad"
}

@test "SKIPPED names only examples that exist, each with a reason" {
	local i
	[ $((${#SKIPPED[@]} % 2)) -eq 0 ] || fail "SKIPPED: a name without a reason"
	for ((i = 0; i < ${#SKIPPED[@]}; i += 2)); do
		keyfile "${SKIPPED[i]}" >/dev/null || fail "SKIPPED names no example: ${SKIPPED[i]}"
		[ -n "${SKIPPED[i + 1]}" ] || fail "no reason for ${SKIPPED[i]}"
	done
	for i in "${SHOWS_ERROR[@]}"; do
		keyfile "$i" >/dev/null || fail "SHOWS_ERROR names no example: $i"
	done
}

@test "every man page with an EXAMPLES section has examples extracted" {
	local m
	for m in "$KVP_ROOT"/man/*.[157]; do
		grep -q '^\.Sh EXAMPLES' "$m" || continue
		grep -q "^man/${m##*/}: " "$BATS_FILE_TMPDIR/examples/index" ||
			fail "no example extracted from man/${m##*/}"
	done
}

@test "make demo's script, tests/demo.sh, runs on the bundled data" {
	run --separate-stderr env O="$(dirname "$KVP_BIN")" sh "$KVP_ROOT/tests/demo.sh"
	assert_success
	[ -n "$output" ]
	! grep -qiE 'error|invalid' <<<"$stderr" || fail "stderr: $stderr"
}

@test "examples/make-samples.py reproduces the generated samples" {
	/usr/bin/python3 "$KVP_ROOT/examples/make-samples.py" "$BATS_TEST_TMPDIR"
	for f in w1.bin w2.bin mm-requests.ndjson mm-capture.jsonl; do
		cmp "$BATS_TEST_TMPDIR/$f" "$KVP_ROOT/examples/$f" || fail "examples/$f differs"
	done
}

# ---- one test per example ---------------------------------------------------
@test "README.md: kv-decode capture.jsonl \\" { run_example; }
@test "README.md: kv-decode mm-capture.jsonl | kv-normalize --block-size 16 > mm-events.ndjson" { run_example; }
@test "README.md: echo '{\"tokens\":[0,1,2,3,4,5,6,7]}' | kv-hash --block-size 4" { run_example; }
@test "README.md: route-score --trace mooncake --workers 4 --approx --ttl 120 --prefill-tokens-per-s 20000 \\" { run_example; }
@test "README.md: kv-decode capture.jsonl | kv-normalize --block-size 4 |" { run_example; }
@test "man/kv-decode.1: \$ kv-decode capture.jsonl |" { run_example; }
@test "man/kv-decode.1: \$ kv-decode --strict --worker-id 1 --worker-id 2 w1.bin w2.bin |" { run_example; }
@test "man/kv-decode.1: \$ kv-decode capture.jsonl | grep -E '\"rec\":\"(gap|stale)\"'" { run_example; }
@test "man/kv-hash.1: \$ echo '{\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11]}' |" { run_example; }
@test "man/kv-hash.1: \$ kv-decode capture.jsonl |" { run_example; }
@test "man/kv-hash.1: \$ kv-hash --block-size 4 --lora my-lora requests.ndjson" { run_example; }
@test "man/kv-hash.1: \$ echo '{\"tokens\":[1,2,3,4,5,6,7,8]}' |" { run_example; }
@test "man/kv-hash.1: \$ kv-decode capture.jsonl | kv-hash --detect --format text" { run_example; }
@test "man/kv-normalize.1: \$ kv-decode capture.jsonl |" { run_example; }
@test "man/kv-normalize.1: \$ kv-decode mm-capture.jsonl | kv-normalize --block-size 16 |" { run_example; }
@test "man/kv-normalize.1: \$ kv-decode mm-capture.jsonl |" { run_example; }
@test "man/kvpipe.7: kv-decode capture.jsonl | kv-normalize --block-size 4 |" { run_example; }
@test "man/mm-expand.1: \$ jq -nc '{id: \"r1\", model: \"moonshotai/Kimi-K3\"," { run_example; }
@test "man/mm-expand.1: \$ mm-expand mm-requests.ndjson | jq -r 'select(.status==\"fallback\") |" { run_example; }
@test "man/route-score.1: \$ kv-decode capture.jsonl | kv-normalize --block-size 4 > events.ndjson" { run_example; }
@test "man/route-score.1: \$ route-score --trace mooncake --workers 4 --approx trace.jsonl |" { run_example; }
@test "man/route-score.1: \$ (echo '{\"timestamp\":0,\"input_length\":64,\"hash_ids\":[1,2,3,4],\"cached_tokens\":0}'" { run_example; }
@test "README.md: SIM='--prefill-tokens-per-s 20000 --decode-tokens-per-s 2000' # simulated time, as above" { run_example; }
@test "README.md: SIM='--prefill-tokens-per-s 20000 --decode-tokens-per-s 2000' # finished requests, TTFT" { run_example; }
@test "README.md: route-score --trace mooncake --workers 4 --approx --capacity-blocks 256 \\" { run_example; }
@test "README.md: route-score --trace mooncake --workers 4 --format dynamo-request-trace trace.jsonl > replay-traces.ndjson" { run_example; }

@test "man/kv-diff.1: route-score --trace mooncake --workers 4 --approx trace.jsonl > base.ndjson" { run_example; }
@test "man/kv-diff.1: route-score --trace mooncake --workers 4 --approx --no-load trace.jsonl > new.ndjson" { run_example; }
@test "man/kv-report.1: route-score --trace mooncake --workers 4 --approx trace.jsonl > dynamo.ndjson" { run_example; }
@test "man/kv-report.1: route-score --trace mooncake --workers 4 --approx trace.jsonl |" { run_example; }
@test "man/kv-report.1: kv-decode capture.jsonl > decoded.ndjson" { run_example; }
@test "man/kvpipe.7: route-score --trace mooncake --workers 4 --approx trace.jsonl > base.ndjson" { run_example; }
@test "man/kvpipe.7: route-score --trace mooncake --workers 4 --approx trace.jsonl > dynamo.ndjson" { run_example; }
@test "man/route-score.1: \$ route-score --block-size 4 session.ndjson |" { run_example; }
@test "man/route-score.1: \$ for p in dynamo round-robin sglang-cache-aware; do" { run_example; }
@test "man/route-score.1: \$ route-score --trace mooncake --workers 4 --approx --mrc trace.jsonl |" { run_example; }
@test "man/kv-hash.1: \$ jq -c '. + {ts_ms: (100 * input_line_number)}' requests.ndjson |" { run_example; }
