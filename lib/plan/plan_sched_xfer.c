// SPDX-License-Identifier: MIT
/*
 * The transfer schedule of a solved plan: per step, the read-backs it needs
 * and the write-outs that follow it (plan_gaps.c decides which), with the
 * device offset of each and the earliest step a read-back may start.  A
 * read-back lands in a device range that other items may hold until some
 * step; it can start once the last of them ends (and not before the touch
 * that opened its gap), so the copy overlaps the compute in between.
 *
 * A buffer that moves within the device arena before step s (plan_move.c)
 * holds its old range until s and its new one from s: a read-back into
 * the old range starts at s, after the move (a step's moves run before its
 * read-backs).  Moves are listed first, each once, at the step they
 * precede, in the order they run: by increasing destination.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

/* Index of @b's touch at @step, or UINT32_MAX. */
static uint32_t sx_touch_at(const struct ortmem_plan *plan, uint32_t b, uint32_t step)
{
	uint32_t lo = ortmem__plan_touch_from(plan, b, step);

	return lo < plan->touch_idx[b + 1] && plan->touch_step[lo] == step ? lo : UINT32_MAX;
}

static void sx_put(struct ortmem_plan_transfer *x, size_t cap, int n,
		   const struct ortmem_plan_transfer *t)
{
	if ((size_t)n < cap)
		x[n] = *t;
}

/* The gap of @b holding @step (its last touch before it), or UINT32_MAX. */
static uint32_t sx_gap_at(const struct ortmem_plan *plan, uint32_t b, uint32_t step)
{
	uint32_t lo = ortmem__plan_touch_from(plan, b, step);

	return lo > plan->touch_idx[b] ? lo - 1 : UINT32_MAX;
}

/* Latest end, before @step, of a device item over [off, off + size): a
 * buffer's resident intervals, split at its moves. */
static uint32_t sx_busy_until(const struct ortmem_plan *plan, uint32_t self,
			      uint32_t step, uint64_t off, uint64_t size)
{
	uint64_t a = plan->o.align[ORTMEM_TIER_DEVICE];
	const uint32_t *ms = plan->move_step;
	uint32_t b, k, j, busy = 0;

	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];
		uint64_t sz = (pb->size + a - 1) & ~(a - 1);
		uint32_t end = plan->touch_idx[b + 1];

		if (b == self || !sz)
			continue;
		if (pb->tier == ORTMEM_TIER_DEVICE && !ortmem__plan_buf_moves(plan, b)) {
			if (pb->lo < step && pb->off < off + size && off < pb->off + sz &&
			    pb->hi > busy)
				busy = pb->hi;
			continue;
		}
		for (k = plan->touch_idx[b]; k < end; k = j + 1) {
			uint32_t lo = k > plan->touch_idx[b] && ms && ms[k - 1] ?
				      ms[k - 1] : plan->touch_step[k], hi;

			for (j = k; j + 1 < end && !plan->gap_off[j] && !(ms && ms[j]); j++)
				;
			hi = ms && ms[j] ? ms[j] : plan->gap_off[j] || j + 1 < end ?
			     plan->touch_step[j] + 1 : pb->hi;
			if (lo < step && plan->touch_off[k] < off + size &&
			    off < plan->touch_off[k] + sz && hi > busy)
				busy = hi;
		}
	}
	return busy;
}

/* The move of @b before @step into @t, or false where it makes none. */
static bool sx_move_of(const struct ortmem_plan *plan, uint32_t b, uint32_t step,
		       struct ortmem_plan_transfer *t)
{
	uint32_t j = sx_gap_at(plan, b, step);

	if (j == UINT32_MAX || plan->move_step[j] != step || plan->gap_off[j])
		return false;
	*t = (struct ortmem_plan_transfer){
		.value = plan->bufs[b].owner, .bytes = plan->bufs[b].size,
		.dir = ORTMEM_PLAN_XFER_MOVE, .from_tier = ORTMEM_TIER_DEVICE,
		.to_tier = ORTMEM_TIER_DEVICE, .earliest = step,
		.src_offset = plan->touch_off[j], .device_offset = plan->touch_off[j + 1] };
	return true;
}

static int sx_cmp_dest(const void *x, const void *y)
{
	const struct ortmem_plan_transfer *a = x, *b = y;

	return (a->device_offset > b->device_offset) - (a->device_offset < b->device_offset);
}

