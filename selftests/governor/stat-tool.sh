#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-stat: table and JSON output, the driver reserve (--probe), module
# attributes read generically from a sysfs folder, and hostile input:
# sizes that overflow, a FIFO among the attributes, bytes that are not
# UTF-8, and usage errors.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-stat"
[ -x "$tool" ] || { echo "no ortmem-stat beside the tests"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 missing"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }

sys="$tmp/sys"
mkdir -p "$sys/power"
echo 4096 > "$sys/pinned_bytes"
printf 'a "quoted"\n' > "$sys/backend"
"$tool" --json --limit device=8M --driver-reserve 1M --heap --limit host=2M \
	--sysfs "$sys" > "$tmp/out.json" || fail "json run"
python3 - "$tmp/out.json" <<'PY' || fail "json content"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["library"]["tiers"]
assert t["device"]["limit"] == 8 << 20, t
assert t["device"]["usable"] == 7 << 20, t
assert t["device"]["driver_reserve"] == 1 << 20, t
assert t["host"]["backend"] == "heap" and t["host"]["caps"] == 1, t
assert d["module"] == {"pinned_bytes": "4096", "backend": 'a "quoted"'}, d["module"]
PY
"$tool" --sysfs "$sys" | grep -q "pinned_bytes *4096" || fail "table shows module attributes"
# The spill/ folder too: its since-load counts are counters, named so.
mkdir "$sys/spill"
echo 8192 > "$sys/spill/evicted_bytes"
echo 7 > "$sys/spill/fault_backs"
echo 2 > "$sys/spill/failed_read"
"$tool" --prometheus --sysfs "$sys" > "$tmp/spill.prom" || fail "prometheus with spill/"
for want in "# TYPE ortmem_module_spill_evicted_bytes gauge" "ortmem_module_spill_evicted_bytes 8192" \
	"# TYPE ortmem_module_spill_fault_back_pages_total counter" "ortmem_module_spill_fault_back_pages_total 7" \
	"# TYPE ortmem_module_spill_failed_read_total counter" "ortmem_module_spill_failed_read_total 2"; do
	grep -qx "$want" "$tmp/spill.prom" || fail "spill/ metric: no '$want' in $(cat "$tmp/spill.prom")"
done
"$tool" --json --sysfs "$sys" | grep -q '"spill/fault_backs": "7"' || fail "json shows spill/ attributes"
rm -r "$sys/spill"
"$tool" --sysfs "$tmp/none" | grep -q "^module" && fail "no module section without the folder"
"$tool" --limit foo=1 2>/dev/null; [ $? -eq 2 ] || fail "bad tier is a usage error"
"$tool" --limit host=-1 2>/dev/null; [ $? -eq 2 ] || fail "negative size is a usage error"
"$tool" stray 2>/dev/null; [ $? -eq 2 ] || fail "stray argument is a usage error"
for fmts in "--json --prometheus" "--prometheus --json"; do
	"$tool" $fmts > "$tmp/o" 2>"$tmp/err"; [ $? -eq 2 ] || fail "$fmts is a usage error"
	grep -q "^ortmem-stat: --json and --prometheus are two output formats; give one$" "$tmp/err" ||
		fail "$fmts: $(cat "$tmp/err")"
	[ -s "$tmp/o" ] && fail "$fmts: output before the refusal"
done
"$tool" --json --json > /dev/null || fail "one format given twice"
"$tool" --limit device=1K --driver-reserve 2K 2>"$tmp/err"; [ $? -eq 1 ] || fail "reserve above limit fails"
grep -q "^ortmem-stat: open governor: .*driver_reserve" "$tmp/err" || fail "one-line error"
# Sizes past 2^64 are refused, saying so, with exit 2 (they wrapped).
for arg in "--limit device=99999999999G" "--limit host=18446744073709551616" \
	"--driver-reserve 16777216T" "--limit disk=17179869184G"; do
	"$tool" $arg 2>"$tmp/err"; rc=$?
	[ $rc -eq 2 ] || fail "$arg: exit $rc, not 2"
	grep -q "does not fit in 64 bits" "$tmp/err" || fail "$arg: no reason given"
done
# The governor's one rule for every budget: at most 2^62 bytes.
"$tool" --json --limit disk=4294967296G > "$tmp/max.json" || fail "the largest limit (2^62) fits"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["library"]["tiers"]["disk"]["limit"] == 1 << 62' \
	"$tmp/max.json" || fail "the largest limit is exact"
"$tool" --limit disk=4294967297G > /dev/null 2>"$tmp/err" && fail "a limit above 2^62 was accepted"
grep -q "above 2^62" "$tmp/err" || fail "a limit above 2^62: no reason given"
"$tool" --limit host=1X 2>"$tmp/err"; [ $? -eq 2 ] && grep -q "suffix" "$tmp/err" || fail "bad suffix"

# A FIFO in the attributes folder is refused, not read (which blocks).
mkfifo "$sys/fifo"
timeout 10 "$tool" --json --sysfs "$sys" > "$tmp/fifo.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] || fail "a FIFO attribute: exit $rc (124: it blocked)"
grep -q "fifo: not a regular file" "$tmp/err" || fail "the FIFO is named as refused"
python3 -c 'import json,sys; m = json.load(open(sys.argv[1]))["module"]; assert "fifo" not in m and m["pinned_bytes"] == "4096", m' \
	"$tmp/fifo.json" || fail "other attributes still read"
rm "$sys/fifo"

# Bytes that are not UTF-8 are escaped; the JSON stays valid.
printf 'ok\377\300\200 \342\202\254 \355\240\200\n' > "$sys/binary"
"$tool" --json --sysfs "$sys" > "$tmp/bin.json" || fail "json with binary attribute"
python3 - "$tmp/bin.json" <<'PY' || fail "non-UTF-8 bytes escaped"
import json, sys
raw = open(sys.argv[1], "rb").read()
raw.decode("utf-8")          # strict: the output is UTF-8
v = json.loads(raw)["module"]["binary"]
assert v == "ok\\xff\\xc0\\x80 \u20ac \\xed\\xa0\\x80", repr(v)
PY
rm "$sys/binary"

"$tool" --help | grep -q "^usage" || fail "--help"
"$tool" --version | grep -q "^ortmem-stat " || fail "--version"
echo "ok: ortmem-stat"
