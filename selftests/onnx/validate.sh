#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-plan --validate: real models planned under device budgets from
# their largest step's footprint up to the lower bound (a host budget too,
# the rest on disk) pass the planner's validator, say so in the table and
# the JSON, and move bytes (so the placement was checked, not a plan that
# keeps everything on the device); without the option the JSON says the
# plan was not validated; a budget below the largest step is still refused
# with the step named, not validated.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
tool="$here/../../tools/ortmem-plan"
data="$src/selftests/onnx/data"

if [ ! -x "$tool" ] || [ ! -r "$data/light_densenet121.onnx" ]; then
	echo "no ortmem-plan or model"
	exit $KSFT_SKIP
fi
command -v python3 >/dev/null || { echo "python3 is needed"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
bad() { n=$((n + 1)); failed=1; echo "not ok $n $1"; }

field() {
	python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"
}

for name in light_densenet121 light_shufflenet; do
	model="$data/$name.onnx"
	"$tool" --align 256 --json "$model" > "$tmp/free.json" || { bad "$name: no plan without budgets"; continue; }
	lb=$(field "$tmp/free.json" lower_bound_bytes)
	[ "$(field "$tmp/free.json" validated)" = False ] ||
		bad "$name: the JSON says validated without --validate"
	foot=$("$tool" --align 256 --device 1 "$model" 2>&1 |
	       sed -n 's/.*raise the budget to at least \([0-9]*\).*/\1/p')
	[ -n "$foot" ] || { bad "$name: a 1-byte device budget was not refused with the budget that would do"; continue; }
	moved=0
	for i in 0 1 2 3; do
		d=$((foot + (lb - foot) * i / 4))
		if ! "$tool" --validate --align 256 --device "$d" --host $((lb / 3)) --json "$model" \
			> "$tmp/p.json" 2> "$tmp/err"; then
			bad "$name, device $d: $(cat "$tmp/err")"
			continue
		fi
		[ "$(field "$tmp/p.json" validated)" = True ] ||
			bad "$name, device $d: --validate, but the JSON does not say validated"
		moved=$((moved + $(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))
print(sum(sum(m['prefetch']) + sum(m['spill']) for m in p['moves']))" "$tmp/p.json")))
	done
	if "$tool" --validate --align 256 --device "$foot" --host $((lb / 3)) "$model" | grep -q '^validated: '; then
		ok "$name: plans from its largest step ($foot) to its bound ($lb) pass the validator, $moved bytes moved between tiers"
	else
		bad "$name: the table does not say validated"
	fi
	[ "$moved" -gt 0 ] ||
		bad "$name: no budget below its bound moved a byte"
	if "$tool" --validate --align 256 --device $((foot - 256)) "$model" > /dev/null 2> "$tmp/err"; then
		bad "$name: a budget below its largest step was planned"
	elif grep -q "raise the budget to at least $foot" "$tmp/err"; then
		ok "$name: under --validate a budget below the largest step is refused, naming $foot"
	else
		bad "$name: refusal without the budget that would do: $(cat "$tmp/err")"
	fi
done
echo "1..$n"
exit $failed