/*
 * The moves before @step (into @xfers, from @n; the new count returned),
 * in the order they run: increasing destination (plan_move.c).  Where
 * they all fit in @cap they are sorted where they lie; else the ones that
 * fit are the lowest, picked one at a time (the caller asks again with
 * more room).
 */
static int sx_moves_at(const struct ortmem_plan *plan, uint32_t step,
		       struct ortmem_plan_transfer *xfers, size_t cap, int n)
{
	struct ortmem_plan_transfer t, low;
	uint64_t after = 0;
	uint32_t b, m = 0, i;
	bool first = true, found;

	if (!plan->move_step)
		return n;
	for (b = 0; b < plan->n_bufs; b++)
		if (sx_move_of(plan, b, step, &t))
			sx_put(xfers, cap, n + m++, &t);
	if ((size_t)n + m <= cap) {
		if (m > 1)
			qsort(xfers + n, m, sizeof(*xfers), sx_cmp_dest);
		return n + m;
	}
	for (i = 0; (size_t)n + i < cap; i++, first = false) {
		for (found = false, b = 0; b < plan->n_bufs; b++)
			if (sx_move_of(plan, b, step, &t) && (first || t.device_offset > after) &&
			    (!found || t.device_offset < low.device_offset)) {
				low = t;
				found = true;
			}
		if (!found)
			break;
		xfers[n + i] = low;
		after = low.device_offset;
	}
	return n + m;
}

ORTMEM_API int ortmem_plan_transfers(const struct ortmem_plan *plan,
				     uint32_t step,
				     struct ortmem_plan_transfer *xfers,
				     size_t cap, uint64_t *stall_bytes)
{
	uint64_t a, stall = 0;
	uint32_t b, k, j, first;
	int n = 0;

	if (!plan)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_transfers: plan is NULL");
	if (!plan->solved)
		return ortmem__err_plain(-ENODATA,
			"ortmem_plan_transfers: the plan has no solution; call ortmem_plan_solve() first");
	if (step >= plan->n_nodes || (cap && !xfers))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_transfers: step %u of %u, or NULL xfers with room for %zu",
			step, plan->n_nodes, cap);
	a = plan->o.align[ORTMEM_TIER_DEVICE];
	n = sx_moves_at(plan, step, xfers, cap, n);
	for (b = 0; plan->gap_off && b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];
		struct ortmem_plan_transfer t = { .value = pb->owner, .bytes = pb->size };

		if (pb->tier == ORTMEM_TIER_DEVICE || (k = sx_touch_at(plan, b, step)) == UINT32_MAX)
			continue;
		if (k > plan->touch_idx[b] && plan->gap_off[k - 1]) {
			uint32_t busy = sx_busy_until(plan, b, step, plan->touch_off[k],
						      (pb->size + a - 1) & ~(a - 1));

			t.dir = ORTMEM_PLAN_XFER_IN;
			t.from_tier = pb->tier;
			t.to_tier = ORTMEM_TIER_DEVICE;
			t.device_offset = plan->touch_off[k];
			t.src_offset = t.device_offset;
			t.earliest = plan->touch_step[k - 1] + 1;
			if (busy > t.earliest)
				t.earliest = busy > step ? step : busy;
			if (t.earliest == step)
				stall += pb->size;
			sx_put(xfers, cap, n++, &t);
		}
		if (!plan->gap_off[k])
			continue;
		/* Written out after the first off gap of the value it holds
		 * now, from the touch that wrote that value on: an in-place
		 * chain writes the next value over it (and the buffer's first
		 * touch writes the first). */
		for (first = k; !ortmem__plan_touch_writes(plan, b, first) &&
				!plan->gap_off[first - 1]; first--)
			;
		if (ortmem__plan_touch_writes(plan, b, first)) {
			t.dir = ORTMEM_PLAN_XFER_OUT;
			t.from_tier = ORTMEM_TIER_DEVICE;
			t.to_tier = pb->tier;
			t.device_offset = plan->touch_off[k];
			t.src_offset = t.device_offset;
			t.earliest = plan->touch_step[first];
			/* it reads the range the value holds at @step: one that
			 * moved within the arena since holds it from the step
			 * its last move precedes (a write-out started before
			 * would read the range it moved to before it got there) */
			for (j = k; plan->move_step && j-- > first;)
				if (plan->move_step[j]) {
					t.earliest = plan->move_step[j];
					break;
				}
			sx_put(xfers, cap, n++, &t);
		}
	}
	if (stall_bytes)
		*stall_bytes = stall;
	return n;
}
