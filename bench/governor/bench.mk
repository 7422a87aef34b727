# SPDX-License-Identifier: MIT
#
# bench-governor: reserve+release against malloc+free (see bench.c).

BENCHES += bench-governor

$(O)/bench/governor/bench: governor/bench.c $(O)/lib/libortmem.so
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib \
		-Wl,-rpath,$(O)/lib -lortmem -lpthread

bench-governor: $(O)/bench/governor/bench
	$(Q)$<
