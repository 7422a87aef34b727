#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The kmod test bench: for every installed kernel that has both its image
# and its headers (Debian 12's 6.1 and 6.12 after make deps), build
# ortmem.ko against that kernel and boot it under qemu with the kmod
# selftests and the library's host-tier tests (the host group and
# governor/host_tier); scripts/vm/kernel.sh does one kernel.
#
# Prints, per kernel, its tests, "# vm: kernel KVER ..." and
# "vm: N passed, N failed, N skipped"; then "vm-all: ..." over all kernels,
# the line make check counts.  Skips (exit 0) under SAN= builds and when
# qemu, busybox or any kernel is missing.
#
# Environment: O (build folder, set by make), ORTMEM_VM_KERNELS ("KVER ..."
# to test only those), ORTMEM_VM_FUZZ_SECONDS (60), ORTMEM_VM_TIMEOUT (600 s
# a kernel: a guest needs 110-250 s with the spill-mapping tests, more on a
# loaded machine; 900 for the bench), ORTMEM_VM_BENCH=1 (run
# bench/kmod/pagebench and spillbench in the VM instead of the tests; make
# bench-kmod), ORTMEM_VM_BENCH_ONLY=fixed (only bench/spill/fixed.c; make
# bench-kmod-fixed), =spill (only spillbench), =spill-sweep (spillbench's
# restore at each step size, SPILLBENCH_SWEEP=1).
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
: "${O:=$top/build/gcc}"
export O

skip() {
	echo "vm: skipped: $*"
	echo "vm-all: 0 passed, 0 failed, 1 skipped"
	exit 0
}

[ -n "${SAN:-}" ] && skip "SAN=$SAN builds are not run in the VM (the guest has no sanitizer runtime setup)"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (package qemu-system-x86)"
command -v busybox >/dev/null || skip "busybox not installed (package busybox-static)"
command -v cpio >/dev/null || skip "cpio not installed"

kernels=${ORTMEM_VM_KERNELS:-$(make -s -C kmod kernels | cut -d' ' -f1)}
[ -n "$kernels" ] || skip "no kernel headers (packages linux-headers-amd64, linux-headers-6.12-amd64)"

mkdir -p "$O/vm"
if ! make -s -C selftests vm-progs > "$O/vm/progs-build.log" 2>&1; then
	cat "$O/vm/progs-build.log"
	echo "vm: building the kmod selftests failed"
	echo "vm-all: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
# The library's host-tier tests run in the guest too, this time with the module.
rm -rf "$O/vm/lib-tests"
mkdir -p "$O/vm/lib-tests"
[ -d "$O/selftests/host" ] && cp -a "$O/selftests/host" "$O/vm/lib-tests/"
# And the governor on the host tier (ortmem_backend_host()), module-backed.
if [ -x "$O/selftests/governor/host_tier" ]; then
	mkdir -p "$O/vm/lib-tests/governor"
	cp -a "$O/selftests/governor/host_tier" "$O/vm/lib-tests/governor/"
fi
# ortmem-stat through the module: the script, its holder and the tool.
if [ -x "$O/selftests/governor/stat-module.sh" ] && [ -x "$O/tools/ortmem-stat" ]; then
	mkdir -p "$O/vm/lib-tests/governor/fixtures"
	cp -a "$O/selftests/governor/stat-module.sh" "$O/vm/lib-tests/governor/"
	cp -a "$O/selftests/governor/fixtures/holder" "$O/tools/ortmem-stat" \
		"$O/vm/lib-tests/governor/fixtures/"
fi

# The fixed-buffer bench links libortmem: it runs on the module in the guest.
if [ "${ORTMEM_VM_BENCH:-0}" = 1 ] && [ -x "$O/bench/spill/fixed" ]; then
	mkdir -p "$O/vm/bench"
	cp -a "$O/bench/spill/fixed" "$O/vm/bench/"
fi

p=0 f=0 s=0 rc=0
for kver in $kernels; do
	out=$O/vm/kernel-$kver.out
	scripts/vm/kernel.sh "$kver" > "$out" 2>&1 || rc=1
	cat "$out"
	[ "${ORTMEM_VM_BENCH:-0}" = 1 ] && continue
	line=$(grep -E '^vm: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "vm: kernel $kver printed no summary line; counting it as a failure"
		f=$((f + 1))
		continue
	fi
	# shellcheck disable=SC2046 # the three counts, as words
	set -- $(echo "$line" | sed 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/')
	p=$((p + $1)) f=$((f + $2)) s=$((s + $3))
done
[ "${ORTMEM_VM_BENCH:-0}" = 1 ] && exit $rc
echo "# vm-all: $(echo $kernels | wc -w) kernels: $(echo $kernels)"
echo "vm-all: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ] && [ $rc -eq 0 ]
