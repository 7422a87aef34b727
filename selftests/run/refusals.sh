#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run refuses what cannot work, before any work, saying why with the
# figures: a budget below one layer, a weights file of the wrong size, a
# file that is not a model, bad options.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }

m="$tmp/m.bin"
"$tool" create --layers 3 --hidden 64 --ffn 256 "$m" >/dev/null || fail "create"
"$tool" --budget 100K "$m" > "$tmp/o" 2> "$tmp/e"; [ $? -eq 1 ] || fail "small budget exits 1"
grep -q "Capacity could not be made available: a host budget of 102400 bytes cannot hold one layer (132352 bytes)" "$tmp/e" ||
	fail "refusal names the kind and the figures: $(cat "$tmp/e")"
grep -q "give --budget of at least [0-9]* bytes" "$tmp/e" || fail "refusal says what budget would do"
[ -s "$tmp/o" ] && fail "no work before the refusal"
# A weights file that grew: its checksum list no longer describes it.
cp "$m" "$tmp/g.bin" && cp "$m.csum" "$tmp/g.bin.csum" && printf x >> "$tmp/g.bin"
"$tool" --mode ram "$tmp/g.bin" 2> "$tmp/e"; [ $? -eq 1 ] || fail "grown file refused"
grep -q "is [0-9]* bytes but its checksum list .* describes" "$tmp/e" || fail "size message: $(cat "$tmp/e")"
# A truncated file with a list made for it: the header says the size.
head -c 200000 "$m" > "$tmp/t.bin"
"$here/../../tools/ortmem-run" create --layers 1 --hidden 8 --ffn 8 "$tmp/x.bin" >/dev/null || fail "create x"
cp "$tmp/x.bin.csum" "$tmp/t.bin.csum"
"$tool" --mode ram "$tmp/t.bin" 2> "$tmp/e"; [ $? -eq 1 ] || fail "truncated file refused"
grep -q "checksum list" "$tmp/e" || fail "truncated message: $(cat "$tmp/e")"
printf 'hello' > "$tmp/h.bin"
"$tool" --mode ram "$tmp/h.bin" 2> "$tmp/e"; [ $? -eq 1 ] || fail "no list refused"
grep -q "cannot open the checksum list" "$tmp/e" || fail "missing list message"
"$tool" --mode gpu "$m" 2>/dev/null; [ $? -eq 2 ] || fail "bad mode is a usage error"
# An option given last without its value says so (not "unknown argument").
for opt in --mode --budget --device-budget --device --batch --act-budget; do
	"$tool" "$m" $opt > "$tmp/o" 2> "$tmp/e"; [ $? -eq 2 ] || fail "$opt without a value"
	grep -q -- "^ortmem-run: $opt needs a value (.*) after it$" "$tmp/e" || fail "$opt without a value: $(cat "$tmp/e")"
	grep -q "unknown argument" "$tmp/e" && fail "$opt without a value called unknown"
	[ -s "$tmp/o" ] && fail "$opt without a value: a report"
done
"$tool" "$m" --mode 2> "$tmp/e"
grep -q -- "--mode needs a value (one of ortmem, ram, mmap, pread)" "$tmp/e" || fail "--mode's values: $(cat "$tmp/e")"
"$tool" --budget -5 "$m" 2>/dev/null; [ $? -eq 2 ] || fail "negative budget is a usage error"
"$tool" --batch 0 "$m" 2>/dev/null; [ $? -eq 2 ] || fail "zero batch is a usage error"
"$tool" create --layers 99999 "$tmp/z.bin" 2>/dev/null; [ $? -eq 2 ] || fail "too many layers"
"$tool" create --layers 4 --hidden 65536 --ffn 65536 "$tmp/z.bin" 2> "$tmp/e"
[ $? -eq 1 ] && grep -q "free, the weights file needs" "$tmp/e" || fail "no room on disk refused: $(cat "$tmp/e")"
[ -e "$tmp/z.bin" ] && fail "refused create left a file"
# A GPU's options and --no-device contradict each other, in either order.
for gpu in "--device 0" "--device-budget 2M"; do
	"$tool" --no-device $gpu "$m" > "$tmp/o" 2> "$tmp/e"; [ $? -eq 2 ] || fail "--no-device $gpu is a usage error"
	grep -q -- "^ortmem-run: ${gpu% *} sets up the GPU's device tier, which --no-device leaves out; drop one of them$" "$tmp/e" ||
		fail "--no-device $gpu: $(cat "$tmp/e")"
	[ -s "$tmp/o" ] && fail "--no-device $gpu: a report"
	"$tool" $gpu --no-device "$m" 2>/dev/null; [ $? -eq 2 ] || fail "$gpu --no-device is a usage error"
done
echo "ok: ortmem-run refusals"
