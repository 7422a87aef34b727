#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run follows the planner's transfer schedule: with long skip
# connections (--skip K) activations live across layers, and an activation
# budget (--act-budget) sends some to their home between the steps that
# touch them.  At eight budgets from the largest step's footprint to the
# unlimited arena, for five spans, the output is bit-identical to the ram
# mode and to the unlimited run, and the bytes moved are the plan's
# (ortmem_plan_stats), pass after pass.  With the arena range of every
# evicted value poisoned (NaN) the output still matches, so each value
# came back from its home; skipping any one read-back is caught.  Under a
# budget for the home in RAM too (--act-host-budget) the rest goes to disk
# and back through the spill engine, as the plan's disk figures say.  Then
# the same on the fake GPU, and the refusals.  The bytes moved within the
# arena are the plan's move_bytes, pass after pass (xfer_moves checks
# plans that do move).  Each write-out starts at the step the plan allows
# (once its value is produced), ahead of the step that lists it.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
fake="$here/../device/fakecuda/libcuda.so.1"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-sched.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }
out() { sed -n 's/^output *//p' "$1"; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

m="$tmp/m.bin"
layers=10
"$tool" create --layers $layers --hidden 64 --ffn 192 --seed 3 "$m" >/dev/null || fail "create"
# x: 3 rows x 64 x 4 = 768 bytes, h: 3 x 192 x 4 = 2304 (256-aligned):
# a layer's second step reads h, x and the skip and writes x.
foot=$((2304 + 3 * 768))
run() { "$tool" --json --no-device --batch 3 "$@" "$m"; }
moved=0 most=0 outs_ahead=0
# A sanitizer build runs each tool 5 to 10 times slower: there, half the
# budgets (the footprint and the unlimited arena among them); the plain
# build runs all eight.
levels="0 1 2 3 4 5 6 7"
case "$here" in
*-address*|*-thread*) levels="0 2 5 7" ;;
esac
for skip in 1 2 3 5 9; do
	"$tool" --mode ram --batch 3 --skip $skip "$m" > "$tmp/ram" || fail "ram, skip $skip"
	want=$(out "$tmp/ram")
	run --skip $skip > "$tmp/u.json" || fail "unlimited, skip $skip"
	[ "$(json "$tmp/u.json" 'j["output"]')" = "$want" ] || fail "skip $skip: ortmem differs from ram"
	full=$(json "$tmp/u.json" 'j["activations"]["arena_bytes"]')
	# Eight budgets from the footprint to the unlimited arena, evenly.
	for i in $levels; do
		b=$((foot + (full - foot) * i / 7 / 256 * 256))
		run --skip $skip --act-budget $b --passes 2 > "$tmp/b.json" ||
			fail "skip $skip, act budget $b"
		python3 - "$tmp/b.json" "$want" $b > "$tmp/got" <<'PY' || fail "skip $skip, act budget $b: $(cat "$tmp/b.json")"
import json, sys
j = json.load(open(sys.argv[1])); a = j["activations"]; b = int(sys.argv[3])
assert j["output"] == sys.argv[2], "output differs from ram"
assert a["arena_bytes"] <= b, "arena over the budget"
# What moved is what the plan's figures say, each of the two passes,
# and what its transfer list adds up to.
assert a["in_bytes"] == 2 * a["plan_prefetch_bytes"] == 2 * a["schedule_in_bytes"], "read-backs"
assert a["move_bytes"] == 2 * a["plan_move_bytes"] == 2 * a["schedule_move_bytes"] == \
	2 * a["plan_step_move_bytes"], "moves within the arena"
