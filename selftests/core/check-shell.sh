#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every shell script of the tree passes shellcheck at warning level: the
# test scripts, the benches, the build and VM scripts and .ci/run.  A
# warning there is often a real fault (a variable set under one name and
# read under another, a cd that may fail silently, a test whose failure
# flag is never read); where a warning is meant (words split on purpose),
# the script says so in a "shellcheck disable" line with the reason.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)

if [ ! -d "$src/scripts" ] || [ ! -d "$src/selftests" ]; then
	echo "no source tree beside this test"
	exit $KSFT_SKIP
fi
if ! command -v shellcheck >/dev/null; then
	echo "no shellcheck (package shellcheck; make deps installs it)"
	exit $KSFT_SKIP
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# *.sh anywhere but the build folders, and the scripts without the suffix
# that a shell runs (their first line names one)
find "$src" \( -path "$src/build" -o -path "$src/.git" -o -name node_modules \) -prune -o \
	-type f -name '*.sh' -print > "$list"
for f in "$src/.ci/"* "$src/scripts/"* "$src/scripts/"*/*; do
	case $f in *.sh) continue ;; esac
	[ -f "$f" ] && head -n 1 "$f" | grep -q '^#!.*sh$' && echo "$f" >> "$list"
done
n=$(wc -l < "$list")
if [ "$n" -lt 10 ]; then
	echo "found only $n shell scripts under $src: the search is broken"
	exit 1
fi
# a path a line: the source tree may sit under a folder with spaces
status=0
while read -r f; do
	shellcheck -S warning -f gcc "$f" || status=1
done < "$list"
[ $status -eq 0 ] && echo "ok: $n shell scripts pass shellcheck at warning level"
exit $status
