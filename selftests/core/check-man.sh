#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every exported function has a man page: its name stands in the NAME
# section of some Documentation/man/*.3.rst, and that page has the liburing
# sections (SYNOPSIS, DESCRIPTION, RETURN VALUE, ERRORS, SEE ALSO).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
map="$src/lib/libortmem.map"
mandir="$src/Documentation/man"

if [ ! -r "$map" ] || [ ! -d "$mandir" ]; then
	echo "no source tree beside this test"
	exit $KSFT_SKIP
fi
status=0
for page in "$mandir"/*.3.rst; do
	for section in SYNOPSIS DESCRIPTION "RETURN VALUE" ERRORS "SEE ALSO"; do
		if ! grep -q "^$section\$" "$page"; then
			echo "$page: no $section section"
			status=1
		fi
	done
done
# The NAME section's first paragraph lists the functions a page covers.
covered=$(for page in "$mandir"/*.3.rst; do
	awk '/^NAME$/ {getline; getline; getline; while ($0 != "") {print; if (getline <= 0) break}}' "$page"
done | sed 's/ \\- .*//; s/ - .*//' | tr ',' '\n' | tr -d ' ' | sort -u)
for sym in $(sed -e 's@/\*.*\*/@@' "$map" | grep -E '^[[:space:]]+[a-z_0-9]+;' | tr -d ' \t;'); do
	if ! echo "$covered" | grep -qx "$sym"; then
		echo "$sym: exported but no man page names it"
		status=1
	fi
done
[ $status -eq 0 ] && echo "ok: every exported function has a man page"
exit $status
