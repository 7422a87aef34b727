#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-stat through the kernel module (run in the VM; skips without
# /dev/ortmem): a process holds pinned host memory in regions of
# /dev/ortmem, and ortmem-stat --prometheus and --json report its regions
# and resident bytes from /proc/PID/fdinfo, and its governor's figures from
# the published file.  POSIX sh and busybox tools only (the VM has no
# python).  A second process evicts part of its memory to a spill file
# and touches a page back: its evicted and fault-back figures too.
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

# A process with evicted pages (the spill mapping, on the VM's ext4 disk):
# ortmem-stat reports what it evicted and touched back.  It evicted 1 MiB
# and touched one page: one fault-back, plus the read-ahead the module
# reports; total = held + 1 MiB = resident + evicted.
if [ -z "$ORTMEM_VM_SPILL_DIR" ]; then
	echo "ok 4 evicted and fault-back figures # SKIP no spill file system (ORTMEM_VM_SPILL_DIR)"
	exit 0
fi
mkfifo "$tmp/in2"
exec 6<> "$tmp/in2"
"$holder" vmspill "$held" 2 "$ORTMEM_VM_SPILL_DIR" < "$tmp/in2" > "$tmp/out2" 2> "$tmp/err2" 6>&- &
hpid=$!
i=0
until grep -q '^ready' "$tmp/out2" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || { cat "$tmp/err2"; fail "spilling holder did not get ready"; }
	sleep 0.1
done
ev=$(awk '{print $3}' "$tmp/out2")
[ "$ev" = 1048576 ] || fail "the holder evicted $ev bytes, not 1 MiB (no spill mapping?): $(cat "$tmp/err2")"
"$tool" --prometheus > "$tmp/prom2" || fail "--prometheus run"
s2() { grep -E "^$1\{pid=\"$hpid\",name=\"vmspill\"$2\} " "$tmp/prom2" | awk '{print $2}'; }
fb=$(s2 ortmem_process_fault_back_pages_total '')
ra=$(s2 ortmem_process_readahead_pages_total '')
evicted=$(s2 ortmem_process_evicted_bytes ',tier="host"')
resident=$(s2 ortmem_process_resident_bytes ',tier="host"')
total=$(s2 ortmem_process_total_bytes ',tier="host"')
[ "$fb" = 1 ] || fail "fault-backs: $fb"
[ -n "$ra" ] && [ "$ra" -lt 256 ] || fail "read-ahead: $ra"
[ "$evicted" = $((ev - (1 + ra) * 4096)) ] || fail "evicted: $evicted with read-ahead $ra"
[ "$total" = $((held + ev)) ] || fail "total: $total"
[ "$resident" = $((total - evicted)) ] || fail "resident: $resident of $total, $evicted evicted"
[ "$(s2 ortmem_process_regions '')" = 3 ] || fail "regions: $(s2 ortmem_process_regions '')"
"$tool" --json > "$tmp/json2" || fail "--json run"
grep -q "\"name\": \"vmspill\", \"module\": {\"files\": 1, \"regions\": 3, \"total-host\": $total, \"resident-host\": $resident, \"evicted-host\": $evicted, \"fault-backs\": 1, \"restored\": 0, \"readahead\": $ra, \"fault-back-failures\": 0}" "$tmp/json2" ||
	fail "--json evicted figures: $(cat "$tmp/json2")"
exec 6>&-
wait "$hpid" || fail "spilling holder exit status"
hpid=
echo "ok 4 evicted and fault-back figures of a process"
