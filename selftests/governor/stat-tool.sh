#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-stat: table and JSON output, the driver reserve, module attributes
# read generically from a sysfs folder, and usage errors.
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
"$tool" --sysfs "$tmp/none" | grep -q "^module" && fail "no module section without the folder"
"$tool" --limit foo=1 2>/dev/null; [ $? -eq 2 ] || fail "bad tier is a usage error"
"$tool" --limit host=-1 2>/dev/null; [ $? -eq 2 ] || fail "negative size is a usage error"
"$tool" stray 2>/dev/null; [ $? -eq 2 ] || fail "stray argument is a usage error"
"$tool" --limit device=1K --driver-reserve 2K 2>"$tmp/err"; [ $? -eq 1 ] || fail "reserve above limit fails"
grep -q "^ortmem-stat: open governor: .*driver_reserve" "$tmp/err" || fail "one-line error"
"$tool" --help | grep -q "^usage" || fail "--help"
"$tool" --version | grep -q "^ortmem-stat " || fail "--version"
echo "ok: ortmem-stat"
