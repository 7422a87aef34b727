#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every name the original seed's memory API exports (its "pub use" lists
# and its own types, shared/seeds/000_*.txt) has a row in
# Documentation/lib/contracts.rst, which maps it to its C construct or
# says what it folds into.  The names are kept in seed-names.txt beside
# this script, so the check runs without the seed; where the seed is
# present (../shared/seeds beside the tree) the list must match it.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
doc="$src/Documentation/lib/contracts.rst"
list="$src/selftests/core/seed-names.txt"
seed=$(ls "$src"/../shared/seeds/000_*.txt 2>/dev/null | head -n 1)
[ -r "$doc" ] && [ -r "$list" ] ||
	{ echo "no source tree beside this test"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit $KSFT_SKIP; }
python3 - "$list" "$doc" "$seed" <<'PY'
import re, sys
listed = {l.strip() for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")}
if len(listed) < 40:
    print("seed-names.txt holds only %d names: is it the memory API's?" % len(listed))
    sys.exit(1)
bad = False
if sys.argv[3]:
    # The seed is stored with a line number before each line: drop it.
    text = "\n".join(re.sub(r"^\d+", "", l)
                     for l in open(sys.argv[3]).read().splitlines())
    names = set()
    for block in re.findall(r"pub use \w+::\{([^}]*)\}", text, re.S):
        names.update(n.strip() for n in block.split(",") if n.strip())
    names.update(re.findall(r"pub (?:enum|struct) (\w+)", text))
    for n in sorted(names - listed):
        print("%s: exported by the seed, missing from seed-names.txt" % n)
    for n in sorted(listed - names):
        print("%s: in seed-names.txt, but the seed does not export it" % n)
    bad = names != listed
doc = open(sys.argv[2]).read()
missing = sorted(n for n in listed if "``%s``" % n not in doc)
for n in missing:
    print("%s: exported by the seed, but no row of contracts.rst names it" % n)
if missing or bad:
    sys.exit(1)
print("ok: all %d names of the seed are in Documentation/lib/contracts.rst%s"
      % (len(listed), "" if sys.argv[3] else " (list checked without the seed)"))
PY
