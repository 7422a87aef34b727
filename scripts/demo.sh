#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make demo: a model larger than the memory it is given runs, streamed from
# disk, with the output it has with unlimited memory.
#
#   1. creates the default model of ortmem-run (18 layers of 2048 x 8192,
#      fp32: 2.25 GiB of weights) in a temporary folder on disk
#      ($TMPDIR when it is on disk, else /var/tmp);
#   2. runs it in ortmem mode with a host budget of 1/8 of the weights;
#   3. runs the ram mode (everything in RAM first) for the reference;
#   4. prints budgets, bytes moved per tier, time per pass, the effective
#      disk bandwidth, the prefetch hit rate and "identical: yes|no";
#   5. removes what it made, also on Ctrl-C.
#
# ORTMEM_DEMO_LAYERS, _HIDDEN, _FFN change the model (e.g. for a smoke run).
set -u
cd "$(dirname "$0")/.." || exit 1
: "${O:?O (the build folder) must be set; run make demo}"
tool="$O/tools/ortmem-run"
[ -x "$tool" ] || { echo "demo: $tool is not built" >&2; exit 1; }
layers=${ORTMEM_DEMO_LAYERS:-18}
hidden=${ORTMEM_DEMO_HIDDEN:-2048}
ffn=${ORTMEM_DEMO_FFN:-8192}
weights=$((65536 + layers * ((4 * (2 * hidden * ffn + ffn + hidden) + 65535) / 65536 * 65536)))

# On disk, not in RAM: tmpfs would make "streamed from disk" a lie.
pick_dir() {
	for d in "${TMPDIR:-}" /var/tmp "$O"; do
		[ -n "$d" ] && [ -d "$d" ] && [ -w "$d" ] || continue
		case $(stat -f -c %T "$d" 2>/dev/null) in
		tmpfs|ramfs) continue ;;
		esac
		avail=$(($(df -Pk "$d" | awk 'NR == 2 { print $4 }') * 1024))
		if [ "$avail" -lt $((weights + weights / 8)) ]; then
			echo "demo: $d has $avail bytes free, the model needs $weights; trying elsewhere" >&2
			continue
		fi
		echo "$d"
		return 0
	done
	return 1
}
base=$(pick_dir) || {
	echo "demo: no folder on disk with $weights bytes free (tried \$TMPDIR, /var/tmp, $O); free space or set TMPDIR" >&2
	exit 1
}
dir=$(mktemp -d "$base/ortmem-demo.XXXXXX") || exit 1
cleanup() { rm -rf "$dir"; }
trap cleanup EXIT
trap 'echo; echo "demo: interrupted; removed $dir" >&2; exit 130' INT TERM

model="$dir/model.bin"
echo "demo: creating the model in $dir ($((weights >> 20)) MiB)"
"$tool" create --layers "$layers" --hidden "$hidden" --ffn "$ffn" "$model" || exit 1
budget=$((weights / 8))
echo "demo: ortmem mode, host budget $((budget >> 20)) MiB (1/8 of the weights), 2 passes"
"$tool" --json --passes 2 --budget "$budget" "$model" > "$dir/ortmem.json" || exit 1
# The reference wants the whole model in RAM; with too little, pread mode
# (same arithmetic, no budget) stands in for it and the table says so.
avail_kb=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
ref=ram
[ $((avail_kb * 1024)) -gt $((weights + weights / 4)) ] || ref=pread
echo "demo: $ref mode, for the reference"
"$tool" --json --mode "$ref" --no-progress "$model" > "$dir/ref.json" || exit 1

python3 - "$dir/ortmem.json" "$dir/ref.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
r = json.load(open(sys.argv[2]))
MiB = 1 << 20
def m(b): return "%.1f MiB" % (b / MiB) if b < 1024 * MiB else "%.2f GiB" % (b / 1024 / MiB)
pf = o["prefetch"]
pins = pf["hits"] + pf["waits"] + pf["misses"]
best = min(o["pass_s"])
print()
print("model              %d layers of %d x %d fp32, batch %d: %s of weights"
      % (o["layers"], o["hidden"], o["ffn"], o["batch"], m(o["weights_bytes"])))
W = "%-18s %-34s %s"
print(W % ("", "ortmem", r["mode"]))
print(W % ("host budget", "%s (1/%d of the weights)"
      % (m(o["budget_bytes"]), round(o["weights_bytes"] / o["budget_bytes"])), "none"))
print(W % ("host peak", m(o["host_peak_bytes"]),
      m(r["weights_bytes"]) + " (all of it)" if r["mode"] == "ram" else "one layer"))
print(W % ("disk -> host", m(o["host_promoted_bytes"]) + " (%d passes)" % o["passes"],
      m(r["disk_bytes"] or r["file_bytes_verified"])))
print(W % ("host -> disk", "0 (%s dropped)" % m(o["host_dropped_bytes"]), "0"))
d = o.get("device")
if d:  # a GPU took the hot buffers: layers stream disk -> device
    print(W % ("device budget", "%s on GPU %d (%s), peak %s" % (m(d["budget_bytes"]), d["ordinal"], d["name"], m(d["peak_bytes"])), "none"))
    print(W % ("disk -> device", m(d["promoted_bytes"]) + " (%d passes)" % o["passes"], "0"))
moved = o["host_promoted_bytes"] + (d["promoted_bytes"] if d else 0)
print(W % ("time per pass", "%.2f s (best of %d)" % (best, o["passes"]),
      "%.2f s" % min(r["pass_s"]) + (" + %.1f s load" % r["load_s"] if r["load_s"] else "")))
print("%-18s %s" % ("disk bandwidth", "%.0f MiB/s effective" % (moved / MiB / sum(o["pass_s"]))))
print("%-18s %s" % ("prefetch", "%d of %d pins found their layer home (hit rate %.0f%%), %d waited %.2f s in all, %d synchronous"
      % (pf["hits"], pins, 100.0 * pf["hits"] / pins if pins else 0, pf["waits"], pf["wait_s"], pf["misses"])))
# A pin that waits on a prefetch still reading is no miss: the read was
# issued a layer ahead and the disk is what the pass waits for.
wait = pf["wait_s"] / sum(o["pass_s"]) if sum(o["pass_s"]) else 0
print("%-18s %s" % ("bound by", "the disk: compute waited on reads in flight %.0f%% of the time" % (100 * wait)
      if wait >= 0.25 else "compute: reads in flight held it up %.0f%% of the time" % (100 * wait)))
print(W % ("compute", "OpenBLAS %s kernels, %d thread(s)" % (o["blas"]["core"], o["blas"]["threads"]),
      "%s, %d" % (r["blas"]["core"], r["blas"]["threads"])))
print(W % ("output", o["output"], r["output"]))
print("identical: %s" % ("yes" if o["output"] == r["output"] else "no"))
sys.exit(0 if o["output"] == r["output"] else 1)
PY
