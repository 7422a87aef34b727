#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-plan --svg: on a model of about a thousand nodes, planned across
# the three tiers, the picture parses as SVG (python3's XML parser, and
# xmllint where installed), holds one titled rectangle per buffer of the
# JSON with the buffer's name, the live-bytes curve and the lower bound,
# a legend naming every tier, and, when the plan moves bytes, the transfer
# schedule of ortmem_plan_transfers() carrying every byte moved, the
# moves within the device arena in bars and arrows of their own.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
src=$(cat "$here/../srcdir" 2>/dev/null)
tool="$here/../../tools/ortmem-plan"
model="$src/selftests/onnx/data/light_densenet121.onnx"

[ -x "$tool" ] && [ -r "$model" ] || { echo "no ortmem-plan or model"; exit $KSFT_SKIP; }
command -v python3 >/dev/null || { echo "python3 is needed"; exit $KSFT_SKIP; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
bad() { n=$((n + 1)); failed=1; echo "not ok $n $1"; }

# check_svg MODEL DEVICE-LIMIT BUDGETS...: plan MODEL, draw it, check it.
check_svg() {
	svg_model=$1 limit=$2
	shift 2
	budgets="$*"
	# shellcheck disable=SC2086
	if ! "$tool" $budgets --json --svg "$tmp/p.svg" "$svg_model" > "$tmp/p.json" 2> "$tmp/err"; then
		bad "plan with '$budgets': $(cat "$tmp/err")"
		return 1
	fi
	if python3 - "$tmp/p.svg" "$tmp/p.json" "$limit" <<'PY'
import json, sys
import xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
plan = json.load(open(sys.argv[2]))
assert root.tag == ns + 'svg', root.tag
titles = [r.find(ns + 'title').text for r in root.iter(ns + 'rect')
          if r.get('class') == 'buf']
sized = [b for b in plan['buffers'] if b['size'] > 0]
assert len(titles) == len(sized), (len(titles), len(sized))
names = {t.split(': ')[0] for t in titles}
for b in sized:
    assert b['value'] in names, b['value']
assert any(p.get('class') == 'live' for p in root.iter(ns + 'polyline'))
assert any(l.get('class') == 'lb' for l in root.iter(ns + 'line'))
texts = ' '.join(t.text or '' for t in root.iter(ns + 'text'))
for word in ('device', 'host', 'disk', 'lower bound'):
    assert word in texts, word
moved = sum(sum(m['prefetch']) + sum(m['spill']) for m in plan['moves'])
tiers = [t for t, v in plan['tiers'].items() if v['arena_bytes']]
print('# %d buffers drawn, tiers %s, %d bytes moved' % (len(titles), tiers, moved))
limit = int(sys.argv[3])
if limit and plan['tiers']['device']['arena_bytes'] > limit:
    sys.exit('device arena over its budget')
# The transfer schedule: its bars carry every byte the plan moves, the
# read-backs (above) and write-outs (below), and a device-panel band per
# read-back; none of it when nothing moves.
import re
bars = {'xin': 0, 'xout': 0}
for r in root.iter(ns + 'rect'):
    if r.get('class') in bars:
        t = r.find(ns + 'title').text
        bars[r.get('class')] += int(re.search(r'\((\d+) bytes\)', t).group(1))
spill = sum(sum(m['spill']) for m in plan['moves'])
assert bars['xin'] == moved - spill, (bars, moved, spill)
assert bars['xout'] == spill, (bars, spill)
wins = [r for r in root.iter(ns + 'rect') if r.get('class') == 'win']
assert bool(wins) == bool(bars['xin']), len(wins)
# Moves within the device arena: bars of their own carrying the plan's
# device_move bytes of each step, and one arrow a move in the device
# panel, its buffer's rectangle going on at the new offset.
def title_bytes(e):
    return int(re.search(r'\((\d+) bytes\)', e.find(ns + 'title').text).group(1))
dm = sum(m['device_move'] for m in plan['moves'])
assert dm == plan['device_move_bytes'], (dm, plan['device_move_bytes'])
xmove = sum(title_bytes(r) for r in root.iter(ns + 'rect') if r.get('class') == 'xmove')
arrows = [l for l in root.iter(ns + 'line') if l.get('class') == 'mv']
assert xmove == dm and sum(title_bytes(a) for a in arrows) == dm, (xmove, dm)
pieces = [r for r in root.iter(ns + 'rect') if r.get('class') == 'bufmv']
assert len(pieces) <= len(arrows) and bool(pieces) <= bool(arrows)
assert ('transfers:' in texts) == bool(moved or dm), moved
print('# transfers drawn: %d bytes in, %d out, %d read-back bands, %d bytes in %d moves' %
      (bars['xin'], bars['xout'], len(wins), dm, len(arrows)))
PY
	then
		ok "SVG of a ${budgets:-device-only} plan of $(basename "$svg_model") parses and draws every buffer"
	else
		bad "SVG of a ${budgets:-device-only} plan of $(basename "$svg_model")"
	fi
	if command -v xmllint >/dev/null; then
		if xmllint --noout "$tmp/p.svg" 2> "$tmp/err"; then
			ok "xmllint accepts the SVG (${budgets:-device-only})"
		else
			bad "xmllint: $(head -n 3 "$tmp/err")"
		fi
	fi
}
check_svg "$model" 0
check_svg "$model" $((7 << 20)) --device 7M --host 1M --disk 64M
# Moves within the device arena: the plans of a random DAG near its
# largest step's footprint move buffers (none of the models above do).
py=
for p in python3 /usr/bin/python3; do
	"$p" -c "import onnx" 2>/dev/null && py=$p && break
done
if [ -n "$py" ] && "$py" "$src/selftests/onnx/dag.py" "$tmp/dag.onnx" 120 1; then
	full=$("$tool" --align 256 --json "$tmp/dag.onnx" | python3 -c "import json,sys; print(json.load(sys.stdin)['arena_bytes'])")
	foot=$("$tool" --align 256 --device 1 --host 1G "$tmp/dag.onnx" 2>&1 |
	       sed -n 's/.*raise the budget to at least \([0-9]*\).*/\1/p')
	dmoved=0
	for i in 0 1 2 3; do
		d=$((foot + (full - foot) * i / 16))
		check_svg "$tmp/dag.onnx" $d --device $d --host 1G --align 256 || continue
		dmoved=$((dmoved + $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['device_move_bytes'])" "$tmp/p.json")))
	done
	if [ "$dmoved" -gt 0 ]; then
		ok "a random DAG's plans move $dmoved bytes within the device arena, drawn"
	else
		bad "no plan of the random DAG moved a buffer within the device arena (budgets $foot..$full)"
	fi
else
	echo "# no python3 with the onnx module: the moves' drawing is untested"
fi
# A budgeted plan moves bytes and says so per step.
"$tool" --device 7M --host 1M --disk 64M --json "$model" > "$tmp/m.json"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["moves"]; assert len(m)==d["steps"]; assert sum(sum(x["prefetch"])+sum(x["spill"]) for x in m)>0' "$tmp/m.json"; then
	ok "a budgeted plan reports the bytes moved at each step"
else
	bad "a budgeted plan reports no moves"
fi
echo "1..$n"
exit $failed
