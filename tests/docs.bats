#!/usr/bin/env bats
# Drift check: every long option in a tool's --help appears in its man page
# and its bash completion; every tool has both.
load test_helper

tools() {
	for c in "$KVP_ROOT"/cmd/*.c; do
		[ -f "$c" ] && basename "$c" .c
	done
	return 0
}

@test "every tool has a man page and a bash completion" {
	for t in $(tools); do
		[ -f "$KVP_ROOT/man/$t.1" ] || fail "man/$t.1 missing"
		[ -f "$KVP_ROOT/completions/bash/$t" ] || fail "completions/bash/$t missing"
	done
}

@test "every long option in --help is documented and completed" {
	for t in $(tools); do
		opts=$("$KVP_BIN/$t" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		[ -n "$opts" ] || fail "$t --help lists no options"
		for o in $opts; do
			grep -qF -- "${o#--}" "$KVP_ROOT/man/$t.1" ||
				fail "$t: $o not in man/$t.1"
			grep -qF -- "$o" "$KVP_ROOT/completions/bash/$t" ||
				fail "$t: $o not in completions/bash/$t"
		done
	done
}

@test "--version names the tool and the libraries; exits 0" {
	for t in $(tools); do
		run --separate-stderr "$KVP_BIN/$t" --version
		assert_success
		assert_line --index 0 --regexp "^$t \\(kvpipe\\) [0-9]+\\.[0-9]+\\.[0-9]+$"
		assert_line --index 1 --regexp "^libraries: json-c [0-9.]+, zlib [0-9.]+, zstd [0-9.]+"
		# the libraries the binary really uses (independent of the tool:
		# the shared ones ldd lists, or in a static binary the library's
		# own functions nm finds) are exactly the ones --version names
		v=${lines[1]}
		for lib in "json-c libjson-c json_" "msgpack-c libmsgpackc msgpack_" \
			"zlib libz.so inflate" "zstd libzstd ZSTD_" \
			"PCRE2 libpcre2-8 pcre2_" "libexif libexif exif_"; do
			set -- $lib
			if uses_lib "$KVP_BIN/$t" "$2" "$3"; then
				[[ "$v" == *"$1"* ]] || fail "$t uses $1 but --version omits it"
			else
				[[ "$v" != *"$1"* ]] || fail "$t names $1 but does not use it"
			fi
		done
	done
}

# uses_lib BIN SONAME PREFIX: BIN loads the shared library SONAME, or
# (statically linked: ldd lists none) defines functions named PREFIX*.
uses_lib() {
	local so

	so=$(ldd "$1" 2>&1) || true
	if [[ "$so" == *"=>"* ]]; then
		grep -q "$2" <<<"$so"
	else
		nm --defined-only "$1" | grep -qE " [Tt] $3"
	fi
}

@test "an unknown option is a usage error: exit 2, message on stderr" {
	for t in $(tools); do
		run --separate-stderr "$KVP_BIN/$t" --no-such-option
		assert_failure 2
		[ -z "$output" ] || fail "$t wrote to stdout on a usage error"
		[[ "$stderr" == "$t: "* ]] || fail "$t: stderr does not start with '$t: '"
	done
}

@test "make install puts binaries, man pages and completions under DESTDIR" {
	o=$(dirname "$KVP_BIN")
	run make -s -C "$KVP_ROOT" O="$o" install DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr
	assert_success
	for t in $(tools); do
		[ -x "$BATS_TEST_TMPDIR/root/usr/bin/$t" ] || fail "bin/$t"
		[ -f "$BATS_TEST_TMPDIR/root/usr/share/man/man1/$t.1" ] || fail "man1/$t.1"
		[ -f "$BATS_TEST_TMPDIR/root/usr/share/bash-completion/completions/$t" ] || fail "completion $t"
	done
	[ -f "$BATS_TEST_TMPDIR/root/usr/share/man/man5/kvpipe-records.5" ]
	[ -f "$BATS_TEST_TMPDIR/root/usr/share/man/man7/kvpipe.7" ]
}

@test "make uninstall removes every file make install put there" {
	o=$(dirname "$KVP_BIN")
	r="$BATS_TEST_TMPDIR/root"
	run make -s -C "$KVP_ROOT" O="$o" install DESTDIR="$r" PREFIX=/usr
	assert_success
	[ "$(find "$r" -type f | wc -l)" -gt 10 ] || fail "install put too few files"
	run make -s -C "$KVP_ROOT" O="$o" uninstall DESTDIR="$r" PREFIX=/usr
	assert_success
	run find "$r" -type f
	assert_output ""
}
