# SPDX-License-Identifier: MIT
#
# make bench-place: bytes moved by the placement against Belady's rule and
# a lower bound (GLPK: the covering model's MIP where proven, else its LP),
# on structured and random graphs.
BENCHES += bench-place

$(O)/bench/place/place_bench: place/place_bench.c place/place_bound.c place/place_bench.h \
			      $(O)/lib/libortmem.so
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(ALL_LDFLAGS) -L$(O)/lib -Wl,-rpath,$(O)/lib -lortmem -lglpk -lm

bench-place: $(O)/bench/place/place_bench
	$(Q)$<
