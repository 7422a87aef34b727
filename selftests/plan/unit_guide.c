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
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"

static uint64_t asz_of(const struct ortmem_plan *p, uint32_t b)
{
	return (p->bufs[b].size + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

/* The step of @b's first touch after step @s, or UINT32_MAX (none). */
static uint32_t next_touch(const struct ortmem_plan *p, uint32_t b, uint32_t s)
{
	uint32_t k;

	for (k = p->touch_idx[b]; k < p->touch_idx[b + 1]; k++)
		if (p->touch_step[k] > s)
			return p->touch_step[k];
	return UINT32_MAX;
}

static bool touched_at(const struct ortmem_plan *p, uint32_t b, uint32_t s)
{
	uint32_t k;

	for (k = p->touch_idx[b]; k < p->touch_idx[b + 1]; k++)
		if (p->touch_step[k] == s)
			return true;
	return false;
}

/*
 * Belady on the plan's buffers, written as a runtime would see it: a
 * buffer becomes resident at its first touch, is read back at a touch
 * that finds it gone, and leaves at the end of its life; when the
 * resident bytes exceed @budget, the resident buffer not touched at the
 * step whose next touch is furthest leaves (the larger on a tie), written
 * out the first time.  Bytes moved, or UINT64_MAX when a step cannot fit.
 */
static uint64_t belady(const struct ortmem_plan *p, uint64_t budget)
{
	uint32_t nb = p->n_bufs, s, b;
	bool *res = calloc(nb + 1, 1), *wr = calloc(nb + 1, 1), *seen = calloc(nb + 1, 1);
	uint64_t used = 0, moved = 0;

	for (s = 0; res && wr && seen && s < p->n_nodes; s++) {
		for (b = 0; b < nb; b++) {
			if (res[b] && p->bufs[b].hi <= s) {
				res[b] = false;
				used -= asz_of(p, b);
			}
			if (!p->bufs[b].size || res[b] || !touched_at(p, b, s))
				continue;
			if (seen[b])
				moved += p->bufs[b].size;	/* read back */
			seen[b] = res[b] = true;
			used += asz_of(p, b);
		}
		while (used > budget) {
			uint32_t best = UINT32_MAX, far = 0, nu;

			for (b = 0; b < nb; b++) {
				if (!res[b] || touched_at(p, b, s))
					continue;
				nu = next_touch(p, b, s);
				if (best == UINT32_MAX || nu > far ||
				    (nu == far && asz_of(p, b) > asz_of(p, best))) {
					best = b;
					far = nu;
				}
			}
			if (best == UINT32_MAX) {
				moved = UINT64_MAX;
				break;
			}
			res[best] = false;
			used -= asz_of(p, best);
			if (!wr[best])
				moved += p->bufs[best].size;
			wr[best] = true;
		}
		if (moved == UINT64_MAX)
			break;
	}
	free(res);
	free(wr);
	free(seen);
	return moved;
}

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

static struct ortmem_plan *graph_at(uint32_t n, uint64_t seed, uint64_t budget)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
		    .align = { ALIGN, 64, 4096 }, .max_iterations = 20);
	struct ortmem_plan *p = NULL;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	random_graph(p, n, &seed);
	return p;
}

/* The largest step's footprint (distinct values it reads or writes; the
 * sizes are aligned) and the all-on-device bound of a graph. */
static void graph_limits(uint32_t n, uint64_t seed, uint64_t *foot, uint64_t *lb)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = graph_at(n, seed, 0);
	uint32_t s, k, j;

	*foot = *lb = 0;
	if (!p || ortmem_plan_solve(p) || ortmem_plan_stats(p, &st)) {
		ortmem_plan_free(p);
		return;
	}
	*lb = st.lower_bound;
	for (s = 0; s < p->n_nodes; s++) {
		const struct pl_node *nd = &p->nodes[s];
		uint64_t sum = 0;

		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			bool seen = false;

			for (j = 0; j < k; j++)
				seen |= p->edges[nd->in + j] == p->edges[nd->in + k];
			if (!seen)
				sum += p->vals[p->edges[nd->in + k]].size;
		}
		*foot = sum > *foot ? sum : *foot;
	}
	ortmem_plan_free(p);
}

TEST_TIMEOUT(guide_never_moves_more_than_belady, 120)
{
	uint32_t cases = 0, cheaper = 0, g, i;

	for (g = 0; g < 40; g++) {
		uint32_t n = 20 + 10 * (g % 10);
		uint64_t foot, lb;

		graph_limits(n, 1000 + g, &foot, &lb);
		ASSERT_NE(0, foot);
		for (i = 0; i <= 6; i++) {
			/* from the largest step's footprint up to the bound */
			uint64_t budget = foot + (lb > foot ? (lb - foot) * i / 6 : 0);
			struct ortmem_plan *p = graph_at(n, 1000 + g, budget & ~(uint64_t)(ALIGN - 1));
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
				TH_LOG("n %u seed %u budget %llu: guide %llu > Belady %llu", n, 1000 + g,
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

TEST_HARNESS_MAIN
