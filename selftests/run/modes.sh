#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run: the four modes give bit-identical outputs, and the ortmem
# mode does at several host budgets, down to one that holds only two
# layers and one that holds only one; several passes too.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }
out() { sed -n 's/^output *//p' "$1"; }

m="$tmp/m.bin"
"$tool" create --layers 7 --hidden 96 --ffn 320 --seed 7 "$m" >/dev/null || fail "create"
[ -s "$m.csum" ] || fail "checksum list beside the weights"
"$tool" --mode ram --batch 5 "$m" > "$tmp/ram" || fail "ram mode"
want=$(out "$tmp/ram")
[ -n "$want" ] || fail "ram mode prints the output checksum"
for mode in mmap pread; do
	"$tool" --mode $mode --batch 5 "$m" > "$tmp/$mode" || fail "$mode mode"
	[ "$(out "$tmp/$mode")" = "$want" ] || fail "$mode output differs from ram"
done
# One layer here is 4*(2*96*320 + 320 + 96) = 247424 bytes.
layer=247424
# The default budget streams any model: 1/8 of these weights is less than
# one layer, so it is raised to two layers and the activation arena.
"$tool" --batch 5 "$m" > "$tmp/o" || fail "ortmem at the default budget (1/8 of the weights, under one layer)"
[ "$(out "$tmp/o")" = "$want" ] || fail "ortmem output at the default budget differs"
for budget in $((layer + 65536)) $((2 * layer + 65536)) $((3 * layer)) 4M; do
	"$tool" --batch 5 --budget $budget "$m" > "$tmp/o" || fail "ortmem at budget $budget"
	[ "$(out "$tmp/o")" = "$want" ] || fail "ortmem output at budget $budget differs"
done
"$tool" --batch 5 --budget $((2 * layer + 65536)) --passes 3 --prefetch 2 "$m" > "$tmp/o" ||
	fail "three passes"
[ "$(out "$tmp/o")" = "$want" ] || fail "three passes differ"
grep -q "^prefetch *21 issued" "$tmp/o" || fail "every layer of every pass prefetched: $(grep prefetch "$tmp/o")"
# Another seed is another answer: the checksum is not a constant.
"$tool" create --layers 7 --hidden 96 --ffn 320 --seed 8 "$tmp/n.bin" >/dev/null || fail "create 2"
"$tool" --mode ram --batch 5 "$tmp/n.bin" > "$tmp/n" || fail "ram 2"
[ "$(out "$tmp/n")" != "$want" ] || fail "two seeds, one output"
"$tool" --json --batch 5 --budget 4M "$m" > "$tmp/j" || fail "json"
grep -q "\"output\":\"$want\"" "$tmp/j" || fail "json has the output"
grep -q '"prefetch":{"issued":7' "$tmp/j" || fail "json has the prefetch figures"
# Every pass of mmap and pread is cold: the kernel counts the file read
# from storage once a pass (where it keeps the count and the folder is on
# a disk; a mapping kept over a pass would pin the cache and hide this).
for mode in mmap pread; do
	"$tool" --json --mode $mode --batch 5 --passes 2 "$m" > "$tmp/j" || fail "$mode, 2 passes"
	python3 - "$tmp/j" "$(stat -c %s "$m")" <<'PY' || fail "$mode: a pass found the weights in the cache: $(cat "$tmp/j")"
import json, sys
j = json.load(open(sys.argv[1]))
# Two cold passes read the layers twice (not the header); one warm pass
# would leave about one file's worth.
sys.exit(0 if not j["disk_measured"] or j["disk_bytes"] >= 1.5 * int(sys.argv[2]) else 1)
PY
done
[ "$(ls "$tmp" | wc -l)" -eq 10 ] || fail "stray files: $(ls "$tmp")"
echo "ok: ortmem-run modes agree"
