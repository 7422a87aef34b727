# SPDX-License-Identifier: MIT
#
# make bench-run: ortmem-run's modes (ortmem, mmap, pread, ram) and fio's
# sequential read of the same weights file, interleaved, RUN_BENCH_RUNS runs;
# the model (the demo's unless RUN_BENCH_LAYERS/HIDDEN/FFN say otherwise)
# lives in RUN_BENCH_DIR (on disk, removed afterwards).

BENCHES += bench-run

RUN_BENCH_DIR ?= $(or $(TMPDIR),/var/tmp)/ortmem-bench-run
RUN_BENCH_RUNS ?= 5

bench-run:
	$(Q)RUN_BENCH_DIR='$(RUN_BENCH_DIR)' RUN_BENCH_RUNS='$(RUN_BENCH_RUNS)' run/run.sh
