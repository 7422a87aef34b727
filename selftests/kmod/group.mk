# SPDX-License-Identifier: MIT
#
# The kmod group runs in the VM only (scripts/suites/vm.sh), so its programs
# go to $(O)/vm/selftests/kmod, out of reach of the host runner.  They link
# against the shared libc and liburing; the initramfs builder copies every
# library ldd names.  "make -C selftests vm-progs" builds them.

.DEFAULT_GOAL := all

KMOD_SRCS := $(wildcard kmod/*.c)
KMOD_PROGS := $(patsubst kmod/%.c,$(O)/vm/selftests/kmod/%,$(KMOD_SRCS))

$(O)/vm/selftests/kmod/%: kmod/%.c kmod/ortmem_test.h kmod/spill_test.h kmod/spill_fixture.h harness.h harness_run.h \
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

# compat32: the same ABI from an i386 process (the module's compat_ioctl),
# static so the guest needs no 32-bit libc.  gcc-multilib provides -m32;
# without it the program is a script that skips with the reason.
M32_OK := $(shell printf 'int main(void){return 0;}' | \
	$(CC) -m32 -static -x c -o /dev/null - 2>/dev/null && echo y)
$(O)/vm/selftests/kmod/compat32: kmod/m32/compat32.c kmod/ortmem_test.h \
		$(TOPDIR)/include/uapi/linux/ortmem.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
ifeq ($(M32_OK),y)
	$(Q)$(CC) -m32 -static -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
		-I$(TOPDIR)/include $(WARNINGS) $(CFLAGS) -o $@ $<
else
	$(Q)printf '#!/bin/sh\necho "# SKIP $(CC) -m32 -static does not link (install gcc-multilib)"\nexit 4\n' > $@
	$(Q)chmod +x $@
endif

# And the spill-mapping benchmark (the fault-back and restore figures).
$(O)/vm/bench/spillbench: $(TOPDIR)/bench/kmod/spillbench.c kmod/spill_test.h \
		$(TOPDIR)/include/uapi/linux/ortmem.h
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) $(shell pkg-config --libs liburing)

vm-progs: $(KMOD_PROGS) $(O)/vm/selftests/kmod/compat32 $(O)/vm/bench/pagebench \
	$(O)/vm/bench/spillbench

.PHONY: vm-progs
