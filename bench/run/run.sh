#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The streaming benchmark.  One weights file; each run measures, in an
# order that rotates from run to run (the disk here swings from minute to
# minute, so every peer must see the same weather):
#   - ortmem-run's time per pass in the ortmem mode (host budget 1/8 of the
#     weights), mmap, pread and ram modes (ram: the pass only, weights
#     already in RAM);
#   - fio's sequential read of the same file (1 MiB, O_DIRECT, io_uring,
#     QD 32), with registered and with plain buffers, each in 4 KiB and in
#     huge pages (bench/fio-huge.sh says why), the fastest kept.
# Each mode runs two passes and its time per pass is the second's: the
# steady state of a runtime that serves pass after pass (a token is a pass
# over every layer).  The first pass of the ortmem mode also allocates its
# pinned buffers and fills the pipeline (layer 0 is read with nothing to
# compute beside it), as the ram mode's load is not in its pass; the
# second still reads every layer from the disk (the budget holds two of
# them), and mmap and pread drop the file's cache before every pass.  The
# first passes are printed too.
# The bound of a run is max(ram pass, weight bytes / fio bandwidth).  Medians
# over the runs, with min-max spread.  Last line:
#   run: ortmem X.XXx bound, mmap M.MMx slower, pread P.PPx slower
set -e
: "${O:?O (the build folder) must be set; run make bench-run}"
dir=${RUN_BENCH_DIR:-/var/tmp/ortmem-bench-run}
runs=${RUN_BENCH_RUNS:-5}
tool=$O/tools/ortmem-run
layers=${RUN_BENCH_LAYERS:-18}
hidden=${RUN_BENCH_HIDDEN:-2048}
ffn=${RUN_BENCH_FFN:-8192}

for cmd in fio python3; do
	command -v $cmd >/dev/null || { echo "bench-run: $cmd is missing; run make deps" >&2; exit 1; }
done
[ -x "$tool" ] || { echo "bench-run: $tool is not built" >&2; exit 1; }
case $(stat -f -c %T "$(dirname "$dir")" 2>/dev/null) in
tmpfs|ramfs) echo "bench-run: $dir is on a RAM filesystem; set RUN_BENCH_DIR to a disk" >&2; exit 1 ;;
esac
mkdir -p "$dir"
. "$(dirname "$0")/../fio-huge.sh"
trap 'rm -rf "$dir"; fio_huge_release' EXIT
trap 'exit 130' INT TERM
model="$dir/model.bin"
fio_huge_reserve 32	# QD 32 x 1 MiB
[ "$FIO_HUGE" = 1 ] && echo "fio: 4 KiB and huge-page buffers, registered and plain"
"$tool" create --layers "$layers" --hidden "$hidden" --ffn "$ffn" "$model"
bytes=$(stat -c %s "$model")
budget=${RUN_BENCH_BUDGET:-$((bytes / 8))}

pass() { # mode -> seconds of the second pass, the process's CPU seconds a pass, the first pass
	"$tool" --json --no-progress --passes 2 --mode "$1" --budget "$budget" "$model" |
		python3 -c 'import json,sys; j = json.load(sys.stdin); print("%.4f %.4f %.4f" % (j["pass_s"][1], j["process_cpu_s"] / 2, j["pass_s"][0]))'
}
fio_once() { # extra fio options -> MiB/s
	fio --name=run --filename="$model" --readonly --size="$bytes" --bs=1M \
		--iodepth=32 --ioengine=io_uring --direct=1 --rw=read "$@" \
		--output-format=json 2>/dev/null |
		python3 -c 'import json,sys; print("%.1f" % (json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"] / 1048576))'
}
fio_bw() { # the fastest of registered and plain buffers, in huge pages too
	set -- "$(fio_once --fixedbufs=1 --registerfiles=1)" "$(fio_once)"
	if [ "$FIO_HUGE" = 1 ]; then
		set -- "$@" "$(fio_once --iomem=shmhuge --fixedbufs=1 --registerfiles=1)" \
			"$(fio_once --iomem=shmhuge)"
	fi
	printf '%s\n' "$@" | sort -g | tail -n 1
}

peers="ortmem mmap pread ram fio"
log="$dir/log"
: > "$log"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$runs"); do
	# Rotate the order: run r starts with peer (r - 1) mod 5.
	order=$(echo $peers | awk -v r="$r" '{ for (i = 0; i < NF; i++) printf "%s ", $(((i + r - 1) % NF) + 1) }')
	line="run $r:"
	for p in $order; do
		if [ "$p" = fio ]; then
			v=$(fio_bw); line="$line fio ${v}MiB/s"
		else
			# shellcheck disable=SC2046 # its two words: seconds, CPU
			set -- $(pass "$p"); v=$1
			line="$line $p ${v}s"
			echo "$r $p-cpu $2" >> "$log"
			echo "$r $p-first $3" >> "$log"
		fi
		echo "$r $p $v" >> "$log"
	done
	echo "$line"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$log" "$bytes" <<'PY'
import sys, statistics as st
runs = {}
for line in open(sys.argv[1]):
    r, p, v = line.split()
    runs.setdefault(int(r), {})[p] = float(v)
size = int(sys.argv[2])
MiB = 1 << 20
def col(p): return [runs[r][p] for r in sorted(runs)]
def show(name, xs, unit):
    print("%-10s median %8.3f %s  (min %.3f, max %.3f, %d runs)" % (name, st.median(xs), unit, min(xs), max(xs), len(xs)))
for p in ("ortmem", "mmap", "pread", "ram"):
    show(p, col(p), "s/pass")
show("fio", col("fio"), "MiB/s")
# Where the time goes: CPU seconds of each mode's pass, all its threads.  On
# a loaded machine the pass is CPU-bound, and the ortmem mode's extra CPU
# (checksums of every byte read, the I/O) is what its ratio pays.
for p in ("ortmem", "mmap", "pread", "ram"):
    show(p + " cpu", col(p + "-cpu"), "s/pass")
for p in ("ortmem", "mmap", "pread", "ram"):
    show(p + " 1st", col(p + "-first"), "s/pass")
bound = [max(runs[r]["ram"], size / MiB / runs[r]["fio"]) for r in sorted(runs)]
show("bound", bound, "s/pass")
X = [runs[r]["ortmem"] / b for r, b in zip(sorted(runs), bound)]
M = [runs[r]["mmap"] / runs[r]["ortmem"] for r in sorted(runs)]
P = [runs[r]["pread"] / runs[r]["ortmem"] for r in sorted(runs)]
for name, xs in (("ortmem/bound", X), ("mmap/ortmem", M), ("pread/ortmem", P)):
    print("%-13s per run: %s  median %.2f (min %.2f, max %.2f)"
          % (name, " ".join("%.2f" % x for x in xs), st.median(xs), min(xs), max(xs)))
X1 = [runs[r]["ortmem-first"] / b for r, b in zip(sorted(runs), bound)]
print("%-13s per run: %s  median %.2f (first passes, pipeline fill included)"
      % ("ortmem/bound", " ".join("%.2f" % x for x in X1), st.median(X1)))
x = st.median(col("ortmem")) / max(st.median(col("ram")), size / MiB / st.median(col("fio")))
m = st.median(col("mmap")) / st.median(col("ortmem"))
p = st.median(col("pread")) / st.median(col("ortmem"))
print("run: ortmem %.2fx bound, mmap %.2fx slower, pread %.2fx slower" % (x, m, p))
PY
