#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run ortmem's selftest programs and sum them up.
#
#   run_tests.sh [-p PREFIX] [-T SECONDS] PATH...
#
# A PATH that is a folder runs every executable in each of its group
# folders (PATH/GROUP/NAME; deeper folders hold fixtures, not tests); a PATH
# that is a file runs that program.  Each program runs under a timeout
# (settings "timeout=" beside this script, or -T) and its TAP lines are
# counted test by test (then "# GROUP/NAME: N s", its time); a program
# that prints no TAP counts as one test by its exit status (0 pass, 4
# skip, else fail).  With ORTMEM_CHECK_DMESG=1
# (the VM sets it, as root), a test also fails when the kernel log written
# during it shows a warning, BUG, Oops, lockdep, RCU, KASAN or UBSAN report.
#
# Ends with the line "[PREFIX: ]N passed, N failed, N skipped" and exits 1
# when anything failed.  POSIX sh: it runs under busybox in the VM too.

KSFT_SKIP=4

# The tests call python3 hundreds of times.  Where python3 is a version
# manager's shim (pyenv's is a shell script: half a second a call here),
# the folder of the interpreter it resolves to goes first on PATH: the
# same interpreter, without the shim (models.sh: 101 s, then 24 s).
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) &&
   [ -x "$py" ] && [ "$(command -v python3)" != "$py" ]; then
	PATH=$(dirname "$py"):$PATH
	export PATH
fi

here=$(cd "$(dirname "$0")" && pwd)
timeout_s=
prefix=

while getopts "p:T:" opt; do
	case $opt in
	p) prefix="$OPTARG: " ;;
	T) timeout_s=$OPTARG ;;
	*) echo "usage: $0 [-p PREFIX] [-T SECONDS] PATH..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if [ -z "$timeout_s" ]; then
	timeout_s=300
	for f in "$here/settings" "$here/../settings"; do
		if [ -r "$f" ]; then
			timeout_s=$(sed -n 's/^timeout=//p' "$f")
			break
		fi
	done
fi

passed=0
failed=0
skipped=0
problems=""
out=$(mktemp)
trap 'rm -f "$out"' EXIT

note() {
	problems="$problems
  $1"
}

check_dmesg() {
	[ "${ORTMEM_CHECK_DMESG:-0}" = 1 ] || return 0
	dmesg | sed -n "/$1/,\$p" |
		grep -E 'WARNING:|BUG:|Oops|general protection fault|possible circular locking|possible recursive locking|INFO: rcu|rcu_sched|KASAN|UBSAN|kernel BUG' \
		> "$out.dmesg" || return 0
	cat "$out.dmesg" | sed 's/^/# dmesg: /'
	return 1
}

run_one() {
	prog=$1
	name=$2
	marker="ortmem-selftest-$$-$(date +%s)-$name"
	marker=$(echo "$marker" | tr '/' '_')
	if [ "${ORTMEM_CHECK_DMESG:-0}" = 1 ]; then
		echo "$marker" > /dev/kmsg 2>/dev/null
	fi
	echo "# selftests: $name"
	started=$(date +%s)
	timeout -k 5 "$timeout_s" "$prog" > "$out" 2>&1
	rc=$?
	sed 's/^/  /' "$out"
	# the seconds it took: what to look at first when CI grows slow
	echo "# $name: $(($(date +%s) - started)) s"
	p=$(grep -c -E '^ok [0-9]+' "$out")
	s=$(grep -c -E '^ok [0-9]+ .*# SKIP' "$out")
	f=$(grep -c -E '^not ok [0-9]+' "$out")
	p=$((p - s))
	grep -E '^not ok [0-9]+' "$out" | while read -r line; do
		echo "$name: $line"
	done > "$out.fails"
	while read -r line; do
		note "FAIL $line"
	done < "$out.fails"
	grep -E '^ok [0-9]+ .*# SKIP' "$out" | while read -r line; do
		echo "$name: $line"
	done > "$out.skips"
	while read -r line; do
		note "SKIP $line"
	done < "$out.skips"
	rm -f "$out.fails" "$out.skips"

	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		f=$((f + 1))
		note "TIMEOUT $name: ran past ${timeout_s}s"
	elif [ $((p + s + f)) -eq 0 ]; then
		if [ "$rc" -eq 0 ]; then
			p=1
		elif [ "$rc" -eq "$KSFT_SKIP" ]; then
			s=1
			note "SKIP $name: $(tail -n 1 "$out")"
		else
			f=1
			note "FAIL $name: exit status $rc"
		fi
	elif [ "$rc" -ne 0 ] && [ "$rc" -ne "$KSFT_SKIP" ] && [ "$f" -eq 0 ]; then
		f=1
		note "FAIL $name: exit status $rc after its tests passed"
	fi
	if ! check_dmesg "$marker"; then
		f=$((f + 1))
		note "FAIL $name: kernel log shows a warning or bug report"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
}

for path in "$@"; do
	if [ -d "$path" ]; then
		for group in "$path"/*/; do
			[ -d "$group" ] || continue
			g=$(basename "$group")
			for prog in "$group"*; do
				[ -f "$prog" ] && [ -x "$prog" ] || continue
				run_one "$prog" "$g/$(basename "$prog")"
			done
		done
	elif [ -x "$path" ]; then
		run_one "$path" "$(basename "$(dirname "$path")")/$(basename "$path")"
	else
		note "FAIL $path: not an executable or folder"
		failed=$((failed + 1))
	fi
done

if [ -n "$problems" ]; then
	echo "# not passed:$problems"
fi
echo "$prefix$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
