#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The fake driver exports exactly the entry points the library resolves:
# the dlsym names of ORTMEM_CUDA_CALLS (lib/device/device_internal.h) plus
# cuGetProcAddress and cuGetProcAddress_v2, and no other cu* symbol.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
hdr="$src/lib/device/device_internal.h"
fake="$here/fakecuda/libcuda.so.1"

[ -r "$hdr" ] && [ -r "$fake" ] || { echo "no source tree or fake driver beside this test"; exit $KSFT_SKIP; }
command -v nm >/dev/null || { echo "nm not installed"; exit $KSFT_SKIP; }

want=$( (sed -n 's/^[[:space:]]*X(cu[A-Za-z]*, \(cu[A-Za-z_0-9]*\),.*/\1/p' "$hdr"
	echo cuGetProcAddress; echo cuGetProcAddress_v2) | sort)
have=$(nm -D --defined-only "$fake" | awk '$2 == "T" && $3 ~ /^cu/ {print $3}' | sort)
n=$(echo "$want" | wc -l)
if [ "$n" -lt 30 ]; then
	echo "found only $n entry points in $hdr; the table's format changed?"
	exit 1
fi
if [ "$want" != "$have" ]; then
	echo "the fake's exports differ from the library's table (< table, > fake):"
	echo "$want" > /tmp/fake-want.$$
	echo "$have" > /tmp/fake-have.$$
	diff /tmp/fake-want.$$ /tmp/fake-have.$$
	rm -f /tmp/fake-want.$$ /tmp/fake-have.$$
	exit 1
fi
echo "ok: the fake exports exactly the $n entry points the library resolves"
