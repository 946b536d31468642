#!/bin/sh
# SPDX-License-Identifier: MIT
#
# func-length.sh FILE... -- no function body over 80 lines.
#
# Reads C in this tree's KNF layout (clang-format's
# AlwaysBreakAfterReturnType: TopLevelDefinitions, BreakBeforeBraces: Linux):
#
#     static int
#     name(int a,
#         int b)
#     {
#             ...
#     }
#
# A body runs from the line holding only "{" at column 0 to the next "}" at
# column 0, both counted. Its name is the identifier before the first "(" on
# the last column-0 line with a "(" above the "{" (the type may share that
# line). A function is exempt when the line directly above its return type
# line is the comment /* lint: table-driven */ (argp parse_opt functions,
# enum-to-string tables).
#
# Each offence is one line on stdout, "file:line: function NAME is N lines
# (max 80)", at the line holding the function's name.
# Exit status: 0 clean, 1 offences found, 2 trouble (unreadable file).
# LINT_MAX_FUNC_LINES changes the limit (for tests).

if [ $# -eq 0 ]; then
	echo "usage: func-length.sh FILE..." >&2
	exit 2
fi
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "func-length.sh: $f: cannot read" >&2
		exit 2
	fi
done

exec awk -v max="${LINT_MAX_FUNC_LINES:-80}" '
function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t\r]+$/, "", s)
	return s
}

FNR == 1 {
	file = FILENAME
	sub(/^\.\//, "", file)
	inbody = 0
	cand = 0
	delete text
}

{ text[FNR] = $0 }

inbody {
	if ($0 ~ /^}/) {
		n = FNR - open + 1
		if (n > max && !exempt) {
			printf "%s:%d: function %s is %d lines (max %d)\n", \
			    file, nameline, name, n, max
			found = 1
		}
		inbody = 0
		cand = 0
	}
	next
}

/^{[ \t\r]*$/ {
	if (!cand)
		next		# not after a declarator: not a function
	inbody = 1
	open = FNR
	nameline = cand
	s = text[cand]
	s = substr(s, 1, index(s, "(") - 1)
	sub(/[ \t*]+$/, "", s)
	name = s
	sub(/.*[^A-Za-z0-9_]/, "", name)
	# The return type is on the line above the name unless it shares it.
	typeline = (s == name) ? cand - 1 : cand
	exempt = typeline > 1 && \
	    trim(text[typeline - 1]) == "/* lint: table-driven */"
	next
}

# A column-0 line with "(" that is not a comment or directive: a candidate
# function declarator. A line ending in ";" (a prototype) cancels it.
/^[A-Za-z_]/ && /\(/ { cand = FNR }
/;[ \t\r]*$/ { cand = 0 }

END { exit found }
' "$@"
