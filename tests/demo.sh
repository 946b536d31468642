#!/bin/sh
# make demo: the main pipeline on bundled sample data.
set -e
cd "$(dirname "$0")/.."
B=${O:-build}/bin
echo "# kvpipe demo (binaries in $B)"
for t in kv-decode kv-normalize route-score mm-expand kv-hash; do
	[ -x "$B/$t" ] || { echo "demo: $t not built yet"; }
done
