#!/usr/bin/env bats
# The layering checks of `make lint` (tests/lint/*.sh): each one fires on a
# small synthetic tree or object that breaks its rule, names the place as
# file:line on stdout and exits 1; the same check passes a tree that keeps the
# rule (exit 0, empty output); trouble (a missing file) is exit 2 on stderr.

load test_helper

LINT="$KVP_ROOT/tests/lint"

setup() {
	cd "$BATS_TEST_TMPDIR" || exit 1
}

# --- rule 1: lib/ never prints or exits (nm on the archive) -------------------

# mkar ARCHIVE CFLAGS... < SOURCE — compiles stdin as lib/x.c into ARCHIVE.
mkar() {
	local a=$1
	shift
	mkdir -p lib
	cat >lib/x.c
	cc "$@" -c -o x.o lib/x.c
	rm -f "$a"
	ar rcs "$a" x.o
}

stderr_src() {
	cat <<'C'
#include <stdio.h>
void
kvp_x_say(int n)
{
	fprintf(stderr, "n is %d\n", n);
}
C
}

snprintf_src() {
	cat <<'C'
#include <stdio.h>
int
kvp_x_fmt(char *buf, size_t n, int v, FILE *out)
{
	int r = snprintf(buf, n, "v is %d", v);

	fputs(buf, out);
	return r;
}
C
}

@test "lib-symbols: fprintf(stderr, ...) at -O0 is reported with its source line" {
	stderr_src | mkar libx.a -O0 -g
	run -1 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a
	assert_line 'lib/x.c:5: libx.a(x.o) references stderr (lib/ must not print or exit)'
	assert_line 'lib/x.c:5: libx.a(x.o) references fprintf (lib/ must not print or exit)'
	assert_equal "${#lines[@]}" 2
	assert_equal "$stderr" ""
}

@test "lib-symbols: the -O2 -D_FORTIFY_SOURCE=2 name __fprintf_chk is reported" {
	stderr_src | mkar libx.a -O2 -g -D_FORTIFY_SOURCE=2
	run nm -u libx.a
	assert_output --partial __fprintf_chk
	run -1 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a
	assert_line --partial 'libx.a(x.o) references __fprintf_chk'
	assert_line --partial 'libx.a(x.o) references stderr'
	assert_equal "$stderr" ""
}

@test "lib-symbols: without debug info the archive member is the place" {
	stderr_src | mkar libx.a -O2
	run -1 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a
	assert_line 'libx.a(x.o): references fprintf (lib/ must not print or exit)'
	assert_equal "$stderr" ""
}

@test "lib-symbols: printf (as puts at -O2), exit, _exit, argp_* and err are reported" {
	mkar libx.a -O2 -g <<'C'
#include <argp.h>
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
void kvp_x_a(int n);
void
kvp_x_a(int n)
{
	if (n == 1)
		printf("hello\n");
	if (n == 2)
		exit(1);
	if (n == 3)
		_exit(2);
	if (n == 4)
		argp_usage(NULL);
	if (n == 5)
		errx(2, "no");
}
C
	run -1 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a
	assert_line --partial 'references puts '
	assert_line --partial 'references exit '
	assert_line --partial 'references _exit '
	assert_line --partial 'references errx '
	assert_output --regexp 'references argp_[a-z_]+ '
	assert_equal "$stderr" ""
}

@test "lib-symbols: snprintf and fputs to a caller's FILE pass, plain and fortified" {
	snprintf_src | mkar libx.a -O0 -g
	run -0 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a
	assert_output ""
	assert_equal "$stderr" ""
	snprintf_src | mkar liby.a -O2 -g -D_FORTIFY_SOURCE=2
	run nm -u liby.a
	assert_output --partial __snprintf_chk
	run -0 --separate-stderr sh "$LINT/lib-symbols.sh" libx.a liby.a
	assert_output ""
	assert_equal "$stderr" ""
}

@test "lib-symbols: one bad archive among good ones still fails" {
	snprintf_src | mkar libgood.a -O2 -g
	stderr_src | mkar libbad.a -O2 -g
	run -1 --separate-stderr sh "$LINT/lib-symbols.sh" libgood.a libbad.a
	assert_output --partial 'libbad.a(x.o) references fprintf'
	refute_output --partial libgood.a
}

