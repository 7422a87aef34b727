// SPDX-License-Identifier: MIT
/*
 * Waypoints (lib/plan/plan_waypoint.c): where the layout by compaction
 * (plan_compact.c) moves a buffer twice between two of its touches, the
 * gap is split at a touch of no node.  On random graphs at move ratio
 * 1,024 (where that layout runs) some plans hold waypoints; each lies in a
 * kept gap on both sides, at the step of the move that reached it, with
 * another move after it, and the plan validates.  The validator refuses
 * such a plan once a waypoint is broken: its offset made its gap's start
 * (a move to where the buffer is), its move step past it, its offset past
 * the arena.
 */
#include <errno.h>
#include <stdlib.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"
#include "plan_belady.h"

#define GRAPHS 24
#define BUDGETS 4

/* Does node @s read or write a value held in buffer @b? */
static bool node_touches(const struct ortmem_plan *p, uint32_t s, uint32_t b)
{
	const struct pl_node *nd = &p->nodes[s];
	uint32_t k;

	for (k = 0; k < nd->n_in + nd->n_out; k++) {
		const struct pl_value *x = &p->vals[p->edges[nd->in + k]];
		int32_t xb = x->inplace_of >= 0 ? x->buf : p->vals[x->root].buf;

		if (p->vals[x->root].def >= 0 && xb == (int32_t)b)
			return true;
	}
	return false;
}

/* Count the waypoints of plan @p, checking each; the last into *@last
 * (UINT32_MAX: none). */
static uint32_t waypoints(struct __test_metadata *_metadata, const struct ortmem_plan *p,
			  uint32_t *last)
{
	uint32_t b, k, n = 0;

	*last = UINT32_MAX;
	for (b = 0; p->touch_idx && b < p->n_bufs; b++)
		for (k = p->touch_idx[b] + 1; k < p->touch_idx[b + 1]; k++) {
			if (node_touches(p, p->touch_step[k], b))
				continue;
			n++;
			*last = k;
			ASSERT_NONNULL(p->move_step);
			EXPECT_EQ(0, p->gap_off[k - 1]);
			EXPECT_EQ(0, p->gap_off[k]);
			EXPECT_EQ(p->touch_step[k], p->move_step[k - 1]);
			EXPECT_NE(0, p->move_step[k]);
			EXPECT_LT(k + 1, p->touch_idx[b + 1]);
			EXPECT_NE(p->touch_off[k - 1], p->touch_off[k]);
		}
	return n;
}

/* The plan of graph @g at budget @i of BUDGETS, at move ratio 1,024. */
static struct ortmem_plan *plan_at(uint32_t g, uint32_t i)
{
	uint32_t n = 40 + 20 * (g % 4);
	uint64_t seed = 7100 + g, foot, lb, budget;
	struct ortmem_plan *p;

	graph_limits(n, seed, &foot, &lb);
	budget = foot + (lb > foot ? (lb - foot) * (1 + 2 * i) / (2 * BUDGETS) : 0);
	budget &= ~(uint64_t)(ALIGN - 1);
	p = graph_at_ratio(n, seed, budget < foot ? foot : budget, ORTMEM_PLAN_F_VALIDATE,
			   ORTMEM_PLAN_MOVE_RATIO_MAX);
	if (p && ortmem_plan_solve(p)) {
		ortmem_plan_free(p);
		return NULL;
	}
	return p;
}

TEST_TIMEOUT(compacted_plans_hold_waypoints, 300)
{
	uint32_t g, i, plans = 0, with = 0, total = 0, last;

	for (g = 0; g < GRAPHS; g++)
		for (i = 0; i < BUDGETS; i++) {
			struct ortmem_plan *p = plan_at(g, i);
			uint32_t n;

			ASSERT_NONNULL(p);
			EXPECT_EQ(0, ortmem_plan_validate(p));
			n = waypoints(_metadata, p, &last);
			with += n != 0;
			total += n;
			plans++;
			ortmem_plan_free(p);
		}
	TH_LOG("%u plans at ratio %u: %u with waypoints, %u in all", plans,
	       ORTMEM_PLAN_MOVE_RATIO_MAX, with, total);
	EXPECT_LT(0, with);
}

TEST_TIMEOUT(validator_refuses_a_broken_waypoint, 300)
{
	struct ortmem_plan *p = NULL;
	uint32_t g, i, k = UINT32_MAX, ms;
	uint64_t off;

	for (g = 0; g < GRAPHS && k == UINT32_MAX; g++)
		for (i = 0; i < BUDGETS && k == UINT32_MAX; i++) {
			ortmem_plan_free(p);
			p = plan_at(g, i);
			ASSERT_NONNULL(p);
			waypoints(_metadata, p, &k);
		}
	ASSERT_NE(UINT32_MAX, k);
	ASSERT_EQ(0, ortmem_plan_validate(p));
	off = p->touch_off[k];
	p->touch_off[k] = p->touch_off[k - 1];	/* the move goes nowhere */
	EXPECT_EQ(-EFAULT, ortmem_plan_validate(p));
	p->touch_off[k] = p->st.arena[ORTMEM_TIER_DEVICE];	/* past the arena */
	EXPECT_EQ(-EFAULT, ortmem_plan_validate(p));
	p->touch_off[k] = off;
	ms = p->move_step[k - 1];
	p->move_step[k - 1] = p->touch_step[k] + 1;	/* past its gap's end */
	EXPECT_EQ(-EFAULT, ortmem_plan_validate(p));
	p->move_step[k - 1] = ms;
	EXPECT_EQ(0, ortmem_plan_validate(p));
	ortmem_plan_free(p);
}

TEST_HARNESS_MAIN
