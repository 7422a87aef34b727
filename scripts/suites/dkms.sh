#!/bin/sh
# SPDX-License-Identifier: MIT
#
# DKMS: "dkms add" the module's sources (dkms.conf, kmod/, include/uapi/) as
# "make install" installs them, then "dkms build" them for every
# installed kernel header set.  Everything happens in a DKMS tree and a
# source tree of its own under $O, so the system's /var/lib/dkms and
# /usr/src are not touched.
#
# Ends with "dkms: N passed, N failed, N skipped" (one test per kernel).
# Skips (exit 0) without dkms, without root (dkms insists) and under SAN=.
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
: "${O:=$top/build/gcc}"

skip() {
	echo "dkms: skipped: $*"
	echo "dkms: 0 passed, 0 failed, 1 skipped"
	exit 0
}
[ -n "${SAN:-}" ] && skip "SAN=$SAN: the module's build does not change with SAN, it runs in the plain make check"
command -v dkms >/dev/null || skip "dkms not installed (package dkms)"
[ "$(id -u)" -eq 0 ] || skip "dkms builds need root"
kernels=$(make -s -C kmod kernels | cut -d' ' -f1)
[ -n "$kernels" ] || skip "no kernel headers installed"

name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"/\1/p' dkms.conf)
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
work=$O/dkms
rm -rf "$work"
mkdir -p "$work/tree" "$work/install"
# What "make install" puts under PREFIX/src/NAME-VERSION for DKMS: the
# sources only, not a build of them.
if ! make -s install O="$O" DESTDIR="$work/root" PREFIX=/usr > "$work/install.log" 2>&1 ||
	[ ! -r "$work/root/usr/src/$name-$version/dkms.conf" ]; then
	sed 's/^/# /' "$work/install.log"
	echo "not ok dkms: make install puts the sources and dkms.conf under /usr/src/$name-$version"
	echo "dkms: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
mkdir -p "$work/src"
mv "$work/root/usr/src/$name-$version" "$work/src/"

dkms_run() {
	dkms "$@" --sourcetree "$work/src" --dkmstree "$work/tree" \
		--installtree "$work/install"
}

p=0 f=0
if ! dkms_run add -m "$name" -v "$version" > "$work/add.log" 2>&1; then
	sed 's/^/# /' "$work/add.log"
	echo "not ok dkms: dkms add $name/$version"
	echo "dkms: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
for kver in $kernels; do
	log=$work/build-$kver.log
	if dkms_run build -m "$name" -v "$version" -k "$kver" > "$log" 2>&1 &&
		ko=$(find "$work/tree/$name/$version/$kver" -name "$name.ko*" | head -n 1) &&
		[ -n "$ko" ] && modinfo -F vermagic "$ko" | grep -q "^$kver "; then
		echo "ok dkms: dkms build $name/$version for $kver (vermagic matches)"
		p=$((p + 1))
	else
		echo "not ok dkms: dkms build $name/$version for $kver"
		tail -n 20 "$log" | sed 's/^/# /'
		mk=$(find "$work/tree/$name/$version/$kver" -name make.log | head -n 1)
		[ -n "$mk" ] && tail -n 20 "$mk" | sed 's/^/# make.log: /'
		f=$((f + 1))
	fi
done
echo "dkms: $p passed, $f failed, 0 skipped"
[ "$f" -eq 0 ]
