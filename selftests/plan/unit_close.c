// SPDX-License-Identifier: MIT
/*
 * Offsets after residency (lib/plan/plan_close.c, plan_online.c): an off
 * gap whose two addresses are both taken is kept on the device at a third
 * range free over the merged span; closing on random plans never moves
 * more bytes nor leaves the budget or overlaps two intervals; the
 * allocator given a plan's own residency and offsets as guide and hint
 * (a layout that fits) follows it exactly.
 */
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"
#include "plan_layout.h"

/*
 * A (1 KiB) is made at step 0 and read at step 3; B lives over steps 1-2
 * at A's first address, C at step 2 at A's second one, D at step 3 just
 * above them.  Only [2304, 4096) is free over the whole of A's life: the
 * gap closes there, and only when any range may be tried.
 */
TEST(off_gap_closes_at_a_third_range)
{
	struct ortmem_plan *p = plan_with(4096);
	uint32_t a, bv, cv, d, in[1], nt, ka, kb, kc, kd;
	uint64_t *asz, toff[8];
	uint8_t off[8];

	ASSERT_NONNULL(p);
	a = (uint32_t)ortmem_plan_add_value(p, 1024, 0);
	bv = (uint32_t)ortmem_plan_add_value(p, 1024, 0);
	cv = (uint32_t)ortmem_plan_add_value(p, 1024, 0);
	d = (uint32_t)ortmem_plan_add_value(p, 256, ORTMEM_PLAN_VALUE_OUTPUT);
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &a, 1));
	ASSERT_EQ(1, ortmem_plan_add_node(p, NULL, 0, &bv, 1));
	in[0] = bv;
	ASSERT_EQ(2, ortmem_plan_add_node(p, in, 1, &cv, 1));
	in[0] = a;
	ASSERT_EQ(3, ortmem_plan_add_node(p, in, 1, &d, 1));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	nt = p->touch_idx[p->n_bufs];
	ASSERT_EQ(6, nt);	/* A and B twice, C and D once */
	ka = p->touch_idx[p->vals[a].buf];
	kb = p->touch_idx[p->vals[bv].buf];
	kc = p->touch_idx[p->vals[cv].buf];
	kd = p->touch_idx[p->vals[d].buf];
	asz = aligned_sizes(p);
	ASSERT_NONNULL(asz);
	memset(off, 0, sizeof(off));
	memset(toff, 0, sizeof(toff));
	off[ka] = 1;			/* A off over steps 1-2 */
	toff[ka] = 0;
	toff[ka + 1] = 1024;
	toff[kb] = toff[kb + 1] = 0;	/* B at A's first address */
	toff[kc] = 1024;		/* C at A's second one */
	toff[kd] = 2048;
	ASSERT_EQ(0, intervals_fit(p, asz, off, toff, 4096));
	/* at either address of A only: nothing to do */
	ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff, 0, 0));
	EXPECT_EQ(1, off[ka]);
	EXPECT_EQ(2048, ortmem__plan_gap_cost(p, off));
	/* anywhere: the tightest free range over steps 0-3 */
	ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff, ORTMEM__PLAN_CLOSE_ANY, 0));
	EXPECT_EQ(0, off[ka]);
	EXPECT_EQ(2304, toff[ka]);
	EXPECT_EQ(2304, toff[ka + 1]);
	EXPECT_EQ(0, ortmem__plan_gap_cost(p, off));
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 4096));
	free(asz);
	ortmem_plan_free(p);
}

/* The footprint of the largest step, for a budget that forces moves. */
static uint64_t tight_budget(struct ortmem_plan *p, uint64_t *seed)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);

	if (ortmem_plan_solve(p) || ortmem_plan_stats(p, &st))
		return 0;
	return st.lower_bound / 2 + ALIGN * (rnd(seed) % 64);
}

