#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build the test VM's initramfs: busybox, the kernel's virtio disk modules
# (with their dependencies, as modules.dep lists them), ortmem.ko, the
# selftests runner and test folders, and every shared library the test
# programs need (as ldd finds them, at the same paths).
#
#   mkinitramfs.sh OUT.cpio.gz KVER ORTMEM_KO TESTS_DIR...
#
# Each TESTS_DIR/GROUP/ folder becomes /selftests/GROUP/ in the guest;
# with BENCH_DIR set, its programs go to /bench.
set -eu

out=$1
kver=$2
ko=$3
shift 3

moddir=/lib/modules/$kver
root=$(mktemp -d)
chmod 0755 "$root"
trap 'rm -rf "$root"' EXIT

busybox=$(command -v busybox || true)
[ -n "$busybox" ] || { echo "mkinitramfs: busybox not found (install busybox-static)" >&2; exit 1; }
if ! file -L "$busybox" 2>/dev/null | grep -q 'statically linked'; then
	[ -x /bin/busybox ] && busybox=/bin/busybox
fi

mkdir -p "$root/bin" "$root/sbin" "$root/proc" "$root/sys" "$root/dev" \
	"$root/tmp" "$root/modules" "$root/selftests" "$root/etc"
cp "$busybox" "$root/bin/busybox"
echo 'root:x:0:0:root:/:/bin/sh' > "$root/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/:/bin/false' >> "$root/etc/passwd"

# Copy module REL (as modules.dep names it) into the initramfs as plain
# NAME.ko: 6.12's are xz-compressed, which the guest's insmod need not read.
copy_module() {
	name=$(basename "$1")
	case $name in
	*.ko.xz) xz -dc "$moddir/$1" > "$root/modules/${name%.xz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$1" > "$root/modules/${name%.zst}" ;;
	*.ko.gz) gzip -dc "$moddir/$1" > "$root/modules/${name%.gz}" ;;
	*) cp "$moddir/$1" "$root/modules/" ;;
	esac || { echo "mkinitramfs: cannot unpack $moddir/$1" >&2; exit 1; }
	echo "${name%.ko*}.ko" >> "$root/modules/order"
}

# Kernel modules for the virtio disk, dependencies first.  A driver built
# into this kernel (modules.builtin: virtio and virtio_pci on 6.12, modules
# on 6.1) needs nothing; one neither built in nor a module is an error.
add_module() {
	if grep -q "/$1\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
		echo "$1 (built in)" >> "$root/modules/builtin"
		return 0
	fi
	rel=$(sed -n "s|^\(kernel/[^:]*/$1\.ko[^:]*\):.*|\1|p" "$moddir/modules.dep")
	[ -n "$rel" ] || { echo "mkinitramfs: $1 is neither built into $kver nor in $moddir/modules.dep" >&2; exit 1; }
	for dep in $(sed -n "s|^$rel: *||p" "$moddir/modules.dep" | tr ' ' '\n' | tac) "$rel"; do
		base=$(basename "$dep")
		grep -qx "${base%.ko*}.ko" "$root/modules/order" && continue
		copy_module "$dep"
	done
}
: > "$root/modules/order"
add_module virtio_pci
add_module virtio_blk
# ext4 for the spill-mapping tests' file system (O_DIRECT on a real disk),
# and CRC32C for ext4 and ortmem.ko (libcrc32c needs an implementation of the
# "crc32c" hash loaded first; the guest has no modprobe to find one).
add_module crc32c_generic
# The SSE4.2 implementation too, when the kernel has it: the crypto API
# then prefers it for the module's verification.
grep -q '/crc32c-intel\.ko' "$moddir/modules.dep" && add_module crc32c-intel
add_module libcrc32c
add_module ext4
cp "$ko" "$root/modules/ortmem.ko"

# Tests, and the runner with its settings.
for dir in "$@"; do
	for group in "$dir"/*/; do
		[ -d "$group" ] || continue
		cp -a "$group" "$root/selftests/"
	done
done
if [ -n "${BENCH_DIR:-}" ]; then
	mkdir -p "$root/bench"
	cp -a "$BENCH_DIR"/. "$root/bench/"
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
install -m 0755 "$here/selftests/run_tests.sh" "$root/selftests/run_tests.sh"
install -m 0644 "$here/selftests/settings" "$root/selftests/settings"
install -m 0755 "$here/scripts/vm/init" "$root/init"

# Shared libraries, at the paths the programs look for them, and again in
# /vmlib (init puts it on LD_LIBRARY_PATH): a library under /tmp, where a
# checkout may live, would be hidden by the guest's tmpfs on /tmp.
find "$root/selftests" "$root/bench" -type f -perm -u+x 2>/dev/null | while read -r prog; do
	file -L "$prog" 2>/dev/null | grep -q 'dynamically linked' || continue
	ldd "$prog" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")" "$root/vmlib"
	cp -L "$lib" "$root$lib"
	cp -L "$lib" "$root/vmlib/"
done

(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out"
