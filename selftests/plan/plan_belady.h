/* SPDX-License-Identifier: MIT */
/*
 * What the placement's byte tests share (unit_guide, unit_move): Belady's
 * furthest-next-use eviction simulated on a solved plan's buffers, and
 * random graphs at a budget between the largest step's footprint and the
 * all-on-device bound.  Include after plan_test.h with PLAN_TEST_GRAPH
 * (it gives ALIGN) and plan/plan_internal.h.
 */
#ifndef SELFTESTS_PLAN_PLAN_BELADY_H
#define SELFTESTS_PLAN_PLAN_BELADY_H

#include <stdbool.h>
#include <stdlib.h>

static inline uint64_t asz_of(const struct ortmem_plan *p, uint32_t b)
{
	return (p->bufs[b].size + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

/* The step of @b's first touch after step @s, or UINT32_MAX (none). */
static inline uint32_t next_touch(const struct ortmem_plan *p, uint32_t b, uint32_t s)
{
	uint32_t k;

	for (k = p->touch_idx[b]; k < p->touch_idx[b + 1]; k++)
		if (p->touch_step[k] > s)
			return p->touch_step[k];
	return UINT32_MAX;
}

static inline bool touched_at(const struct ortmem_plan *p, uint32_t b, uint32_t s)
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
static inline uint64_t belady(const struct ortmem_plan *p, uint64_t budget)
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

/* The random graph of @n nodes and @seed under a device budget, planned
 * with @flags at move ratio @ratio (0: the default) through the public
 * options. */
static inline struct ortmem_plan *graph_at_ratio(uint32_t n, uint64_t seed, uint64_t budget,
						 uint32_t flags, uint32_t ratio)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
		    .align = { ALIGN, 64, 4096 }, .max_iterations = 20, .flags = flags,
		    .move_ratio = ratio);
	struct ortmem_plan *p = NULL;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	random_graph(p, n, &seed);
	return p;
}

static inline struct ortmem_plan *graph_at_flags(uint32_t n, uint64_t seed, uint64_t budget,
						 uint32_t flags)
{
	return graph_at_ratio(n, seed, budget, flags, 0);
}

static inline struct ortmem_plan *graph_at(uint32_t n, uint64_t seed, uint64_t budget)
{
	return graph_at_flags(n, seed, budget, 0);
}

/* The largest step's footprint (distinct values it reads or writes; the
 * sizes are aligned) and the all-on-device bound of a graph. */
static inline void graph_limits(uint32_t n, uint64_t seed, uint64_t *foot, uint64_t *lb)
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

#endif
