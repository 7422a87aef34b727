#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every public header (include/ortmem/*.h and the uapi header) compiles on
# its own, first thing in a file, as C99 and as C++11, warnings as errors
# and pedantic; and every header that declares functions wraps them in
# extern "C", so that a C++ program links against the C library.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
[ -d "$src/include/ortmem" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=gcc
cxx=
for c in g++ clang++ c++; do command -v $c >/dev/null && { cxx=$c; break; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
n=0 status=0
for h in "$src"/include/ortmem/*.h "$src"/include/uapi/linux/ortmem.h; do
	case $h in
	*/uapi/*) name=linux/ortmem.h ;;
	*) name=ortmem/$(basename "$h") ;;
	esac
	printf '#include <%s>\nint ortmem_header_check;\n' "$name" > "$tmp/t.c"
	n=$((n + 1))
	if "$cc" -std=c99 -Wall -Wextra -Werror -pedantic-errors -I"$src/include" \
		-I"$src/include/uapi" -c -o "$tmp/t.o" "$tmp/t.c" > "$tmp/err" 2>&1; then
		echo "ok $n $name compiles alone as C99"
	else
		sed 's/^/# /' "$tmp/err"; echo "not ok $n $name compiles alone as C99"; status=1
	fi
	n=$((n + 1))
	if [ -z "$cxx" ]; then
		echo "ok $n $name as C++ # SKIP no C++ compiler"
	elif cp "$tmp/t.c" "$tmp/t.cc" && "$cxx" -std=c++11 -Wall -Wextra -Werror -pedantic-errors \
		-I"$src/include" -I"$src/include/uapi" -c -o "$tmp/t.o" "$tmp/t.cc" > "$tmp/err" 2>&1; then
		echo "ok $n $name compiles alone as C++11"
	else
		sed 's/^/# /' "$tmp/err"; echo "not ok $n $name compiles alone as C++11"; status=1
	fi
	n=$((n + 1))
	if ! grep -q '^ORTMEM_API' "$h" || grep -q 'extern "C"' "$h"; then
		echo "ok $n $name: its functions have C linkage in C++"
	else
		echo "not ok $n $name declares functions without extern \"C\""; status=1
	fi
done
echo "1..$n"
exit $status
