#!/bin/sh
# SPDX-License-Identifier: MIT
#
# RAM really is not needed: inside a memory cgroup whose limit is below
# half of the weights, the ortmem mode completes with the reference
# output, and the ram mode in the same cgroup does not.  Uses cgroup v2
# (memory.max) or v1 (memory.limit_in_bytes), whichever is writable here.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
case "$here" in
*-address*|*-thread*)
	echo "skip: sanitizer builds carry shadow memory the limit does not allow for"
	exit $KSFT_SKIP ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-test.XXXXXX")
cg=
cleanup() {
	[ -n "$cg" ] && rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "not ok: $*"; exit 1; }
out() { sed -n 's/^output *//p' "$1"; }

limit=$((56 << 20))
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	base=/sys/fs/cgroup
	grep -qw memory "$base/cgroup.subtree_control" 2>/dev/null ||
		echo +memory > "$base/cgroup.subtree_control" 2>/dev/null
	knob=memory.max
elif [ -w /sys/fs/cgroup/memory/cgroup.procs ]; then
	base=/sys/fs/cgroup/memory
	knob=memory.limit_in_bytes
else
	echo "skip: neither cgroup v2 memory.max nor v1 memory.limit_in_bytes is writable here"
	exit $KSFT_SKIP
fi
cg="$base/ortmem-run-test.$$"
mkdir "$cg" 2>/dev/null && echo $limit > "$cg/$knob" 2>/dev/null || {
	cg_failed=$cg; cg=
	echo "skip: cannot make a memory cgroup with a limit under $base ($cg_failed)"
	exit $KSFT_SKIP
}
[ -f "$cg/memory.swap.max" ] && echo 0 > "$cg/memory.swap.max" 2>/dev/null
[ -f "$cg/memory.memsw.limit_in_bytes" ] && echo $limit > "$cg/memory.memsw.limit_in_bytes" 2>/dev/null

# 16 layers of 8.4 MB: 134 MB of weights, more than twice the limit.
m="$tmp/m.bin"
"$tool" create --layers 16 --hidden 512 --ffn 2048 "$m" >/dev/null || fail "create"
weights=$(stat -c %s "$m")
[ $limit -lt $((weights / 2)) ] || fail "the limit must be below half the weights"
"$tool" --mode ram --batch 4 "$m" > "$tmp/ref" || fail "reference run outside the cgroup"
want=$(out "$tmp/ref")
incg() { sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"; }
incg "$tool" --batch 4 --budget 18M "$m" > "$tmp/o" 2> "$tmp/e" ||
	fail "ortmem mode in $limit bytes: $(cat "$tmp/e")"
[ "$(out "$tmp/o")" = "$want" ] || fail "ortmem output in the cgroup differs"
incg "$tool" --mode ram --batch 4 "$m" > "$tmp/r" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "ram mode completed in $limit bytes: the limit does not hold"
echo "ok: ortmem-run in $limit bytes, weights $weights bytes; ram mode there exits $rc"
