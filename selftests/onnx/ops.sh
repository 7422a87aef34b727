#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Shape inference op by op against ONNX's own (ops.py), with the python3
# that has the onnx module (Debian's python3-onnx).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
tool="$here/../../tools/ortmem-plan"

[ -x "$tool" ] || { echo "no ortmem-plan"; exit $KSFT_SKIP; }
for py in python3 /usr/bin/python3; do
	if "$py" -c 'import onnx, numpy' 2>/dev/null; then
		exec "$py" "$src/selftests/onnx/ops.py" "$tool"
	fi
done
echo "no python3 with the onnx module (python3-onnx)"
exit $KSFT_SKIP
