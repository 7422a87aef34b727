#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make check: run every test suite, then print one line over all of them.
# Suites: the host groups (selftests/run_tests.sh), then every
# scripts/suites/*.sh (the kmod VM bench and others), each of which ends
# with "NAME: N passed, N failed, N skipped".
cd "$(dirname "$0")/.." || exit 1
: "${O:?O (the build folder) must be set; run make check}"

total_p=0
total_f=0
total_s=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

add_summary() {
	line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		echo "check: suite '$1' printed no summary line; counting it as a failure"
		total_f=$((total_f + 1))
		return
	fi
	# shellcheck disable=SC2046 # the three counts, as words
	set -- $(echo "$line" | sed 's/^[a-z-]*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/')
	total_p=$((total_p + $1))
	total_f=$((total_f + $2))
	total_s=$((total_s + $3))
}

selftests/run_tests.sh -p host "$O/selftests" > "$log" 2>&1
rc=$?
cat "$log"
add_summary host
[ $rc -ne 0 ] && [ $total_f -eq 0 ] && total_f=1

for suite in scripts/suites/*.sh; do
	[ -x "$suite" ] || continue
	"$suite" > "$log" 2>&1
	rc=$?
	cat "$log"
	before=$total_f
	add_summary "$suite"
	[ $rc -ne 0 ] && [ $total_f -eq $before ] && total_f=$((total_f + 1))
done

echo
echo "$total_p passed, $total_f failed, $total_s skipped"
[ $total_f -eq 0 ]
