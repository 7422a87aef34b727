// SPDX-License-Identifier: MIT
/*
 * The gap placement's context (plan_gaps.c has the placement; the method
 * is in Documentation/lib/placement.rst): a plan's gaps, indexed by their
 * first step, the profile with every gap kept, the per-step scratch the
 * sweeps use, whether the graph is dense, and the largest step's
 * footprint, below which a device budget is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "plan_gaps.h"

/*
 * A dense graph: its gaps span more than this many steps in all.  An
 * allocator's pass costs about 8-16 ns per step a gap spans (it walks the
 * residents at every step: 130-270 ms on a random tree of 10,000 values,
 * 16.5 million), so past 2^19 a pass alone takes more than the default
 * time budget, and the sweeps' rules other than Belady's, which scan the
 * live gaps per eviction, as much.  A dense graph's first plan is the
 * Belady sweep and its packing (plan_gaps.c, gp_first_dense()), with one
 * pass only where that is far above the sweep's bytes and the graph near
 * the threshold (GAP_NEAR_SPAN below); its other passes are timed like
 * the rest and stop at the budget's end.
 */
#define GAP_DENSE_SPAN (1u << 19)
uint64_t ortmem__plan_dense_span = GAP_DENSE_SPAN;

/*
 * A dense graph spanning up to this many steps (eight times the threshold:
 * 2,600-4,200-node random DAGs, trees of up to 5,000 values), a pass
 * costs one to four default budgets; where its first plan is far above
 * its guide, that pass is part of the first plan (plan_gaps.c,
 * gp_first_far()): at 90 % 1.08-1.18x Belady's bytes instead of
 * 1.36-1.74x, for 5-25 ms more.  Past it (10,000 values: 67-190 ms a
 * pass) the first plan stays the sweep's packing.
 */
#define GAP_NEAR_SPAN (8u << 19)
uint64_t ortmem__plan_near_span = GAP_NEAR_SPAN;

static uint64_t gp_align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int ortmem__plan_gap_alloc(struct gap_ctx *c)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t n = plan->n_nodes, nb = plan->n_bufs;
	uint32_t nt = plan->touch_idx[nb], b, k, i;

	c->asz = malloc(sizeof(*c->asz) * (nb + 1));
	c->gaps = malloc(sizeof(*c->gaps) * (nt + 1));
	c->by_first = malloc(sizeof(*c->by_first) * (nt + 1));
	c->by_first_idx = calloc(n + 2, sizeof(*c->by_first_idx));
	c->base = calloc(n + 2, sizeof(*c->base));
	c->prof = malloc(sizeof(*c->prof) * (n + 1));
	c->bud = malloc(sizeof(*c->bud) * (n + 1));
	c->foot = calloc(n + 1, sizeof(*c->foot));
	c->vals = malloc(sizeof(*c->vals) * (n + 1));
	c->active = malloc(sizeof(*c->active) * (nt + 1));
	c->written = malloc(sizeof(*c->written) * (nb + 1));
	c->off = calloc(nt + 1, 1);
	c->best = calloc(nt + 1, 1);
	c->order = malloc(sizeof(*c->order) * (nt + 1));
	if (!c->asz || !c->gaps || !c->by_first || !c->by_first_idx || !c->base ||
	    !c->prof || !c->bud || !c->foot || !c->vals || !c->active || !c->written ||
	    !c->off || !c->best || !c->order)
		return ortmem__err_plain(-ENOMEM, "planner: cannot index the gaps of %u buffers", nb);
	if (ortmem__rt_init(&c->over, n))
		return ortmem__err_plain(-ENOMEM, "planner: cannot index the steps of %u buffers", nb);
	for (b = 0; b < nb; b++) {
		const struct pl_buf *pb = &plan->bufs[b];

		c->asz[b] = gp_align_up(pb->size, plan->o.align[ORTMEM_TIER_DEVICE]);
		/* the profile as differences first: O(buffers), not O(lifetimes) */
		if (pb->lo < pb->hi) {
			c->base[pb->lo] += c->asz[b];
			c->base[pb->hi] -= c->asz[b];
		}
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			struct gap g = { .k = k, .buf = b, .first = plan->touch_step[k] + 1 };

			g.tail = k + 1 == plan->touch_idx[b + 1];
			g.end = g.tail ? pb->hi : plan->touch_step[k + 1];
			if (g.end <= g.first || !pb->size)
				continue;	/* nothing inside: never worth sending off */
			c->gaps[c->n_gaps++] = g;
			c->by_first_idx[g.first + 1]++;
			c->span += g.end - g.first;
		}
	}
	for (i = 1; i <= n; i++)
		c->base[i] += c->base[i - 1];
	c->dense = c->span > ortmem__plan_dense_span;
	c->near = c->span <= ortmem__plan_near_span;
	for (i = 0; i <= n; i++)
		c->by_first_idx[i + 1] += c->by_first_idx[i];
	for (i = 0; i < c->n_gaps; i++)
		c->by_first[c->by_first_idx[c->gaps[i].first]++] = i;
	for (i = n + 1; i > 0; i--)
		c->by_first_idx[i] = c->by_first_idx[i - 1];
	c->by_first_idx[0] = 0;
	return 0;
}

/* The largest single step's footprint; refuse a budget below it. */
int ortmem__plan_gap_footprint(struct gap_ctx *c, uint64_t *foot)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t b, k, s, at = 0;
	uint64_t given;

	*foot = 0;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			c->foot[plan->touch_step[k]] += c->asz[b];
	for (s = 0; s < plan->n_nodes; s++)
		if (c->foot[s] > *foot) {
			*foot = c->foot[s];
			at = s;
		}
	c->max_foot = *foot;
	if (*foot <= c->budget)
		return 0;
	/* Name the budget the caller gave; c->budget is it rounded down to
	 * the alignment, and the footprint, a sum of aligned sizes, fits
	 * one exactly when it fits the other. */
	given = plan->o.budget[ORTMEM_TIER_DEVICE];
	return ortmem__err_capacity(false, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_ACTIVATION,
		*foot, given,
		"step %u alone needs %" PRIu64 " device bytes (the buffers of its inputs and outputs, aligned), %" PRIu64
		" more than the device budget of %" PRIu64 "; raise the budget to at least %" PRIu64,
		at, *foot, *foot - given, given, *foot);
}

void ortmem__plan_gap_free(struct gap_ctx *c)
{
	free(c->asz);
	free(c->gaps);
	free(c->by_first);
	free(c->by_first_idx);
	free(c->base);
	free(c->prof);
	free(c->bud);
	free(c->foot);
	free(c->vals);
	ortmem__rt_free(&c->over);
	free(c->active);
	free(c->written);
	free(c->off);
	free(c->order);
}
