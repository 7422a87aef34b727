// SPDX-License-Identifier: MIT
/*
 * The offset-free plan the placement follows (lib/plan/plan_gaps.c, the
 * "guide"): on random graphs, at budgets from the largest step's footprint
 * to the all-on-device bound, it keeps every step within the budget, its
 * bytes are what its off gaps cost under the gap model (one write-out per
 * buffer sent off, one read-back per off gap a touch ends), and it never
 * moves more than Belady's furthest-next-use eviction simulated here on
 * the same buffers (issue 18: the placement's candidates start no worse
 * than Belady; what they add is what offsets cost).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"
#include "plan_belady.h"

/* The guide's bytes counted here, and whether every step fits @budget
 * with its off gaps (a gap of touch k spans the steps after it up to the
 * next touch, or to the end of the buffer's life after the last). */
static uint64_t guide_bytes(const struct ortmem_plan *p, const uint8_t *off,
			    uint64_t budget, bool *fits)
{
	uint64_t *prof = calloc(p->n_nodes + 1, sizeof(*prof)), moved = 0;
	uint32_t b, k, s, end;

	*fits = prof != NULL;
	for (b = 0; prof && b < p->n_bufs; b++) {
		bool sent = false;

		for (s = p->bufs[b].lo; s < p->bufs[b].hi && s < p->n_nodes; s++)
			prof[s] += asz_of(p, b);
		for (k = p->touch_idx[b]; k < p->touch_idx[b + 1]; k++) {
			if (!off[k])
				continue;
			sent = true;
			end = k + 1 < p->touch_idx[b + 1] ? p->touch_step[k + 1] : p->bufs[b].hi;
			if (k + 1 < p->touch_idx[b + 1])
				moved += p->bufs[b].size;
			for (s = p->touch_step[k] + 1; s < end && s < p->n_nodes; s++)
				prof[s] -= asz_of(p, b);
		}
		if (sent)
			moved += p->bufs[b].size;
	}
	for (s = 0; prof && s < p->n_nodes; s++)
		if (prof[s] > budget)
			*fits = false;
	free(prof);
	return moved;
}

/*
 * Seeds 1000-1039, and graphs where Belady's rule in the sweep once broke
 * ties of next use and size by the order of its list of live gaps, and
 * moved more than the simulation (found by a search over seeds 0-999).
 */
static const uint32_t guide_seeds_tied[] = { 442, 640, 648 };
#define GUIDE_SEEDS (40 + sizeof(guide_seeds_tied) / sizeof(guide_seeds_tied[0]))

TEST_TIMEOUT(guide_never_moves_more_than_belady, 120)
{
	uint32_t cases = 0, cheaper = 0, g, i;

	for (g = 0; g < GUIDE_SEEDS; g++) {
		uint32_t seed = g < 40 ? 1000 + g : guide_seeds_tied[g - 40];
		uint32_t n = 20 + 10 * (seed % 10);
		uint64_t foot, lb;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		for (i = 0; i <= 6; i++) {
			/* from the largest step's footprint up to the bound */
			uint64_t budget = foot + (lb > foot ? (lb - foot) * i / 6 : 0);
			struct ortmem_plan *p = graph_at(n, seed, budget & ~(uint64_t)(ALIGN - 1));
			uint64_t cost, bel, counted;
			uint8_t *off;
			bool fits;

			budget &= ~(uint64_t)(ALIGN - 1);
			ASSERT_NONNULL(p);
			ASSERT_EQ(0, ortmem_plan_solve(p));
			ASSERT_EQ(0, ortmem_plan_validate(p));
			off = calloc(p->touch_idx[p->n_bufs] + 1, 1);
			ASSERT_NONNULL(off);
			cost = ortmem__plan_gap_guide(p, off);
			ASSERT_NE(UINT64_MAX, cost);
			counted = guide_bytes(p, off, budget, &fits);
			bel = belady(p, budget);
			EXPECT_TRUE(fits);
			EXPECT_EQ(counted, cost);
			ASSERT_NE(UINT64_MAX, bel);
			EXPECT_LE(cost, bel);
			if (cost > bel)
				TH_LOG("n %u seed %u budget %llu: guide %llu > Belady %llu", n, seed,
				       (unsigned long long)budget, (unsigned long long)cost,
				       (unsigned long long)bel);
			cases++;
			cheaper += cost < bel;
			free(off);
			ortmem_plan_free(p);
		}
	}
	TH_LOG("%u budgets, the guide cheaper than Belady at %u", cases, cheaper);
	EXPECT_GT(cheaper, 0);
}

