#!/bin/sh
# SPDX-License-Identifier: MIT
#
# lib-symbols.sh ARCHIVE... -- lib/ never prints and never exits.
#
# Lists the undefined symbols of each object in the given archives (or
# objects) with nm and reports every reference to a stream, exit or printing
# function that lib/ must leave to cmd/ and fe/:
#   stderr stdout stdin, exit _exit _Exit quick_exit, argp_*,
#   printf fprintf vprintf vfprintf dprintf vdprintf puts putchar perror,
#   err errx verr verrx warn warnx vwarn vwarnx error error_at_line,
#   and glibc's _FORTIFY_SOURCE names of the printf family (__printf_chk ...).
# Formatting into memory (snprintf, vsnprintf) and writing to a FILE * the
# caller passed (fwrite, fputc, fputs) are allowed; nm cannot tell which
# stream those write to, so code review has to.
#
# Each offence is one line on stdout, "file:line: what", with the source line
# nm finds in the debug info (-g), or "archive(member): what" without it.
# Exit status: 0 clean, 1 offences found, 2 trouble (missing file, nm failed).
#
# No exemption is needed today: lib/mm/stb_image_impl.o (stb_image with
# STBI_NO_STDIO) references only malloc, free and memset. Should a vendor
# unit ever need one, name its object in LINT_SYMBOLS_EXEMPT (member names,
# spaces between), set in the Makefile's lint-layers recipe with a comment
# saying why.

: "${NM:=nm}"

if [ $# -eq 0 ]; then
	echo "usage: lib-symbols.sh ARCHIVE..." >&2
	exit 2
fi

st=0
for a in "$@"; do
	if [ ! -r "$a" ]; then
		echo "lib-symbols.sh: $a: cannot read" >&2
		exit 2
	fi
	out=$(LC_ALL=C "$NM" -A -l -u "$a") || {
		echo "lib-symbols.sh: $a: nm failed" >&2
		exit 2
	}
	printf '%s\n' "$out" | awk -v pwd="$(pwd)/" \
	    -v exempt=" ${LINT_SYMBOLS_EXEMPT:-} " '
	BEGIN {
		n = split("stderr stdout stdin exit _exit _Exit quick_exit " \
		    "printf fprintf vprintf vfprintf dprintf vdprintf " \
		    "puts putchar perror err errx verr verrx warn warnx " \
		    "vwarn vwarnx error error_at_line " \
		    "__printf_chk __fprintf_chk __vprintf_chk __vfprintf_chk " \
		    "__dprintf_chk __vdprintf_chk", l, " ")
		for (i = 1; i <= n; i++)
			bad[l[i]] = 1
		found = 0
	}
	# "archive:member:   U name<TAB>/abs/file.c:123" (nm -A -l -u);
	# an object given alone prints "file.o:   U name".
	{
		line = $0
		src = ""
		t = index(line, "\t")
		if (t > 0) {
			src = substr(line, t + 1)
			line = substr(line, 1, t - 1)
		}
		nf = split(line, f, " ")
		if (nf < 3 || f[nf - 1] != "U")
			next
		sym = f[nf]
		sub(/@.*/, "", sym)
		if (!(sym in bad) && sym !~ /^argp_/)
			next
		where = f[1]
		sub(/:$/, "", where)
		member = where
		sub(/^.*:/, "", member)
		if (index(exempt, " " member " ") > 0)
			next
		if (where ~ /\.a:[^:]+$/) {
			a = where
			sub(/:[^:]*$/, "", a)
			where = a "(" member ")"
		}
		if (src !~ /:[1-9][0-9]*$/)
			src = ""	# no debug info: nm says "x.c:0" or nothing
		if (src != "") {
			if (index(src, pwd) == 1)
				src = substr(src, length(pwd) + 1)
			printf "%s: %s references %s (lib/ must not print or exit)\n", src, where, sym
		} else
			printf "%s: references %s (lib/ must not print or exit)\n", where, sym
		found = 1
	}
	END { exit found }' || st=1
done
exit $st
