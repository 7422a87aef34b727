#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run with a GPU (the fake driver of selftests/device/fakecuda): the
# device tier takes the hot buffers, each layer promoted from the weights
# file to the GPU by the governor's asynchronous promotion; the output is
# bit-identical to the ram mode at every device budget, the device tier's
# figures count what moved, and a failed copy stops the run with an error.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
fake="$here/../device/fakecuda/libcuda.so.1"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
[ -r "$fake" ] || { echo "no fake libcuda.so.1 beside the tests"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-dev.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }
out() { sed -n 's/^output *//p' "$1"; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

m="$tmp/m.bin"
"$tool" create --layers 6 --hidden 128 --ffn 384 --seed 11 "$m" >/dev/null || fail "create"
"$tool" --mode ram --batch 3 "$m" > "$tmp/ram" || fail "ram mode"
want=$(out "$tmp/ram")
[ -n "$want" ] || fail "ram mode prints the output checksum"
# One layer: 4*(2*128*384 + 384 + 128) = 395264 bytes.
layer=395264
export ORTMEM_CUDA_LIBRARY="$fake"
for budget in $((layer + 65536)) $((2 * layer + 65536)) 8M; do
	"$tool" --json --batch 3 --passes 2 --budget 64K --device-budget $budget "$m" \
		> "$tmp/d.json" || fail "ortmem on the GPU at device budget $budget"
	[ "$(json "$tmp/d.json" 'j["output"]')" = "$want" ] ||
		fail "output on the GPU at device budget $budget differs from ram"
	# Every layer of both passes came from the file to the GPU (at the
	# largest budget the second pass finds them there), none to the host.
	moved=$(json "$tmp/d.json" 'j["device"]["promoted_bytes"]')
	[ "$budget" = 8M ] && need=$((6 * layer)) || need=$((12 * layer))
	[ "$moved" -eq "$need" ] || fail "device promoted $moved bytes at budget $budget, want $need"
	[ "$(json "$tmp/d.json" 'j["host_promoted_bytes"]')" -eq 0 ] || fail "weights went to the host tier"
	peak=$(json "$tmp/d.json" 'j["device"]["peak_bytes"]')
	[ "$peak" -gt "$layer" ] && [ "$peak" -le "$(numfmt --from=iec $budget)" ] ||
		fail "device peak $peak outside (one layer, budget $budget]"
	[ "$(json "$tmp/d.json" 'j["prefetch"]["issued"]')" -ge 6 ] || fail "no asynchronous promotion"
done
"$tool" --batch 3 --device-budget 2M "$m" > "$tmp/t" || fail "table"
grep -q "^device *GPU 0 (Fake GPU 0)" "$tmp/t" || fail "the table names the GPU: $(grep device "$tmp/t")"
"$tool" --batch 3 --no-device --budget 2M "$m" > "$tmp/h" || fail "--no-device"
[ "$(out "$tmp/h")" = "$want" ] || fail "--no-device output differs"
grep -q "^device" "$tmp/h" && fail "--no-device still used the GPU"
# Too small a device budget is refused with its figures, before any work.
"$tool" --batch 3 --device-budget 100K "$m" > "$tmp/o" 2> "$tmp/e" && fail "tiny device budget ran"
grep -q "device budget of 102400 bytes cannot hold one layer ($layer bytes)" "$tmp/e" ||
	fail "refusal without figures: $(cat "$tmp/e")"
# A GPU copy that fails stops the run, naming the driver call.
FAKECUDA_FAULTS=cuMemcpyHtoDAsync:5:999 "$tool" --batch 3 --device-budget 2M "$m" \
	> "$tmp/o" 2> "$tmp/e" && fail "a failed copy went unnoticed"
grep -q "cuMemcpyHtoDAsync" "$tmp/e" || fail "the error names no driver call: $(cat "$tmp/e")"
# A failed copy is not an allocation failure: no advice to free memory.
grep -q "held outside ortmem" "$tmp/e" && fail "a failed copy is reported as an allocation failure: $(cat "$tmp/e")"
"$tool" --device x "$m" 2> "$tmp/e" && fail "--device x accepted"
grep -q "not a GPU ordinal" "$tmp/e" || fail "--device x: $(cat "$tmp/e")"
[ "$(ls "$tmp" | wc -l)" -eq 8 ] || fail "stray files: $(ls "$tmp")"
echo "ok: ortmem-run on the GPU tier"
