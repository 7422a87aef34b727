#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The kmod test bench for one kernel (scripts/suites/vm.sh runs it once per
# installed kernel): build ortmem.ko against KVER's headers, boot
# /boot/vmlinuz-KVER under qemu with the kmod selftests and the library's
# host-tier tests (built by vm.sh into $O/vm/selftests and $O/vm/lib-tests),
# and check the TAP results and the kernel log.
#
#   kernel.sh KVER
#
# Ends with "# vm: kernel KVER ..." and "vm: N passed, N failed, N skipped";
# the count is the guest's tests plus the checks of its own (the builds are
# clean, the module loads, the kernel log is clean, rmmod works with
# nothing outstanding).  A kernel without its image counts as one skip.
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
: "${O:=$top/build/gcc}"
kver=$1

skip() {
	echo "vm: skipped: kernel $kver: $*"
	echo "vm: 0 passed, 0 failed, 1 skipped"
	exit 0
}
fail() {
	echo "vm: kernel $kver: $*"
	echo "vm: 0 passed, 1 failed, 0 skipped"
	exit 1
}

kdir=/lib/modules/$kver/build
[ -f "$kdir/Makefile" ] || skip "no headers in $kdir (package linux-headers-$kver)"
kernel=/boot/vmlinuz-$kver
[ -r "$kernel" ] || skip "no $kernel for the headers in $kdir (package linux-image-$kver)"
[ -r "/lib/modules/$kver/modules.dep" ] || skip "no /lib/modules/$kver/modules.dep"

vm=$O/vm/$kver
mkdir -p "$vm"
# The production build first (it must hold no fault injection), then the
# debug build the guest loads.  MAKEFLAGS is cleared: the kernel's build
# runs its own make, and a parent's -jN would only make it warn.
# ORTMEM_VM_KO_REUSE=1 (benchmarks only) boots the last build as it is, so
# that a benchmark holding the machine's bench lock does not build.
build_ko() {
	sparse=$(command -v sparse >/dev/null && echo 1 || echo 0)
	MAKEFLAGS='' make -s -C kmod KDIR="$kdir" W=1 C=$sparse \
		> "$vm/kmod-build.log" 2>&1 ||
		{ cat "$vm/kmod-build.log"; fail "building ortmem.ko failed"; }
	cp kmod/ortmem.ko "$prod_ko"
	MAKEFLAGS='' make -s -C kmod KDIR="$kdir" W=1 C=$sparse ORTMEM_DEBUG=1 \
		>> "$vm/kmod-build.log" 2>&1 ||
		{ cat "$vm/kmod-build.log"; fail "building ortmem.ko with ORTMEM_DEBUG=1 failed"; }
	cp kmod/ortmem.ko "$vm/ortmem-debug.ko"
}
prod_ko=$vm/ortmem-prod.ko
if [ "${ORTMEM_VM_BENCH:-0}" = 1 ] && [ "${ORTMEM_VM_KO_REUSE:-0}" = 1 ] &&
	[ -f "$vm/ortmem-debug.ko" ]; then
	echo "# vm: kernel $kver: booting the ortmem.ko built before (ORTMEM_VM_KO_REUSE=1)"
else
	build_ko
fi
[ "${ORTMEM_VM_BENCH:-0}" = 1 ] && export BENCH_DIR="$O/vm/bench"
scripts/vm/mkinitramfs.sh "$vm/initramfs.cpio.gz" "$kver" "$vm/ortmem-debug.ko" \
	"$O/vm/selftests" "$O/vm/lib-tests" || fail "building the initramfs failed"
rm -f "$vm/disk.img" "$vm/swap.img"
truncate -s 64M "$vm/disk.img"
truncate -s 64M "$vm/swap.img"
# ext4 on a virtio disk for the spill-mapping tests (/dev/vdc in the guest,
# mounted on /mnt/spill): O_DIRECT there is real, as on a user's disk.
rm -f "$vm/spill.img"
truncate -s 1G "$vm/spill.img"
mkfs=$(command -v mkfs.ext4 || echo /sbin/mkfs.ext4)
"$mkfs" -q -F -E nodiscard "$vm/spill.img" > "$vm/mkfs.log" 2>&1 ||
	{ cat "$vm/mkfs.log"; fail "mkfs.ext4 of the spill disk failed (package e2fsprogs)"; }
export SPILL_IMAGE="$vm/spill.img"

fuzz=${ORTMEM_VM_FUZZ_SECONDS:-60}
limit=${ORTMEM_VM_TIMEOUT:-600}
# The benchmarks move 256 MiB many times over under TCG: give them longer.
[ "${ORTMEM_VM_BENCH:-0}" = 1 ] && limit=${ORTMEM_VM_TIMEOUT:-900}
t0=$(date +%s)
mode='test'
[ "${ORTMEM_VM_BENCH:-0}" = 1 ] && mode=bench
# Whether this kernel's io_uring registers the module's mapping as a fixed
# buffer, as measured (Documentation/kmod/page-design.rst): the library
# probes it at run time, and selftests/host/host_fixed checks the answer.
case $kver in
6.1.*) fixed=no ;;
6.12.*) fixed=yes ;;
*) fixed=any ;;
esac
boot() {
	scripts/vm/run.sh "$kernel" "$vm/initramfs.cpio.gz" "$vm/disk.img" "$vm/swap.img" "$limit" \
		"ortmemvm_fuzz=$fuzz ortmemvm_mode=$mode ortmemvm_fixed=$fixed${ORTMEM_VM_BENCH_ONLY:+ ortmemvm_only=$ORTMEM_VM_BENCH_ONLY}" > "$vm/console.log" 2>&1
	rc=$?
	tr -d '\r' < "$vm/console.log" > "$vm/console.txt"
}
boot
# A guest kernel that panics before the init script loads the module died of
# the emulator, not of ortmem (run.sh says how): boot it once more, and say so.
if ! grep -q '^@@ortmem-vm insmod' "$vm/console.txt" && grep -q 'Kernel panic' "$vm/console.txt"; then
	mv "$vm/console.txt" "$vm/console-first-boot.txt"
	echo "# vm: kernel $kver panicked while booting, before ortmem.ko was loaded; booting it again (first console in $vm/console-first-boot.txt):"
	grep -E -m 2 'RIP: |Kernel panic' "$vm/console-first-boot.txt" | sed 's/^/#   /'
	boot
