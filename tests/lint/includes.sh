#!/bin/sh
# SPDX-License-Identifier: MIT
#
# includes.sh FILE... -- includes follow the stage order.
#
# Stage order (a stage includes only itself and stages to its left):
#     common < events < capture < hash < mm < route < lab < replay < report
#   lib/common/  common
#   lib/events/  common events
#   lib/capture/ common capture
#   lib/hash/    common events hash
#   lib/mm/      common mm
#   lib/route/   common events hash mm route
#   lib/lab/     common events hash mm route lab
#   lib/replay/  common events hash mm route lab replay
#   lib/report/  common events capture hash mm route lab replay report
#   lib/*.h      (kvpipe.h) only lib/'s top-level headers; any stage may
#                include those
#   fe/          anything but cmd/
#   cmd/         anything
# A stage's *_internal.h is included only from that stage's folder (and
# by unit tests). lib/ never includes fe/ or cmd/. Includes are written with their folder
# ("common/ndjson.h", "fe/cli.h"), relative to -I. -Ilib; a name without a
# folder is the including file's own folder (or lib/'s top level) and is
# always allowed; "../stage/x.h" and "lib/stage/x.h" are resolved too.
# FILE paths are relative to the repository root (lib/..., fe/..., cmd/...).
#
# Each offence is one line on stdout, "file:line: what".
# Exit status: 0 clean, 1 offences found, 2 trouble (unreadable file).

if [ $# -eq 0 ]; then
	echo "usage: includes.sh FILE..." >&2
	exit 2
fi
for f in "$@"; do
	if [ ! -r "$f" ]; then
		echo "includes.sh: $f: cannot read" >&2
		exit 2
	fi
done

exec awk '
BEGIN {
	allow["common"] = "common"
	allow["events"] = "common events"
	allow["capture"] = "common capture"
	allow["hash"] = "common events hash"
	allow["mm"] = "common mm"
	allow["route"] = "common events hash mm route"
	allow["lab"] = "common events hash mm route lab"
	allow["replay"] = "common events hash mm route lab replay"
	allow["report"] = "common events capture hash mm route lab replay report"
	allow["lib"] = ""
	found = 0
}

# where(path): "common".."route" for lib/<stage>/..., "lib" for lib/x.h,
# "fe", "cmd", or "" for anything else.
function where(p,    n, c) {
	sub(/^\.\//, "", p)
	n = split(p, c, "/")
	if (c[1] == "lib")
		return n == 2 ? "lib" : c[2]
	if (c[1] == "fe" || c[1] == "cmd")
		return c[1]
	return ""
}

# normalize(path): removes "." and "dir/.." components.
function normalize(p,    n, c, i, k, o, r) {
	n = split(p, c, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (c[i] == "." || c[i] == "")
			continue
		if (c[i] == ".." && k > 0 && o[k] != "..")
			k--
		else
			o[++k] = c[i]
	}
	r = ""
	for (i = 1; i <= k; i++)
		r = r (i > 1 ? "/" : "") o[i]
	return r
}

function report(msg) {
	printf "%s:%d: %s\n", file, FNR, msg
	found = 1
}

FNR == 1 {
	file = FILENAME
	sub(/^\.\//, "", file)
	from = where(file)
	dir = file
	if (!sub(/\/[^\/]*$/, "", dir))
		dir = "."
}

/^[ \t]*#[ \t]*include[ \t]*["<]/ {
	line = $0
	sub(/^[ \t]*#[ \t]*include[ \t]*/, "", line)
	q = substr(line, 1, 1)
	line = substr(line, 2)
	e = index(line, q == "<" ? ">" : "\"")
	if (e == 0)
		next
	inc = substr(line, 1, e - 1)
	if (index(inc, "/") == 0)
		next			# own folder or lib/ top level
	if (inc ~ /^\.\.?\//)
		target = normalize(dir "/" inc)
	else if (inc ~ /^(lib|fe|cmd)\//)
		target = normalize(inc)
	else
		target = normalize("lib/" inc)
	to = where(target)
	# <json-c/json.h>, "sys/x.h": not one of our folders, not ours.
	if (!(to in allow) && to != "fe" && to != "cmd")
		next
	# a stage keeps its *_internal.h: only its own folder includes it
	# (unit tests, outside lib/, fe/ and cmd/, may)
	if (target ~ /_internal\.h$/ && from != "" && from != to) {
		report("includes \"" inc "\": internal to lib/" to "/")
		next
	}
	if (from == "" || from == "cmd")
		next
	if (from == "fe") {
		if (to == "cmd")
			report("includes \"" inc "\": fe/ may not include cmd/")
		next
	}
	if (!(from in allow)) {
		if (!(file in unknown))
			report("lib/" from "/ is not a known stage (add it " \
			    "to tests/lint/includes.sh)")
		unknown[file] = 1
		next
	}
	if (to == "fe" || to == "cmd") {
		report("includes \"" inc "\": lib/ may not include " to "/")
		next
	}
	if (to == "lib")
		next
	if (index(" " allow[from] " ", " " to " ") == 0) {
		if (from == "lib")
			report("includes \"" inc "\": lib/" \
			    substr(file, 5) " may include only lib/ top-level headers")
		else
			report("includes \"" inc "\": " from " may not include " \
			    to " (" from " may include: " allow[from] ")")
	}
}

END { exit found }
' "$@"