@test "lib-symbols: a missing archive is trouble: exit 2, message on stderr" {
	run -2 --separate-stderr sh "$LINT/lib-symbols.sh" nosuch.a
	assert_output ""
	assert_equal "$stderr" "lib-symbols.sh: nosuch.a: cannot read"
	run -2 --separate-stderr sh "$LINT/lib-symbols.sh"
	assert_equal "$stderr" "usage: lib-symbols.sh ARCHIVE..."
}

# --- rule 2: includes follow the stage order ------------------------------

# src FILE LINE... — writes FILE, one LINE per line.
src() {
	local f=$1
	shift
	mkdir -p "$(dirname "$f")"
	printf '%s\n' "$@" >"$f"
}

@test "includes: every allowed direction passes" {
	src lib/kvpipe.h '#include <stdint.h>'
	src lib/common/a.c '#include "common/a.h"' '#include "kvpipe.h"' \
	    '#include "a.h"' '#include <json-c/json.h>' '#include <stdio.h>'
	src lib/events/e.h '#include "common/a.h"' '#include "events/f.h"'
	src lib/hash/h.c '#include "common/a.h"' '#include "events/e.h"' \
	    '#include "hash/h.h"'
	src lib/mm/m.c '#include "common/a.h"' '#include "mm/m.h"' \
	    '#include "stb_image_impl.h"'
	src lib/route/r.c '#include "common/a.h"' '#include "events/e.h"' \
	    '#include "hash/h.h"' '#include "mm/m.h"' '#include "route/r.h"'
	src lib/lab/l.c '#include "route/r.h"' '#include "lab/l.h"'
	src lib/replay/p.c '#include "route/r.h"' '#include "lab/l.h"' \
	    '#include "replay/p.h"'
	src lib/report/t.c '#include "capture/c.h"' '#include "replay/p.h"'
	src fe/cli.c '#include "fe/cli.h"' '#include "route/r.h"' \
	    '#include "kvpipe.h"'
	src cmd/tool.c '#include "fe/cli.h"' '#include "route/r.h"' \
	    '#include "cmd/x.h"'
	run -0 --separate-stderr sh "$LINT/includes.sh" lib/kvpipe.h \
	    lib/common/a.c lib/events/e.h lib/hash/h.c lib/mm/m.c \
	    lib/route/r.c lib/lab/l.c lib/replay/p.c lib/report/t.c fe/cli.c \
	    cmd/tool.c
	assert_output ""
	assert_equal "$stderr" ""
}

@test "includes: route may not include lab or replay; lab not replay" {
	src lib/route/r.c '#include "lab/l.h"' '#include "replay/p.h"'
	src lib/lab/l.c '#include "replay/p.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/route/r.c lib/lab/l.c
	assert_line --partial 'lib/route/r.c:1: includes "lab/l.h": route may not include lab'
	assert_line --partial 'lib/route/r.c:2: includes "replay/p.h": route may not include replay'
	assert_line --partial 'lib/lab/l.c:1: includes "replay/p.h": lab may not include replay'
	assert_equal "${#lines[@]}" 3
}

@test "includes: a stage including a later stage fails, with the line" {
	src lib/events/e.c '#include <stdio.h>' '' '#include "common/a.h"' \
	    '#include "route/index.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/events/e.c
	assert_output 'lib/events/e.c:4: includes "route/index.h": events may not include route (events may include: common events)'
	assert_equal "$stderr" ""
}

@test "includes: mm may include only common; common only common" {
	src lib/mm/m.h '#include "events/wire.h"' '#include "hash/h.h"'
	src lib/common/c.c '#include "events/wire.h"'
	src lib/kvpipe.h '#include "common/diag.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/mm/m.h \
	    lib/common/c.c lib/kvpipe.h
	assert_line 'lib/mm/m.h:1: includes "events/wire.h": mm may not include events (mm may include: common mm)'
	assert_line 'lib/mm/m.h:2: includes "hash/h.h": mm may not include hash (mm may include: common mm)'
	assert_line 'lib/common/c.c:1: includes "events/wire.h": common may not include events (common may include: common)'
	assert_line 'lib/kvpipe.h:1: includes "common/diag.h": lib/kvpipe.h may include only lib/ top-level headers'
	assert_equal "${#lines[@]}" 4
}

@test "includes: ../stage/, lib/stage/ and <stage/...> spellings are resolved" {
	src lib/events/e.c '#include "../route/r.h"' '#include "lib/mm/m.h"' \
	    '#include <hash/h.h>' '#include "./../events/w.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/events/e.c
	assert_line --partial 'lib/events/e.c:1: includes "../route/r.h": events may not include route'
	assert_line --partial 'lib/events/e.c:2: includes "lib/mm/m.h": events may not include mm'
	assert_line --partial 'lib/events/e.c:3: includes "hash/h.h": events may not include hash'
	assert_equal "${#lines[@]}" 3
}

