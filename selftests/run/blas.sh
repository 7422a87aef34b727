#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ortmem-run's OpenBLAS kernels: on a CPU with AVX2 it never computes with
# OpenBLAS's pre-AVX fallback (what an OpenBLAS older than the CPU loads),
# a kernel family the user names in OPENBLAS_CORETYPE is the one used, the
# table and the JSON both say which, and the default BLAS threads leave a
# core to the I/O.
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
tool="$here/../../tools/ortmem-run"
[ -x "$tool" ] || { echo "no ortmem-run beside the tests"; exit $KSFT_SKIP; }
grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo ||
	{ echo "the CPU has no AVX2: OpenBLAS's own choice stands"; exit $KSFT_SKIP; }
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/ortmem-run-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "not ok: $*"; exit 1; }
core() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas"]["core"])' "$1"; }

m="$tmp/m.bin"
"$tool" create --layers 2 --hidden 64 --ffn 128 "$m" >/dev/null || fail "create"
env -u OPENBLAS_CORETYPE "$tool" --json --mode ram "$m" > "$tmp/j" || fail "ram mode"
c=$(core "$tmp/j")
case $c in
""|Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Opteron*|Barcelona|Nano)
	fail "computes with the pre-AVX kernels '$c' on a CPU with AVX2" ;;
esac
OPENBLAS_CORETYPE=Haswell "$tool" --json --mode ram "$m" > "$tmp/j" || fail "ram mode, Haswell"
[ "$(core "$tmp/j")" = Haswell ] || fail "OPENBLAS_CORETYPE=Haswell gave '$(core "$tmp/j")'"
OPENBLAS_CORETYPE=Haswell "$tool" --mode ram "$m" > "$tmp/t" || fail "ram mode, table"
grep -q "^blas *OpenBLAS Haswell kernels, [1-9][0-9]* threads*$" "$tmp/t" || fail "the table names the kernels: $(grep blas "$tmp/t")"
# The default leaves a core to the I/O: the CPUs it may use, less one.
cpus=$(nproc)
want=$((cpus > 1 ? cpus - 1 : 1))
"$tool" --json --mode ram "$m" > "$tmp/j" || fail "ram mode, threads"
t=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas"]["threads"])' "$tmp/j")
[ "$t" = "$want" ] || fail "default BLAS threads $t on $cpus CPUs (want $want)"
"$tool" --json --threads 1 --mode ram "$m" > "$tmp/j" || fail "ram mode, --threads 1"
t=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["blas"]["threads"])' "$tmp/j")
[ "$t" = 1 ] || fail "--threads 1 gave $t"
echo "ok: ortmem-run computes with the CPU's kernels ($c)"