/*
 * Seating by neighbours' ends (ORTMEM__PLAN_ENDFIT): A (1 KiB, steps 0-3)
 * sits at 0, F (2 KiB, step 1 only) at 1 KiB, B (1 KiB, steps 1-4) at
 * 3 KiB.  At step 2, N (1 KiB, steps 2-4) finds one hole, [1K, 3K): the
 * tightest-hole rule seats it at its bottom, next to A, which dies two
 * steps before it; by ends it seats at the top, next to B, which dies
 * with it, so the two ranges free together.
 */
TEST(end_fit_seats_next_to_the_neighbour_dying_with_it)
{
	struct ortmem_plan *p = plan_with(4096);
	uint32_t a = 0, f = 1, b = 2, n = 3, in[2];
	uint64_t *asz, *toff;
	uint8_t *off;
	uint32_t nt, kn;

	ASSERT_NONNULL(p);
	ortmem_plan_add_value(p, 1024, 0);
	ortmem_plan_add_value(p, 2048, 0);
	ortmem_plan_add_value(p, 1024, 0);
	ortmem_plan_add_value(p, 1024, 0);
	ortmem_plan_add_node(p, NULL, 0, &a, 1);
	ortmem_plan_add_node(p, &a, 1, (uint32_t[]){ f, b }, 2);
	ortmem_plan_add_node(p, NULL, 0, &n, 1);
	ortmem_plan_add_node(p, &a, 1, NULL, 0);
	in[0] = b;
	in[1] = n;
	ortmem_plan_add_node(p, in, 2, NULL, 0);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	nt = p->touch_idx[p->n_bufs];
	asz = aligned_sizes(p);
	off = malloc(nt);
	toff = malloc(sizeof(*toff) * nt);
	ASSERT_TRUE(asz && off && toff);
	kn = p->touch_idx[p->vals[n].buf];
	ASSERT_NE(UINT64_MAX, ortmem__plan_online(p, asz, 4096, 0, NULL, NULL, off, toff));
	EXPECT_EQ(1024, toff[kn]);
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 4096));
	ASSERT_NE(UINT64_MAX, ortmem__plan_online(p, asz, 4096, ORTMEM__PLAN_ENDFIT, NULL,
						  NULL, off, toff));
	EXPECT_EQ(2048, toff[kn]);
	EXPECT_EQ(0, intervals_fit(p, asz, off, toff, 4096));
	EXPECT_EQ(0, ortmem__plan_gap_cost(p, off));
	free(asz);
	free(off);
	free(toff);
	ortmem_plan_free(p);
}

/*
 * ortmem__plan_online_alt(): with no second choices it is the plain pass;
 * with some (all, or a random set) it still fits the budget; counts in
 * *@differed the graphs where the first window's second choice changed
 * the plan (the path is taken, not ignored).
 */
static void alt_checks(struct __test_metadata *_metadata, const struct ortmem_plan *p,
		       const uint64_t *asz, uint64_t budget, const uint8_t *guide,
		       uint64_t *seed, int *differed)
{
	uint32_t nt = p->touch_idx[p->n_bufs], n_win = 0, n_alt = 0, i;
	uint8_t *o1 = malloc(nt), *o2 = malloc(nt);
	uint64_t *t1 = malloc(sizeof(*t1) * nt), *t2 = malloc(sizeof(*t2) * nt);
	uint32_t alts[2] = { UINT32_MAX, (uint32_t)rnd(seed) };

	ASSERT_TRUE(o1 && o2 && t1 && t2);
	ASSERT_NE(UINT64_MAX, ortmem__plan_online(p, asz, budget, 1, guide, NULL, o1, t1));
	ASSERT_NE(UINT64_MAX, ortmem__plan_online_alt(p, asz, budget, 1, 0, guide, NULL,
						      o2, t2, &n_win, 0));
	EXPECT_EQ(0, memcmp(o1, o2, nt));
	EXPECT_EQ(0, memcmp(t1, t2, sizeof(*t1) * nt));
	for (i = 0; i < 2; i++) {
		ASSERT_NE(UINT64_MAX, ortmem__plan_online_alt(p, asz, budget, 1, alts[i], guide,
							      NULL, o2, t2, &n_alt, 0));
		EXPECT_EQ(0, intervals_fit(p, asz, o2, t2, budget));
	}
	if (n_win) {
		ASSERT_NE(UINT64_MAX, ortmem__plan_online_alt(p, asz, budget, 1, 1, guide, NULL,
							      o2, t2, &n_alt, 0));
		EXPECT_EQ(0, intervals_fit(p, asz, o2, t2, budget));
		if (memcmp(o1, o2, nt) || memcmp(t1, t2, sizeof(*t1) * nt))
			(*differed)++;
	}
	free(o1);
	free(o2);
	free(t1);
	free(t2);
}

