#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The layers of lib/ (Documentation/lib/layers.rst) hold on the built
# objects: no call crosses folders upward, no cycle spans two files.  Then
# the check is shown to bite: in a copy of the objects, a planted upward
# call, a planted two-file cycle and a folder missing from the map must
# each fail, naming the edge or the folder.  And no .c file of lib/ is
# over 800 lines (STYLE: files a reader can hold).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$here/../.." && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
check="$src/scripts/check-layers.py"
map="$src/Documentation/lib/layers.rst"

if [ ! -r "$check" ] || [ ! -r "$map" ] || [ ! -d "$build/lib" ]; then
	echo "no source tree or library objects beside this test (run from the build)"
	exit $KSFT_SKIP
fi
command -v python3 >/dev/null || { echo "python3 not installed"; exit $KSFT_SKIP; }
command -v nm >/dev/null || { echo "nm not installed"; exit $KSFT_SKIP; }
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=gcc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The objects of today's sources only: a renamed file leaves a stale
# object behind in the build folder.
(cd "$src/lib" && find . -name '*.c') | sed 's/\.c$/.o/' | while read -r o; do
	if [ -r "$build/lib/$o" ]; then
		mkdir -p "$tmp/lib/$(dirname "$o")"
		cp "$build/lib/$o" "$tmp/lib/$o"
	else
		echo "missing object lib/$o" >> "$tmp/missing"
	fi
done

echo "TAP version 13"
echo "1..5"
n=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n $1"; }

# 1. The tree as built.
if [ -s "$tmp/missing" ]; then
	sed 's/^/# /' "$tmp/missing"
	not_ok "layers: every source of lib/ was built"
elif python3 "$check" --map "$map" "$tmp/lib" > "$tmp/out" 2>&1; then
	sed 's/^/# /' "$tmp/out"
	ok "layers: lib/ calls only downward, no cycle over files"
else
	sed 's/^/# /' "$tmp/out"
	not_ok "layers: lib/ calls only downward, no cycle over files"
fi

# Compile a planted object into the copy: plant DIR/NAME 'C source'.
plant() {
	mkdir -p "$tmp/lib/$1"
	printf '%s\n' "$3" > "$tmp/plant.c"
	"$cc" -c -o "$tmp/lib/$1/$2.o" "$tmp/plant.c"
}

# expect_fail NAME 'what it must say' (then the planted files are removed)
expect_fail() {
	if python3 "$check" --map "$map" "$tmp/lib" > "$tmp/out" 2>&1; then
		sed 's/^/# /' "$tmp/out"
		echo "# the check passed with $1 planted"
		not_ok "layers: a planted $1 fails the check"
	elif grep -qF -- "$2" "$tmp/out"; then
		sed 's/^/# /' "$tmp/out"
		ok "layers: a planted $1 fails the check"
	else
		sed 's/^/# /' "$tmp/out"
		echo "# the failure does not name: $2"
		not_ok "layers: a planted $1 fails the check"
	fi
}

# 2. The host tier calling the governor's credit drain: upward.
if plant host host_planted '
void ortmem__credit_drain(void *gov);
void ortmem__planted_up(void *gov);
void ortmem__planted_up(void *gov) { ortmem__credit_drain(gov); }'; then
	expect_fail "upward call" "upward call host/host_planted -> gov/gov_credit (ortmem__credit_drain)"
	rm -f "$tmp/lib/host/host_planted.o"
else
	ok "layers: a planted upward call fails the check # SKIP no C compiler"
fi

# 3. Two files of one folder calling each other.
if plant pack pack_planted_a '
void ortmem__planted_b(int n);
void ortmem__planted_a(int n);
void ortmem__planted_a(int n) { if (n) ortmem__planted_b(n - 1); }' &&
   plant pack pack_planted_b '
void ortmem__planted_a(int n);
void ortmem__planted_b(int n);
void ortmem__planted_b(int n) { if (n) ortmem__planted_a(n - 1); }'; then
	expect_fail "two-file cycle" "cycle over 2 files (pack/pack_planted_a pack/pack_planted_b): pack/pack_planted_a -> pack/pack_planted_b (ortmem__planted_b), pack/pack_planted_b -> pack/pack_planted_a (ortmem__planted_a)"
	rm -f "$tmp/lib/pack/pack_planted_a.o" "$tmp/lib/pack/pack_planted_b.o"
else
	ok "layers: a planted two-file cycle fails the check # SKIP no C compiler"
fi

# 4. A folder the map does not name.
if plant planted planted 'int ortmem__planted_data = 1;'; then
	expect_fail "folder missing from the map" "folder lib/planted/ is not in the layer map"
else
	ok "layers: a planted folder missing from the map fails the check # SKIP no C compiler"
fi

# 5. File length.
long=$(cd "$src" && find lib -name '*.c' -exec wc -l {} + |
	awk '$2 != "total" && $1 > 800 {print $2 " (" $1 " lines)"}')
if [ -z "$long" ]; then
	ok "layers: no .c file in lib/ is over 800 lines"
else
	echo "$long" | sed 's/^/# over 800 lines: /'
	not_ok "layers: no .c file in lib/ is over 800 lines"
fi
