# SPDX-License-Identifier: MIT
#
# make bench-place: bytes moved by the placement against Belady's rule and
# a lower bound (GLPK: the covering model's LP raised by knapsack cover cuts
# and a branch and cut; see place_bound.c), on structured and random
# graphs.  place_check first checks that bound against brute force on tiny
# graphs (no library code).
BENCHES += bench-place

PLACE_SHARED := place/place_bound.c place/place_graph.c place/place_bench.h

$(O)/bench/place/place_bench: place/place_bench.c place/place_belady.c place/place_compact.c $(PLACE_SHARED) $(O)/lib/libortmem.so
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(ALL_LDFLAGS) -L$(O)/lib -Wl,-rpath,$(O)/lib -lortmem -lglpk -lm

$(O)/bench/place/place_check: place/place_check.c $(PLACE_SHARED)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(ALL_LDFLAGS) -lglpk -lm

bench-place: $(O)/bench/place/place_bench $(O)/bench/place/place_check
	$(Q)$(O)/bench/place/place_check
	$(Q)$<
