#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every page under Documentation/ parses as reStructuredText without a
# warning: a malformed table or a short title underline renders wrong, or
# not at all, and no build of the pages runs here to say so.  The parse
# is docutils' own; the few Sphinx and kernel-doc directives and roles
# the pages use are stood in for (their content is not checked).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
py=/usr/bin/python3

if [ ! -d "$src/Documentation" ]; then
	echo "no source tree beside this test"
	exit $KSFT_SKIP
fi
if ! $py -c 'import docutils' 2>/dev/null; then
	echo "no python3-docutils (make deps installs it)"
	exit $KSFT_SKIP
fi
exec $py - "$src/Documentation" <<'EOF'
import glob, io, sys
import docutils.core, docutils.nodes
from docutils.parsers.rst import Directive, directives, roles

class AnyOption(dict):
    """Every option a directive is given, taken as it is."""
    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return directives.unchanged

class Skipped(Directive):
    """A Sphinx or kernel-doc directive: its body is not checked."""
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = AnyOption()

    def run(self):
        return []
for name in ("toctree", "kernel-doc"):
    directives.register_directive(name, Skipped)
roles.register_generic_role("doc", docutils.nodes.emphasis)

pages = sorted(glob.glob(sys.argv[1] + "/**/*.rst", recursive=True))
bad = 0
for page in pages:
    errors = io.StringIO()
    with open(page, encoding="utf-8") as f:
        text = f.read()
    docutils.core.publish_doctree(text, source_path=page, settings_overrides={
        "report_level": 2, "halt_level": 5, "warning_stream": errors})
    if errors.getvalue():
        sys.stdout.write(errors.getvalue())
        bad += 1
if bad:
    print(f"{bad} of {len(pages)} pages do not parse cleanly (see above)")
    sys.exit(1)
print(f"ok: {len(pages)} pages parse as reStructuredText without a warning")
EOF
