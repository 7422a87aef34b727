// SPDX-License-Identifier: MIT
/*
 * A binary heap of ids under an order the caller gives: the Belady sweep's
 * victims (plan_gap_sweep.c) and the tier fitting's (plan_fit.c), each
 * taken in O(log n) where a scan of every live one made the walks
 * quadratic on dense graphs.  @before(ctx, a, b): a comes out before b.
 */
#include "plan_internal.h"

void ortmem__heap_push(struct plan_heap *h, uint32_t id)
{
	uint32_t i = h->n++;

	while (i && h->before(h->ctx, id, h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = id;
}

/* Take the top out (the heap must not be empty); it is returned. */
uint32_t ortmem__heap_pop(struct plan_heap *h)
{
	uint32_t top = h->v[0], last = h->v[--h->n], i = 0, k;

	while ((k = 2 * i + 1) < h->n) {
		if (k + 1 < h->n && h->before(h->ctx, h->v[k + 1], h->v[k]))
			k++;
		if (!h->before(h->ctx, h->v[k], last))
			break;
		h->v[i] = h->v[k];
		i = k;
	}
	if (h->n)
		h->v[i] = last;
	return top;
}
