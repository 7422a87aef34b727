# SPDX-License-Identifier: MIT
#
# make bench-spill: fio (io_uring, O_DIRECT), ortmem's spill engine and plain
# pread at QD1, interleaved, several runs each, on files of SPILL_BENCH_SIZE
# in SPILL_BENCH_DIR (a disk filesystem, not tmpfs; removed afterwards).

BENCHES += bench-spill

SPILL_BENCH_DIR ?= /var/tmp/ortmem-bench
SPILL_BENCH_SIZE ?= 2G
SPILL_BENCH_RUNS ?= 3

SPILL_ISAL := $(shell pkg-config --exists libisal 2>/dev/null && echo yes)

$(O)/bench/spill/pread-qd1: spill/pread-qd1.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $<

$(O)/bench/spill/csum: spill/csum.c
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(if $(SPILL_ISAL),-DHAVE_ISAL) -o $@ $< \
		$(shell pkg-config --libs libxxhash $(if $(SPILL_ISAL),libisal))

bench-spill: $(O)/bench/spill/pread-qd1 $(O)/bench/spill/csum
	$(Q)SPILL_BENCH_DIR='$(SPILL_BENCH_DIR)' SPILL_BENCH_SIZE='$(SPILL_BENCH_SIZE)' \
		SPILL_BENCH_RUNS='$(SPILL_BENCH_RUNS)' spill/run.sh

# make bench-fixed: host-tier buffers moved with io_uring fixed buffers
# against plain reads and writes, interleaved (spill/fixed.c).  On the
# build machine this is the mlock fallback; make bench-kmod-fixed runs it
# in the VM on the module, on every kernel.
BENCHES += bench-fixed
FIXED_BENCH_RUNS ?= 7

$(O)/bench/spill/fixed: spill/fixed.c $(O)/lib/libortmem.so
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib \
		-Wl,-rpath,$(O)/lib -lortmem -lpthread

bench-fixed: $(O)/bench/spill/fixed
	$(Q)$< -r $(FIXED_BENCH_RUNS) $(SPILL_BENCH_DIR_FIXED)
