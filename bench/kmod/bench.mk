# SPDX-License-Identifier: MIT
#
# bench-kmod: the page-design numbers, measured in the qemu VM (TCG) with
# the module loaded.  pagebench is built by selftests/kmod/group.mk.
BENCHES += bench-kmod

bench-kmod:
	$(Q)cd $(TOPDIR) && ORTMEM_VM_BENCH=1 scripts/suites/vm.sh

# bench-kmod-fixed: only bench/spill/fixed.c, in the VM on every kernel
# (the module's mapping: fixed buffers on 6.12, the plain path on 6.1).
BENCHES += bench-kmod-fixed

bench-kmod-fixed: $(O)/bench/spill/fixed
	$(Q)cd $(TOPDIR) && ORTMEM_VM_BENCH=1 ORTMEM_VM_BENCH_ONLY=fixed scripts/suites/vm.sh