@test "includes: lib/ never includes fe/ or cmd/; fe/ never includes cmd/" {
	src lib/route/r.c '#include "fe/cli.h"' '#include "../../cmd/x.h"'
	src fe/cli.c '#include "cmd/route-score.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/route/r.c fe/cli.c
	assert_line 'lib/route/r.c:1: includes "fe/cli.h": lib/ may not include fe/'
	assert_line 'lib/route/r.c:2: includes "../../cmd/x.h": lib/ may not include cmd/'
	assert_line 'fe/cli.c:1: includes "cmd/route-score.h": fe/ may not include cmd/'
	assert_equal "${#lines[@]}" 3
	assert_equal "$stderr" ""
}

@test "includes: a stage's *_internal.h is included from its own folder only" {
	src lib/replay/p.c '#include "route/route_internal.h"' '#include "lab/lab.h"'
	src lib/route/q.c '#include "route_internal.h"' '#include "../route/route_internal.h"'
	src fe/f.c '#include "lab/lab_internal.h"'
	src cmd/c.c '#include "route/route_internal.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" lib/replay/p.c lib/route/q.c fe/f.c cmd/c.c
	assert_line 'lib/replay/p.c:1: includes "route/route_internal.h": internal to lib/route/'
	assert_line 'fe/f.c:1: includes "lab/lab_internal.h": internal to lib/lab/'
	assert_line 'cmd/c.c:1: includes "route/route_internal.h": internal to lib/route/'
	assert_equal "${#lines[@]}" 3
	assert_equal "$stderr" ""
}

@test "includes: a lib/ folder missing from the stage table is reported once" {
	src lib/capture2/html.c '#include "common/a.h"' '#include "route/r.h"'
	run -1 --separate-stderr sh "$LINT/includes.sh" ./lib/capture2/html.c
	assert_output 'lib/capture2/html.c:1: lib/capture2/ is not a known stage (add it to tests/lint/includes.sh)'
}

@test "includes: a missing file is trouble: exit 2, message on stderr" {
	run -2 --separate-stderr sh "$LINT/includes.sh" lib/nosuch.c
	assert_output ""
	assert_equal "$stderr" "includes.sh: lib/nosuch.c: cannot read"
}

# --- rule 3: no function over 80 lines ------------------------------------

# body N — a function body of N lines, braces included.
body() {
	local i
	echo '{'
	for ((i = 2; i < $1; i++)); do
		printf '\tx++;\n'
	done
	echo '}'
}

@test "func-length: an 81-line body fails at the name's line; 80 passes" {
	{
		printf '#include <stdio.h>\n\nint x;\n\nstatic int\nlong_one(void)\n'
		body 81
		printf '\nstatic int\nshort_one(int a,\n    int b)\n'
		body 80
	} >f.c
	run -1 --separate-stderr sh "$LINT/func-length.sh" f.c
	assert_output 'f.c:6: function long_one is 81 lines (max 80)'
	assert_equal "$stderr" ""
	{ printf 'static int\nok(void)\n'; body 80; } >g.c
	run -0 --separate-stderr sh "$LINT/func-length.sh" g.c
	assert_output ""
	assert_equal "$stderr" ""
}

@test "func-length: /* lint: table-driven */ above the return type exempts" {
	{
		printf 'int x;\n/* lint: table-driven */\nstatic error_t\n'
		printf 'parse_opt(int key, char *arg, struct argp_state *st)\n'
		body 150
		printf '\n/* lint: table-driven */\nconst char *\nname_of(int v)\n'
		body 90
	} >t.c
	run -0 --separate-stderr sh "$LINT/func-length.sh" t.c
	assert_output ""
	assert_equal "$stderr" ""
}

@test "func-length: the comment elsewhere does not exempt" {
	{
		# A blank line between comment and type.
		printf '/* lint: table-driven */\n\nstatic int\na(void)\n'
		body 81
		# Above the name, not above the return type.
		printf '\nstatic int\n/* lint: table-driven */\nb(void)\n'
		body 82
		# Inside the body.
		printf '\nstatic int\nc(void)\n{\n/* lint: table-driven */\n'
		body 81 | sed 1d
	} >t.c
	run -1 --separate-stderr sh "$LINT/func-length.sh" t.c
	assert_line 't.c:4: function a is 81 lines (max 80)'
	assert_line 't.c:89: function b is 82 lines (max 80)'
	assert_line 't.c:174: function c is 82 lines (max 80)'
	assert_equal "${#lines[@]}" 3
}

