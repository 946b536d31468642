#!/usr/bin/env bats
# make deps installs everything make check runs.
#
# Programs: a curated list of external commands, each checked against
# reality: it counts when the files make check runs invoke it (the Makefile,
# tests/*.bats, tests/*.sh, tests/*.bash, .ci/run; comment lines and the
# DEB_PKGS list itself left out; this file too, as it names every candidate).
# Python modules: the non-standard ones the test scripts import. Each is
# mapped to its Debian package with dpkg -S and must come with
# `apt-get install $(DEB_PKGS)`: a package named in DEB_PKGS or pulled in by
# one (apt's Depends / Pre-Depends closure, which holds build-essential's
# toolchain), or an Essential: yes package. The last test runs the same check
# on a copy of the Makefile without mandoc in DEB_PKGS and expects it to fail.
load test_helper

# NAME, or NAME=ERE when the files invoke it by another spelling (GNU make's
# default $(CC) is cc, $(AR) is ar). Not listed: apt-get and sudo, which
# make deps itself needs, and clang, which only `make fuzz` uses.
CANDIDATES=(
	'cc=\$\(CC\)' 'ar=\$\(AR\)' 'make=\$\(MAKE\)|(^|[^-[:alnum:]_.$])make([^-[:alnum:]_]|$)'
	awk base64 bash basename bats bc cat clang-format cmp cp cut date dd diff
	dirname dpkg-query env expr find git grep gzip head hexdump id install
	jq ln ls mandoc mkdir mkfifo mktemp mv nm od perl pkg-config python3 readelf readlink rm
	sed seq sh sleep sort split stat tac tail tee time=/usr/bin/time timeout
	touch tr truncate uniq valgrind wc xargs xxd xxhsum zstd chromium parallel ffmpeg
	dpkg dpkg-buildflags dpkg-deb dpkg-gencontrol dpkg-shlibdeps lintian ldd man md5sum
	objdump realpath strip ssh ssh-keygen sshd=/usr/sbin/sshd rsync unshare mount col
)

# The text of the files make check runs, without comment lines (the shebang
# stays) and without the Makefile's DEB_PKGS list.
scanned_text() {
	local f
	for f in "$KVP_ROOT"/Makefile "$KVP_ROOT"/tests/*.bats "$KVP_ROOT"/tests/*.sh \
		"$KVP_ROOT"/tests/*.bash "$KVP_ROOT"/.ci/run; do
		[ "$f" != "$KVP_ROOT/tests/deps.bats" ] || continue
		sed -e '/^DEB_PKGS[[:space:]]*=/,/[^\\]$/d' -e '/^[[:space:]]*#\([^!]\|$\)/d' "$f"
	done
}

# The candidates the scanned files invoke, one per line.
used_programs() {
	local text c name re
	text=$(scanned_text)
	for c in "${CANDIDATES[@]}"; do
		name=${c%%=*}
		re=${c#*=}
		[ "$c" != "$name" ] || re="(^|[^-[:alnum:]_.\$])${name}([^-[:alnum:]_]|\$)"
		! grep -qE -- "$re" <<<"$text" || echo "$name"
	done
}

# The file a program name runs as: the Debian location first (a PATH entry
# such as a pyenv shim is not what make deps installs), then PATH.
program_path() {
	local d
	case $1 in /*)
		[ -x "$1" ] && echo "$1"
		return
		;;
	esac
	for d in /usr/bin /bin /usr/sbin /sbin; do
		[ -x "$d/$1" ] && echo "$d/$1" && return
	done
	type -P "$1"
}

# lookup_paths PATH: the paths dpkg may list PATH under: PATH and each
# symlink on its way, in both spellings of merged /usr (dpkg may know
# /usr/bin/x as /bin/x); for an /etc/alternatives link, every alternative's.
lookup_paths() {
	local p=$1 n t
	for n in 1 2 3 4 5 6 7 8; do
		printf '%s\n' "$p" "${p#/usr}" "/usr$p"
		case $p in /etc/alternatives/*)
			update-alternatives --list "${p##*/}" 2>/dev/null | while read -r t; do
				lookup_paths "$t"
			done
			return 0
			;;
		esac
		[ -L "$p" ] || return 0
		t=$(readlink "$p")
		case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
	done
}

# packages_of PATH: the packages that provide PATH (from OWNER, filled by
# one dpkg -S call), following symlinks; an /etc/alternatives link gives the
# packages of every alternative (any of them will do).
packages_of() {
	local p=$1 n t
	for n in 1 2 3 4 5 6 7 8; do
		case $p in /etc/alternatives/*)
			update-alternatives --list "${p##*/}" 2>/dev/null | while read -r t; do
				packages_of "$t"
			done
			return 0
			;;
		esac
		for t in "$p" "${p#/usr}" "/usr$p"; do
			[ -z "${OWNER[$t]:-}" ] || { printf '%s\n' ${OWNER[$t]}; return 0; }
		done
		[ -L "$p" ] || return 1
		t=$(readlink "$p")
		case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
	done
	return 1
}

