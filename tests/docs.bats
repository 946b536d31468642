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
		# the shared libraries the binary really loads (ldd, independent
		# of the tool) are exactly the ones --version names
		v=${lines[1]}
		for pair in json-c:libjson-c msgpack-c:libmsgpackc zlib:libz.so \
			zstd:libzstd PCRE2:libpcre2-8 libexif:libexif; do
			name=${pair%%:*} so=${pair#*:}
			if ldd "$KVP_BIN/$t" | grep -q "$so"; then
				[[ "$v" == *"$name"* ]] || fail "$t loads $so but --version omits $name"
			else
				[[ "$v" != *"$name"* ]] || fail "$t names $name but does not load $so"
			fi
		done
	done
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
