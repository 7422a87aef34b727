// SPDX-License-Identifier: MIT
/*
 * The placement's parts for dense graphs (plan_gap_ctx.c, GAP_DENSE_SPAN;
 * Documentation/lib/placement.rst, "Dense graphs"): the range tree the
 * sweeps keep their profile in, checked against a plain array; and, with
 * the threshold lowered to 0 so that small graphs take the dense way, the
 * Belady sweep on its heap against the simulation, and every feasible
 * budget planned, valid and within the budget, under any time budget.
 */
#include <stdlib.h>
#include <string.h>

#define PLAN_TEST_GRAPH

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "plan/plan_gaps.h"
#include "../harness.h"

#include "plan_test.h"
#include "plan_belady.h"

/* Level @i of 6 from the largest step's footprint up to the bound, aligned. */
static uint64_t level_budget(uint64_t foot, uint64_t lb, int i)
{
	return (foot + (lb > foot ? (lb - foot) * i / 6 : 0)) & ~(uint64_t)(ALIGN - 1);
}

TEST(range_tree_matches_an_array)
{
	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t s = seed;
		uint32_t n = 1 + (uint32_t)(rnd(&s) % 300);
		int64_t *v = malloc(sizeof(*v) * n);
		struct plan_rtree t = { 0 };

		ASSERT_NONNULL(v);
		ASSERT_EQ(0, ortmem__rt_init(&t, n));
		for (uint32_t i = 0; i < n; i++)
			v[i] = (int64_t)(rnd(&s) % 2001) - 1000;
		ortmem__rt_set(&t, v);
		for (int op = 0; op < 400; op++) {
			uint32_t lo = (uint32_t)(rnd(&s) % n), hi = lo + 1 + (uint32_t)(rnd(&s) % (n - lo));
			int64_t want = INT64_MIN, d = (int64_t)(rnd(&s) % 2001) - 1000;

			if (rnd(&s) % 2) {
				ortmem__rt_add(&t, lo, hi, d);
				for (uint32_t i = lo; i < hi; i++)
					v[i] += d;
				continue;
			}
			for (uint32_t i = lo; i < hi; i++)
				want = v[i] > want ? v[i] : want;
			ASSERT_EQ(want, ortmem__rt_max(&t, lo, hi));
		}
		/* starting over drops every add */
		for (uint32_t i = 0; i < n; i++)
			v[i] = (int64_t)i;
		ortmem__rt_set(&t, v);
		EXPECT_EQ((int64_t)n - 1, ortmem__rt_max(&t, 0, n));
		EXPECT_EQ(0, ortmem__rt_max(&t, 0, 1));
		ortmem__rt_free(&t);
		free(v);
	}
}

/*
 * The dense way's guide is the Belady sweep alone (its heap, then taking
 * back what fits): never more bytes than the simulation, on the graphs
 * and budgets unit_guide checks the four rules on.
 */
TEST_TIMEOUT(dense_guide_never_moves_more_than_belady, 120)
{
	uint64_t keep = ortmem__plan_dense_span;
	uint32_t cases = 0;

	ortmem__plan_dense_span = 0;
	for (uint32_t seed = 1000; seed < 1040; seed++) {
		uint32_t n = 20 + 10 * (seed % 10);
		uint64_t foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (int i = 0; i <= 6; i++) {
			uint64_t budget = level_budget(foot, lb, i);
			struct ortmem_plan *p = graph_at(n, seed, budget);
			uint64_t cost, bel;
			uint8_t *off;

			ASSERT_NONNULL(p);
			ASSERT_EQ(0, ortmem_plan_solve(p));
			off = calloc(p->touch_idx[p->n_bufs] + 1, 1);
			ASSERT_NONNULL(off);
			cost = ortmem__plan_gap_guide(p, off);
			bel = belady(p, budget);
			ASSERT_NE(UINT64_MAX, cost);
			ASSERT_NE(UINT64_MAX, bel);
			EXPECT_LE(cost, bel);
			cases++;
			free(off);
			ortmem_plan_free(p);
		}
	}
	ortmem__plan_dense_span = keep;
	EXPECT_EQ(40u * 7, cases);
}

/*
 * Planned the dense way (the sweep's packing lowered until it fits, the
 * allocator's pass where none does, the passes stopped at the budget),
 * every budget from the largest step's footprint up to the bound yields a
 * plan that the validator accepts and whose arena fits, under 1 us (the
 * first plan alone) as under a generous budget; one alignment below the
 * footprint is refused.
 */
