/* SPDX-License-Identifier: MIT */
/*
 * What the planner's unit tests share: a small xorshift generator, random
 * graphs for the placement tests, and the brute-force packer (every order,
 * each item at its lowest fit) that the packing tests check against.
 */
#ifndef SELFTESTS_PLAN_PLAN_TEST_H
#define SELFTESTS_PLAN_PLAN_TEST_H

/*
 * The searches are bounded by max_iterations, so that a plan is the same
 * on every run; the placement's passes are bounded by the time budget
 * only, so it is generous: under a sanitizer's slowdown the default
 * 10 ms leaves some unrun (plan.h, max_iterations).
 */
#define GENEROUS_BUDGET_US 10000000

#include <stdbool.h>
#include <stdint.h>

#include <ortmem/ortmem.h>

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#ifdef PLAN_TEST_PACK
#include "pack/pack_internal.h"

/* Lowest offset where @i fits against the items placed before it. */
static inline uint64_t lowest_fit(const struct pk_item *it, const uint64_t *off,
			   const int *perm, int k)
{
	uint64_t y = 0;
	bool moved = true;
	int j;

	while (moved) {
		moved = false;
		for (j = 0; j < k; j++) {
			const struct pk_item *a = &it[perm[j]], *b = &it[perm[k]];

			if (a->lo < b->hi && b->lo < a->hi &&
			    off[perm[j]] < y + b->size && y < off[perm[j]] + a->size) {
				y = off[perm[j]] + a->size;
				moved = true;
			}
		}
	}
	return y;
}

/* Optimum: the best lowest-fit over every order (any packing pushed down
 * and listed by offset is one of these). */
static inline uint64_t brute(const struct pk_item *it, int n, int *perm, int k, uint64_t *off)
{
	uint64_t best = UINT64_MAX, h, top;
	int i, t;

	if (k == n) {
		for (h = 0, i = 0; i < n; i++)
			if (off[i] + it[i].size > h)
				h = off[i] + it[i].size;
		return h;
	}
	for (i = k; i < n; i++) {
		t = perm[k]; perm[k] = perm[i]; perm[i] = t;
		off[perm[k]] = lowest_fit(it, off, perm, k);
		top = brute(it, n, perm, k + 1, off);
		if (top < best)
			best = top;
		t = perm[k]; perm[k] = perm[i]; perm[i] = t;
	}
	return best;
}
#endif

#ifdef PLAN_TEST_GRAPH
#define ALIGN 256

/* A random graph of @n nodes, one output each, reading 1-3 earlier ones;
 * sizes multiples of ALIGN so the footprint below is exact.  The draws are
 * sequenced (the order of a call's arguments is unspecified: gcc and clang
 * built different graphs from one seed). */
/* The nodes of random_graph(): node i makes value i from 1-3 earlier ones. */
static inline void random_nodes(struct ortmem_plan *p, uint32_t n, uint64_t *seed)
{
	uint32_t i, k;

	ortmem_plan_add_node(p, NULL, 0, &(uint32_t){ 0 }, 1);
	for (i = 1; i < n; i++) {
		uint32_t in[3], nin = 1 + (uint32_t)(rnd(seed) % 3);

		for (k = 0; k < nin; k++)
			in[k] = (uint32_t)(rnd(seed) % i);
		ortmem_plan_add_node(p, in, nin, &i, 1);
	}
}

static inline void random_graph(struct ortmem_plan *p, uint32_t n, uint64_t *seed)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint32_t flags = rnd(seed) % 10 ? 0 : ORTMEM_PLAN_VALUE_OUTPUT;

		ortmem_plan_add_value(p, ALIGN * (1 + rnd(seed) % 16), flags);
	}
	random_nodes(p, n, seed);
}
#endif

#endif