@test "func-length: type and name on one line; prototypes and tables are not bodies" {
	{
		printf 'int main(int argc, char **argv);\n'
		printf 'static const char *names[] = {\n'
		for ((i = 0; i < 90; i++)); do printf '    "n%d",\n' "$i"; done
		printf '};\n\nint main(int argc, char **argv)\n'
		body 85
		printf '\n/* lint: table-driven */\nstatic char *dup_of(const char *s)\n'
		body 85
	} >m.c
	run -1 --separate-stderr sh "$LINT/func-length.sh" m.c
	assert_output 'm.c:95: function main is 85 lines (max 80)'
}

@test "func-length: reports every offender across files; missing file is exit 2" {
	{ printf 'static int\na(void)\n'; body 81; } >a.c
	{ printf 'static int\nb(void)\n'; body 100; } >b.h
	run -1 --separate-stderr sh "$LINT/func-length.sh" a.c b.h
	assert_line 'a.c:2: function a is 81 lines (max 80)'
	assert_line 'b.h:2: function b is 100 lines (max 80)'
	run -2 --separate-stderr sh "$LINT/func-length.sh" a.c nosuch.c
	assert_output ""
	assert_equal "$stderr" "func-length.sh: nosuch.c: cannot read"
}

# --- rule 4: no call cycle between the files of one stage (nm on objects) ----

# mkobj STAGE NAME < SOURCE — compiles stdin as lib/STAGE/NAME.c into
# lib/STAGE/NAME.o.
mkobj() {
	mkdir -p "lib/$1"
	cat >"lib/$1/$2.c"
	cc -c -o "lib/$1/$2.o" "lib/$1/$2.c"
}

@test "call-cycles: a.c and b.c calling each other is a cycle of their stage" {
	printf 'int kvp_b(int);\nint kvp_a(int n) { return n ? kvp_b(n - 1) : 0; }\n' | mkobj route a
	printf 'int kvp_a(int);\nint kvp_b(int n) { return kvp_a(n); }\n' | mkobj route b
	printf 'int kvp_a(int);\nint kvp_c(int n) { return kvp_a(n); }\n' | mkobj route c
	run --separate-stderr sh "$LINT/call-cycles.sh" lib/route/a.o lib/route/b.o lib/route/c.o
	assert_failure 1
	[ "$stderr" = "" ]
	# c calls into the cycle but is not part of it
	[[ "$output" == "call cycle in route: "* ]]
	[[ "$output" == *"a.o"* && "$output" == *"b.o"* && "$output" != *"c.o"* ]]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
}

@test "call-cycles: a three-file loop is found; a chain and cross-stage calls are not cycles" {
	printf 'int kvp_b(int);\nint kvp_a(int n) { return kvp_b(n); }\n' | mkobj lab a
	printf 'int kvp_c(int);\nint kvp_b(int n) { return kvp_c(n); }\n' | mkobj lab b
	printf 'int kvp_a(int);\nint kvp_c(int n) { return kvp_a(n); }\n' | mkobj lab c
	run --separate-stderr sh "$LINT/call-cycles.sh" lib/lab/a.o lib/lab/b.o lib/lab/c.o
	assert_failure 1
	[[ "$output" == "call cycle in lab: "*"a.o"* ]]
	# the same names in two stages: a -> b in one, b -> a in the other
	rm -rf lib
	printf 'int kvp_b(int);\nint kvp_a(int n) { return kvp_b(n); }\n' | mkobj route a
	printf 'int kvp_b(int n) { return n; }\n' | mkobj route b
	printf 'int kvp_a(int);\nint kvp_x(int n) { return kvp_a(n); }\n' | mkobj lab x
	run --separate-stderr sh "$LINT/call-cycles.sh" lib/route/a.o lib/route/b.o lib/lab/x.o
	assert_success
	[ "$output" = "" ]
	run --separate-stderr sh "$LINT/call-cycles.sh" lib/route/none.o
	assert_failure 2
	[[ "$stderr" == *"cannot read"* ]]
}

# --- rule 5: no file reaches a router sub-state it does not own ---------------

