#!/usr/bin/env bats
# make deb: the package builds, lintian finds no error in it, apt installs
# it, the installed tools work (--version, man -w, the completions, README's
# worked pipeline printing what the build's tools print), and removing it
# leaves none of the files dpkg listed.
#
# Installing needs root, as CI runs: as another user the install test fails
# with a message, it does not skip. The system is left as it was found: the
# tests refuse to run where kvpipe is installed already or where installing
# it would bring in another package, and teardown_file purges the package
# if a test stopped before removing it.
load test_helper

# The build folder of $KVP_BIN: make deb builds its own tools in $O/deb/
# and writes the package beside them.
O=$(dirname "$KVP_BIN")
MARK=$BATS_FILE_TMPDIR/installed

# Debian's container images exclude /usr/share/man and most of
# /usr/share/doc from every package they install (path-exclude in
# /etc/dpkg/dpkg.cfg.d/); this package's paths are included again so that
# its man pages are there to check whatever the image. Another apt or dpkg
# run holding the lock is waited for.
APT_OPTS=(-o DPkg::Lock::Timeout=300 -o 'Dpkg::Options::=--path-include=/usr/share/man/*'
	-o 'Dpkg::Options::=--path-include=/usr/share/doc/kvpipe/*')

setup_file() {
	local version arch
	# the tests are steps of one install, in order, even under bats --jobs
	export BATS_NO_PARALLELIZE_WITHIN_FILE=true
	version=$(sed -n 's/^#define KVP_VERSION "\(.*\)"/\1/p' "$KVP_ROOT/lib/kvpipe.h")
	arch=$(dpkg --print-architecture)
	export VERSION=$version
	export DEB="$O/kvpipe_$version-1_$arch.deb"
}

teardown_file() {
	if [ -e "$MARK" ] && dpkg-query -W -f='${Status}' kvpipe 2>/dev/null | grep -q 'ok installed'; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${APT_OPTS[@]}" kvpipe >/dev/null 2>&1
	fi
}

# need_root: fails, naming the reason, unless this runs as root.
need_root() {
	[ "$(id -u)" = 0 ] ||
		fail "installing the package needs root (CI runs make check as root): run this suite as root, or sudo bats tests/deb.bats"
}

# need_deb: fails unless the first test built the package.
need_deb() {
	[ -f "$DEB" ] || fail "no $DEB: the make deb test failed"
}

# worked_pipeline: the first code block under README's "## A worked pipeline".
worked_pipeline() {
	awk '/^## / { on = ($0 == "## A worked pipeline"); next }
		on && /^    / { sub(/^    /, ""); print; blk = 1; next }
		on && blk && !/^[[:space:]]*$/ { exit }' "$KVP_ROOT/README.md"
}

@test "make deb builds the package; Depends names the package of every library a tool links" {
	run make -s -C "$KVP_ROOT" -j"$(nproc)" O="$O" deb
	assert_success
	[ -f "$DEB" ] || fail "make deb wrote no $DEB"
	run -0 dpkg-deb -f "$DEB" Package Version Architecture
	assert_line "Package: kvpipe"
	assert_line "Version: $VERSION-1"
	run -0 dpkg-deb -c "$DEB"
	local t p b lib path pkg re
	local -A owner=()
	for t in $(cd "$KVP_ROOT/cmd" && ls *.c | sed 's/\.c$//'); do
		assert_line --regexp "^-rwxr-xr-x root/root .* \./usr/bin/$t\$"
		assert_line --regexp " \./usr/share/man/man1/$t\.1\.gz\$"
		assert_line --regexp "^-rw-r--r-- root/root .* \./usr/share/bash-completion/completions/$t\$"
	done
	for p in man5/kvpipe-records.5.gz man7/kvpipe.7.gz; do
		assert_line --regexp " \./usr/share/man/$p\$"
	done
	assert_line --regexp ' \./usr/share/doc/kvpipe/copyright$'
	assert_line --regexp ' \./usr/share/doc/kvpipe/changelog\.Debian\.gz$'
	# Depends is dpkg-shlibdeps' answer: each library a packaged binary
	# needs comes from a package Depends names.
	local depends
	depends=$(dpkg-deb -f "$DEB" Depends)
	dpkg-deb -x "$DEB" "$BATS_TEST_TMPDIR/x"
	for b in "$BATS_TEST_TMPDIR"/x/usr/bin/*; do
		for lib in $(objdump -p "$b" | awk '$1 == "NEEDED" { print $2 }'); do
			path=$(ldd "$b" | awk -v l="$lib" '$1 == l { print $3 }')
			if [ -z "${owner[$path]:-}" ]; then
				pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null ||
					dpkg -S "/usr$path" 2>/dev/null) || pkg=
				owner[$path]=${pkg%%:*}
			fi
			pkg=${owner[$path]}
			[ -n "$pkg" ] || fail "${b##*/}: $lib ($path) is in no package"
			re=", $pkg[ ,]"
			[[ ", $depends," =~ $re ]] || fail "${b##*/}: $lib comes from $pkg, not in Depends: $depends"
		done
	done
	# a build linked against json-c and libzmq at least (not static)
	[[ "$depends" == *libjson-c* && "$depends" == *libzmq* ]] || fail "Depends: $depends"
	# mm-expand dlopens FFmpeg for video files: Recommends names the
	# package of each library it opens, as installed here (dpkg -S)
	rec=$(dpkg-deb -f "$DEB" Recommends)
	for l in avformat avcodec avutil; do
		pkg=$(dpkg-query -S "*/lib$l.so.[0-9]*" | cut -d: -f1 | sort -u | head -1)
		[[ ", $rec," == *", $pkg,"* ]] || fail "Recommends lacks $pkg: $rec"
	done
}

