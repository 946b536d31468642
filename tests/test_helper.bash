# Shared setup for every bats suite.
#   KVP_BIN          directory with the built tools (make sets it)
#   KVP_EXEC_PREFIX  prefix for every tool run, e.g. "valgrind -q ..."
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

KVP_ROOT="$(cd "$(dirname "${BATS_TEST_FILENAME}")/.." && pwd)"
: "${KVP_BIN:=$KVP_ROOT/build/bin}"
FIX="$KVP_ROOT/tests/fixtures"

# kvp TOOL ARGS... — runs a tool under the exec prefix.
kvp() {
	local tool=$1
	shift
	# shellcheck disable=SC2086
	$KVP_EXEC_PREFIX "$KVP_BIN/$tool" "$@"
}

# hex2bin HEX — writes bytes for a hex string to stdout.
hex2bin() {
	printf '%s' "$1" | xxd -r -p
}

# b64 HEX — base64 of the bytes of a hex string, one line.
b64() {
	printf '%s' "$1" | xxd -r -p | base64 -w0
}

# long_line FILE HEAD TAIL MIB — FILE: one line HEAD 1,1,...,1 TAIL of
# about MIB MiB (issue 28's lines of small integers).
long_line() {
	/usr/bin/python3 -c 'import sys; n = int(float(sys.argv[4]) * 1048576) // 2
open(sys.argv[1], "wb").write(sys.argv[2].encode() + b"1," * (n - 1) + b"1" + sys.argv[3].encode() + b"\n")' "$@"
}

# rss_within FACTOR FILE RSSFILE TOOL — fails unless the peak RSS in
# RSSFILE (KiB, /usr/bin/time -f %M) is at most FACTOR times the size of
# FILE; a sanitizer build (TOOL linked with libasan) gets 3 times as much.
rss_within() {
	local f=$1 kb
	kb=$(tail -1 "$3")
	if readelf -d "$KVP_BIN/$4" 2>/dev/null | grep -q libasan; then f=$((f * 3)); fi
	[ $((kb * 1024)) -le $((f * $(wc -c <"$2"))) ] ||
		fail "$4: peak RSS $kb KiB, over ${f}x the $(wc -c <"$2")-byte line"
}
