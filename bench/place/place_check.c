// SPDX-License-Identifier: MIT
/*
 * make bench-place, first: a check of the bound on tiny random graphs, no
 * library code involved.  For each graph and budget, brute force finds the
 * fewest bytes any plan can move when offsets are ignored: every subset of
 * the gaps spent off the device (a value off for part of a gap might as
 * well be off for all of it), feasible when each step's resident bytes fit
 * the budget, costing one write per value sent off and one read per gap a
 * touch closes.  Computed from the graph itself, not from the bench's
 * model, so a wrong model fails this check too.  Every plan, with offsets
 * or not, moves at least that many bytes, so each stage of cover_bound()
 * (the LP, the LP with its knapsack cover cuts, the bound returned) must
 * lie at or under it, and a bound the MIP proved optimal must equal it.
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_bench.h"

#define MAX_GAPS 16
#define MAX_NODES 12

struct gap {
	uint32_t v, lo, end;	/* off for steps [lo, end) */
	bool tail;		/* no touch closes it: no read-back */
};

/* The gaps of @g's values; false if there are more than MAX_GAPS. */
static bool gaps_of(const struct graph *g, struct gap *gp, uint32_t *n_gap,
		    uint32_t *first, uint32_t *hi)
{
	uint32_t v, s, k, last;

	*n_gap = 0;
	for (v = 0; v < g->n_vals; v++) {
		first[v] = UINT32_MAX;
		last = UINT32_MAX;
		for (s = 0; s < g->n_nodes; s++) {
			const struct g_node *nd = &g->nodes[s];
			bool touched = false;

			for (k = 0; k < nd->n_in; k++)
				touched |= nd->in[k] == v;
			for (k = 0; k < nd->n_out; k++)
				touched |= nd->out[k] == v;
			if (!touched || !g->size[v])
				continue;
			if (first[v] == UINT32_MAX)
				first[v] = s;
			else if (s > last + 1 && *n_gap < MAX_GAPS + 1)
				gp[(*n_gap)++] = (struct gap){ v, last + 1, s, false };
			last = s;
		}
		hi[v] = last == UINT32_MAX ? 0 : g->output[v] ? g->n_nodes : last + 1;
		if (last != UINT32_MAX && hi[v] > last + 1 && *n_gap < MAX_GAPS + 1)
			gp[(*n_gap)++] = (struct gap){ v, last + 1, hi[v], true };
	}
	return *n_gap <= MAX_GAPS;
}

/* The fewest bytes moved over every subset of gaps spent off the device. */
static double brute_force(const struct graph *g, uint64_t budget, const struct gap *gp,
			  uint32_t n_gap, const uint32_t *first, const uint32_t *hi)
{
	uint64_t base[MAX_NODES] = { 0 }, use[MAX_NODES], cost, best = UINT64_MAX;
	bool sent[64];
	uint32_t v, s, i, mask;

	for (v = 0; v < g->n_vals; v++)
		for (s = first[v]; g->size[v] && s < hi[v]; s++)
			base[s] += (g->size[v] + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
	for (mask = 0; mask < 1u << n_gap; mask++) {
		memcpy(use, base, sizeof(use));
		memset(sent, 0, sizeof(sent));
		cost = 0;
		for (i = 0; i < n_gap; i++) {
			if (!(mask >> i & 1))
				continue;
			v = gp[i].v;
			for (s = gp[i].lo; s < gp[i].end; s++)
				use[s] -= (g->size[v] + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
			cost += gp[i].tail ? 0 : g->size[v];
			cost += sent[v] ? 0 : g->size[v];
			sent[v] = true;
		}
		for (s = 0; s < g->n_nodes && use[s] <= budget; s++)
			;
		if (s == g->n_nodes && cost < best)
			best = cost;
	}
	return (double)best;
}

struct tally {
	unsigned cases, fail, kc_rose, mip;
};

static void check_case(const struct graph *g, const struct model *m, uint64_t budget,
		       double opt, struct tally *t)
{
	struct bound_info bi;
	double eps = 1e-6 * fmax((double)MiB, opt);
	bool bad;

	cover_bound(g, m, budget, INFINITY, &bi);
	bad = bi.lp < 0 || bi.lp > bi.kc + eps || bi.kc > opt + eps || bi.bound > opt + eps ||
	      (bi.kind == BOUND_MIP && fabs(bi.bound - opt) > eps);
	t->cases++;
	t->fail += bad;
	t->kc_rose += bi.kc > bi.lp + eps;
	t->mip += bi.kind == BOUND_MIP;
	if (bad)
		printf("place_check: FAIL %s, budget %llu: LP %.0f, KC %.0f, bound %.0f %s,"
		       " brute-force optimum %.0f\n", g->name, (unsigned long long)budget,
		       bi.lp, bi.kc, bi.bound, bound_kind_name(bi.kind), opt);
}

int main(void)
{
	struct tally t = { 0 };
	struct gap gp[MAX_GAPS + 1];
	uint32_t seed, n_gap, first[64], hi[64], k;
	char name[32];

	glp_term_out(GLP_OFF);
	for (seed = 1; seed <= 400; seed++) {
		struct graph g = { 0 };
		struct model m;
		uint64_t peak = 0, budget;
		uint32_t s;

		random_dag(&g, 4 + seed % (MAX_NODES - 3), seed);
		snprintf(name, sizeof(name), "dag-%u/%u", g.n_nodes, seed);
		g.name = name;
		if (g.n_vals > 64 || !gaps_of(&g, gp, &n_gap, first, hi)) {
			graph_free(&g);
			continue;
		}
		model_build(&g, &m);
		for (s = 0; s < m.n; s++) {
			uint64_t live = 0;

			for (k = 0; k < g.n_vals; k++)
				live += g.size[k] && first[k] <= s && s < hi[k] ? m.asz[k] : 0;
			peak = live > peak ? live : peak;
		}
		/* from the largest step's footprint (the least feasible) up to the peak */
		for (k = 0; k < 4; k++) {
			budget = m.max_foot + (peak - m.max_foot) * k / 4;
			check_case(&g, &m, budget, brute_force(&g, budget, gp, n_gap, first, hi), &t);
		}
		model_free(&m);
		graph_free(&g);
	}
	printf("place_check: %u cases, %u failed; the cuts raised the LP in %u, MIP optimum in %u\n",
	       t.cases, t.fail, t.kc_rose, t.mip);
	return t.fail || t.cases < 100 || !t.kc_rose ? 1 : 0;
}
