#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The KV-cache prefix-sharing example (fixtures/kv_prefix.c): N sequences
# share one prompt's blocks, which are charged once; a private copy per
# sequence would not fit the budget; everything comes back at the end.
# Then its refusals of bad arguments.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
ex="$here/fixtures/kv_prefix"
[ -x "$ex" ] || { echo "no kv_prefix example beside the tests"; exit $KSFT_SKIP; }
fail() { echo "not ok: $*"; exit 1; }
page=$(getconf PAGESIZE)
block=$((4 * page))

for n in 1 8 64; do
	out=$("$ex" $n 16 2 $block) || fail "the example with $n sequences"
	echo "$out" | sed 's/^/# /'
	val() { echo "$out" | awk -v k="$1" '$0 ~ "^"k" " {print $NF; exit}'; }
	prompt=$((16 * block)) own=$((2 * block))
	[ "$(val charged)" = $((prompt + n * own)) ] || fail "$n sequences: the prompt charged once"
	[ "$(val shared)" = $prompt ] || fail "$n sequences: shared bytes"
	[ "$(val private)" = $((n * own)) ] || fail "$n sequences: private bytes"
	echo "$out" | grep -q "^private copies  $((n * (prompt + own))) " || fail "$n sequences: copies figure"
	echo "$out" | grep -q "^another copy    .*exhausted" || fail "$n sequences: a copy more does not fit"
	[ "$(val after)" = 0 ] || fail "$n sequences: everything given back"
done
"$ex" 2>/dev/null; [ $? -eq 2 ] || fail "no arguments is a usage error"
"$ex" 0 1 1 $block 2>/dev/null; [ $? -eq 2 ] || fail "zero sequences is a usage error"
"$ex" 4 1 1 $((block + 1)) 2>/dev/null; [ $? -eq 2 ] || fail "a block that is not whole pages is refused"
"$ex" 4 -1 1 $block 2>/dev/null; [ $? -eq 2 ] || fail "a negative count is refused"
"$ex" 4 99999999999999999999 1 $block 2>/dev/null; [ $? -eq 2 ] || fail "an overflowing count is refused"
echo "ok: kv_prefix shares one prompt among 1, 8 and 64 sequences, charged once"
