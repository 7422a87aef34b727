// SPDX-License-Identifier: MIT
/*
 * ortmem_plan_opts.move_ratio, what a byte moved within the device arena
 * weighs against a byte moved between tiers: on random graphs at budgets
 * from the largest step's footprint to the bound, the plans made at a
 * ratio of 1 (a move costs what a tier byte does) and 1,024 (a move is
 * nearly free) are valid and within the budget, and in all those at 1,024
 * move more bytes within the arena than those at 1: the ratio reaches the
 * placement's choices.
 */
#include <stdlib.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"
#include "plan_belady.h"

#define GRAPHS 12
#define BUDGETS 4

/* Tier bytes and bytes moved within the arena of one plan; false (logged)
 * where it fails. */
static bool ratio_plan(struct __test_metadata *_metadata, uint32_t n, uint64_t seed,
		       uint64_t budget, uint32_t ratio, uint64_t *tier, uint64_t *moved)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = graph_at_ratio(n, seed, budget, ORTMEM_PLAN_F_VALIDATE, ratio);
	bool ok = p && !ortmem_plan_solve(p) && !ortmem_plan_validate(p) &&
		  !ortmem_plan_stats(p, &st);

	if (ok) {
		EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], budget);
		EXPECT_EQ(ratio, p->o.move_ratio);
		*tier = st.prefetch_bytes + st.spill_bytes;
		*moved = st.move_bytes;
	} else {
		TH_LOG("n %u seed %llu budget %llu ratio %u: %s", n, (unsigned long long)seed,
		       (unsigned long long)budget, ratio, ortmem_last_error_message());
	}
	ortmem_plan_free(p);
	return ok;
}

TEST_TIMEOUT(move_ratio_reaches_the_placement, 300)
{
	uint64_t tier[2] = { 0 }, moved[2] = { 0 };
	const uint32_t ratio[2] = { 1, ORTMEM_PLAN_MOVE_RATIO_MAX };
	uint32_t g, i, r, plans = 0;

	for (g = 0; g < GRAPHS; g++) {
		uint32_t n = 30 + 10 * (g % 4);
		uint64_t seed = 4000 + g, foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (i = 0; i < BUDGETS; i++) {
			uint64_t budget = foot + (lb > foot ? (lb - foot) * (1 + 2 * i) / 8 : 0);

			budget &= ~(uint64_t)(ALIGN - 1);
			if (budget < foot)
				continue;
			for (r = 0; r < 2; r++) {
				uint64_t t, m;

				ASSERT_TRUE(ratio_plan(_metadata, n, seed, budget, ratio[r], &t, &m));
				tier[r] += t;
				moved[r] += m;
			}
			plans++;
		}
	}
	TH_LOG("%u budgets: at ratio 1, %llu tier bytes and %llu moved within the arena; at %u, %llu and %llu",
	       plans, (unsigned long long)tier[0], (unsigned long long)moved[0],
	       ORTMEM_PLAN_MOVE_RATIO_MAX, (unsigned long long)tier[1],
	       (unsigned long long)moved[1]);
	ASSERT_LT(GRAPHS, plans);
	EXPECT_LT(moved[0], moved[1]);
}

TEST_HARNESS_MAIN
