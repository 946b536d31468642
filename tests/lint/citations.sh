#!/bin/sh
# SPDX-License-Identifier: MIT
#
# citations.sh FILE... -- citations of the reference specs resolve.
#
# A citation is a path under docs/spec/ ending in .md, optionally followed by
# the sections it cites: "docs/spec/<name>.md §4.2", a list "§3, §4 and
# §6.4" (separated by ",", ";", "/", "+" or "and"), a range "§3.3–3.4" or
# "§6.2.3–7" (an en dash; a shorter end replaces the start's last numbers:
# 6.2.3–7 is 6.2.3 to 6.2.7, both checked) or "§2–§3". In man pages the
# sign may be written \(sc. When the path ends its line, the sections may
# begin the next one, after a comment leader (" * ", "#", "//"). The cited
# file must exist (paths are relative to the current directory, the
# repository root) and have a Markdown heading for each section: a line of
# "#"s, a space and the number, with or without a final dot ("## 6. Spec",
# "### 6.2 Decoding rules"). Only the sections right after a path are
# checked; a bare "§6.5" elsewhere is not a citation this lint can resolve.
# The old citations of the developers' copies (spec-<name>.md, or
# spec-<name> without .md) are offences wherever they appear.
# FILE paths are relative to the repository root.
#
# Each offence is one line on stdout, "file:line: what".
# Exit status: 0 clean, 1 offences found, 2 trouble (unreadable file).

if [ $# -eq 0 ]; then
	echo "usage: citations.sh FILE..." >&2
	exit 2
fi
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "citations.sh: $f: cannot read" >&2
		exit 2
	fi
done

LC_ALL=C
export LC_ALL
exec awk '
BEGIN {
	found = 0
	SIGN = "(§|\\\\\\(sc)"		# the section sign, or roff \(sc
	NUM = "[0-9]+(\\.[0-9]+)*"
	pending = ""
}

function report(ln, msg) {
	printf "%s:%d: %s\n", file, ln, msg
	found = 1
}

# load(path): 1 when path is readable (its headings then in sec[]), else 0.
function load(path,    line, r, n) {
	if (path in loaded)
		return loaded[path]
	r = 0
	while ((getline line < path) > 0) {
		r = 1
		if (line !~ /^#+[ \t]+[0-9]/)
			continue
		sub(/^#+[ \t]+/, "", line)
		if (!match(line, /^[0-9]+(\.[0-9]+)*/))
			continue
		n = substr(line, 1, RLENGTH)
		line = substr(line, RLENGTH + 1)
		if (line != "" && line !~ /^\.?([ \t]|$)/)
			continue
		sec[path SUBSEP n] = 1
	}
	if (r == 0 && (getline line < path) >= 0)
		r = 1			# an empty file is still a file
	close(path)
	loaded[path] = r
	return r
}

function check(path, n, ln) {
	if (!((path SUBSEP n) in sec))
		report(ln, path " §" n ": no such section heading")
}

# range_end(start, end): "6.2.3", "7" -> "6.2.7"; "3.3", "3.4" -> "3.4".
function range_end(s, e,    ns, ne, a, b, i, r) {
	ns = split(s, a, ".")
	ne = split(e, b, ".")
	if (ne >= ns)
		return e
	r = ""
	for (i = 1; i <= ns - ne; i++)
		r = r a[i] "."
	return r e
}

# sections(path, rest, ln): checks the section list at the start of rest;
# returns 1 when one was found.
function sections(path, rest, ln,    n, e, any) {
	any = 0
	while (match(rest, "^[ \t]*" SIGN "[ \t]*" NUM)) {
		n = substr(rest, 1, RLENGTH)
		rest = substr(rest, RLENGTH + 1)
		sub("^[ \t]*" SIGN "[ \t]*", "", n)
		check(path, n, ln)
		any = 1
		if (match(rest, "^–" SIGN "?[ \t]*" NUM)) {
			e = substr(rest, 1, RLENGTH)
			rest = substr(rest, RLENGTH + 1)
			sub("^–" SIGN "?[ \t]*", "", e)
			check(path, range_end(n, e), ln)
		}
		if (!match(rest, "^([ \t]*[,;/+][ \t]*|[ \t]+and[ \t]+)" SIGN))
			break
		sub("^([ \t]*[,;/+][ \t]*|[ \t]+and[ \t]+)", "", rest)
	}
	return any
}

FNR == 1 {
	file = FILENAME
	sub(/^\.\//, "", file)
	pending = ""
}

{
	line = $0
	if (pending != "") {
		rest = line
		sub(/^[ \t]*(\/\/|\/?\*+|#+|\.\\"|;+)?[ \t]*/, "", rest)
		sections(pending, rest, FNR)
		pending = ""
	}

	# old citations
	rest = line
	while (match(rest, /spec[-][a-z0-9-]+\.md|spec[-](kv-events|route-score|mm-expand|engine-hashes)/)) {
		old = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		name = old
		sub(/^spec[-]/, "", name)
		sub(/\.md$/, "", name)
		report(FNR, old ": not in the repository; cite docs/spec/" \
		    name ".md")
	}

	rest = line
	while (match(rest, /docs\/spec\/[A-Za-z0-9_.-]+\.md/)) {
		path = substr(rest, RSTART, RLENGTH)
		rest = substr(rest, RSTART + RLENGTH)
		if (!load(path)) {
			report(FNR, path ": no such file")
			continue
		}
		if (!sections(path, rest, FNR) && rest ~ /^[ \t]*$/)
			pending = path
	}
}

END { exit found }
' "$@"
