# SPDX-License-Identifier: MIT
#
# The kmod group runs in the VM only (scripts/suites/vm.sh), so its programs
# go to $(O)/vm/selftests/kmod, out of reach of the host runner.  They link
# against the shared libc and liburing; the initramfs builder copies every
# library ldd names.  "make -C selftests vm-progs" builds them.

.DEFAULT_GOAL := all

KMOD_SRCS := $(wildcard kmod/*.c)
KMOD_PROGS := $(patsubst kmod/%.c,$(O)/vm/selftests/kmod/%,$(KMOD_SRCS))

$(O)/vm/selftests/kmod/%: kmod/%.c kmod/ortmem_test.h harness.h harness_run.h \
		$(TOPDIR)/include/uapi/linux/ortmem.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -I. -o $@ $< $(ALL_LDFLAGS) \
		$(shell pkg-config --libs liburing) -lpthread

# The page-design benchmark runs in the same VM (make bench-kmod).
$(O)/vm/bench/pagebench: $(TOPDIR)/bench/kmod/pagebench.c $(TOPDIR)/include/uapi/linux/ortmem.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(shell pkg-config --libs liburing)

vm-progs: $(KMOD_PROGS) $(O)/vm/bench/pagebench

.PHONY: vm-progs
