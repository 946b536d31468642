#!/usr/bin/env bats
# Bash completions: every keyword option completes its values after
# "--opt=" (the values come from the tool itself: its usage error lists
# the choices), and every tool completes -k and -o.
load test_helper

tools() {
	for f in "$KVP_ROOT"/cmd/*.c; do basename "$f" .c; done
}

# complete TOOL WORD... — COMPREPLY for the command line "TOOL WORD...",
# split as bash splits it when "=" is a word break (the default).
complete_words() {
	local tool=$1 fn
	shift
	# shellcheck disable=SC1090
	source "$KVP_ROOT/completions/bash/$tool"
	fn=$(complete -p "$tool" | sed -E 's/.*-F ([^ ]+) .*/\1/')
	COMP_WORDS=("$tool" "$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" "$tool" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

@test "every keyword option completes each of its values after --opt=" {
	# "-o__no_such_value__" is a valid -o: the tool creates that file
	cd "$BATS_TEST_TMPDIR"
	n=0
	for t in $(tools); do
		for o in $("$KVP_BIN/$t" --help | grep -oE -- '--[a-z][a-z0-9-]*=' | sort -u); do
			choices=$("$KVP_BIN/$t" "${o}__no_such_value__" 2>&1 >/dev/null </dev/null |
				sed -nE 's/.*\(choices: ([^)]*)\).*/\1/p' | head -1)
			[ -n "$choices" ] || continue
			n=$((n + 1))
			got=$(complete_words "$t" "${o%=}" "=" "")
			for c in ${choices//,/ }; do
				grep -qxF -- "$c" <<<"$got" || fail "$t ${o}: '$c' not completed (got: $got)"
			done
		done
	done
	# the tools have at least this many keyword options today
	[ "$n" -ge 10 ] || fail "only $n keyword options found"
}

@test "every tool completes -k and -o" {
	for t in $(tools); do
		got=$(complete_words "$t" "-")
		grep -qxF -- -k <<<"$got" || fail "$t: -k not completed"
		grep -qxF -- -o <<<"$got" || fail "$t: -o not completed"
	done
}
