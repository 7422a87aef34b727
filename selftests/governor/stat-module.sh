#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-stat through the kernel module (run in the VM; skips without
# /dev/ortmem): a process holds pinned host memory in regions of
# /dev/ortmem, and ortmem-stat --prometheus and --json report its regions
# and resident bytes from /proc/PID/fdinfo, and its governor's figures from
# the published file.  POSIX sh and busybox tools only (the VM has no
# python).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/fixtures/ortmem-stat"
[ -x "$tool" ] || tool="$here/../../tools/ortmem-stat"
holder="$here/fixtures/holder"
[ -x "$tool" ] && [ -x "$holder" ] || { echo "no ortmem-stat or holder beside the tests"; exit $KSFT_SKIP; }
[ -c /dev/ortmem ] || { echo "the module is not loaded (this test runs in the VM)"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
hpid=
cleanup() { [ -n "$hpid" ] && kill "$hpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "not ok: $*"; exit 1; }
export ORTMEM_RUN_DIR="$tmp/run"

held=$((6 << 20))
mkfifo "$tmp/in"
exec 5<> "$tmp/in"
"$holder" vmhold "$held" 3 < "$tmp/in" > "$tmp/out" 2> "$tmp/err" 5>&- &
hpid=$!
i=0
until grep -q '^ready' "$tmp/out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || { cat "$tmp/err"; fail "holder did not get ready"; }
	sleep 0.1
done

"$tool" --prometheus > "$tmp/prom" || fail "--prometheus run"
sample() { grep -E "^$1\{pid=\"$hpid\",name=\"vmhold\"$2\} " "$tmp/prom" | awk '{print $2}'; }
[ "$(sample ortmem_process_regions '')" = 3 ] || fail "regions: $(sample ortmem_process_regions '')"
[ "$(sample ortmem_process_resident_bytes ',tier="host"')" = "$held" ] ||
	fail "resident bytes: $(sample ortmem_process_resident_bytes ',tier="host"')"
[ "$(sample ortmem_governor_used_bytes ',governor="1",tier="host"')" = "$held" ] ||
	fail "governor used bytes"
[ "$(sample ortmem_process_evicted_bytes ',tier="host"')" = 0 ] ||
	fail "evicted bytes: $(sample ortmem_process_evicted_bytes ',tier="host"')"
[ "$(sample ortmem_process_fault_back_pages_total '')" = 0 ] || fail "fault-back pages"
grep -q "^# TYPE ortmem_process_fault_back_pages_total counter$" "$tmp/prom" || fail "counter TYPE line"
grep -q "^# TYPE ortmem_process_resident_bytes gauge$" "$tmp/prom" || fail "TYPE line"
grep -q "^ortmem_module_pinned_bytes [0-9]" "$tmp/prom" || fail "module sysfs figures"
echo "ok 1 --prometheus: the module's per-process figures"

"$tool" --json > "$tmp/json" || fail "--json run"
grep -q "\"pid\": $hpid, \"name\": \"vmhold\", \"module\": {\"files\": 1, \"regions\": 3, \"total-host\": $held, \"resident-host\": $held, \"evicted-host\": 0, \"fault-backs\": 0," "$tmp/json" ||
	fail "--json module figures: $(cat "$tmp/json")"
echo "ok 2 --json: the module's per-process figures"

exec 5>&-
wait "$hpid" || fail "holder exit status"
hpid=
"$tool" --prometheus | grep -q "ortmem_process_regions{" && fail "a closed file still shown"
echo "ok 3 gone with the process"
