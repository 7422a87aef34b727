# SPDX-License-Identifier: MIT
#
# bench-device: the device tier's h2d, d2h and disk->vram bandwidths against
# the driver's own pinned memory and min(fio, h2d) (see device/bw.c).  Needs
# an NVIDIA GPU; without one it says so and skips.  selftests/gpu/run.sh
# runs it with the device tests.

BENCHES += bench-device

DEVICE_BENCH_MIB ?= 256
DEVICE_BENCH_RUNS ?= 7

$(O)/bench/device/bw: device/bw.c $(O)/lib/libortmem.so
	$(call msg,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LDFLAGS) -L$(O)/lib \
		-Wl,-rpath,$(O)/lib -lortmem -ldl -lpthread

bench-device: $(O)/bench/device/bw
	$(Q)$< -s $(DEVICE_BENCH_MIB) -r $(DEVICE_BENCH_RUNS) || [ $$? -eq 4 ]
