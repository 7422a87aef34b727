# SPDX-License-Identifier: MIT
#
# bench-kmod: the page-design numbers, measured in the qemu VM (TCG) with
# the module loaded.  pagebench is built by selftests/kmod/group.mk.
BENCHES += bench-kmod

bench-kmod:
	$(Q)cd $(TOPDIR) && ORTMEM_VM_BENCH=1 scripts/suites/vm.sh
