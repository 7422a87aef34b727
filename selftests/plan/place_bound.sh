#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The lower bound make bench-place measures the placement against
# (bench/place/place_bound.c: the covering model's LP, its knapsack cover
# cuts, the branch and cut) never exceeds the brute-force optimum of tiny
# random graphs, and equals it where the MIP proves optimality
# (bench/place/place_check.c, built as a fixture by group.mk; 1,600 cases,
# under a second).
KSFT_SKIP=4
here=$(cd "$(dirname "$0")" && pwd)
check="$here/fixtures/place_check"
[ -x "$check" ] || { echo "no place_check fixture: GLPK (libglpk-dev, make deps) was missing at build time"; exit $KSFT_SKIP; }
"$check"
