#!/bin/sh
# SPDX-License-Identifier: MIT
#
# commit-msg.sh [BASE] -- every commit after BASE has a well-formed message.
#
# For each commit in BASE..HEAD (merges included) the message must have:
#   - a subject (its first line) of at most 72 characters (UTF-8
#     characters, not bytes: an em dash counts one);
#   - a blank second line;
#   - a body: some non-blank line after that blank one, saying what
#     changed and why.
# Run it from inside the checkout to check (make lint runs it from the
# top).
#
# BASE defaults to 045ec37 (DEFAULT_BASE below, written in full so that no
# later commit can make the short hash ambiguous), the project's named
# base: the commits before it predate the rule (long one-line subjects, no
# body), so they are not checked.
#
# No history, nothing to check: outside a git checkout (a release tarball),
# or when BASE is not an ancestor of HEAD (a shallow clone that stops short
# of it, an unknown BASE), it prints a note on stderr and exits 0. CI
# clones fully, so there the check runs.
#
# Each offence is one line on stdout, "COMMIT: what" (COMMIT: the
# abbreviated hash).
# Exit status: 0 clean (or nothing to check), 1 offences found, 2 trouble
# (usage, git failing on a range it accepted).

DEFAULT_BASE=045ec37bc9fd17734f4ce8163a33faf445f146c7
MAX_SUBJECT=72

if [ $# -gt 1 ]; then
	echo "usage: commit-msg.sh [BASE]" >&2
	exit 2
fi
base=${1:-$DEFAULT_BASE}

if ! command -v git >/dev/null 2>&1 ||
    ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "commit-msg.sh: not in a git checkout; commit messages not checked" >&2
	exit 0
fi
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null ||
    ! git merge-base --is-ancestor "$base" HEAD 2>/dev/null; then
	echo "commit-msg.sh: $base is not an ancestor of HEAD (shallow" \
	    "clone?); commit messages not checked" >&2
	exit 0
fi

# One commit is a line "\001HASH" and then its raw message (%B).
log=$(git log --format='%x01%h%n%B' "$base..HEAD") || {
	echo "commit-msg.sh: git log $base..HEAD failed" >&2
	exit 2
}
[ -n "$log" ] || exit 0

printf '%s\n' "$log" | LC_ALL=C awk -v max="$MAX_SUBJECT" '
function finish() {
	if (c == "")
		return
	if (n == 0 || subj ~ /^[ \t]*$/) {
		offend("empty subject")
		return
	}
	s = subj
	gsub(/[\200-\277]/, "", s)	# UTF-8 continuation bytes
	if (length(s) > max)
		offend("subject is " length(s) " characters (at most " max ")")
	if (n >= 2 && !blank2)
		offend("second line is not blank")
	else if (!body)
		offend("no body after the subject and a blank line")
}
function offend(what) {
	printf "%s: %s\n", c, what
	found = 1
}
/^\001/ {
	finish()
	c = substr($0, 2)
	n = 0
	subj = ""
	blank2 = 0
	body = 0
	next
}
{
	n++
	if (n == 1)
		subj = $0
	else if (n == 2)
		blank2 = $0 ~ /^[ \t]*$/
	else if ($0 !~ /^[ \t]*$/)
		body = 1
}
END {
	finish()
	exit found
}
'