/* A random graph of @n nodes, in a plan under a budget that forces moves
 * (not solved yet); NULL when out of memory. */
static struct ortmem_plan *random_plan_at_tight_budget(uint32_t n, uint64_t *seed)
{
	struct ortmem_plan *p = plan_with(0);
	uint64_t s2 = *seed, budget;

	if (!p)
		return NULL;
	random_graph(p, n, seed);
	budget = tight_budget(p, seed);
	ortmem_plan_free(p);
	p = plan_with(budget);
	if (p)
		random_graph(p, n, &s2);
	return p;
}

/*
 * Random plans: closing anywhere keeps every interval in the budget and
 * apart, and never costs more; the allocator following a plan's own
 * residency and offsets reproduces them.
 */
TEST_TIMEOUT(closing_and_following_random_plans, 120)
{
	uint64_t seed = 0xc105e;
	int g, r, tried = 0, differed = 0;

	for (g = 0; g < 200; g++) {
		uint32_t n = 10 + (uint32_t)(rnd(&seed) % 50), nt;
		struct ortmem_plan *p = random_plan_at_tight_budget(n, &seed);
		uint64_t budget, *asz, *toff, *toff2, before, h;
		uint8_t *off, *off2;

		ASSERT_NONNULL(p);
		budget = p->o.budget[ORTMEM_TIER_DEVICE];
		if (ortmem_plan_solve(p)) {	/* below the largest step */
			ortmem_plan_free(p);
			continue;
		}
		if (!p->gap_off) {		/* nothing left the device */
			ortmem_plan_free(p);
			continue;
		}
		nt = p->touch_idx[p->n_bufs];
		asz = aligned_sizes(p);
		off = malloc(nt);
		off2 = malloc(nt);
		toff = malloc(sizeof(*toff) * nt);
		toff2 = malloc(sizeof(*toff2) * nt);
		ASSERT_TRUE(asz && off && off2 && toff && toff2);
		memcpy(off, p->gap_off, nt);
		memcpy(toff, p->touch_off, sizeof(*toff) * nt);
		ASSERT_EQ(0, intervals_fit(p, asz, off, toff, budget));
		/* following its own plan: the same plan */
		h = ortmem__plan_online(p, asz, budget, 1, off, toff, off2, toff2);
		ASSERT_NE(UINT64_MAX, h);
		EXPECT_LE(h, budget);
		EXPECT_EQ(0, memcmp(off, off2, nt));
		EXPECT_EQ(0, memcmp(toff, toff2, sizeof(*toff) * nt));
		/* the allocator on its own and following the plan, under each
		 * rule and either way of seating: it always fits */
		for (r = 0; r < 4; r++) {
			int rule = (r & 1) | (r & 2 ? ORTMEM__PLAN_ENDFIT : 0);

			h = ortmem__plan_online(p, asz, budget, rule, NULL, NULL, off2, toff2);
			ASSERT_NE(UINT64_MAX, h);
			EXPECT_EQ(0, intervals_fit(p, asz, off2, toff2, budget));
			h = ortmem__plan_online(p, asz, budget, rule, off, NULL, off2, toff2);
			ASSERT_NE(UINT64_MAX, h);
			EXPECT_EQ(0, intervals_fit(p, asz, off2, toff2, budget));
		}
		/* second-choice windows: still fits, and changes the pass */
		alt_checks(_metadata, p, asz, budget, off, &seed, &differed);
		/* closing anywhere */
		before = ortmem__plan_gap_cost(p, off);
		ASSERT_EQ(0, ortmem__plan_close_gaps(p, asz, off, toff, ORTMEM__PLAN_CLOSE_ANY, 0));
		EXPECT_LE(ortmem__plan_gap_cost(p, off), before);
		tried++;
		EXPECT_EQ(0, intervals_fit(p, asz, off, toff, budget));
		free(asz);
		free(off);
		free(off2);
		free(toff);
		free(toff2);
		ortmem_plan_free(p);
	}
	EXPECT_GT(tried, 50);	/* most budgets made values leave */
	EXPECT_GT(differed, 5);	/* and second choices were taken */
}