/*
 * At the largest step's budget, where a slack sweep's plan (1/128 left
 * free) packs under the budget as a decision (plan_gaps.c,
 * gp_slack_decide()), the placement moves no more than that plan: it is
 * one of its candidates.  Reproducible: the packer runs under an
 * iteration limit, and the time budget is too long for the clock to cut
 * anything on graphs this small.
 */
TEST_TIMEOUT(decided_slack_guide_bounds_the_plan, 300)
{
	uint32_t fits = 0, cases = 0, g;

	TSAN_SKIP_ONE_THREAD();
	for (g = 0; g < TEST_ROUNDS(60); g++) {
		uint32_t n = 30 + 10 * (g % 10);
		uint64_t seed = 2000 + g, foot, lb, cost, height = 0, budget;
		ORTMEM_OPTS(ortmem_plan_stats, st);
		struct ortmem_plan *p = NULL;

		graph_limits(n, seed, &foot, &lb);
		ASSERT_NE(0, foot);
		budget = foot & ~(uint64_t)(ALIGN - 1);
		{
			ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
				    .align = { ALIGN, 64, 4096 }, .max_iterations = 4000,
				    .time_budget_us = 20000000);

			ASSERT_EQ(0, ortmem_plan_new(&o, &p));
		}
		random_graph(p, n, &seed);
		ASSERT_EQ(0, ortmem_plan_solve(p));
		ASSERT_EQ(0, ortmem_plan_validate(p));
		ASSERT_EQ(0, ortmem_plan_stats(p, &st));
		cost = ortmem__plan_gap_decide(p, 1, &height);
		ASSERT_NE(UINT64_MAX, cost);
		cases++;
		if (height <= budget) {
			fits++;
			EXPECT_LE(st.prefetch_bytes + st.spill_bytes, cost);
		}
		ortmem_plan_free(p);
	}
	TH_LOG("%u budgets, the decision packs the slack guide at %u", cases, fits);
	EXPECT_GT(fits, 0);
}

/*
 * A device budget the whole graph fits in: the plan moves nothing and its
 * arena is a packing's, at most the sum of the buffers, never the budget
 * (ortmem-run sizes its activation arena by it).  The first plan's pass
 * seating by ends, which runs before the packing, is as cheap there and
 * seats buffers up to the budget's top; it once won the tie.  Under the
 * default time budget and under 1 us (the first plan alone).
 */
TEST_TIMEOUT(a_budget_everything_fits_in_keeps_a_packed_arena, 120)
{
	uint64_t seed = 0xa7e4a;
	uint32_t g, b;

	for (g = 0; g < 80; g++) {
		uint32_t n = 4 + (uint32_t)(rnd(&seed) % 300);
		uint64_t gseed = rnd(&seed), tb;

		for (tb = 0; tb <= 1; tb++) {
			ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 1ull << 40, 0, 0 },
				    .align = { ALIGN, 64, 4096 }, .time_budget_us = tb,
				    .flags = ORTMEM_PLAN_F_VALIDATE);
			ORTMEM_OPTS(ortmem_plan_stats, st);
			struct ortmem_plan *p = NULL;
			uint64_t s2 = gseed, sum = 0;

			ASSERT_EQ(0, ortmem_plan_new(&o, &p));
			random_graph(p, n, &s2);
			ASSERT_EQ(0, ortmem_plan_solve(p));
			ASSERT_EQ(0, ortmem_plan_stats(p, &st));
			for (b = 0; b < p->n_bufs; b++)
				sum += asz_of(p, b);
			EXPECT_EQ(0, st.prefetch_bytes + st.spill_bytes);
			EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], sum);
			if (st.arena[ORTMEM_TIER_DEVICE] > sum)
				TH_LOG("graph %u (%u nodes), time budget %" PRIu64 " us: arena %" PRIu64
				       " over the buffers' %" PRIu64, g, n, tb, st.arena[ORTMEM_TIER_DEVICE], sum);
			ortmem_plan_free(p);
		}
	}
}

TEST_HARNESS_MAIN
