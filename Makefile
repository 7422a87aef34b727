# SPDX-License-Identifier: MIT
#
# ortmem top-level Makefile: it only dispatches.  See README.md.

include scripts/build.mk

.PHONY: all deps lib tools selftests kmod man check check-host check-vm kmod-all \
	bench install clean demo

all: lib tools selftests man

deps:
	$(Q)scripts/deps.sh

lib:
	$(Q)$(MAKE) -C lib

tools: lib
	$(Q)$(MAKE) -C tools

selftests: lib
	$(Q)$(MAKE) -C selftests

man:
	$(Q)$(MAKE) -C Documentation man

# For the running kernel, or KDIR=...; kmod-all: for every installed
# header set (build/kmod/KVER/ortmem.ko).  See Documentation/admin-guide/.
kmod:
	$(Q)$(MAKE) -C kmod $(if $(KDIR),KDIR=$(KDIR))

kmod-all:
	$(Q)$(MAKE) -C kmod all-kernels OUT=$(TOPDIR)/build/kmod

# The whole suite: host groups, then (where kmod/ provides it) the VM group,
# then one summary line over everything.
check: deps
	$(Q)$(MAKE) all
	$(Q)scripts/check.sh

check-host: all
	$(Q)selftests/run_tests.sh $(O)/selftests

# The kmod group and the library's host-tier tests in a qemu VM (TCG), once
# per installed kernel (ORTMEM_VM_KERNELS="KVER ..." to choose).
check-vm: all
	$(Q)scripts/suites/vm.sh

# The main job: a 2.25 GiB model streamed through a host budget of 1/8 of
# it, with the output it has in RAM (scripts/demo.sh).
demo: deps
	$(Q)$(MAKE) lib tools
	$(Q)scripts/demo.sh

bench: deps all
	$(Q)$(MAKE) -C bench

bench-%: deps all
	$(Q)$(MAKE) -C bench bench-$*

install: all
	$(Q)$(MAKE) -C lib install
	$(Q)$(MAKE) -C tools install
	$(Q)$(MAKE) -C Documentation install

clean:
	$(Q)rm -rf build
	$(Q)$(MAKE) -C kmod clean 2>/dev/null || true
