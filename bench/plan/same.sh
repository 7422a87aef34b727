#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/plan/same.sh OLD/libortmem.a NEW/libortmem.a [NODES]
#
# Is the offset packer in NEW the same search as in OLD?  Builds
# plan_same.c against each static library and compares their traces: the
# arena, iterations and a hash of every offset, packed under a node budget
# on one thread (deterministic), on bench/plan/data/*.csv and on random
# instances.  Exit 0 when equal.  A change that only makes nodes cheaper
# must keep them equal (Documentation/lib/planner-search.rst, "Nodes a second").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
old=$1 new=$2 nodes=${3:-150000}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
libs=$(cat "$(dirname "$new")/libs.txt" 2>/dev/null || echo "-lpthread -ldl")
for side in old new; do
	lib=$old
	[ "$side" = new ] && lib=$new
	# shellcheck disable=SC2086
	$cc -O2 -I"$top/include" -o "$tmp/$side" "$here/plan_same.c" "$lib" $libs
	"$tmp/$side" trace "$nodes" "$here"/data/*.csv > "$tmp/$side.txt" 2> "$tmp/$side.cpu"
	awk -v side=$side '{ s += $6 } END { printf "%s: %.3f s of CPU\n", side, s }' "$tmp/$side.cpu"
done
if cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
	echo "same: $(wc -l < "$tmp/new.txt") packings equal under $nodes nodes"
	exit 0
fi
echo "same: the traces differ (old, new):"
diff "$tmp/old.txt" "$tmp/new.txt" || true
exit 1
