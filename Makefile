# SPDX-License-Identifier: MIT
#
# ortmem top-level Makefile: it only dispatches.  See README.md.

include scripts/build.mk

.PHONY: all deps lib tools selftests kmod man check check-host check-vm kmod-all \
	bench install uninstall dist distcheck clean demo

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

# Install, as liburing and GDRCopy do: PREFIX (/usr/local), LIBDIR
# ($(PREFIX)/lib), DESTDIR (a staging root), UDEVDIR, DKMSDIR.  The module's
# sources go to DKMSDIR/ortmem-VERSION with dkms.conf, for
# "dkms install ortmem/VERSION" (Documentation/admin-guide/kernels.rst).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
UDEVDIR ?= $(PREFIX)/lib/udev/rules.d
DKMSDIR ?= $(PREFIX)/src
VERSION := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
DKMS_SRC := $(DKMSDIR)/ortmem-$(VERSION)
KMOD_SRCS := $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild kmod/Makefile kmod/conftest.sh

install: all
	$(Q)$(MAKE) -C lib install
	$(Q)$(MAKE) -C tools install
	$(Q)$(MAKE) -C Documentation install
	install -d $(DESTDIR)$(UDEVDIR)
	install -m 0644 udev/60-ortmem.rules $(DESTDIR)$(UDEVDIR)/
	install -d $(DESTDIR)$(DKMS_SRC)/kmod $(DESTDIR)$(DKMS_SRC)/include/uapi/linux
	install -m 0644 $(filter-out kmod/conftest.sh,$(KMOD_SRCS)) $(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 0755 kmod/conftest.sh $(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 0644 include/uapi/linux/ortmem.h $(DESTDIR)$(DKMS_SRC)/include/uapi/linux/
	sed 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' dkms.conf > $(DESTDIR)$(DKMS_SRC)/dkms.conf

# A release tarball of the committed tree (git archive: exactly what is
# tracked, nothing built), build/ortmem-VERSION.tar.gz; distcheck unpacks it
# elsewhere and runs make check there, as automake's distcheck does.
DIST := ortmem-$(VERSION)
DIST_TAR := $(TOPDIR)/build/$(DIST).tar.gz

dist:
	@git -C $(TOPDIR) diff --quiet HEAD -- || \
		echo "dist: uncommitted changes are not in the tarball (it is made from HEAD)" >&2
	@mkdir -p $(TOPDIR)/build
	$(Q)git -C $(TOPDIR) archive --format=tar.gz --prefix=$(DIST)/ -o $(DIST_TAR) HEAD
	@echo "dist: $(DIST_TAR)"

distcheck: dist
	$(Q)rm -rf $(TOPDIR)/build/distcheck && mkdir -p $(TOPDIR)/build/distcheck
	$(Q)tar -C $(TOPDIR)/build/distcheck -xzf $(DIST_TAR)
	$(Q)env -u O $(MAKE) -C $(TOPDIR)/build/distcheck/$(DIST) check
	@echo "distcheck: $(DIST_TAR) builds and passes make check"

uninstall:
	$(Q)$(MAKE) -C lib uninstall
	$(Q)$(MAKE) -C tools uninstall
	$(Q)$(MAKE) -C Documentation uninstall
	rm -f $(DESTDIR)$(UDEVDIR)/60-ortmem.rules
	rm -rf $(DESTDIR)$(DKMS_SRC)

clean:
	$(Q)rm -rf build
	$(Q)$(MAKE) -C kmod clean 2>/dev/null || true
