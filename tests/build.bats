#!/usr/bin/env bats
# The Makefile's build variables: combinations that must work or be refused.
load test_helper

# mk ARGS... — make in the source tree with none of the calling make's flags
# (make bats and make asan run this suite with their own O=, SAN=, -j).
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u STATIC -u SAN \
		make --no-print-directory -C "$KVP_ROOT" "$@"
}

@test "SAN= with the default STATIC links shared: an ASan binary runs --version" {
	local o="$BATS_TEST_TMPDIR/san"
	run -0 mk -j2 O="$o" LTO= CFLAGS=-O0 SAN=-fsanitize=address "$o/bin/kv-diff"
	run -0 "$o/bin/kv-diff" --version
	assert_line --index 0 --regexp '^kv-diff \(kvpipe\) '
	run -0 readelf -d "$o/bin/kv-diff"
	assert_output --partial 'libasan'
}

@test "SAN= with an explicit non-empty STATIC is refused with a message" {
	run -2 mk -n O="$BATS_TEST_TMPDIR/x" SAN=-fsanitize=address STATIC=-static-pie all
	assert_output --partial "SAN='-fsanitize=address' needs a shared link: drop STATIC='-static-pie' or set STATIC="
	run -0 mk -n O="$BATS_TEST_TMPDIR/x" SAN=-fsanitize=address STATIC= "$BATS_TEST_TMPDIR/x/bin/kv-diff"
	refute_output --partial 'static-pie'
}
