#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-plan on bad input: every case exits 1 (bad file) or 2 (bad usage),
# never by a signal, with a message naming what was wrong.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
tool="$here/../../tools/ortmem-plan"
model="$src/selftests/onnx/data/light_squeezenet.onnx"

[ -x "$tool" ] && [ -r "$model" ] || { echo "no ortmem-plan or model"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 is needed"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# expect RC WORDS -- ARGS...: exit status RC and stderr matching WORDS.
expect() {
	rc_want=$1 words=$2
	shift 3
	"$tool" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	n=$((n + 1))
	if [ $rc -eq "$rc_want" ] && grep -qiE "$words" "$tmp/err"; then
		echo "ok $n $(head -c 150 "$tmp/err" | head -n 1)"
	else
		failed=1
		echo "not ok $n ortmem-plan $* exited $rc (want $rc_want), said: $(head -n 2 "$tmp/err")"
	fi
}

: > "$tmp/empty.onnx"
head -c 5000 "$model" > "$tmp/truncated.onnx"
cp "$src/selftests/onnx/data/NOTICE" "$tmp/text.onnx"
python3 - "$tmp" <<'PY'
import sys
d = sys.argv[1]
def varint(v):
    out = b''
    while True:
        b = v & 0x7f
        v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v:
            return out
def ld(field, data):
    return varint(field << 3 | 2) + varint(len(data)) + data
# graph.node.attribute.g nested 400 times: a stack-exhaustion attempt.
g = b''
for _ in range(400):
    g = ld(1, ld(5, ld(6, g)))
open(d + '/nested.onnx', 'wb').write(b'\x08\x08' + ld(7, g))
# A length field that claims more than the file holds.
open(d + '/overlong.onnx', 'wb').write(b'\x08\x08' + varint(7 << 3 | 2) + varint(1 << 40))
# IR version 2, and a graph whose node reads an undefined value.
open(d + '/ir2.onnx', 'wb').write(b'\x08\x02' + ld(7, b''))
node = ld(1, b'nothing') + ld(2, b'y') + ld(4, b'Relu')
open(d + '/undef.onnx', 'wb').write(b'\x08\x08' + ld(7, ld(1, node)))
# Two nodes that read each other: a cycle.
a = ld(1, b'q') + ld(2, b'p') + ld(4, b'Relu')
b = ld(1, b'p') + ld(2, b'q') + ld(4, b'Relu')
open(d + '/cycle.onnx', 'wb').write(b'\x08\x08' + ld(7, ld(1, a) + ld(1, b)))
PY

expect 1 "empty" -- "$tmp/empty.onnx"
expect 1 "truncated|remain" -- "$tmp/truncated.onnx"
expect 1 "wire type|varint|claims|decode" -- "$tmp/text.onnx"
expect 1 "nested deeper" -- "$tmp/nested.onnx"
expect 1 "claims .* bytes" -- "$tmp/overlong.onnx"
expect 1 "IR version 2" -- "$tmp/ir2.onnx"
expect 1 "reads 'nothing'" -- "$tmp/undef.onnx"
expect 1 "cycle" -- "$tmp/cycle.onnx"
expect 1 "cannot open" -- "$tmp/missing.onnx"
expect 1 "not a regular file" -- "$tmp"
expect 1 "no graph input 'nope'" -- --dim nope:0=1 "$model"
expect 1 "rank 4" -- --dim data_0:7=1 "$model"
expect 2 "NAME:AXIS=N" -- --dim data_0=1 "$model"
expect 1 "step [0-9]+ \(node '[^']+', [A-Za-z]+\) alone needs [0-9]+ device bytes" -- --device 1K --host 1G "$model"
expect 1 "disk arena needs [0-9]+ bytes at step [0-9]+ \(node '[^']+', [A-Za-z]+\)" -- --device 7M --host 1K --disk 1K "$src/selftests/onnx/data/light_densenet121.onnx"
expect 2 "not a size" -- --device 12X "$model"
expect 2 "power of two" -- --align 3 "$model"
expect 2 "move-ratio wants a power of two from 1 to 1024" -- --move-ratio 24 "$model"
expect 2 "move-ratio wants a power of two from 1 to 1024" -- --move-ratio 2048 "$model"
expect 2 "move-ratio wants a power of two from 1 to 1024" -- --move-ratio 0 "$model"
expect 2 "usage" -- 
echo "1..$n"
exit $failed