@test "lintian finds no error in the package" {
	need_deb
	run lintian --fail-on error "$DEB"
	printf '%s\n' "$output"
	assert_success
	refute_line --regexp '^E: '
}

@test "apt-get installs it; every tool runs from /usr/bin, its man pages and completions are found" {
	need_root
	need_deb
	if dpkg-query -W -f='${Status}' kvpipe 2>/dev/null | grep -q 'ok installed'; then
		fail "kvpipe is installed on this system already and this test would remove it: apt-get purge kvpipe first"
	fi
	# only kvpipe itself: make deps installed every library it depends on
	run -0 apt-get install -s "${APT_OPTS[@]}" "$(realpath "$DEB")"
	[ "$(grep -c '^Inst ' <<<"$output")" -eq 1 ] && assert_line --regexp '^Inst kvpipe ' ||
		fail "installing would change more than kvpipe: $(grep '^Inst ' <<<"$output")"
	touch "$MARK"
	cd "$(dirname "$DEB")"
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_OPTS[@]}" "./$(basename "$DEB")"
	assert_success
	dpkg-query -W -f='${Status}' kvpipe | grep -q 'ok installed' || fail "not installed: $output"
	dpkg -L kvpipe >"$BATS_FILE_TMPDIR/files"
	local t
	for t in $(cd "$KVP_ROOT/cmd" && ls *.c | sed 's/\.c$//'); do
		run -0 env PATH=/usr/bin:/bin "$t" --version
		assert_line --index 0 "$t (kvpipe) $VERSION"
		[ "$(dpkg -S "/usr/bin/$t")" = "kvpipe: /usr/bin/$t" ] || fail "/usr/bin/$t is not kvpipe's"
		run -0 bash -c ". /usr/share/bash-completion/completions/$t && complete -p $t"
		assert_output --partial " $t"
	done
	run -0 man -w kv-decode
	assert_output /usr/share/man/man1/kv-decode.1.gz
	run -0 man -w 5 kvpipe-records
	assert_output /usr/share/man/man5/kvpipe-records.5.gz
	run -0 man -w 7 kvpipe
	assert_output /usr/share/man/man7/kvpipe.7.gz
}

@test "README's worked pipeline prints the same with the installed tools as with the build's" {
	need_root
	[ -s "$BATS_FILE_TMPDIR/files" ] || fail "the package is not installed: the install test failed"
	local script
	script=$(worked_pipeline)
	[[ "$script" == *"kv-decode capture.jsonl"*"route-score"* ]] || fail "README's worked pipeline not found: $script"
	cp -RL "$KVP_ROOT/examples" "$BATS_TEST_TMPDIR/ex"
	cd "$BATS_TEST_TMPDIR/ex"
	[ "$(PATH=/usr/bin:/bin command -v route-score)" = /usr/bin/route-score ] || fail "no installed route-score"
	PATH=/usr/bin:/bin bash -e -o pipefail -c "$script" >installed.txt
	PATH="$KVP_BIN:/usr/bin:/bin" bash -e -o pipefail -c "$script" >built.txt
	[ "$(wc -l <built.txt)" -gt 5 ] || fail "the pipeline printed too little: $(cat built.txt)"
	diff built.txt installed.txt
}

@test "apt-get purge removes every file dpkg -L listed" {
	need_root
	[ -s "$BATS_FILE_TMPDIR/files" ] || fail "the package is not installed: the install test failed"
	local f n=0 left=""
	while read -r f; do
		[ -d "$f" ] || n=$((n + 1))
	done <"$BATS_FILE_TMPDIR/files"
	[ "$n" -ge 28 ] || fail "dpkg -L listed $n files"
	run env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${APT_OPTS[@]}" kvpipe
	assert_success
	run dpkg-query -W -f='${Status}' kvpipe
	[[ "$output" != *"ok installed"* ]] || fail "still installed: $output"
	while read -r f; do
		[ "$f" != /. ] || continue
		# directories other packages share stay; kvpipe's own go
		if [ -d "$f" ]; then
			dpkg -S "$f" >/dev/null 2>&1 || left+=" $f"
		elif [ -e "$f" ] || [ -L "$f" ]; then
			left+=" $f"
		fi
	done <"$BATS_FILE_TMPDIR/files"
	[ -z "$left" ] || fail "left behind:$left"
	[ ! -e /usr/share/doc/kvpipe ] || fail "/usr/share/doc/kvpipe left behind"
	rm -f "$MARK"
}
