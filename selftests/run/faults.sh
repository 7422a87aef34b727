#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run stops with a clear error, and leaves no files behind, when a
# read fails (the spill engine's fault injection) or a byte of the weights
# file flipped; Ctrl-C during create leaves no partial model.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }
files() { ls -A "$tmp" | tr '\n' ' '; }

m="$tmp/m.bin"
"$tool" create --layers 5 --hidden 64 --ffn 256 "$m" >/dev/null || fail "create"
before=$(files)
for nth in 1 3 5; do
	"$tool" --budget 400K --inject-read-fault $nth "$m" > "$tmp/o" 2> "$tmp/e"
	[ $? -eq 1 ] || fail "injected fault $nth stops the run"
	grep -q "reading the weights: .*$m.*Input/output error\|reading the weights: .*$m" "$tmp/e" ||
		fail "error names the file: $(cat "$tmp/e")"
	grep -q "^output" "$tmp/o" && fail "no output after a failed read"
	rm -f "$tmp/o" "$tmp/e"
	[ "$(files)" = "$before" ] || fail "files left behind: $(files)"
done
# A fault past the run's read I/Os would test nothing: said (status 2),
# with no report and no files left; in a mode that reads without the
# governor it is refused before the run.
"$tool" --budget 400K --inject-read-fault 1000000 "$m" > "$tmp/o" 2> "$tmp/e"
[ $? -eq 2 ] || fail "a read fault past the run's reads went unsaid"
grep -q -- "--inject-read-fault 1000000: no read of the weights failed: the run ended before its read I/O number 1000000, so no fault was injected; give a smaller number" "$tmp/e" ||
	fail "read fault past the reads: $(cat "$tmp/e")"
[ -s "$tmp/o" ] && fail "read fault past the reads: a report"
rm -f "$tmp/o" "$tmp/e"
[ "$(files)" = "$before" ] || fail "files left behind: $(files)"
for mode in ram mmap pread; do
	"$tool" --mode $mode --inject-read-fault 1 "$m" > "$tmp/o" 2> "$tmp/e"
	[ $? -eq 2 ] || fail "$mode: --inject-read-fault accepted"
	grep -q -- "--inject-read-fault applies to the ortmem mode only" "$tmp/e" || fail "$mode: $(cat "$tmp/e")"
	[ -s "$tmp/o" ] && fail "$mode: a report"
	rm -f "$tmp/o" "$tmp/e"
done
# Flip one byte of layer 2's weights.
off=$((65536 + 2 * 131072 + 1000))
printf '\377' | dd of="$m" bs=1 seek=$off conv=notrunc status=none
for mode in ortmem ram; do
	"$tool" --mode $mode --budget 400K "$m" > "$tmp/o" 2> "$tmp/e"
	[ $? -eq 1 ] || fail "$mode: flipped byte stops the run"
	grep -q "do not match the checksum list" "$tmp/e" || fail "$mode: checksum message: $(cat "$tmp/e")"
	grep -q "bytes \[327680, 393216)" "$tmp/e" || fail "$mode: message names the range: $(cat "$tmp/e")"
	rm -f "$tmp/o" "$tmp/e"
	[ "$(files)" = "$before" ] || fail "files left behind: $(files)"
done
# Ctrl-C while a model is written: either it completed, or nothing is left.
"$tool" create --layers 64 --hidden 1024 --ffn 4096 "$tmp/big.bin" > /dev/null 2>&1 &
pid=$!
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ]; then
	[ "$(files)" = "$before" ] || fail "interrupted create left: $(files)"
elif [ $rc -eq 0 ]; then
	[ -s "$tmp/big.bin" ] && [ -s "$tmp/big.bin.csum" ] || fail "completed create is whole"
else
	fail "interrupted create exits $rc"
fi
echo "ok: ortmem-run faults"
