# Sourced by bench scripts: best-of-N wall time of a command, in seconds.
#   t=$(best_time 3 sh -c 'cmd < in > /dev/null')
best_time() {
	n=$1
	shift
	best=
	i=0
	while [ "$i" -lt "$n" ]; do
		s=$(date +%s.%N)
		"$@" || return 1
		e=$(date +%s.%N)
		t=$(echo "$e - $s" | bc -l)
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
		i=$((i + 1))
	done
	printf '%.4f\n' "$best"
}
# ratio A B — A / B with 2 decimals
ratio() { printf '%.2f\n' "$(echo "$1 / $2" | bc -l)"; }
