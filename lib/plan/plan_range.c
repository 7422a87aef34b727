// SPDX-License-Identifier: MIT
/*
 * A range tree over the steps: add to every step of a range, and the
 * largest value over a range, each in O(log steps).  The gap sweeps
 * (plan_gap_sweep.c) and the tier fitting's returns (plan_fit.c) keep the
 * bytes over budget per step in one: sending a buffer or a gap off or
 * taking it back changes every step it spans, and on a dense graph
 * (buffers live for thousands of steps) a walk over those steps made them
 * quadratic.
 *
 * Node x covers [l, r); mx[x] is the largest value in it with the adds
 * made at x and below, add[x] what was added to the whole of x (its
 * ancestors' adds are summed on the way down).
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

int ortmem__rt_init(struct plan_rtree *t, uint32_t n)
{
	uint32_t cap = 1;

	while (cap < n)
		cap <<= 1;
	t->n = n;
	t->mx = calloc(2ull * cap, sizeof(*t->mx));
	t->add = calloc(2ull * cap, sizeof(*t->add));
	if (!t->mx || !t->add) {
		ortmem__rt_free(t);
		return -ENOMEM;
	}
	return 0;
}

void ortmem__rt_free(struct plan_rtree *t)
{
	free(t->mx);
	free(t->add);
	t->mx = NULL;
	t->add = NULL;
}

static int64_t rt_max2(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static void rt_build(struct plan_rtree *t, uint32_t x, uint32_t l, uint32_t r,
		     const int64_t *v)
{
	uint32_t m = l + (r - l) / 2;

	t->add[x] = 0;
	if (r - l == 1) {
		t->mx[x] = v[l];
		return;
	}
	rt_build(t, 2 * x, l, m, v);
	rt_build(t, 2 * x + 1, m, r, v);
	t->mx[x] = rt_max2(t->mx[2 * x], t->mx[2 * x + 1]);
}

/* Start over from @v[0..n). */
void ortmem__rt_set(struct plan_rtree *t, const int64_t *v)
{
	if (t->n)
		rt_build(t, 1, 0, t->n, v);
}

static void rt_add(struct plan_rtree *t, uint32_t x, uint32_t l, uint32_t r,
		   uint32_t ql, uint32_t qr, int64_t d)
{
	uint32_t m = l + (r - l) / 2;

	if (qr <= l || r <= ql)
		return;
	if (ql <= l && r <= qr) {
		t->mx[x] += d;
		t->add[x] += d;
		return;
	}
	rt_add(t, 2 * x, l, m, ql, qr, d);
	rt_add(t, 2 * x + 1, m, r, ql, qr, d);
	t->mx[x] = rt_max2(t->mx[2 * x], t->mx[2 * x + 1]) + t->add[x];
}

/* Add @d to every step of [@lo, @hi). */
void ortmem__rt_add(struct plan_rtree *t, uint32_t lo, uint32_t hi, int64_t d)
{
	if (lo < hi && t->n)
		rt_add(t, 1, 0, t->n, lo, hi > t->n ? t->n : hi, d);
}

static int64_t rt_max(const struct plan_rtree *t, uint32_t x, uint32_t l, uint32_t r,
		      uint32_t ql, uint32_t qr)
{
	uint32_t m = l + (r - l) / 2;

	if (ql <= l && r <= qr)
		return t->mx[x];
	if (qr <= m)
		return rt_max(t, 2 * x, l, m, ql, qr) + t->add[x];
	if (ql >= m)
		return rt_max(t, 2 * x + 1, m, r, ql, qr) + t->add[x];
	return rt_max2(rt_max(t, 2 * x, l, m, ql, qr),
		       rt_max(t, 2 * x + 1, m, r, ql, qr)) + t->add[x];
}

/* The largest value over [@lo, @hi), which must not be empty. */
int64_t ortmem__rt_max(const struct plan_rtree *t, uint32_t lo, uint32_t hi)
{
	return rt_max(t, 1, 0, t->n, lo, hi > t->n ? t->n : hi);
}