assert (a["moves"] > 0) == (a["move_bytes"] > 0)
assert a["out_bytes"] == 2 * a["plan_spill_bytes"] == 2 * a["schedule_out_bytes"], "write-outs"
# Each read-back the plan lets start early was issued at its earliest
# step, before the step that reads it, every pass; each write-out right
# after the step producing its value, before the step that lists it.
assert a["issued_ahead"] == 2 * a["read_backs_ahead"], "read-backs issued late"
assert a["outs_issued_ahead"] == 2 * a["write_outs_ahead"], "write-outs issued late"
assert a["write_outs_ahead"] <= a["write_outs"] and (a["write_outs"] > 0) == (a["out_bytes"] > 0)
assert a["stall_bytes"] <= a["plan_prefetch_bytes"]
# A value read back was written out first.
assert (a["in_bytes"] > 0) == (a["out_bytes"] > 0)
assert (a["transfers"] > a["moves"]) == (a["in_bytes"] > 0)
print(a["in_bytes"], a["transfers"], a["write_outs_ahead"])
PY
		# shellcheck disable=SC2046 # its three figures, as words
		set -- $(cat "$tmp/got")
		moved=$((moved + $1))
		if [ "$2" -gt 0 ]; then
			run --skip $skip --act-budget $b --poison-evicted > "$tmp/p.json" ||
				fail "poisoned, skip $skip, budget $b"
			[ "$(json "$tmp/p.json" 'j["output"]')" = "$want" ] ||
				fail "skip $skip, budget $b: a poisoned range was read (a value did not come back from its home)"
			# The busiest schedule is the one to break below.
			[ "$1" -gt "$most" ] && most=$1 && last=$skip,$b
			outs_ahead=$((outs_ahead + $3))
		fi
	done
