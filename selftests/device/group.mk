# SPDX-License-Identifier: MIT
#
# The device group runs against the fake CUDA driver of device/fakecuda/,
# built here as $(O)/selftests/device/fakecuda/libcuda.so.1 (with the same
# compiler and sanitizers as everything else) before the group's tests.

.DEFAULT_GOAL := all

FAKECUDA := $(O)/selftests/device/fakecuda/libcuda.so.1
FAKECUDA_SRCS := $(wildcard device/fakecuda/*.c)
# Every entry point defined (-z defs), except where clang's sanitizer
# runtimes cannot be linked into a shared object (as lib/Makefile).
FAKECUDA_ZDEFS := $(if $(and $(SAN),$(findstring clang,$(CC))),,-Wl,-z,defs)

$(patsubst %.c,$(O)/selftests/%,$(wildcard device/*.c)): $(FAKECUDA)

$(FAKECUDA): $(FAKECUDA_SRCS) device/fakecuda/fake.h $(TOPDIR)/lib/device/device_internal.h
	$(call msg,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -I$(TOPDIR)/lib -fPIC -shared -Wl,-soname,libcuda.so.1 \
		$(FAKECUDA_ZDEFS) -o $@ $(FAKECUDA_SRCS) $(ALL_LDFLAGS) -lpthread
