// SPDX-License-Identifier: MIT
/*
 * The gap placement's resident intervals packed (the placement is in
 * plan_gaps.c; Documentation/lib/placement.rst): each run of touches
 * joined by kept gaps is one item of the offset packer.  Also the two
 * calls the tests make into the placement: the guide its passes follow,
 * and a slack sweep's plan packed as a decision.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_gaps.h"

/* Pack the resident intervals; offsets to the buffers and touches. */
int ortmem__plan_gap_pack(struct gap_ctx *c, uint64_t deadline, bool decide,
			  struct pk_result *res)
{
	struct ortmem_plan *plan = c->plan;
	struct pk_opts po = { .deadline_ns = deadline, .seed = plan->o.seed,
			      .max_iter = plan->o.max_iterations,
			      .threads = plan->o.threads,
			      .target = decide ? c->budget : 0 };
	uint32_t nt = plan->touch_idx[plan->n_bufs], n = 0, b, k, j;
	struct pk_item *it = calloc(nt + plan->n_bufs + 1, sizeof(*it));
	uint64_t *off = malloc(sizeof(*off) * (nt + plan->n_bufs + 1));
	int ret;

	if (!it || !off) {
		free(it);
		free(off);
		return ortmem__err_plain(-ENOMEM, "planner: cannot pack %u intervals", nt);
	}
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1) {
			for (j = k; j + 1 < plan->touch_idx[b + 1] && !c->best[j]; j++)
				;
			it[n++] = (struct pk_item){ plan->touch_step[k],
				c->best[j] || j + 1 < plan->touch_idx[b + 1] ?
				plan->touch_step[j] + 1ull : plan->bufs[b].hi, c->asz[b] };
		}
	/* Past a few thousand intervals the packer's search overruns any
	 * budget (its local search checks the clock per whole plan): its
	 * first heuristic only; the allocator's pass is the other candidate. */
	if (n > GAP_SEARCH_MAX)
		po.deadline_ns = 0;
	c->searched = po.deadline_ns != 0;
	ret = ortmem__pack(it, n, &po, off, res);
	if (ret)
		ret = ortmem__err_plain(ret, "planner: cannot pack %u device intervals", n);
	for (b = 0, n = 0; !ret && b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1, n++) {
			for (j = k; j + 1 < plan->touch_idx[b + 1] && !c->best[j]; j++)
				;
			for (; k <= j; k++)
				plan->touch_off[k] = off[n];
			k = j;
		}
	free(it);
	free(off);
	return ret;
}

/* The offset-free plan the allocator's first passes follow (the cheapest
 * sweep under the device budget; a solved plan), for tests: its off gaps
 * into @off, one flag per touch; its bytes, or UINT64_MAX (error set). */
uint64_t ortmem__plan_gap_guide(struct ortmem_plan *plan, uint8_t *off)
{
	struct gap_ctx c = { .plan = plan, .budget = ortmem__plan_dev_budget(plan) };
	uint64_t foot, cost = UINT64_MAX;
	uint32_t s;

	if (!ortmem__plan_gap_alloc(&c) && !ortmem__plan_gap_footprint(&c, &foot)) {
		for (s = 0; s < plan->n_nodes; s++)
			c.bud[s] = c.budget;
		ortmem__plan_gap_place(&c);
		memcpy(off, c.best, plan->touch_idx[plan->n_bufs]);
		cost = ortmem__plan_gap_cost(plan, off);
	}
	free(c.best);
	ortmem__plan_gap_free(&c);
	return cost;
}

/* A slack sweep's plan (slack 1: 1/128 of the budget left free, as in
 * gp_slack_decide()) packed as a decision at the budget as the placement
 * packs it, for tests: its bytes, the packing's height in @height, or
 * UINT64_MAX (error set).  It overwrites the plan's offsets. */
uint64_t ortmem__plan_gap_decide(struct ortmem_plan *plan, int slack, uint64_t *height)
{
	struct gap_ctx c = { .plan = plan, .budget = ortmem__plan_dev_budget(plan) };
	struct pk_result res = { 0 };
	uint64_t foot, cost = UINT64_MAX;
	uint32_t s;

	if (slack >= 1 && slack <= GAP_SLACKS && !ortmem__plan_gap_alloc(&c) && !ortmem__plan_gap_footprint(&c, &foot)) {
		for (s = 0; s < plan->n_nodes; s++)
			c.bud[s] = c.budget - (c.budget >> (8 - slack));
		ortmem__plan_gap_place(&c);
		if (!ortmem__plan_gap_pack(&c, ortmem__now_ns() + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC,
			     true, &res)) {
			cost = ortmem__plan_gap_cost(plan, c.best);
			*height = res.height;
		}
	}
	free(c.best);
	ortmem__plan_gap_free(&c);
	return cost;
}
