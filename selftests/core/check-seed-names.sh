#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every name the original seed's memory API exports (its "pub use" lists
# and its own types, shared/seeds/000_*.txt) has a row in
# Documentation/lib/contracts.rst, which maps it to its C construct or
# says what it folds into.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
doc="$src/Documentation/lib/contracts.rst"
seed=$(ls "$src"/../shared/seeds/000_*.txt 2>/dev/null | head -n 1)
[ -r "$doc" ] || { echo "no source tree beside this test"; exit $KSFT_SKIP; }
[ -r "$seed" ] || { echo "no seed beside the source tree (../shared/seeds)"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit $KSFT_SKIP; }
python3 - "$seed" "$doc" <<'PY'
import re, sys
# The seed is stored with a line number before each line: drop it.
text = "\n".join(re.sub(r"^\d+", "", l) for l in open(sys.argv[1]).read().splitlines())
names = set()
for block in re.findall(r"pub use \w+::\{([^}]*)\}", text, re.S):
    names.update(n.strip() for n in block.split(",") if n.strip())
names.update(re.findall(r"pub (?:enum|struct) (\w+)", text))
doc = open(sys.argv[2]).read()
missing = sorted(n for n in names if "``%s``" % n not in doc)
if len(names) < 40:
    print("found only %d names in the seed: is it the memory API's?" % len(names))
    sys.exit(1)
for n in missing:
    print("%s: exported by the seed, but no row of contracts.rst names it" % n)
if missing:
    sys.exit(1)
print("ok: all %d names of the seed are in Documentation/lib/contracts.rst" % len(names))
PY
