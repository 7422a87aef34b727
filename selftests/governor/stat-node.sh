#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-stat as the node view: two real processes hold pinned host memory
# (through /dev/ortmem when the module is loaded, as in the VM, else the
# mmap + mlock fallback) and ortmem-stat --json, --prometheus, the table
# and --watch (in tmux) must report each one's figures as they are; a killed process's file is
# cleaned, a closed governor's file is gone.  A third process prefetches:
# its prefetch figures (hits, waits, wait time, misses) must be reported
# exactly as the process itself counts them.
# pid_alpha and pid_beta are set by start(), through eval.
# shellcheck disable=SC2154
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-stat"
holder="$here/fixtures/holder"
prefetcher="$here/fixtures/prefetcher"
[ -x "$tool" ] && [ -x "$holder" ] || { echo "no ortmem-stat or holder beside the tests"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 missing"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "not ok: $*"; exit 1; }
export ORTMEM_RUN_DIR="$tmp/run"

# Is there a governor file of process $1 in the run folder?
run_file() {
	for f in "$ORTMEM_RUN_DIR/gov.$1."*; do
		[ -e "$f" ] && return 0
	done
	return 1
}

# start NAME BYTES ALLOCS FD: a holder reading a FIFO we hold open on FD
# (closing FD ends it).
start() {
	mkfifo "$tmp/$1.in"
	eval "exec $4<> \"$tmp/$1.in\""
	# The holders must not keep each other's FIFOs (or their own) open.
	"$holder" "$1" "$2" "$3" < "$tmp/$1.in" > "$tmp/$1.out" 2> "$tmp/$1.err" 5>&- 6>&- &
	eval "pid_$1=$!"
	pids="$pids $!"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$tmp/$1.err"
	fail "holder $1 did not get ready"
}
start alpha $((8 << 20)) 4 5
start beta $((12 << 20)) 3 6
mod=0
[ -c /dev/ortmem ] && mod=1

"$tool" --json > "$tmp/node.json" || fail "--json run"
python3 - "$tmp/node.json" "$pid_alpha" "$pid_beta" "$mod" <<'PY' || fail "--json figures"
import json, sys
d = json.load(open(sys.argv[1]))
want = {int(sys.argv[2]): ("alpha", 8 << 20, 4), int(sys.argv[3]): ("beta", 12 << 20, 3)}
mod = sys.argv[4] == "1"
procs = {p["pid"]: p for p in d["processes"]}
for pid, (name, held, n) in want.items():
    p = procs[pid]
    assert p["name"] == name, p
    assert len(p["governors"]) == 1, p
    host = p["governors"][0]["tiers"]["host"]
    assert host["used"] == held and host["peak"] == held, host
    assert host["limit"] == 2 * held, host
    assert p["governors"][0]["tiers"]["device"]["used"] == 0
    if mod:
        m = p["module"]
        assert m["files"] >= 1 and m["regions"] == n, m
        assert m["resident-host"] >= held and m["total-host"] >= held, m
total = sum(h for _, h, _ in want.values())
assert d["totals"]["host"]["used"] >= total, d["totals"]
PY
echo "ok 1 --json: each process's host figures"

"$tool" --prometheus > "$tmp/node.prom" || fail "--prometheus run"
python3 - "$tmp/node.prom" "$pid_alpha" "$pid_beta" "$mod" <<'PY' || fail "--prometheus figures"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
typed, samples = {}, {}
for i, l in enumerate(lines):
    if l.startswith("# HELP "):
        name = l.split()[2]
        assert lines[i + 1].startswith("# TYPE %s " % name), l
        typed[name] = lines[i + 1].split()[3]
        continue
    if l.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{.*\})? ([0-9]+(?:\.[0-9]+)?)', l)
    assert m, l
    assert "." not in m.group(3) or m.group(1).endswith("_seconds_total"), l
    assert m.group(1) in typed, "sample before its TYPE: " + l
    assert m.group(1).startswith("ortmem_"), l
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
    samples.setdefault(m.group(1), []).append((labels, float(m.group(3))))
for name, t in typed.items():
    assert t != "counter" or name.endswith("_total"), name
def get(metric, **lab):
    hits = [v for l, v in samples.get(metric, []) if all(l.get(k) == v for k, v in lab.items())]
    assert len(hits) == 1, (metric, lab, hits)
    return hits[0]
for pid, name, held, n in ((sys.argv[2], "alpha", 8 << 20, 4), (sys.argv[3], "beta", 12 << 20, 3)):
    assert get("ortmem_governor_used_bytes", pid=pid, name=name, tier="host") == held
    assert get("ortmem_governor_limit_bytes", pid=pid, tier="host") == 2 * held
    if sys.argv[4] == "1":
        assert get("ortmem_process_regions", pid=pid, name=name) == n
        assert get("ortmem_process_resident_bytes", pid=pid, tier="host") >= held
PY
echo "ok 2 --prometheus: HELP/TYPE, names, labels and figures"

"$tool" > "$tmp/node.txt" || fail "table run"
grep -q "^pid $pid_alpha (alpha)" "$tmp/node.txt" && grep -q "^pid $pid_beta (beta)" "$tmp/node.txt" ||
	fail "table lists both processes"
