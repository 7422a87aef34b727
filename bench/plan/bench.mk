# SPDX-License-Identifier: MIT
#
# make bench-plan [MINIMALLOC_DIR=folder of id,lower,upper,size CSVs]
BENCHES += bench-plan bench-plan-orders
MINIMALLOC_DIR ?= $(CURDIR)/plan/data
PLAN_BUDGET_US ?= 1000000

$(O)/bench/plan/plan_bench: plan/plan_bench.c $(O)/lib/libortmem.so
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib -Wl,-rpath,$(O)/lib -lortmem

bench-plan: $(O)/bench/plan/plan_bench
	$(Q)$< $(PLAN_BUDGET_US) $(sort $(wildcard $(MINIMALLOC_DIR)/*.csv))

# make bench-plan-orders [PLAN_PACKING=packing.csv]: how far a search over
# placement orders gets (Documentation/lib/planner-search.rst, "Searching over
# orders").  Linked with libortmem.a for the packer's internals.
PLAN_PACKING ?= $(CURDIR)/plan/records/D.1003520.csv

$(O)/bench/plan/plan_orders: plan/plan_orders.c $(O)/lib/libortmem.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -I$(TOPDIR)/lib -o $@ $< $(ALL_LDFLAGS) $(O)/lib/libortmem.a $$(cat $(O)/lib/libs.txt)

bench-plan-orders: $(O)/bench/plan/plan_orders
	$(Q)$< $(PLAN_PACKING) $(PLAN_BUDGET_US)

# make bench-plan-same PLAN_BASE=other/build/libortmem.a [PLAN_NODES=150000]:
# is this library's packer the same search as PLAN_BASE's (equal packings
# under a node budget), and how much CPU each takes (bench/plan/same.sh).
PLAN_NODES ?= 150000

bench-plan-same: $(O)/lib/libortmem.a
	$(Q)test -n "$(PLAN_BASE)" || { echo "bench-plan-same: set PLAN_BASE=old/libortmem.a"; exit 1; }
	$(Q)CC="$(CC)" plan/same.sh $(PLAN_BASE) $(O)/lib/libortmem.a $(PLAN_NODES)
