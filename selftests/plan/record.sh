#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The packings in bench/plan/records/ are what they claim: each one's
# buffers are those of its instance (same lifetimes and sizes, same order),
# no two buffers live at the same time overlap in [offset, offset + size),
# and its height (the highest top) is the one in its name.  Half-open
# lifetimes, as in the instances: [lower, upper).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
dir=$src/bench/plan/records
[ -d "$dir" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }

echo "TAP version 13"
n=0 status=0
for rec in "$dir"/*.csv; do
	name=$(basename "$rec" .csv)
	inst=$src/bench/plan/data/${name%%.*}.1048576.csv
	claim=${name#*.}
	n=$((n + 1))
	if ! [ -f "$inst" ]; then
		echo "not ok $n $name: no instance ${inst##*/}"; status=1; continue
	fi
	out=$(awk -F, -v claim="$claim" '
		FNR == 1 { next }
		NR == FNR { want[$1] = $2 "," $3 "," $4; ni++; next }
		{
			if (want[$1] != $2 "," $3 "," $4) { print "buffer " $1 " differs from the instance"; bad = 1 }
			id[m] = $1; lo[m] = $2; hi[m] = $3; sz[m] = $4; off[m] = $5; m++
			if ($5 + $4 > h) h = $5 + $4
		}
		END {
			if (m != ni) { print "has " m " buffers, the instance " ni; bad = 1 }
			for (i = 0; i < m; i++)
				for (j = i + 1; j < m; j++)
					if (lo[i] < hi[j] && lo[j] < hi[i] &&
					    off[i] < off[j] + sz[j] && off[j] < off[i] + sz[i]) {
						print "buffers " id[i] " and " id[j] " overlap"; bad = 1
					}
			if (h != claim) { print "height " h ", name says " claim; bad = 1 }
			print "height " h
			exit bad
		}' "$inst" "$rec")
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc -eq 0 ]; then
		echo "ok $n $name packs ${name%%.*} at $claim"
	else
		echo "not ok $n $name"; status=1
	fi
done
echo "1..$n"
exit $status