awk '/^pid '"$pid_beta"' /{f=1} f && $1 == "host" {print $2; exit}' "$tmp/node.txt" | grep -qx $((12 << 20)) ||
	fail "table shows beta's host bytes"
echo "ok 3 table: one block per process"

# --watch in tmux: the view redraws in place (one frame on the screen) and
# shows the processes.
if command -v tmux >/dev/null; then
	sock="$tmp/tmux.sock"
	tmux -S "$sock" new-session -d -x 160 -y 80 \
		"env ORTMEM_RUN_DIR='$ORTMEM_RUN_DIR' '$tool' --watch 0.2"
	sleep 1.5
	tmux -S "$sock" capture-pane -p > "$tmp/pane" 2>&1
	tmux -S "$sock" kill-server 2>/dev/null
	[ "$(grep -c '^ortmem-stat every 0.2s' "$tmp/pane")" = 1 ] ||
		fail "--watch: not one frame in place: $(cat "$tmp/pane")"
	grep -q "^pid $pid_alpha (alpha)" "$tmp/pane" && grep -q "^pid $pid_beta (beta)" "$tmp/pane" ||
		fail "--watch shows both processes"
	echo "ok 4 --watch redraws in place in tmux"
else
	echo "ok 4 --watch in tmux # SKIP tmux not installed"
fi

# A process that prefetches: its own figures, as ortmem-stat reports them.
if [ -x "$prefetcher" ]; then
	mkdir "$tmp/w" && mkfifo "$tmp/pf.in" && exec 7<> "$tmp/pf.in"
	"$prefetcher" gamma "$tmp/w" < "$tmp/pf.in" > "$tmp/pf.out" 2> "$tmp/pf.err" 5>&- 6>&- 7>&- &
	pid_gamma=$!
	pids="$pids $!"
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/pf.out" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '^ready' "$tmp/pf.out" || fail "prefetcher: $(cat "$tmp/pf.err")"
	"$tool" --json > "$tmp/pf.json" || fail "--json with a prefetcher"
	"$tool" --prometheus > "$tmp/pf.prom" || fail "--prometheus with a prefetcher"
	"$tool" > "$tmp/pf.txt" || fail "table with a prefetcher"
	python3 - "$tmp/pf.out" "$tmp/pf.json" "$tmp/pf.prom" "$tmp/pf.txt" "$pid_alpha" <<'PY' || fail "prefetch figures"
import json, re, sys
f = open(sys.argv[1]).read().split()
pid = f[1]
fields = ["issued", "bytes", "hits", "waits", "wait_ns", "misses", "refused", "failed"]
own = dict(zip(fields, map(int, f[2:])))
# What the process did: two prefetched (each pin a hit or a wait), one miss.
assert own["issued"] == 2 and own["bytes"] == 2 << 20, own
assert own["hits"] + own["waits"] == 2 and own["misses"] == 1, own
assert own["refused"] == 0 and own["failed"] == 0, own
assert (own["waits"] > 0) == (own["wait_ns"] > 0), own
procs = {p["pid"]: p for p in json.load(open(sys.argv[2]))["processes"]}
assert procs[int(pid)]["name"] == "gamma"
assert procs[int(pid)]["governors"][0]["prefetch"] == own, procs[int(pid)]
assert procs[int(sys.argv[5])]["governors"][0]["prefetch"]["issued"] == 0
prom = {}
for l in open(sys.argv[3]).read().splitlines():
    m = re.fullmatch(r'(ortmem_governor_prefetch_\w+)\{pid="%s",name="gamma",governor="\d+"\} (\S+)' % pid, l)
    if m:
        prom[m.group(1)] = m.group(2)
for k in fields:
    name = "ortmem_governor_prefetch_%s_total" % ("wait_seconds" if k == "wait_ns" else k)
    want = "%d.%09d" % divmod(own[k], 10**9) if k == "wait_ns" else str(own[k])
    assert prom.get(name) == want, (name, prom.get(name), want)
txt = open(sys.argv[4]).read()
want = "prefetch: issued 2 (%d bytes), hits %d, waits %d" % (own["bytes"], own["hits"], own["waits"])
assert want in txt, txt
PY
	exec 7>&-
	wait "$pid_gamma" || fail "prefetcher exit status"
	echo "ok 5 a prefetching process's hits, waits, wait time and misses"
else
	echo "ok 5 prefetch figures # SKIP no prefetcher beside the tests"
fi

# Killed: its file stays until a reader finds the process gone.
kill -9 "$pid_alpha"; wait "$pid_alpha" 2>/dev/null
run_file "$pid_alpha" || fail "a killed process leaves its file"
"$tool" --json > "$tmp/after.json" || fail "json after kill"
grep -q "\"pid\": $pid_alpha," "$tmp/after.json" && fail "a dead process is shown"
run_file "$pid_alpha" && fail "a stale file is not cleaned"
echo "ok 6 a dead process's file is ignored and removed"

# Closed: the file goes with the governor.
exec 6>&-
wait "$pid_beta" || fail "beta exit status"
run_file "$pid_beta" && fail "a closed governor's file is left"
echo "ok 7 the file is removed at close"
echo "ok: ortmem-stat node view"
