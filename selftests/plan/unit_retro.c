// SPDX-License-Identifier: MIT
/*
 * Room made without moving bytes (lib/plan/plan_retro.c, plan_close.c):
 * the allocator's pass with ORTMEM__PLAN_RETRO gives a resident in the
 * way another range, free since its interval began, instead of sending
 * something off; closing with ORTMEM__PLAN_CLOSE_MOVE keeps an off gap
 * on the device by moving the intervals in its way.  On random graphs
 * both keep every interval in the budget and apart, closing never costs
 * more, and the placement's plan moves no more bytes than any of the
 * passes it chooses among.
 */
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"
#include "plan_layout.h"

#define K 1024
/* Moves stop on the clock: tests give them time to spare (the machine
 * may be loaded), so what they check never depends on it. */
#define NO_HURRY() (ortmem__now_ns() + 60ull * 1000000000)

/*
 * Budget 5 KiB.  Step 0 makes A, X, B (1 KiB each: at 0, 1K, 2K); step 1
 * reads X (its last use) and makes Y (256 bytes, at 3K); step 2 reads Y
 * and makes Z (2 KiB); step 3 reads A, B and Z.  At step 2 the free
 * space, 2.75 KiB, is split ([1K, 2K) and [3.25K, 5K)), so Z finds no
 * hole: the plain pass sends A or B off (a write and a read-back), while
 * moving A back in time to [3.25K, 4.25K), free since step 0, opens
 * [0, 2K) and nothing leaves.
 */
TEST(moving_back_in_time_saves_an_eviction)
{
	struct ortmem_plan *p = plan_with(5 * K);
	uint32_t a, x, b, y, z, in[3], nt;
	uint64_t *asz, *toff;
	uint8_t *off;

	ASSERT_NONNULL(p);
	a = (uint32_t)ortmem_plan_add_value(p, K, 0);
	x = (uint32_t)ortmem_plan_add_value(p, K, 0);
	b = (uint32_t)ortmem_plan_add_value(p, K, 0);
	y = (uint32_t)ortmem_plan_add_value(p, 256, 0);
	z = (uint32_t)ortmem_plan_add_value(p, 2 * K, 0);
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, (uint32_t[]){ a, x, b }, 3));
	ASSERT_EQ(1, ortmem_plan_add_node(p, &x, 1, &y, 1));
	ASSERT_EQ(2, ortmem_plan_add_node(p, &y, 1, &z, 1));
	in[0] = a;
	in[1] = b;
	in[2] = z;
	ASSERT_EQ(3, ortmem_plan_add_node(p, in, 3, NULL, 0));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	nt = p->touch_idx[p->n_bufs];
	asz = aligned_sizes(p);
	off = malloc(nt);
	toff = malloc(sizeof(*toff) * nt);
	ASSERT_TRUE(asz && off && toff);
	/* the plain pass: something leaves */
	ASSERT_NE(UINT64_MAX, ortmem__plan_online(p, asz, 5 * K, 1, NULL, NULL, off, toff));
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 5 * K));
	EXPECT_LT(0, ortmem__plan_gap_cost(p, off));
	/* moving back in time: nothing does, and A sat at 3.25K all along */
	ASSERT_NE(UINT64_MAX, ortmem__plan_online(p, asz, 5 * K, 1 | ORTMEM__PLAN_RETRO,
						  NULL, NULL, off, toff));
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 5 * K));
	EXPECT_EQ(0, ortmem__plan_gap_cost(p, off));
	EXPECT_EQ(3 * K + 256, toff[p->touch_idx[p->vals[a].buf]]);
	EXPECT_EQ(3 * K + 256, toff[p->touch_idx[p->vals[a].buf] + 1]);
	EXPECT_EQ(0, toff[p->touch_idx[p->vals[z].buf]]);
	free(asz);
	free(off);
	free(toff);
	ortmem_plan_free(p);
}

/*
 * Budget 3 KiB, 1 KiB values.  A is made at step 0 and read at step 4,
 * off the device between.  D lives over steps 1-2 at 2K, B over 2-3 at
 * 0, C over 3-4 at 1K: every range of A's size is taken at some step of
 * A's life, so no free range closes the gap.  Moving C to 2K (free over
 * its steps once D is gone) leaves [1K, 2K) free all along: A stays
 * there, and its write and read-back are saved.
 */
