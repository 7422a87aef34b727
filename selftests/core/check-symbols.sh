#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The shared library exports exactly the symbols of lib/libortmem.map, under
# its version node, with the right soname.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
so=$(readlink -f "$build/lib/libortmem.so")
map="$src/lib/libortmem.map"

if [ ! -r "$map" ] || [ ! -r "$so" ]; then
	echo "no source tree or library beside this test (run from the build)"
	exit $KSFT_SKIP
fi
command -v nm >/dev/null || { echo "nm not installed"; exit $KSFT_SKIP; }

want=$(sed -e 's@/\*.*\*/@@' "$map" | grep -E '^[[:space:]]+[a-z_0-9]+;' |
	tr -d ' \t;' | sort)
have=$(nm -D --defined-only "$so" | awk '$2 == "T" || $2 == "D" || $2 == "B" || $2 == "R" {print $3}' |
	sed 's/@.*//' | sort)
if [ "$want" != "$have" ]; then
	echo "exported symbols differ from libortmem.map (< map, > library):"
	echo "$want" > /tmp/ortmem-want.$$
	echo "$have" > /tmp/ortmem-have.$$
	diff /tmp/ortmem-want.$$ /tmp/ortmem-have.$$
	rm -f /tmp/ortmem-want.$$ /tmp/ortmem-have.$$
	exit 1
fi
unversioned=$(nm -D --defined-only "$so" | awk '$2 == "T" && $3 !~ /@@ORTMEM_/ {print $3}')
if [ -n "$unversioned" ]; then
	echo "symbols without a version node: $unversioned"
	exit 1
fi
soname=$(objdump -p "$so" | awk '$1 == "SONAME" {print $2}')
case "$soname" in
libortmem.so.[0-9]*) ;;
*) echo "soname is '$soname', not libortmem.so.MAJOR"; exit 1 ;;
esac
echo "ok: $(echo "$have" | wc -l) symbols match the map; soname $soname"
