# SPDX-License-Identifier: MIT
#
# make bench-place: bytes moved by the placement against Belady's rule and
# an LP lower bound (GLPK), on structured and random graphs.
BENCHES += bench-place

$(O)/bench/place/place_bench: place/place_bench.c $(O)/lib/libortmem.so
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib -Wl,-rpath,$(O)/lib -lortmem -lglpk -lm

bench-place: $(O)/bench/place/place_bench
	$(Q)$<
