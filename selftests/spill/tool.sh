#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-spill: commands, JSON, exit codes 0/1/2, fault injection.
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-spill"
dir=$(mktemp -d /var/tmp/ortmem-tool.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
t() { # expected-rc description command...
	want=$1; shift; what=$1; shift
	"$@" > "$dir/out" 2> "$dir/err"; rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "not ok: $what (exit $rc, wanted $want)"; cat "$dir/err"; fail=1
	else
		echo "ok: $what"
	fi
}
t 0 help "$tool" --help
t 0 version "$tool" --version
t 2 "no command" "$tool"
t 2 "unknown command" "$tool" frob
t 2 "bad size" "$tool" write --size 12Q
t 2 "bad fault" "$tool" write --fault 3:EWHAT
t 2 "output without read" "$tool" write --output "$dir/x"
t 0 verify "$tool" verify --dir "$dir" --size 3M --bs 100000
t 0 "verify buffered" "$tool" verify --dir "$dir" --size 1M --bs 4097 --buffered
t 0 "verify sync" "$tool" verify --dir "$dir" --size 1M --no-uring
t 0 "verify with a short transfer" "$tool" verify --dir "$dir" --size 2M --fault 2:short
head -c 1000000 /dev/urandom > "$dir/in"
t 0 "read with input and output" "$tool" read --dir "$dir" -i "$dir/in" -s 1000000 -b 65536 -o "$dir/back"
cmp -s "$dir/in" "$dir/back" || { echo "not ok: output differs from input"; fail=1; }
t 1 "injected EIO" "$tool" write --dir "$dir" --size 1M --fault 1:EIO
grep -q "^ortmem-spill: write: .*disk tier.*Input/output error" "$dir/err" || { echo "not ok: EIO message"; cat "$dir/err"; fail=1; }
t 1 "budget" "$tool" write --dir "$dir" --size 4M --budget 1M
t 1 "missing dir" "$tool" write --dir /nonexistent/x --size 1M
t 0 "bench json" "$tool" bench --dir "$dir" --size 4M --rw mixed --pattern rand --runs 3 --json
grep -q '"mixed_mib_s"' "$dir/out" || { echo "not ok: bench json"; fail=1; }
[ "$(ls -A "$dir" | grep -v '^in$\|^back$\|^out$\|^err$')" = "" ] || { echo "not ok: files left"; fail=1; }
exit $fail
