// SPDX-License-Identifier: MIT
/*
 * The gap placement's branch and bound (Documentation/lib/placement.rst):
 * a search over the sweep's choices on small models, one more candidate
 * for plan_gaps.c.
 */
#include <stdlib.h>
#include <string.h>

#include "plan_gaps.h"

#define GAP_EXACT_LIVE (1u << 16)	/* (gap, step) pairs the search takes */
#define GAP_EXACT_NODES 4096		/* and the nodes it searches */

/*
 * Branch and bound over the sweep's choices, on small models: at the first
 * step over its budget, each gap live there is tried off in turn (gaps
 * chosen at one step in increasing order, so each set is tried once),
 * pruned when the cost so far plus the excess times the cheapest rate of
 * any candidate (0, 1 or 2 transfers a byte) reaches the best plan.  The
 * sweep's rules take the step's furthest next use; on the chain-and-skip
 * shapes of U-Nets a cheaper set exists (a 16 MiB and a 4 MiB skip
 * instead of 16 and 8).  It stops after GAP_EXACT_NODES nodes or 1/64 of
 * the time budget: where it cannot finish, the time it takes is the
 * packer's, whose timed search then lands elsewhere (on random DAGs at the
 * largest step's budget, 1/8 of the budget cost 5-9 % more bytes).  U-Net
 * finishes in under 200 nodes.  The best found is left in c->best.
 */
struct gp_bb {
	struct gap_ctx *c;
	uint32_t *live, *live_idx;	/* gaps live at each step, CSR */
	uint32_t *stack, *stack_end;	/* candidates per depth */
	uint32_t *nwritten;		/* off gaps per buffer */
	uint64_t cost, best, nodes, deadline;
	bool stop;
};

static uint64_t gp_bb_units(const struct gp_bb *bb, const struct gap *g)
{
	return (g->tail ? 0u : 1u) + (bb->nwritten[g->buf] ? 0u : 1u);
}

static void gp_bb_flip(struct gp_bb *bb, const struct gap *g, bool out)
{
	struct gap_ctx *c = bb->c;
	uint32_t t;

	for (t = g->first; t < g->end; t++)
		c->prof[t] = out ? c->prof[t] - c->asz[g->buf] : c->prof[t] + c->asz[g->buf];
	c->off[g->k] = out;
	if (out)
		bb->nwritten[g->buf]++;
	else
		bb->nwritten[g->buf]--;
}

static void gp_bb_dfs(struct gp_bb *bb, uint32_t s, uint32_t after, uint32_t *sp)
{
	struct gap_ctx *c = bb->c;
	uint32_t n = c->plan->n_nodes, i, nc = 0, j;
	uint64_t minu = 2, u, add;

	if (!bb->stop && (++bb->nodes & 255) == 0)
		bb->stop = bb->nodes >= GAP_EXACT_NODES || ortmem__now_ns() > bb->deadline;
	if (bb->stop)
		return;
	while (s < n && c->prof[s] <= c->bud[s])
		s++, after = UINT32_MAX;
	if (s < n && sp + (bb->live_idx[s + 1] - bb->live_idx[s]) > bb->stack_end) {
		bb->stop = true;	/* deeper than the stack: give up */
		return;
	}
	if (s == n) {
		if (bb->cost < bb->best) {
			bb->best = bb->cost;
			memcpy(c->best, c->off, c->plan->touch_idx[c->plan->n_bufs]);
		}
		return;
	}
	for (i = bb->live_idx[s]; i < bb->live_idx[s + 1]; i++) {
		uint32_t gi = bb->live[i];

		if (c->off[c->gaps[gi].k] || (after != UINT32_MAX && gi <= after))
			continue;
		u = gp_bb_units(bb, &c->gaps[gi]);
		minu = u < minu ? u : minu;
		sp[nc++] = gi;
	}
	if (!nc || bb->cost + (c->prof[s] - c->bud[s]) * minu >= bb->best)
		return;
	for (j = 0; j < nc && !bb->stop; j++) {
		const struct gap *g = &c->gaps[sp[j]];

		add = gp_bb_units(bb, g) * c->asz[g->buf];
		if (bb->cost + add >= bb->best)
			continue;
		bb->cost += add;
		gp_bb_flip(bb, g, true);
		gp_bb_dfs(bb, s, sp[j], sp + nc);
		gp_bb_flip(bb, g, false);
		bb->cost -= add;
	}
}

/* Improve c->best (costing @best) by the search above, on models of at
 * most GAP_EXACT_LIVE (gap, step) pairs, until @deadline. */
void ortmem__plan_gap_exact(struct gap_ctx *c, uint64_t best, uint64_t deadline)
{
	struct ortmem_plan *plan = c->plan;
	struct gp_bb bb = { .c = c, .best = best, .deadline = deadline };
	uint32_t n = plan->n_nodes, i, t;
	uint64_t total = 0;

	for (i = 0; i < c->n_gaps; i++)
		total += c->gaps[i].end - c->gaps[i].first;
	if (!total || total > GAP_EXACT_LIVE)
		return;
	bb.live = malloc(sizeof(*bb.live) * total);
	bb.live_idx = calloc(n + 2, sizeof(*bb.live_idx));
	bb.stack = malloc(sizeof(*bb.stack) * (total + c->n_gaps + 1));
	bb.nwritten = calloc(plan->n_bufs + 1, sizeof(*bb.nwritten));
	bb.stack_end = bb.stack ? bb.stack + total + c->n_gaps + 1 : NULL;
	if (bb.live && bb.live_idx && bb.stack && bb.nwritten) {
		for (i = 0; i < c->n_gaps; i++)
			for (t = c->gaps[i].first; t < c->gaps[i].end; t++)
				bb.live_idx[t + 2]++;
		for (t = 0; t < n; t++)
			bb.live_idx[t + 2] += bb.live_idx[t + 1];
		for (i = 0; i < c->n_gaps; i++)
			for (t = c->gaps[i].first; t < c->gaps[i].end; t++)
				bb.live[bb.live_idx[t + 1]++] = i;
		memcpy(c->prof, c->base, sizeof(*c->prof) * n);
		memset(c->off, 0, plan->touch_idx[plan->n_bufs]);
		gp_bb_dfs(&bb, 0, UINT32_MAX, bb.stack);
	}
	free(bb.live);
	free(bb.live_idx);
	free(bb.stack);
	free(bb.nwritten);
}

