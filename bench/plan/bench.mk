# SPDX-License-Identifier: MIT
#
# make bench-plan [MINIMALLOC_DIR=folder of id,lower,upper,size CSVs]
BENCHES += bench-plan
MINIMALLOC_DIR ?= $(CURDIR)/plan/data
PLAN_BUDGET_US ?= 1000000

$(O)/bench/plan/plan_bench: plan/plan_bench.c $(O)/lib/libortmem.so
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib -Wl,-rpath,$(O)/lib -lortmem

bench-plan: $(O)/bench/plan/plan_bench
	$(Q)$< $(PLAN_BUDGET_US) $(sort $(wildcard $(MINIMALLOC_DIR)/*.csv))
