#!/bin/sh
# SPDX-License-Identifier: MIT
#
# DKMS: the module sources and dkms.conf that make install puts under
# PREFIX/src/ortmem-VERSION pass "dkms add" and "dkms build" against an
# installed Debian kernel header set, in a DKMS tree of our own (nothing is
# added to the system's).  Skips without dkms or kernel headers.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
[ -r "$src/Makefile" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }
command -v dkms >/dev/null || { echo "dkms not installed"; exit $KSFT_SKIP; }
case $(basename "$build") in
*-*) echo "the module does not depend on the sanitizer build; tested in the plain one"; exit $KSFT_SKIP ;;
esac
kver=$(make -s -C "$src/kmod" kernels 2>/dev/null | head -n 1 | cut -d' ' -f1)
[ -n "$kver" ] || { echo "no kernel headers installed (linux-headers-amd64)"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
fail() { sed 's/^/# /' "$tmp/log"; echo "not ok 1 dkms add/build for $kver: $*"; exit 1; }
echo "TAP version 13"
echo "1..1"
make -s -C "$src" O="$build" install DESTDIR="$tmp/root" PREFIX=/usr > "$tmp/log" 2>&1 ||
	fail "make install"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$tmp"/root/usr/src/ortmem-*/dkms.conf)
set -- -m ortmem -v "$ver" --sourcetree "$tmp/root/usr/src" --dkmstree "$tmp/tree"
dkms add "$@" > "$tmp/log" 2>&1 || fail "dkms add"
dkms build "$@" -k "$kver" > "$tmp/log" 2>&1 || fail "dkms build"
ko=$(find "$tmp/tree" -name 'ortmem.ko*' | head -n 1)
[ -n "$ko" ] && modinfo "$ko" | grep -q "^vermagic: *$kver " || fail "no ortmem.ko for $kver"
echo "ok 1 dkms add/build of the installed sources for $kver"
