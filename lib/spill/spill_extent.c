// SPDX-License-Identifier: MIT
/*
 * The extent allocator of a spill file: free space as ranges sorted by
 * offset, first fit, and a freed range merged with the free neighbours on
 * either side, so the list never holds two adjacent ranges.
 */
#include <errno.h>
#include <stdlib.h>

#include "spill_internal.h"

void ortmem__ealloc_init(struct ortmem__ealloc *a)
{
	memset(a, 0, sizeof(*a));
}

void ortmem__ealloc_fini(struct ortmem__ealloc *a)
{
	free(a->free);
	memset(a, 0, sizeof(*a));
}

static int ealloc_reserve(struct ortmem__ealloc *a, size_t need)
{
	return ortmem__grow((void **)&a->free, &a->cap, need, sizeof(*a->free),
			    16);
}

/* Index of the first free range whose offset is >= @off. */
static size_t ealloc_lower_bound(const struct ortmem__ealloc *a, uint64_t off)
{
	size_t lo = 0, hi = a->nfree;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->free[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ealloc_remove(struct ortmem__ealloc *a, size_t i)
{
	memmove(&a->free[i], &a->free[i + 1],
		(a->nfree - i - 1) * sizeof(a->free[0]));
	a->nfree--;
}

int ortmem__ealloc_get(struct ortmem__ealloc *a, uint64_t len, uint64_t *offp)
{
	size_t i;

	if (!len)
		return -EINVAL;
	for (i = 0; i < a->nfree; i++) {
		struct ortmem__range *r = &a->free[i];

		if (r->len < len)
			continue;
		*offp = r->off;
		r->off += len;
		r->len -= len;
		if (!r->len)
			ealloc_remove(a, i);
		a->used += len;
		return 0;
	}
	return -ENOSPC;
}

/* Insert [off, off+len) at index @i, merging with its neighbours. */
static int ealloc_insert(struct ortmem__ealloc *a, size_t i, uint64_t off,
			 uint64_t len)
{
	bool merge_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
	bool merge_next = i < a->nfree && off + len == a->free[i].off;

	if (merge_prev && merge_next) {
		a->free[i - 1].len += len + a->free[i].len;
		ealloc_remove(a, i);
	} else if (merge_prev) {
		a->free[i - 1].len += len;
	} else if (merge_next) {
		a->free[i].off = off;
		a->free[i].len += len;
	} else {
		if (ealloc_reserve(a, a->nfree + 1))
			return -ENOMEM;
		memmove(&a->free[i + 1], &a->free[i],
			(a->nfree - i) * sizeof(a->free[0]));
		a->free[i].off = off;
		a->free[i].len = len;
		a->nfree++;
	}
	return 0;
}

int ortmem__ealloc_put(struct ortmem__ealloc *a, uint64_t off, uint64_t len)
{
	size_t i;
	int ret;

	if (!len || off > a->size || len > a->size - off || len > a->used)
		return -EINVAL;
	i = ealloc_lower_bound(a, off);
	if (i > 0 && a->free[i - 1].off + a->free[i - 1].len > off)
		return -EINVAL;
	if (i < a->nfree && off + len > a->free[i].off)
		return -EINVAL;
	ret = ealloc_insert(a, i, off, len);
	if (!ret)
		a->used -= len;
	return ret;
}

int ortmem__ealloc_grow(struct ortmem__ealloc *a, uint64_t new_size)
{
	uint64_t old = a->size;
	int ret;

	if (new_size < old)
		return -EINVAL;
	if (new_size == old)
		return 0;
	ret = ealloc_insert(a, a->nfree, old, new_size - old);
	if (!ret)
		a->size = new_size;
	return ret;
}

uint64_t ortmem__ealloc_largest(const struct ortmem__ealloc *a)
{
	uint64_t best = 0;
	size_t i;

	for (i = 0; i < a->nfree; i++)
		if (a->free[i].len > best)
			best = a->free[i].len;
	return best;
}

uint64_t ortmem__ealloc_tail_free(const struct ortmem__ealloc *a)
{
	const struct ortmem__range *last;

	if (!a->nfree)
		return 0;
	last = &a->free[a->nfree - 1];
	return last->off + last->len == a->size ? last->len : 0;
}
