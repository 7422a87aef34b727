#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The spill benchmark.  On files of SPILL_BENCH_SIZE in SPILL_BENCH_DIR, with
# 1 MiB blocks at queue depth 32, each run measures in turn: fio sequential
# write and read (io_uring, O_DIRECT, registered buffers and file, batched
# submission, 4 KiB or huge-page buffers, the faster: its best case, the
# same means the engine uses; bench/fio-huge.sh says why), ortmem-spill
# bench on one lane (one ring at QD 32, as fio) (demotion then
# promotion, checksums included), and synchronous pread at QD1 of fio's
# file.  Runs interleave so that noise hits every peer alike; medians are
# compared.  Last line:
#   spill: read R.RRx fio, write W.WWx fio, read P.PPx pread-qd1
set -e
: "${O:?O (the build folder) must be set; run make bench-spill}"
dir=${SPILL_BENCH_DIR:-/var/tmp/ortmem-bench}
size=${SPILL_BENCH_SIZE:-2G}
runs=${SPILL_BENCH_RUNS:-3}
tool=$O/tools/ortmem-spill
here=$O/bench/spill

for cmd in fio python3; do
	command -v $cmd >/dev/null || { echo "bench-spill: $cmd is missing; run make deps" >&2; exit 1; }
done
case $(stat -f -c %T "$(dirname "$dir")" 2>/dev/null) in
tmpfs|ramfs) echo "bench-spill: $dir is on a RAM filesystem; set SPILL_BENCH_DIR to a disk" >&2; exit 1 ;;
esac
mkdir -p "$dir"
. "$(dirname "$0")/../fio-huge.sh"
trap 'rm -rf "$dir"; fio_huge_release' EXIT
trap 'exit 130' INT TERM
fio_huge_reserve 32	# QD 32 x 1 MiB
bytes=$(numfmt --from=iec "$size")

fio_once() { # rw [extra fio options] -> MiB/s
	rw=$1; shift
	fio --name=spill --filename="$dir/fio.dat" --size="$bytes" --bs=1M \
		--iodepth=32 --ioengine=io_uring --direct=1 --rw="$rw" \
		--fixedbufs=1 --registerfiles=1 --iodepth_batch_submit=8 "$@" \
		--output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; k=sys.argv[1]; print("%.1f" % (j[k]["bw_bytes"] / 1048576))' "$rw"
}
fio_bw() { # rw -> MiB/s, the faster of 4 KiB and huge-page buffers
	if [ "$FIO_HUGE" = 1 ]; then
		printf '%s\n' "$(fio_once "$1")" "$(fio_once "$1" --iomem=shmhuge)" | sort -g | tail -n 1
	else
		fio_once "$1"
	fi
}
median() {
	tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

fw='' fr='' ow='' or='' pr=''
for r in $(seq 1 "$runs"); do
	w=$(fio_bw write); rd=$(fio_bw read)
	json=$("$tool" bench --dir "$dir" --size "$bytes" --bs 1M --qd 32 --lanes 1 --rw read --quiet --json)
	mw=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["write_mib_s"])')
	mr=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["read_mib_s"])')
	p=$("$here/pread-qd1" "$dir/fio.dat" "$bytes" 1048576)
	echo "run $r: fio write $w read $rd | ortmem write $mw read $mr | pread-qd1 $p (MiB/s)"
	fw="$fw $w"; fr="$fr $rd"; ow="$ow $mw"; or="$or $mr"; pr="$pr $p"
done
fw=$(echo "$fw" | median); fr=$(echo "$fr" | median)
ow=$(echo "$ow" | median); or=$(echo "$or" | median); pr=$(echo "$pr" | median)
echo "medians of $runs: fio write $fw read $fr | ortmem write $ow read $or | pread-qd1 $pr (MiB/s)"
"$here/csum" | while read -r name speed; do
	awk -v n="$name" -v s="$speed" -v r="$or" -v w="$ow" 'BEGIN {
		printf "checksum %s: %.0f MiB/s, %.2f%% of read time, %.2f%% of write time\n",
			n, s, 100 * r / s, 100 * w / s }'
done
awk -v fr="$fr" -v fw="$fw" -v or="$or" -v ow="$ow" -v pr="$pr" 'BEGIN {
	printf "spill: read %.2fx fio, write %.2fx fio, read %.2fx pread-qd1\n", or / fr, ow / fw, or / pr }'