@test "owners: r->rq.x outside reqs.c is an offence; &r->rq and comments are not" {
	mkdir -p lib/route
	printf 'int f(struct kvp_router *r)\n{\n\tg(&r->rq); /* r->ld.x */\n\treturn r->rq.nlive;\n}\n' >lib/route/score.c
	printf 'int f(struct kvp_reqs *rq, struct kvp_router *r)\n{\n\treturn r->rq.nlive + r->side != 0;\n}\n' >lib/route/reqs.c
	run --separate-stderr sh "$LINT/owners.sh" lib/route/score.c lib/route/reqs.c
	assert_failure 1
	[ "$output" = "lib/route/score.c:4: reaches r->rq (owned by reqs.c)" ]
	printf 'int f(struct kvp_router *r)\n{\n\treturn r->side->max + r->sc.pmin;\n}\n' >lib/route/load.c
	run --separate-stderr sh "$LINT/owners.sh" lib/route/load.c
	assert_failure 1
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 2 ]
	[[ "$output" == *"reaches r->side (owned by approx.c)"* ]]
	[[ "$output" == *"reaches r->sc (owned by scratch.c router.c score.c)"* ]]
	run --separate-stderr sh "$LINT/owners.sh" lib/route/missing.c
	assert_failure 2
}

# --- rule 6: commit messages (subject <= 72, blank line, body) ---------------

# repo — a throwaway git repository in ./repo with one base commit, its hash
# in $base; the user's and the system's git configuration are not read.
repo() {
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com
	export GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
	git init -q repo
	cd repo || return 1
	printf 'base\n\nThe commit the check starts after.\n' >../msg
	git commit -q --allow-empty -F ../msg
	base=$(git rev-parse HEAD)
}

# commit MESSAGE — an empty commit with that message (printf's %b escapes).
commit() {
	printf '%b' "$1" >../msg
	git commit -q --allow-empty --cleanup=verbatim -F ../msg
}

# subject N — a subject of N characters, an em dash (3 bytes) among them.
subject() {
	printf 'lint: a subject \342\200\224 '
	printf '%*s' $(($1 - 18)) '' | tr ' ' x
}

@test "commit-msg: a subject of 72 characters, a blank line and a body pass" {
	repo
	commit "$(subject 72)\n\nWhat changed and why.\n"
	commit "short\n\nA body\nof two lines.\n"
	run -0 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_output ""
	assert_equal "$stderr" ""
}

@test "commit-msg: a 73-character subject fails, naming the commit" {
	repo
	commit "$(subject 73)\n\nWhat changed and why.\n"
	bad=$(git rev-parse --short HEAD)
	commit "fine\n\nA body.\n"
	run -1 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_output "$bad: subject is 73 characters (at most 72)"
	assert_equal "$stderr" ""
}

@test "commit-msg: a second line that is not blank fails" {
	repo
	commit "subject\nbody on the second line\n"
	bad=$(git rev-parse --short HEAD)
	run -1 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_output "$bad: second line is not blank"
}

@test "commit-msg: a subject alone, or with only blank lines, has no body" {
	repo
	commit "subject only\n"
	one=$(git rev-parse --short HEAD)
	commit "subject\n\n\n  \n"
	two=$(git rev-parse --short HEAD)
	run -1 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_line "$one: no body after the subject and a blank line"
	assert_line "$two: no body after the subject and a blank line"
	assert_equal "${#lines[@]}" 2
}

@test "commit-msg: BASE is excluded; a bad commit before it is not checked" {
	repo
	commit "an old one-line commit\n"
	old=$(git rev-parse HEAD)
	commit "new\n\nA body.\n"
	run -0 --separate-stderr sh "$LINT/commit-msg.sh" "$old"
	assert_output ""
	run -1 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_output "$(git rev-parse --short "$old"): no body after the subject and a blank line"
}

@test "commit-msg: no history to check is a note on stderr and exit 0" {
	# outside a git checkout (a tarball)
	mkdir plain
	cd plain
	GIT_CEILING_DIRECTORIES=$BATS_TEST_TMPDIR run -0 --separate-stderr \
	    sh "$LINT/commit-msg.sh"
	assert_output ""
	assert_equal "$stderr" "commit-msg.sh: not in a git checkout; commit messages not checked"
	cd ..
	# BASE missing (a shallow clone, or the default base in another
	# repository) or not an ancestor of HEAD
	repo
	commit "bad\n"
	run -0 --separate-stderr sh "$LINT/commit-msg.sh"
	assert_output ""
	assert_regex "$stderr" "is not an ancestor of HEAD"
	git checkout -q --orphan other
	commit "other\n\nA body.\n"
	run -0 --separate-stderr sh "$LINT/commit-msg.sh" "$base"
	assert_output ""
	assert_regex "$stderr" "^commit-msg.sh: $base is not an ancestor of HEAD"
	run -2 --separate-stderr sh "$LINT/commit-msg.sh" a b
	assert_equal "$stderr" "usage: commit-msg.sh [BASE]"
}