# The non-standard Python modules the test scripts import: "NAME FILE" lines.
python_modules() {
	cat "$KVP_ROOT"/tests/*.py "$KVP_ROOT"/tests/fixtures/*/*.py "$KVP_ROOT"/tests/*.bats |
		/usr/bin/python3 -c '
import importlib.util, os, re, sys
root = sys.argv[1]
local = {f[:-3] for d, _, fs in os.walk(os.path.join(root, "tests")) for f in fs if f.endswith(".py")}
names = set()
for line in sys.stdin:
    for m in re.finditer(r"(?:^|[\s\x27\x22;])(?:from\s+(\w+)[\w.]*\s+import|import\s+(\w+(?:\s*,\s*\w+)*))", line):
        names.update(n.strip() for n in (m.group(1) or m.group(2)).split(","))
for n in sorted(names - set(sys.stdlib_module_names) - local - {"__future__"}):
    s = importlib.util.find_spec(n)
    print(n, s.origin if s and s.origin else "-")
' "$KVP_ROOT"
}

# provided: "WHAT PATH PACKAGE..." lines, every program and module with its
# file and the packages that provide it (PATH "-" when there is none);
# essential: the Essential: yes packages. Computed once per file: neither
# depends on the Makefile checked.
setup_file() {
	local prog path mod file line
	local -A OWNER=()
	used_programs | while read -r prog; do
		path=$(program_path "$prog") || path=-
		echo "$prog $path"
	done >"$BATS_FILE_TMPDIR/paths"
	python_modules | sed 's/^/python3:/' >>"$BATS_FILE_TMPDIR/paths"
	# one dpkg -S for every path: "pkg[:arch][, pkg...]: /path" lines
	while read -r line; do
		path=${line##*: }
		line=${line%: *}
		line=${line//,/ }
		OWNER[$path]=$(printf '%s\n' $line | sed 's/:.*//' | tr '\n' ' ')
	done < <(while read -r prog path; do
		[ "$path" = - ] || lookup_paths "$path"
	done <"$BATS_FILE_TMPDIR/paths" | sort -u | xargs dpkg -S 2>/dev/null | grep -v '^diversion')
	while read -r prog path; do
		echo "$prog $path $( [ "$path" != - ] && packages_of "$path" | sort -u | tr '\n' ' ')"
	done <"$BATS_FILE_TMPDIR/paths" >"$BATS_FILE_TMPDIR/provided"
	dpkg-query -W -f='${Package} ${Essential}\n' | sed -n 's/ yes$//p' >"$BATS_FILE_TMPDIR/essential"
}

# deb_pkgs MAKEFILE: the words of its DEB_PKGS list.
deb_pkgs() {
	sed -n '/^DEB_PKGS[[:space:]]*=/,/[^\\]$/p' "$1" | sed 's/^DEB_PKGS[[:space:]]*=//; s/\\$//' | tr -s ' \t' '\n' | grep .
}

# check_deps MAKEFILE: prints one line per program or module; fails when one
# is missing, or comes from a package apt-get install $(DEB_PKGS) would not
# bring (nor an Essential one).
check_deps() {
	local named closure what path pkgs p st=0 why
	named=$(deb_pkgs "$1")
	[ -n "$named" ] || { echo "$1: no DEB_PKGS list"; return 1; }
	# shellcheck disable=SC2086
	closure=$(apt-cache depends --recurse --important $named 2>/dev/null |
		sed -e '/^ /d' -e 's/^<//' -e 's/[:>].*//' | sort -u)
	while read -r what path pkgs; do
		why=
		if [ "$path" = - ]; then
			why="not installed"
		elif [ -z "$pkgs" ]; then
			why="$path is in no Debian package"
		else
			for p in $pkgs; do
				if grep -qxF "$p" <<<"$named"; then
					why="ok: $p is in DEB_PKGS"
				elif grep -qxF "$p" <<<"$closure"; then
					why="ok: $p comes with DEB_PKGS"
				elif grep -qxF "$p" "$BATS_FILE_TMPDIR/essential"; then
					why="ok: $p is Essential"
				else
					continue
				fi
				break
			done
			[ -n "$why" ] || why="$path comes from $pkgs, which make deps does not install (add it to DEB_PKGS)"
		fi
		echo "$what: $why"
		[ "${why#ok: }" != "$why" ] || st=1
	done <"$BATS_FILE_TMPDIR/provided"
	return $st
}

@test "the scan finds what make check runs (the list is checked against the files)" {
	run -0 used_programs
	for p in bats cc clang-format jq mandoc python3 valgrind xxd xxhsum; do
		assert_line "$p"
	done
	run -0 python_modules
	assert_line --regexp '^msgpack /'
}

@test "every DEB_PKGS package is installed (make deps ran)" {
	local p missing=
	for p in $(deb_pkgs "$KVP_ROOT/Makefile"); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=" $p"
	done
	[ -z "$missing" ] || fail "not installed:$missing"
}

@test "make deps installs every program and Python module make check uses" {
	run check_deps "$KVP_ROOT/Makefile"
	assert_success
	assert_line 'mandoc: ok: mandoc is in DEB_PKGS'
	assert_line 'xxhsum: ok: xxhash is in DEB_PKGS'
}

@test "the check fails on a Makefile whose DEB_PKGS lacks mandoc" {
	local mk="$BATS_TEST_TMPDIR/Makefile"
	sed '/^DEB_PKGS[[:space:]]*=/,/[^\\]$/s/ mandoc / /' "$KVP_ROOT/Makefile" >"$mk"
	run -0 deb_pkgs "$mk"
	refute_line mandoc
	assert_line valgrind
	run check_deps "$mk"
	assert_failure
	assert_line --partial 'mandoc: /usr/bin/mandoc comes from mandoc, which make deps does not install'
}
