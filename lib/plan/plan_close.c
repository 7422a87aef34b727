// SPDX-License-Identifier: MIT
/*
 * Closing off gaps that have room after all.  An allocator's pass sends a
 * buffer off the device when a step finds no hole for what it needs; by
 * the end of the plan, the address range the buffer left may have stayed
 * free for the whole gap (the step needed a different range, or a later
 * eviction cleared it).  Such a gap can be kept on the device at no cost
 * in space: the two resident intervals on either side of it merge into
 * one, at the address of either, where that address is free over the
 * steps the merge adds.  Each merge saves the read-back (and the write-out
 * when it was the buffer's last off gap that a touch ends).
 *
 * Intervals are kept sorted by first step; a check scans those that start
 * before the range ends.  O(off gaps x intervals) a pass.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

struct cl_iv {
	uint64_t lo, hi;	/* steps [lo, hi) */
	uint64_t addr, size;
	uint32_t k0, k1;	/* first and last touch */
	uint32_t buf;
	uint32_t next;		/* the buffer's next interval, or UINT32_MAX */
	bool dead;
};

/* Is [addr, addr + size) free over steps [lo, hi) but for @a and @b? */
static bool cl_free(const struct cl_iv *iv, uint32_t n, uint32_t a, uint32_t b,
		    uint64_t lo, uint64_t hi, uint64_t addr, uint64_t size)
{
	uint32_t i;

	for (i = 0; i < n && iv[i].lo < hi; i++) {
		const struct cl_iv *q = &iv[i];

		if (q->dead || i == a || i == b || q->hi <= lo || !q->size)
			continue;
		if (q->addr < addr + size && addr < q->addr + q->size)
			return false;
	}
	return true;
}

static int cl_cmp(const void *x, const void *y)
{
	const struct cl_iv *a = x, *b = y;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

/* The intervals of the plan (off, toff), sorted by first step. */
static struct cl_iv *cl_build(const struct ortmem_plan *plan, const uint64_t *asz,
			      const uint8_t *off, const uint64_t *toff, uint32_t *count)
{
	uint32_t nt = plan->touch_idx[plan->n_bufs], n = 0, b, k, j, i;
	struct cl_iv *iv = malloc(sizeof(*iv) * (nt + 1));
	uint32_t *pos;

	if (!iv)
		return NULL;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1) {
			for (j = k; j + 1 < plan->touch_idx[b + 1] && !off[j]; j++)
				;
			iv[n] = (struct cl_iv){
				.lo = plan->touch_step[k],
				.hi = off[j] || j + 1 < plan->touch_idx[b + 1] ?
				      plan->touch_step[j] + 1ull : plan->bufs[b].hi,
				.addr = toff[k], .size = asz[b], .k0 = k, .k1 = j, .buf = b,
				.next = UINT32_MAX };
			n++;
		}
	qsort(iv, n, sizeof(*iv), cl_cmp);
	/* link each interval to its buffer's next one, by first touch */
	pos = malloc(sizeof(*pos) * (nt + 1));
	if (!pos) {
		free(iv);
		return NULL;
	}
	for (i = 0; i < nt; i++)
		pos[i] = UINT32_MAX;
	for (i = 0; i < n; i++)
		pos[iv[i].k0] = i;
	for (i = 0; i < n; i++)
		if (iv[i].k1 + 1 < plan->touch_idx[iv[i].buf + 1])
			iv[i].next = pos[iv[i].k1 + 1];
	free(pos);
	*count = n;
	return iv;
}

/* Merge iv[a] with the buffer's next interval iv[b] when an address is free. */
static bool cl_merge(struct cl_iv *iv, uint32_t n, uint32_t a, uint8_t *off,
		     uint64_t *toff)
{
	uint32_t b = iv[a].next, k;
	uint64_t addr;

	/* the next interval must be the same buffer's (k1 + 1 is its touch) */
	if (b == UINT32_MAX || iv[b].dead || iv[b].buf != iv[a].buf ||
	    iv[b].k0 != iv[a].k1 + 1)
		return false;
	if (cl_free(iv, n, a, b, iv[a].hi, iv[b].hi, iv[a].addr, iv[a].size))
		addr = iv[a].addr;
	else if (cl_free(iv, n, a, b, iv[a].lo, iv[b].lo, iv[b].addr, iv[b].size))
		addr = iv[b].addr;
	else
		return false;
	off[iv[a].k1] = 0;
	for (k = iv[a].k0; k <= iv[b].k1; k++)
		toff[k] = addr;
	iv[a].addr = addr;
	iv[a].hi = iv[b].hi;
	iv[a].k1 = iv[b].k1;
	iv[a].next = iv[b].next;
	iv[b].dead = true;
	return true;
}

/*
 * Keep on the device every off gap, a touch ends, whose buffer's range is
 * free over it (at its address before or after the gap); @off and @toff
 * are updated.  Stops at @deadline (0: no limit).  0 or -ENOMEM.
 */
int ortmem__plan_close_gaps(const struct ortmem_plan *plan, const uint64_t *asz,
			    uint8_t *off, uint64_t *toff, uint64_t deadline)
{
	uint32_t n, i, pass;
	struct cl_iv *iv = cl_build(plan, asz, off, toff, &n);
	bool merged = true;

	if (!iv)
		return -ENOMEM;
	for (pass = 0; pass < 2 && merged; pass++) {
		merged = false;
		for (i = 0; i < n; i++) {
			if (iv[i].dead)
				continue;
			while (cl_merge(iv, n, i, off, toff))
				merged = true;
			if (deadline && (i & 63) == 0 && ortmem__now_ns() > deadline)
				goto out;
		}
	}
out:
	free(iv);
	return 0;
}