# --- rule 7: citations of the reference specs resolve ---------------------

# The cited paths are spelled through $D and the old names through $O, so
# that this file holds no citation of its own for make lint-layers to check.
D=docs/spec
O=spec-

# spec — writes $D/kv.md with headings 1., 2, 2.1, 6.2.3, 6.2.5, 6.2.7.
spec() {
	src "$D/kv.md" '# KV events' '' '## 1. Transport' 'text' '## 2 Payload' \
	    '### 2.1 Encoding' '#### 6.2.3 Events' '#### 6.2.5 Hashes' \
	    '#### 6.2.7 Ranges' '### 9x not a section' 'not a heading: 3.1'
}

@test "citations: sections, lists, ranges, wrapped lines and roff's \\(sc pass" {
	spec
	src lib/a.c "/* the wire (see $D/kv.md §1, §2.1 and §2) */" \
	    "/* events: $D/kv.md §6.2.3–7 and §1–§2; $D/kv.md. */" \
	    " * a wrapped one ($D/kv.md" ' * §2.1): text'
	src tests/t.bats "@test \"$D/kv.md §2.1 test 3: bare §6.6 is not checked\" {" \
	    "# $D/kv.md"
	src man/t.1 ".Pq $D/kv.md \\(sc2.1 , issue #1 ." "see $D/kv.md"
	run -0 --separate-stderr sh "$LINT/citations.sh" lib/a.c tests/t.bats \
	    man/t.1 "$D/kv.md"
	assert_output ""
	assert_equal "$stderr" ""
}

@test "citations: a section without a heading fails, with the line" {
	spec
	src lib/a.c '/* nothing here */' "/* see $D/kv.md §3.1 (not a heading) */" \
	    "/* $D/kv.md §2, §9 and §2.1; §6.2.3–6 */" \
	    "/* $D/kv.md §9x */" " * ($D/kv.md" ' * §4): wrapped'
	run -1 --separate-stderr sh "$LINT/citations.sh" lib/a.c
	assert_line "lib/a.c:2: $D/kv.md §3.1: no such section heading"
	assert_line "lib/a.c:3: $D/kv.md §9: no such section heading"
	assert_line "lib/a.c:3: $D/kv.md §6.2.6: no such section heading"
	assert_line "lib/a.c:4: $D/kv.md §9: no such section heading"
	assert_line "lib/a.c:6: $D/kv.md §4: no such section heading"
	assert_equal "${#lines[@]}" 5
	assert_equal "$stderr" ""
}

@test "citations: a file not in the repository fails" {
	spec
	src lib/a.c "/* $D/kv.md §1 and $D/route.md §4.2 */" "# $D/none.md"
	run -1 --separate-stderr sh "$LINT/citations.sh" lib/a.c
	assert_line "lib/a.c:1: $D/route.md: no such file"
	assert_line "lib/a.c:2: $D/none.md: no such file"
	assert_equal "${#lines[@]}" 2
}

@test "citations: an old spec-NAME.md citation fails anywhere, one line each" {
	spec
	src tests/t.bats "# kv-decode: ${O}kv-events.md §6.5" \
	    "@test \"${O}route-score.md §6.5 2 and ${O}mm-expand §5\" {" \
	    "# $D/kv.md §1, fine"
	run -1 --separate-stderr sh "$LINT/citations.sh" tests/t.bats
	assert_line "tests/t.bats:1: ${O}kv-events.md: not in the repository; cite $D/kv-events.md"
	assert_line "tests/t.bats:2: ${O}route-score.md: not in the repository; cite $D/route-score.md"
	assert_line "tests/t.bats:2: ${O}mm-expand: not in the repository; cite $D/mm-expand.md"
	assert_equal "${#lines[@]}" 3
	assert_equal "$stderr" ""
}

@test "citations: a missing file is trouble: exit 2, message on stderr" {
	run -2 --separate-stderr sh "$LINT/citations.sh" lib/nosuch.c
	assert_output ""
	assert_equal "$stderr" "citations.sh: lib/nosuch.c: cannot read"
	run -2 --separate-stderr sh "$LINT/citations.sh"
	assert_equal "$stderr" "usage: citations.sh FILE..."
}