fi
t1=$(date +%s)

if [ "$mode" = bench ]; then
	echo "# vm: kernel $kver, qemu TCG (-smp 2 -m 1024), $((t1 - t0)) s wall"
	grep '^pagebench\|^spillbench\|^spill-map:\|^fixed:' "$vm/console.txt"
	grep -q '@@ortmem-vm bench-end rc=0' "$vm/console.txt"
	exit
fi

# The guest's test output, then our own checks.
sed -n '/^@@ortmem-vm tests-begin/,/^@@ortmem-vm tests-end/p' "$vm/console.txt" |
	grep -v '^@@'
p=0 f=0 s=0
line=$(grep -E '^inner: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$vm/console.txt" | tail -n 1)
if [ -n "$line" ]; then
	# shellcheck disable=SC2046 # the three counts, as words
	set -- $(echo "$line" | sed 's/^inner: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/')
	p=$1 f=$2 s=$3
else
	echo "vm: FAIL the guest printed no test summary (qemu exit $rc; see $vm/console.txt)"
	tail -n 30 "$vm/console.txt" | sed 's/^/# /'
	f=$((f + 1))
fi

check() {
	if grep -q "@@ortmem-vm $1 ok" "$vm/console.txt"; then
		echo "ok vm: $2"
		p=$((p + 1))
	else
		echo "not ok vm: $2"
		f=$((f + 1))
	fi
}
if grep -q 'warning:\|error:' "$vm/kmod-build.log"; then
	echo "not ok vm: ortmem.ko builds without warnings (W=1, sparse)"
	sed 's/^/# /' "$vm/kmod-build.log" | head -n 20
	f=$((f + 1))
else
	echo "ok vm: ortmem.ko builds without warnings (W=1, sparse)"
	p=$((p + 1))
fi
kerneldoc=$kdir/scripts/kernel-doc
if [ -x "$kerneldoc" ]; then
	if perl "$kerneldoc" -none -Werror kmod/*.[ch] include/uapi/linux/ortmem.h \
		include/ortmem/host.h > "$vm/kernel-doc.log" 2>&1; then
		echo "ok vm: kernel-doc is clean on kmod/, the uapi header and ortmem/host.h"
		p=$((p + 1))
	else
		echo "not ok vm: kernel-doc is clean on kmod/, the uapi header and ortmem/host.h"
		sed 's/^/# /' "$vm/kernel-doc.log" | head -n 20
		f=$((f + 1))
	fi
fi
# The production build has no injection point, no debugfs file, no knob.
if nm "$prod_ko" | grep -q 'ortmem_should_fail\|ortmem_fault_inject' ||
	grep -q 'fault injection compiled in' "$prod_ko" ||
	! nm "$vm/ortmem-debug.ko" | grep -q ortmem_should_fail; then
	echo "not ok vm: fault injection is in the ORTMEM_DEBUG=1 build only"
	f=$((f + 1))
else
	echo "ok vm: fault injection is in the ORTMEM_DEBUG=1 build only"
	p=$((p + 1))
fi
check insmod "ortmem.ko loads"
check outstanding "no page outstanding after the tests"
check rmmod "rmmod ortmem succeeds after the tests"

sed -n '/^@@ortmem-vm dmesg-begin/,/^@@ortmem-vm dmesg-end/p' "$vm/console.txt" > "$vm/dmesg.txt"
if [ ! -s "$vm/dmesg.txt" ]; then
	echo "not ok vm: kernel log collected"
	f=$((f + 1))
elif grep -E 'WARNING:|BUG:|Oops|general protection fault|possible circular locking|possible recursive locking|INFO: rcu|KASAN|UBSAN|kernel BUG|Call Trace' "$vm/dmesg.txt" > "$vm/dmesg-bad.txt"; then
	echo "not ok vm: kernel log is clean"
	sed 's/^/# /' "$vm/dmesg-bad.txt" | head -n 40
	f=$((f + 1))
else
	echo "ok vm: kernel log is clean"
	p=$((p + 1))
fi
guest=$(sed -n 's/^@@ortmem-vm guest-seconds \([0-9.]*\) \([0-9.]*\)$/\1 \2/p' "$vm/console.txt")
echo "# vm: kernel $kver, qemu TCG, $((t1 - t0)) s wall for boot + tests + poweroff${guest:+ (guest uptime at start/end of tests: $guest)}; console in $vm/console.txt"
echo "vm: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
