#!/bin/sh
# SPDX-License-Identifier: MIT
#
# kernel-doc comments in include/, lib/ and kmod/ are well formed: every
# documented function describes each parameter (kernel-doc -none -Werror,
# from Debian's linux-headers package).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
[ -d "$src/include" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }
kdoc=$(ls /usr/src/linux-headers-*/scripts/kernel-doc 2>/dev/null | head -n 1)
[ -n "$kdoc" ] || { echo "kernel-doc not found (package linux-headers-amd64)"; exit $KSFT_SKIP; }

cd "$src" || exit 1
files=$(find include lib kmod -name '*.[ch]' 2>/dev/null | sort)
perl "$kdoc" -none -Werror $files || exit 1
echo "ok: kernel-doc clean in $(echo "$files" | wc -l) files"