TEST_TIMEOUT(dense_way_plans_every_feasible_budget, 300)
{
	static const uint64_t budgets_us[] = { 1, GENEROUS_BUDGET_US };
	uint64_t keep = ortmem__plan_dense_span;
	uint32_t plans = 0, moved = 0, graphs = TEST_ROUNDS(30);

	TSAN_SKIP_ONE_THREAD();
	ortmem__plan_dense_span = 0;
	for (uint32_t seed = 2000; seed < 2000 + graphs; seed++) {
		uint32_t n = 30 + 15 * (seed % 12);
		uint64_t foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (int i = -1; i <= 6; i++) {
			uint64_t budget = i < 0 ? foot - ALIGN : level_budget(foot, lb, i);

			for (size_t b = 0; b < sizeof(budgets_us) / sizeof(budgets_us[0]); b++) {
				ORTMEM_OPTS(ortmem_plan_stats, st);
				struct ortmem_plan *p = graph_at_flags(n, seed, budget,
								       ORTMEM_PLAN_F_VALIDATE);
				int ret;

				ASSERT_NONNULL(p);
				p->o.time_budget_us = budgets_us[b];
				ret = ortmem_plan_solve(p);
				if (i < 0) {
					EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ret);
					ortmem_plan_free(p);
					continue;
				}
				EXPECT_EQ(0, ret);
				if (ret) {
					TH_LOG("n %u seed %u budget %llu: %s", n, seed,
					       (unsigned long long)budget, ortmem_last_error_message());
					ortmem_plan_free(p);
					continue;
				}
				EXPECT_EQ(0, ortmem_plan_validate(p));
				ASSERT_EQ(0, ortmem_plan_stats(p, &st));
				EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], budget);
				plans++;
				moved += st.spill_bytes > 0;
				ortmem_plan_free(p);
			}
		}
	}
	ortmem__plan_dense_span = keep;
	EXPECT_EQ(graphs * 7 * 2, plans);
	/* below the bound something moves */
	EXPECT_LT(graphs * 2, moved);
}

/* Planned under a 1 us time budget (the first plan alone), the dense way,
 * with the pass of a first plan far above its guide allowed or not: its
 * tier bytes plus its moves as the placement weighs them. */
static int first_plan_cost(uint32_t n, uint32_t seed, uint64_t budget, bool near,
			   uint64_t *cost)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = graph_at_flags(n, seed, budget, ORTMEM_PLAN_F_VALIDATE);
	int ret;

	if (!p)
		return -1;
	ortmem__plan_near_span = near ? UINT64_MAX : 0;
	p->o.time_budget_us = 1;
	ret = ortmem_plan_solve(p);
	if (!ret)
		ret = ortmem_plan_stats(p, &st);
	*cost = st.prefetch_bytes + st.spill_bytes +
		ortmem__plan_move_weigh(p, st.move_bytes);
	if (!ret && st.arena[ORTMEM_TIER_DEVICE] > budget)
		ret = -1;
	ortmem_plan_free(p);
	return ret;
}

/*
 * A dense graph's first plan far above its guide (gp_first_far()) takes
 * the pass seating by ends too, whatever the clock says: that first plan
 * is valid, fits, never costs more than the sweep's packing alone, and
 * costs less at some budgets.
 */
TEST_TIMEOUT(dense_first_plan_far_from_its_guide_takes_a_pass, 300)
{
	uint64_t keep = ortmem__plan_dense_span, keep_near = ortmem__plan_near_span;
	uint32_t cases = 0, cheaper = 0;

	ortmem__plan_dense_span = 0;
	for (uint32_t seed = 3000; seed < 3030; seed++) {
		uint32_t n = 40 + 20 * (seed % 10);
		uint64_t foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (int i = 0; i <= 6; i++) {
			uint64_t budget = level_budget(foot, lb, i), with, without;

			ASSERT_EQ(0, first_plan_cost(n, seed, budget, false, &without));
			ASSERT_EQ(0, first_plan_cost(n, seed, budget, true, &with));
			EXPECT_LE(with, without);
			if (with > without)
				TH_LOG("n %u seed %u budget %llu: %llu > %llu", n, seed,
				       (unsigned long long)budget, (unsigned long long)with,
				       (unsigned long long)without);
			cheaper += with < without;
			cases++;
		}
	}
	ortmem__plan_dense_span = keep;
	ortmem__plan_near_span = keep_near;
	EXPECT_EQ(30u * 7, cases);
	TH_LOG("cheaper with the pass: %u of %u", cheaper, cases);
	EXPECT_LT(cases / 8, cheaper);
}

TEST_HARNESS_MAIN
