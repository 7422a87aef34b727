// SPDX-License-Identifier: MIT
/*
 * The transfer schedule of a solved plan: per step, the read-backs it needs
 * and the write-outs that follow it (plan_gaps.c decides which), with the
 * device offset of each and the earliest step a read-back may start.  A
 * read-back lands in a device range that other items may hold until some
 * step; it can start once the last of them ends (and not before the touch
 * that opened its gap), so the copy overlaps the compute in between.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

/* Index of @b's touch at @step, or UINT32_MAX. */
static uint32_t sx_touch_at(const struct ortmem_plan *plan, uint32_t b, uint32_t step)
{
	uint32_t lo = plan->touch_idx[b], hi = plan->touch_idx[b + 1];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (plan->touch_step[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < plan->touch_idx[b + 1] && plan->touch_step[lo] == step ? lo : UINT32_MAX;
}

/* Latest end, before @step, of a device item over [off, off + size). */
static uint32_t sx_busy_until(const struct ortmem_plan *plan, uint32_t self,
			      uint32_t step, uint64_t off, uint64_t size)
{
	uint64_t a = plan->o.align[ORTMEM_TIER_DEVICE];
	uint32_t b, k, j, busy = 0;

	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];
		uint64_t sz = (pb->size + a - 1) & ~(a - 1);

		if (b == self || !sz)
			continue;
		if (pb->tier == ORTMEM_TIER_DEVICE) {
			if (pb->lo < step && pb->off < off + size && off < pb->off + sz &&
			    pb->hi > busy)
				busy = pb->hi;
			continue;
		}
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1) {
			uint32_t end;

			for (j = k; j + 1 < plan->touch_idx[b + 1] && !plan->gap_off[j]; j++)
				;
			end = plan->gap_off[j] || j + 1 < plan->touch_idx[b + 1] ?
			      plan->touch_step[j] + 1 : pb->hi;
			if (plan->touch_step[k] < step && plan->touch_off[k] < off + size &&
			    off < plan->touch_off[k] + sz && end > busy)
				busy = end;
		}
	}
	return busy;
}

static void sx_put(struct ortmem_plan_transfer *x, size_t cap, int n,
		   const struct ortmem_plan_transfer *t)
{
	if ((size_t)n < cap)
		x[n] = *t;
}

ORTMEM_API int ortmem_plan_transfers(const struct ortmem_plan *plan,
				     uint32_t step,
				     struct ortmem_plan_transfer *xfers,
				     size_t cap, uint64_t *stall_bytes)
{
	uint64_t a, stall = 0;
	uint32_t b, k, first;
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
		for (first = plan->touch_idx[b]; !plan->gap_off[first]; first++)
			;
		if (first == k) {
			t.dir = ORTMEM_PLAN_XFER_OUT;
			t.from_tier = ORTMEM_TIER_DEVICE;
			t.to_tier = pb->tier;
			t.device_offset = plan->touch_off[k];
			t.src_offset = t.device_offset;
			t.earliest = plan->touch_step[plan->touch_idx[b]];
			sx_put(xfers, cap, n++, &t);
		}
	}
	if (stall_bytes)
		*stall_bytes = stall;
	return n;
}
