/* SPDX-License-Identifier: MIT */
/*
 * make bench-place: what place_bench.c (graphs, ortmem, Belady) shares with
 * place_bound.c (the lower bound), split so each file stays readable.
 */
#ifndef PLACE_BENCH_H
#define PLACE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_IO 8
#define MiB (1024ull * 1024)

struct g_node {
	uint32_t in[MAX_IO], n_in;
	uint32_t out[MAX_IO], n_out;
};

struct graph {
	const char *name;
	bool structured;
	uint64_t *size;
	bool *output;
	uint32_t n_vals, cap_vals;
	struct g_node *nodes;
	uint32_t n_nodes, cap_nodes;
};

/* The gap model, from the graph (no library code). */
struct model {
	uint32_t n;			/* steps */
	uint32_t *t_idx, *t_step;	/* touches per value, CSR */
	uint32_t *hi;
	uint64_t *asz;
	uint64_t *foot;			/* touched bytes per step */
	uint64_t max_foot, live_max;
};

void *xrealloc(void *p, size_t n);

/* Which bound a case got, and why. */
enum bound_kind { BOUND_NONE, BOUND_LP, BOUND_MIP, BOUND_MIP_TIME,
		  BOUND_MIP_SKIP, BOUND_LP_CLOSE };

/*
 * MIP limits, to keep the whole run under two minutes on small CI machines.
 * A case the MIP cannot close in MIP_MS keeps the LP bound: glp_intopt
 * reports no proven bound when stopped early, so only a proven optimum
 * replaces the LP.  Measured, GLPK finds ortmem's bytes as an incumbent at
 * once on the training graphs but never lifts the tree's bound off the LP
 * (many equal-cost fractional covers), so spending more time there buys
 * nothing.  Hence: no MIP when the LP is already within MIP_CLOSE of the
 * best feasible bytes known, nor on models with more than MIP_MAX_COLS gap
 * columns (dag-1500: all of its cases ran out of time).
 */
#define MIP_MS 2000
#define MIP_MAX_COLS 2000
#define MIP_CLOSE 1.01

double cover_bound(const struct graph *g, const struct model *m, uint64_t budget,
		   double best, double *lp_out, enum bound_kind *kind);
const char *bound_kind_name(enum bound_kind k);
bool mip_check(const struct graph *g, uint64_t budget, double mip, double lp,
	       uint64_t moved, uint64_t bel);

#endif
