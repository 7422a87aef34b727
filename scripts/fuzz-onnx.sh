#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build the ONNX front end's libFuzzer target (clang, ASan) and run it for a
# bounded time from the light models: scripts/fuzz-onnx.sh [SECONDS].
# Exits non-zero on a crash, a leak or a sanitizer report; the input that
# caused it is left in build/clang-address/fuzz-onnx/.
set -e
cd "$(dirname "$0")/.."
secs=${1:-60}
make -s CC=clang SAN=address lib
make -s -C tools CC=clang SAN=address fuzz
dir=build/clang-address/fuzz-onnx
mkdir -p "$dir/corpus"
cp selftests/onnx/data/*.onnx "$dir/corpus/"
cd "$dir"
rc=0
../tools/fuzz-onnx -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
	-print_final_stats=1 corpus > log 2>&1 || rc=$?
tail -n 30 log
echo "fuzz-onnx: exit $rc after $(sed -n 's/^stat::number_of_executed_units: *//p' log) runs"
exit $rc