done
[ "$moved" -gt 0 ] || fail "no budget moved a byte: the schedule went untested"
[ "$outs_ahead" -gt 0 ] || fail "no write-out could start before the step listing it: the early start went untested"
# Skipping any one read-back of the busiest schedule leaves the poison where the value should be.
skip=${last%,*} b=${last#*,}
want=$("$tool" --mode ram --batch 3 --skip $skip "$m" | sed -n 's/^output *//p')
n=$(run --skip $skip --act-budget $b | python3 -c "import json,sys; print(json.load(sys.stdin)['activations']['read_backs'])")
i=1
while [ $i -le $n ]; do
	run --skip $skip --act-budget $b --poison-evicted --drop-read-back $i > "$tmp/d.json" ||
		fail "dropped read-back $i"
	[ "$(json "$tmp/d.json" 'j["output"]')" != "$want" ] ||
		fail "skip $skip, budget $b: read-back $i skipped, output unchanged"
	[ "$(json "$tmp/d.json" 'j["activations"]["in_bytes"]')" -lt \
	  "$(json "$tmp/d.json" 'j["activations"]["plan_prefetch_bytes"]')" ] || fail "skipped read-back counted"
	i=$((i + 1))
done
[ $n -gt 0 ] || fail "no read-back to skip"
# No plan of these models moves a value within the arena (their chains
# never fragment it; see Documentation/lib/placement.rst), so the moves
# are checked by xfer_moves, which compiles this runner into a test on
# random graphs of the same two value sizes whose plans do move values:
# in host memory and on the fake GPU, outputs unchanged with the ranges
# values leave poisoned, the bytes moved equal to move_bytes (device to
# device on the GPU), and skipping any one move caught.  Here: the
# equalities above per budget, and the refusal of --drop-move without a
# move.
run --skip 1 --drop-move 1 --act-budget 1G > "$tmp/o" 2> "$tmp/e"; [ $? -eq 2 ] || fail "drop move with no move"
grep -q -- "--drop-move 1: under --act-budget 1073741824 the plan moves no value within the arena, so this run has no move to skip" "$tmp/e" ||
	fail "no move: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "no move: a report"
# One past the run's read-backs would skip nothing: refused, naming the
# count, leaving no spill file; with two passes it is the second's first.
mkdir "$tmp/sp"
ORTMEM_SPILL_DIR="$tmp/sp" run --skip $skip --act-budget $b --act-host-budget 1 \
	--drop-read-back $((n + 1)) > "$tmp/o" 2> "$tmp/e"
[ $? -eq 2 ] || fail "--drop-read-back past the read-backs is a usage error"
grep -q -- "--drop-read-back $((n + 1)) is past the run's read-backs: .* it has $n ($n a pass, times --passes 1); give a number from 1 to $n" "$tmp/e" ||
	fail "drop past the count: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "drop past the count: a report"
[ -z "$(ls -A "$tmp/sp")" ] || fail "drop past the count left $(ls "$tmp/sp")"
run --skip $skip --act-budget $b --poison-evicted --passes 2 --drop-read-back $((n + 1)) > "$tmp/d.json" ||
	fail "second pass's first read-back"
[ "$(json "$tmp/d.json" 'j["output"]')" != "$want" ] || fail "second pass's read-back skipped, output unchanged"
run --skip $skip --drop-read-back 1 --act-budget 1G 2> "$tmp/e"; [ $? -eq 2 ] || fail "drop with no read-back"
grep -q "no read-back to skip; give a smaller --act-budget" "$tmp/e" || fail "no read-back: $(cat "$tmp/e")"
# With a budget for the home in RAM too, the rest goes to disk through the
# spill engine: the plan's disk figures are what reached the disk.
home=$(run --skip $skip --act-budget $b | python3 -c "import json,sys; print(json.load(sys.stdin)['activations']['home_bytes'])")
disk=0
for hb in 1 $((home / 2)) $home; do
	[ $hb -gt 0 ] || continue
	run --skip $skip --act-budget $b --act-host-budget $hb --passes 2 --poison-evicted > "$tmp/k.json" ||
		fail "home budget $hb"
	python3 - "$tmp/k.json" "$want" $hb <<'PY' || fail "home budget $hb: $(cat "$tmp/k.json")"
import json, sys
j = json.load(open(sys.argv[1])); a = j["activations"]
assert j["output"] == sys.argv[2], "output differs from ram"
assert a["home_bytes"] <= int(sys.argv[3]), "home over its budget"
assert a["in_bytes"] == 2 * a["plan_prefetch_bytes"] and a["out_bytes"] == 2 * a["plan_spill_bytes"]
assert a["disk_in_bytes"] == 2 * a["plan_disk_prefetch_bytes"], "disk reads"
assert a["disk_out_bytes"] == 2 * a["plan_disk_spill_bytes"], "disk writes"
assert (a["disk_bytes"] > 0) == (a["disk_in_bytes"] > 0)
PY
	disk=$((disk + $(json "$tmp/k.json" 'j["activations"]["disk_in_bytes"]')))
done
[ $disk -gt 0 ] || fail "no home budget sent a value to disk"
run --skip $skip --act-budget $b --act-host-budget 1 --poison-evicted --drop-read-back 1 > "$tmp/k.json" ||
	fail "disk, dropped read-back"
[ "$(json "$tmp/k.json" 'j["output"]')" != "$want" ] || fail "disk: a skipped read-back went unnoticed"
# A disk I/O that fails, a write-out's or a read-back's, stops the run
# with the spill engine's account of it, and no output.
for n in 1 2 3 4; do
	run --skip $skip --act-budget $b --act-host-budget 1 --inject-spill-fault $n > "$tmp/o" 2> "$tmp/e" &&
		fail "disk I/O $n failed unnoticed"
	grep -q "ortmem-run: \(writing out\|reading back\) value [0-9]* ([0-9]* bytes) \(to\|from\) disk: disk tier: .*Input/output error" "$tmp/e" ||
		fail "disk I/O $n: $(cat "$tmp/e")"
	[ -s "$tmp/o" ] && fail "disk I/O $n: a report after the failure"
done
# One past the run's disk I/Os injects nothing: said, with no report.
run --skip $skip --act-budget $b --act-host-budget 1 --inject-spill-fault 1000000 > "$tmp/o" 2> "$tmp/e"
[ $? -eq 2 ] || fail "a spill fault past the run's disk I/Os went unsaid"
grep -q -- "--inject-spill-fault 1000000: the run ended before its disk I/O number 1000000, so no fault was injected" "$tmp/e" ||
	fail "spill fault past the I/Os: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "spill fault past the I/Os: a report"
# The plain chain keeps its output with a budget too.
"$tool" --mode ram --batch 3 "$m" > "$tmp/ram" || fail "ram, chain"
run --act-budget $((2304 + 2 * 768)) > "$tmp/c.json" || fail "chain at its footprint"
[ "$(json "$tmp/c.json" 'j["output"]')" = "$(out "$tmp/ram")" ] || fail "chain output differs"
# On the fake GPU: the arena is device memory, the home registered host
# memory, the copies the driver's.
if [ -r "$fake" ]; then
	run_gpu() { ORTMEM_CUDA_LIBRARY="$fake" "$tool" --json --batch 3 --budget 64K --device-budget 1M "$@" "$m"; }
	run_gpu --skip $skip --act-budget $b --poison-evicted --passes 2 > "$tmp/g.json" || fail "GPU"
	json "$tmp/g.json" 'j["device"]["name"]' | grep -q "Fake GPU" || fail "GPU run not on the GPU"
	want=$("$tool" --mode ram --batch 3 --skip $skip "$m" | sed -n 's/^output *//p')
	python3 - "$tmp/g.json" "$want" <<'PY' || fail "GPU: $(cat "$tmp/g.json")"
import json, sys
j = json.load(open(sys.argv[1])); a = j["activations"]
assert j["output"] == sys.argv[2] and a["in_bytes"] > 0
assert a["in_bytes"] == 2 * a["plan_prefetch_bytes"] and a["out_bytes"] == 2 * a["plan_spill_bytes"]
assert a["move_bytes"] == 2 * a["plan_move_bytes"]
assert j["device"]["d2d_bytes"] == a["move_bytes"], "moves not made within the GPU"
assert a["outs_issued_ahead"] == 2 * a["write_outs_ahead"] > 0, "write-outs issued late"
PY
	run_gpu --skip $skip --act-budget $b --act-host-budget 1 --poison-evicted > "$tmp/g.json" || fail "GPU, disk"
	[ "$(json "$tmp/g.json" 'j["output"]')" = "$want" ] || fail "GPU, disk: output differs"
	[ "$(json "$tmp/g.json" 'j["activations"]["disk_in_bytes"]')" -gt 0 ] || fail "GPU, disk: nothing on disk"
	run_gpu --skip $skip --act-budget $b --poison-evicted --drop-read-back 1 > "$tmp/g.json" || fail "GPU drop"
	[ "$(json "$tmp/g.json" 'j["output"]')" != "$want" ] || fail "GPU: a skipped read-back went unnoticed"
fi
# Refusals: each names what is wrong.
"$tool" --batch 3 --no-device --skip 2 --act-budget $((foot - 256)) "$m" > "$tmp/o" 2> "$tmp/e"
[ $? -eq 1 ] || fail "an act budget below a step's footprint ran"
grep -q "step [0-9]* alone needs $foot device bytes" "$tmp/e" || fail "refusal: $(cat "$tmp/e")"
"$tool" --batch 3 --skip $layers "$m" 2> "$tmp/e"; [ $? -eq 1 ] || fail "--skip of every layer"
grep -q -- "--skip $layers needs a model of more than $layers layers" "$tmp/e" || fail "skip: $(cat "$tmp/e")"
"$tool" --mode ram --act-budget 1M "$m" 2> "$tmp/e"; [ $? -eq 2 ] || fail "--act-budget in ram mode"
grep -q "ortmem mode only" "$tmp/e" || fail "ram act budget: $(cat "$tmp/e")"
"$tool" --poison-evicted "$m" 2>/dev/null; [ $? -eq 2 ] || fail "--poison-evicted without a budget"
"$tool" --act-host-budget 1M "$m" 2>/dev/null; [ $? -eq 2 ] || fail "--act-host-budget without --act-budget"
"$tool" --drop-move 1 "$m" 2>/dev/null; [ $? -eq 2 ] || fail "--drop-move without --act-budget"
"$tool" --skip 0 "$m" 2>/dev/null; [ $? -eq 2 ] || fail "--skip 0"
# A disk fault where nothing goes to disk would test nothing.
"$tool" --batch 3 --no-device --act-budget $b --inject-spill-fault 1 "$m" > "$tmp/o" 2> "$tmp/e"
[ $? -eq 2 ] || fail "--inject-spill-fault with no disk home is a usage error"
grep -q -- "--inject-spill-fault 1: no activation goes to disk under --act-host-budget 0 (unlimited)" "$tmp/e" ||
	fail "spill fault, no disk: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "spill fault, no disk: a report"
for v in 18446744073709551615 99999999999T 1KK '' ' 5' +5 -1 0x10 1.5M 2P; do
	"$tool" --act-budget "$v" "$m" > "$tmp/o" 2> "$tmp/e"; [ $? -eq 2 ] || fail "--act-budget '$v' accepted"
	grep -q -- "--act-budget '$v' is not a number from 1 to [0-9]*; give digits, optionally ending in K, M or G" "$tmp/e" ||
		fail "--act-budget '$v': $(cat "$tmp/e")"
done
"$tool" --skip 99999999999999999999 "$m" 2>/dev/null; [ $? -eq 2 ] || fail "--skip overflowing"
echo "ok: ortmem-run follows the transfer schedule"
