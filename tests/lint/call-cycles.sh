#!/bin/sh
# SPDX-License-Identifier: MIT
#
# call-cycles.sh OBJ... -- no call cycle between the files of one stage.
#
# For every pair of objects of one stage (lib/<stage>/x.o, grouped by their
# folder), a file "calls" another when it leaves undefined a global symbol
# the other defines (nm). The calls of one stage must form a DAG: a file may
# call files it does not call back, directly or through others. Static
# functions and calls into other stages are not edges (the stage order is
# includes.sh's job). Build without LTO so every object has a symbol table.
#
# Each cycle found is one line on stdout, "call cycle in STAGE: a.o b.o ...".
# Exit status: 0 no cycle, 1 cycles found, 2 trouble.

if [ $# -eq 0 ]; then
	echo "usage: call-cycles.sh OBJ..." >&2
	exit 2
fi
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
for o in "$@"; do
	if [ ! -r "$o" ]; then
		echo "call-cycles.sh: $o: cannot read" >&2
		exit 2
	fi
	stage=$(basename "$(dirname "$o")")
	f=$(basename "$o")
	nm "$o" >"$tmp/nm" 2>/dev/null || { echo "call-cycles.sh: $o: nm failed" >&2; exit 2; }
	awk -v s="$stage" -v f="$f" '
	NF == 3 && $2 ~ /^[TDBRCV]$/ { print "D", s, f, $3 }
	NF == 2 && $1 == "U" { print "U", s, f, $2 }' "$tmp/nm" >>"$tmp/syms"
done
[ -s "$tmp/syms" ] || exit 0
# Edges "stage caller callee", one per pair.
awk '
$1 == "D" { def[$2 SUBSEP $4] = $3 }
$1 == "U" { und[NR] = $2 SUBSEP $3 SUBSEP $4 }
END {
	for (i in und) {
		split(und[i], p, SUBSEP)
		k = p[1] SUBSEP p[3]
		if ((k in def) && def[k] != p[2])
			e[p[1] " " p[2] " " def[k]] = 1
	}
	for (x in e) print x
}' "$tmp/syms" | sort >"$tmp/edges"
# Strongly connected components per stage (Tarjan, in awk).
awk '
{ st = $1; n = st SUBSEP $2; m = st SUBSEP $3
  node[n] = st; node[m] = st; adj[n] = adj[n] " " m }
function visit(v,    a, k, i, w, c) {
	idx[v] = low[v] = ++counter
	stack[++sp] = v; on[v] = 1
	k = split(adj[v], a, " ")
	for (i = 1; i <= k; i++) {
		w = a[i]
		if (!(w in idx)) { visit(w); if (low[w] < low[v]) low[v] = low[w] }
		else if (on[w] && idx[w] < low[v]) low[v] = idx[w]
	}
	if (low[v] == idx[v]) {
		c = ""; cnt = 0
		do { w = stack[sp--]; on[w] = 0; split(w, q, SUBSEP); c = q[2] " " c; cnt++ } while (w != v)
		if (cnt > 1) { print "call cycle in " node[v] ": " c; bad = 1 }
	}
}
END {
	for (v in node) if (!(v in idx)) visit(v)
	exit bad
}' "$tmp/edges"