TEST(closing_moves_the_intervals_in_the_way)
{
	struct ortmem_plan *p = plan_with(3 * K);
	uint32_t a, d, bv, cv, in[2], nt, ka, kd, kb, kc;
	uint64_t *asz, toff[8];
	uint8_t off[8];

	ASSERT_NONNULL(p);
	a = (uint32_t)ortmem_plan_add_value(p, K, 0);
	d = (uint32_t)ortmem_plan_add_value(p, K, 0);
	bv = (uint32_t)ortmem_plan_add_value(p, K, 0);
	cv = (uint32_t)ortmem_plan_add_value(p, K, 0);
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &a, 1));
	ASSERT_EQ(1, ortmem_plan_add_node(p, NULL, 0, &d, 1));
	ASSERT_EQ(2, ortmem_plan_add_node(p, &d, 1, &bv, 1));
	ASSERT_EQ(3, ortmem_plan_add_node(p, &bv, 1, &cv, 1));
	in[0] = a;
	in[1] = cv;
	ASSERT_EQ(4, ortmem_plan_add_node(p, in, 2, NULL, 0));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	nt = p->touch_idx[p->n_bufs];
	ASSERT_EQ(8, nt);	/* each twice */
	ka = p->touch_idx[p->vals[a].buf];
	kd = p->touch_idx[p->vals[d].buf];
	kb = p->touch_idx[p->vals[bv].buf];
	kc = p->touch_idx[p->vals[cv].buf];
	asz = aligned_sizes(p);
	ASSERT_NONNULL(asz);
	memset(off, 0, sizeof(off));
	off[ka] = 1;
	toff[ka] = toff[ka + 1] = 0;
	toff[kd] = toff[kd + 1] = 2 * K;
	toff[kb] = toff[kb + 1] = 0;
	toff[kc] = toff[kc + 1] = K;
	ASSERT_EQ(0, intervals_fit(p, asz, off, toff, 3 * K));
	ASSERT_EQ(2 * K, ortmem__plan_gap_cost(p, off));
	/* no free range */
	ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff, ORTMEM__PLAN_CLOSE_ANY, 0));
	EXPECT_EQ(1, off[ka]);
	/* with moves */
	ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff, ORTMEM__PLAN_CLOSE_MOVE,
					     NO_HURRY()));
	EXPECT_EQ(0, off[ka]);
	EXPECT_EQ(K, toff[ka]);
	EXPECT_EQ(K, toff[ka + 1]);
	EXPECT_EQ(2 * K, toff[kc]);
	EXPECT_EQ(2 * K, toff[kc + 1]);
	EXPECT_EQ(0, ortmem__plan_gap_cost(p, off));
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 3 * K));
	free(asz);
	ortmem_plan_free(p);
}

/* The bytes a pass under @rule moves, closed as the placement closes its
 * candidates; UINT64_MAX when it fails. */
static uint64_t pass_cost(const struct ortmem_plan *p, const uint64_t *asz, uint64_t budget,
			  int rule, uint8_t *off, uint64_t *toff)
{
	if (ortmem__plan_online(p, asz, budget, rule, NULL, NULL, off, toff) == UINT64_MAX ||
	    ortmem__plan_close_gaps(p, asz, off, toff, 0, 0))
		return UINT64_MAX;
	return ortmem__plan_gap_cost(p, off);
}

/*
 * Random graphs under budgets between the largest step's footprint and
 * the whole: passes moving back in time fit and keep intervals apart;
 * closing with moves fits and never costs more than without; the solved
 * plan moves no more than any unguided pass (the placement's own
 * candidates on graphs this small) and passes the validator.
 */
TEST_TIMEOUT(random_graphs_fit_and_cost_no_more, 120)
{
	uint64_t seed = 0x7e770;
	int g, r, tried = 0, retro_less = 0, moved_less = 0;

	for (g = 0; g < 200; g++) {
		struct ortmem_plan *p = plan_with(0);
		ORTMEM_OPTS(ortmem_plan_stats, st);
		uint32_t n = 10 + (uint32_t)(rnd(&seed) % 60), nt;
		uint64_t s2 = seed, budget, *asz, *toff, plan_cost, c0, c1;
		uint8_t *off;

		ASSERT_NONNULL(p);
		random_graph(p, n, &seed);
		ASSERT_EQ(0, ortmem_plan_solve(p));
		ASSERT_EQ(0, ortmem_plan_stats(p, &st));
		/* aligned: the placement works under the budget rounded down */
		budget = ALIGN * (st.lower_bound / 3 / ALIGN + rnd(&seed) % (st.lower_bound / ALIGN));
		ortmem_plan_free(p);
		p = plan_with(budget);
		random_graph(p, n, &s2);
		if (ortmem_plan_solve(p)) {	/* below the largest step */
			ortmem_plan_free(p);
			continue;
		}
		EXPECT_EQ(0, ortmem_plan_validate(p));
		nt = p->touch_idx[p->n_bufs];
		asz = aligned_sizes(p);
		off = malloc(nt + 1);
		toff = malloc(sizeof(*toff) * (nt + 1));
		ASSERT_TRUE(asz && off && toff);
		plan_cost = p->gap_off ? ortmem__plan_gap_cost(p, p->gap_off) : 0;
		for (r = 0; r < 4; r++) {
			int rule = (r & 1) | (r & 2 ? ORTMEM__PLAN_ENDFIT : 0);

			c0 = pass_cost(p, asz, budget, rule, off, toff);
			ASSERT_NE(UINT64_MAX, c0);
			EXPECT_LE(plan_cost, c0);
			c1 = pass_cost(p, asz, budget, rule | ORTMEM__PLAN_RETRO, off, toff);
			ASSERT_NE(UINT64_MAX, c1);
			EXPECT_EQ(0, intervals_fit(p, asz, off, toff, budget));
			retro_less += c1 < c0;
			/* closing with moves after closing without */
			ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff,
							     ORTMEM__PLAN_CLOSE_ANY, 0));
			c0 = ortmem__plan_gap_cost(p, off);
			ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff,
							     ORTMEM__PLAN_CLOSE_MOVE, NO_HURRY()));
			c1 = ortmem__plan_gap_cost(p, off);
			EXPECT_LE(c1, c0);
			moved_less += c1 < c0;
			EXPECT_EQ(0, intervals_fit(p, asz, off, toff, budget));
		}
		tried++;
		free(asz);
		free(off);
		free(toff);
		ortmem_plan_free(p);
	}
	EXPECT_GT(tried, 100);
	/* both paths are taken, not skipped */
	EXPECT_GT(retro_less, 5);
	EXPECT_GT(moved_less, 5);
}

TEST_HARNESS_MAIN
