#!/bin/sh
# SPDX-License-Identifier: MIT
#
# owners.sh FILE... -- no file of lib/route/ reaches the fields of a router
# sub-state it does not own.
#
# struct kvp_router (lib/route/route_internal.h) is a composition of
# sub-states, each owned by its own files (the table in that header, which
# this one repeats). Any other file may pass a member's address to its
# owner's functions (&r->ld), but writing r->ld.x, or r->side->x for the
# side index, is reaching in: one offence per line on stdout,
# "file:line: reaches r->MEMBER (owned by FILES)".
# Exit status: 0 clean, 1 offences found, 2 trouble (unreadable file).

if [ $# -eq 0 ]; then
	echo "usage: owners.sh FILE..." >&2
	exit 2
fi
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "owners.sh: $f: cannot read" >&2
		exit 2
	fi
done

exec awk '
BEGIN {
	own["cd"] = "cands.c"
	own["cur"] = "event_apply.c"
	own["nodes"] = "nodes.c"
	own["ld"] = "load.c"
	own["rq"] = "reqs.c"
	own["ap"] = "approx.c"
	own["side"] = "approx.c"
	own["ss"] = "session.c"
	own["sc"] = "scratch.c router.c score.c"
	own["hk"] = "route_view.c router.c"
	found = 0
}
FNR == 1 { n = split(FILENAME, p, "/"); base = p[n] }
{
	line = $0
	sub(/\/\*.*/, "", line) # a comment may name them
	while (match(line, /->[a-z]+(\.|->)[a-z_]/)) {
		m = substr(line, RSTART + 2, RLENGTH - 2)
		line = substr(line, RSTART + RLENGTH)
		sub(/(\.|->).*/, "", m)
		if (!(m in own))
			continue
		if (index(" " own[m] " ", " " base " "))
			continue
		printf "%s:%d: reaches r->%s (owned by %s)\n", FILENAME, FNR, m, own[m]
		found = 1
	}
}
END { exit found }' "$@"