/*
 * A pass that says its twin (the other eviction rule, all else the same)
 * would make the same plan is right: the twin's plan is byte for byte its
 * own; and one that says not is right too: the twin's plan differs (a
 * window taken elsewhere seats the buffer elsewhere).  Random graphs at
 * tight budgets, each way of seating, with and without the solved plan as
 * guide, with and without moves in the arena and second choices.
 */
static bool same_pass(const struct ortmem_plan *p, const uint8_t *o1, const uint8_t *o2,
		      const uint64_t *t1, const uint64_t *t2, const uint32_t *m1,
		      const uint32_t *m2)
{
	uint32_t nt = p->touch_idx[p->n_bufs];

	return !memcmp(o1, o2, nt) && !memcmp(t1, t2, sizeof(*t1) * nt) &&
	       !memcmp(m1, m2, sizeof(*m1) * nt);
}

TEST_TIMEOUT(a_pass_knows_when_its_twin_makes_the_same_plan, 120)
{
	uint64_t seed = 0x7417;
	int g, v, same = 0, differ = 0;

	for (g = 0; g < 150; g++) {
		uint32_t n = 10 + (uint32_t)(rnd(&seed) % 60), nt, win[2];
		struct ortmem_plan *p = random_plan_at_tight_budget(n, &seed);
		uint64_t budget, *asz, *t[2];
		uint32_t *m[2];
		uint8_t *o[2];

		ASSERT_NONNULL(p);
		budget = p->o.budget[ORTMEM_TIER_DEVICE];
		if (ortmem_plan_solve(p) || !p->gap_off) {
			ortmem_plan_free(p);
			continue;
		}
		nt = p->touch_idx[p->n_bufs];
		asz = aligned_sizes(p);
		ASSERT_NONNULL(asz);
		for (int i = 0; i < 2; i++) {
			o[i] = malloc(nt);
			t[i] = malloc(sizeof(*t[i]) * nt);
			m[i] = calloc(nt, sizeof(*m[i]));
			ASSERT_TRUE(o[i] && t[i] && m[i]);
		}
		for (v = 0; v < 8; v++) {
			int seat = v & 1 ? ORTMEM__PLAN_ENDFIT : 0;
			const uint8_t *guide = v & 2 ? p->gap_off : NULL;
			uint32_t alt = v & 4 ? (uint32_t)rnd(&seed) : 0;
			bool twin_same[2];

			for (int r = 0; r < 2; r++)
				ASSERT_NE(UINT64_MAX, ortmem__plan_online_mv(p, asz, budget, r | seat,
					  alt, guide, NULL, o[r], t[r], g & 1 ? m[r] : NULL,
					  &win[r], &twin_same[r], 0, 0));
			EXPECT_EQ(twin_same[0], twin_same[1]);
			EXPECT_EQ(twin_same[0], same_pass(p, o[0], o[1], t[0], t[1], m[0], m[1]));
			if (twin_same[0] && win[0])
				same++;		/* windows cleared, the same ones */
			if (!twin_same[0])
				differ++;
		}
		for (int i = 0; i < 2; i++) {
			free(o[i]);
			free(t[i]);
			free(m[i]);
		}
		free(asz);
		ortmem_plan_free(p);
	}
	TH_LOG("%d pairs of twins the same after clearing windows, %d different", same, differ);
	EXPECT_GT(same, 10);	/* both answers were given */
	EXPECT_GT(differ, 10);
}

TEST_HARNESS_MAIN
