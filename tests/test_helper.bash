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
