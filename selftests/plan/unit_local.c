// SPDX-License-Identifier: MIT
/*
 * The placement's local search (plan_gap_local.c; Documentation/lib/
 * placement.rst, "Local search"): in the time every other candidate left,
 * passes following the best plan with a few gaps flipped.  On small
 * random graphs at budgets between the largest step's footprint and the
 * bound, under a time budget generous enough that every candidate runs
 * and the search ends on its own (after max_iterations passes at most;
 * one thread: the same plan on every run), the plans it makes are valid,
 * it makes some of them cheaper, and in all they cost less than without
 * it.
 */
#include <stdlib.h>

#define PLAN_TEST_GRAPH

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"

#include "plan_test.h"
#include "plan_belady.h"

#define GRAPHS 16
#define BUDGETS 4
#define LOCAL_PASSES 256

/* Budget @i of BUDGETS, from 60 % of the way between the largest step's
 * footprint and the bound to 90 %: where a few large buffers fill the
 * arena, the budgets the other candidates do worst at. */
static uint64_t local_budget(uint64_t foot, uint64_t lb, uint32_t i)
{
	uint64_t b = foot + (lb > foot ? (lb - foot) * (60 + 10 * i) / 100 : 0);

	return b & ~(uint64_t)(ALIGN - 1);
}

/* What the placement minimises: tier bytes plus bytes moved within the
 * arena / 16 (the default ortmem_plan_opts.move_ratio). */
static uint64_t plan_cost(struct __test_metadata *_metadata, uint32_t n, uint64_t seed,
			  uint64_t budget)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = graph_at_flags(n, seed, budget, ORTMEM_PLAN_F_VALIDATE);
	uint64_t cost = UINT64_MAX;

	if (!p)
		return UINT64_MAX;
	p->o.time_budget_us = GENEROUS_BUDGET_US;
	/* the search's passes (and the packer's) bounded by candidates, as
	 * many as the search's patience: it ends on its own */
	p->o.max_iterations = LOCAL_PASSES;
	p->o.threads = 1;
	if (!ortmem_plan_solve(p) && !ortmem_plan_validate(p) && !ortmem_plan_stats(p, &st)) {
		EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], budget);
		cost = st.prefetch_bytes + st.spill_bytes +
		       ortmem__plan_move_weigh(p, st.move_bytes);
	} else {
		TH_LOG("n %u seed %llu budget %llu: %s", n, (unsigned long long)seed,
		       (unsigned long long)budget, ortmem_last_error_message());
	}
	ortmem_plan_free(p);
	return cost;
}

TEST_TIMEOUT(local_search_makes_small_graphs_cheaper, 600)
{
	uint32_t keep = ortmem__plan_local_patience, g, i, better = 0, worse = 0, plans = 0;
	uint64_t with = 0, without = 0;

	for (g = 0; g < GRAPHS; g++) {
		uint32_t n = 30 + 10 * (g % 4);
		uint64_t seed = 3000 + g, foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (i = 0; i < BUDGETS; i++) {
			uint64_t budget = local_budget(foot, lb, i), a, b;

			ortmem__plan_local_patience = 0;
			b = plan_cost(_metadata, n, seed, budget);
			ortmem__plan_local_patience = keep;
			a = plan_cost(_metadata, n, seed, budget);
			ASSERT_NE(UINT64_MAX, a);
			ASSERT_NE(UINT64_MAX, b);
			with += a;
			without += b;
			better += a < b;
			worse += a > b;
			plans++;
		}
	}
	TH_LOG("%u budgets: %llu bytes with the local search, %llu without (%.3fx); cheaper at %u, dearer at %u",
	       plans, (unsigned long long)with, (unsigned long long)without,
	       (double)with / (double)without, better, worse);
	EXPECT_GT(better, 0);
	EXPECT_LT(with, without);
}

TEST_HARNESS_MAIN
