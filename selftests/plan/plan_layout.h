/* SPDX-License-Identifier: MIT */
/*
 * What the placement's layout tests share (unit_close, unit_retro,
 * unit_move): a
 * plan with a device budget, its buffers' aligned sizes, and a check that
 * a plan's resident intervals lie in the budget and do not overlap.
 * Include after plan_test.h with PLAN_TEST_GRAPH (it gives ALIGN).
 */
#ifndef SELFTESTS_PLAN_PLAN_LAYOUT_H
#define SELFTESTS_PLAN_PLAN_LAYOUT_H

#include <stdlib.h>

#include "plan/plan_internal.h"

/* Without moves within the arena: these tests check the passes that
 * make none (unit_move checks the moves). */
static inline struct ortmem_plan *plan_with(uint64_t budget)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
		    .align = { ALIGN, 64, 4096 }, .max_iterations = 20,
		    .time_budget_us = GENEROUS_BUDGET_US,
		    .flags = ORTMEM_PLAN_F_NO_MOVE);
	struct ortmem_plan *p = NULL;

	return ortmem_plan_new(&o, &p) ? NULL : p;
}

static inline uint64_t *aligned_sizes(const struct ortmem_plan *p)
{
	uint64_t *asz = malloc(sizeof(*asz) * (p->n_bufs + 1));
	uint32_t b;

	for (b = 0; asz && b < p->n_bufs; b++)
		asz[b] = (p->bufs[b].size + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
	return asz;
}

/* The resident intervals of (off, toff), with @ms the step each touch's
 * gap moves its buffer before (0: none; NULL: no moves), lie in
 * [0, budget), keep one offset each and do not overlap; 0 when they pass.
 * A move before step s ends one interval at s and starts the next there. */
static inline int intervals_fit_moves(const struct ortmem_plan *p, const uint64_t *asz,
				      const uint8_t *off, const uint64_t *toff,
				      const uint32_t *ms, uint64_t budget)
{
	uint32_t nt = p->touch_idx[p->n_bufs], n = 0, b, k, j;
	struct pk_item *it = malloc(sizeof(*it) * (nt + 1));
	uint64_t *at = malloc(sizeof(*at) * (nt + 1));
	int ret = it && at ? 0 : -1;

	for (b = 0; !ret && b < p->n_bufs; b++)
		for (k = p->touch_idx[b]; k < p->touch_idx[b + 1]; k = j + 1) {
			uint32_t end = p->touch_idx[b + 1];
			uint64_t lo = k > p->touch_idx[b] && ms && ms[k - 1] ?
				      ms[k - 1] : p->touch_step[k];

			for (j = k; j + 1 < end && !off[j] && !(ms && ms[j]); j++)
				if (toff[j + 1] != toff[k])
					ret = -1;	/* moved without leaving */
			if (asz[b] && toff[k] + asz[b] > budget)
				ret = -1;
			at[n] = toff[k];
			it[n++] = (struct pk_item){ lo, ms && ms[j] ? ms[j] :
				off[j] || j + 1 < end ? p->touch_step[j] + 1ull : p->bufs[b].hi,
				asz[b] };
		}
	if (!ret)
		ret = ortmem__plan_check_disjoint(it, at, n, NULL, NULL);
	free(it);
	free(at);
	return ret;
}

static inline int intervals_fit(const struct ortmem_plan *p, const uint64_t *asz,
				const uint8_t *off, const uint64_t *toff, uint64_t budget)
{
	return intervals_fit_moves(p, asz, off, toff, NULL, budget);
}

#endif
