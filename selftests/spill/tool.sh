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
# Sizes that overflow 64 bits are refused (exit 2), saying so.
for bad in "--size 99999999999G" "--size 18446744073709551616" "--bs 99999999999999999999T" \
	   "--budget 17179869184G" "--qd 18446744073709551617" "--lanes 99999999999999999999" \
	   "--runs 4294967297" "--fault 99999999999999999999:EIO" "--fault 18014398509481984K:EIO"; do
	# shellcheck disable=SC2086
	t 2 "overflow: $bad" "$tool" write $bad
	grep -q "64 bits\|out of range" "$dir/err" || { echo "not ok: no reason for $bad"; cat "$dir/err"; fail=1; }
done
# More than memory holds is refused up front, with the figures.
t 2 "size beyond memory" "$tool" write --dir "$dir" --size 1000T
grep -q "bytes of memory.*available" "$dir/err" || { echo "not ok: memory message"; cat "$dir/err"; fail=1; }
# --json prints one object also when the run fails, with the error in it.
json_ok() { # file key value
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); sys.exit(0 if o[sys.argv[2]] == json.loads(sys.argv[3]) else 1)' "$@"
}
t 1 "json on failure" "$tool" write --dir /nonexistent/x --size 1M --json
json_ok "$dir/out" ok false || { echo "not ok: json on failure"; cat "$dir/out"; fail=1; }
grep -q '"error":{"code":-2,"message":".*does not exist' "$dir/out" || { echo "not ok: json error"; cat "$dir/out"; fail=1; }
grep -q "allocate" "$dir/err" && { echo "not ok: a missing directory reads like an allocation failure"; fail=1; }
t 1 "json on injected EIO" "$tool" verify --dir "$dir" --size 1M --fault 1:EIO --json
json_ok "$dir/out" exit_status 1 || { echo "not ok: json on EIO"; cat "$dir/out"; fail=1; }
t 2 "json on a usage error" "$tool" frob --json
json_ok "$dir/out" exit_status 2 || { echo "not ok: json on usage"; cat "$dir/out"; fail=1; }
bad=$(printf '/nonexistent/\377\001"x')
t 1 "json with a path that is not UTF-8" "$tool" write --dir "$bad" --size 1M --json
json_ok "$dir/out" ok false || { echo "not ok: json not valid with a non-UTF-8 path"; cat "$dir/out"; fail=1; }
t 0 "bench json" "$tool" bench --dir "$dir" --size 4M --rw mixed --pattern rand --runs 3 --json
grep -q '"mixed_mib_s"' "$dir/out" || { echo "not ok: bench json"; fail=1; }
for f in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
	[ -e "$f" ] || continue	# a pattern that matched nothing
	case ${f##*/} in
	in | back | out | err) ;;
	*) echo "not ok: files left ($f)"; fail=1 ;;
	esac
done
exit $fail
