// SPDX-License-Identifier: MIT
/*
 * Tier placement.  Every node runs on the device.  Under a device budget,
 * plan_gaps.c decides, per gap between two steps that touch a buffer,
 * whether the buffer stays on the device or leaves it, and packs the
 * resident intervals; a buffer that leaves the device at least once has a
 * home copy on the next allowed tier (written once, read back before each
 * touch that ends an off gap).  The host tier is then held to its budget
 * by demoting whole home copies to disk (plan_fit.c), or the plan is
 * refused with every figure.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

/* Buffer of a value, or -1 when the plan does not hold it. */
static int32_t pl_buf_of(const struct ortmem_plan *plan, uint32_t v)
{
	return plan->vals[plan->vals[v].root].def < 0 ? -1 :
	       plan->vals[v].inplace_of >= 0 ? plan->vals[v].buf :
	       plan->vals[plan->vals[v].root].buf;
}

/* Steps at which each buffer is read or written (distinct, ascending). */
static int pl_touches(struct ortmem_plan *plan)
{
	uint32_t nb = plan->n_bufs, s, k, b, total = 0, *last;
	int pass;

	plan->touch_idx = calloc(nb + 1, sizeof(*plan->touch_idx));
	last = malloc(sizeof(*last) * (nb ? nb : 1));
	if (!plan->touch_idx || !last)
		goto nomem;
	for (pass = 0; pass < 2; pass++) {
		memset(last, 0xff, sizeof(*last) * nb);
		for (s = 0; s < plan->n_nodes; s++) {
			const struct pl_node *nd = &plan->nodes[s];

			for (k = 0; k < nd->n_in + nd->n_out; k++) {
				int32_t bb = pl_buf_of(plan, plan->edges[nd->in + k]);

				if (bb < 0 || last[bb] == s)
					continue;
				last[bb] = s;
				if (pass)
					plan->touch_step[plan->touch_idx[bb]++] = s;
				else
					plan->touch_idx[bb + 1]++, total++;
			}
		}
		if (pass)
			break;
		for (b = 0; b < nb; b++)
			plan->touch_idx[b + 1] += plan->touch_idx[b];
		plan->touch_step = malloc(sizeof(*plan->touch_step) * (total ? total : 1));
		plan->touch_off = calloc(total ? total : 1, sizeof(*plan->touch_off));
		if (!plan->touch_step || !plan->touch_off)
			goto nomem;
	}
	/* pass 2 advanced each start to the next one's: shift back */
	for (b = nb; b > 0; b--)
		plan->touch_idx[b] = plan->touch_idx[b - 1];
	plan->touch_idx[0] = 0;
	free(last);
	return 0;
nomem:
	free(last);
	return ortmem__err_plain(-ENOMEM, "planner: cannot index the uses of %u buffers", nb);
}

static int pl_next_tier(const struct ortmem_plan *plan, int tier)
{
	for (tier++; tier < ORTMEM_TIER_COUNT; tier++)
		if (plan->o.tiers & (1u << tier))
			return tier;
	return -1;
}

/* Bytes moved per step: the write-out after the touch that opens the
 * first off gap of each value the buffer holds (one, but for an in-place
 * chain), a read-back before each touch that ends one. */
static void pl_gap_moves(struct ortmem_plan *plan)
{
	uint32_t b, k;

	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];
		bool written = false;
		int t = pb->tier;

		if (t == ORTMEM_TIER_DEVICE)
			continue;
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			if (ortmem__plan_touch_writes(plan, b, k))
				written = false;
			if (!plan->gap_off[k])
				continue;
			if (!written)
				plan->spill[(size_t)plan->touch_step[k] * ORTMEM_TIER_COUNT + t] +=
					pb->size;
			written = true;
			if (k + 1 < plan->touch_idx[b + 1])
				plan->prefetch[(size_t)plan->touch_step[k + 1] *
					       ORTMEM_TIER_COUNT + t] += pb->size;
		}
	}
}

/*
 * The device tier under a budget with a slower tier below.  Where every
 * buffer fits whole (packed with up to half the time budget), nothing
 * moves and the gap placement is not needed: its result is recorded the
 * way the gap placement records an all-resident plan (every gap kept,
 * each touch at its buffer's offset).  Else the gap placement, with the
 * time left.
 */
static int pl_place_device(struct ortmem_plan *plan, int home, uint64_t *prof,
			   uint64_t deadline, struct pk_result *res)
{
	uint64_t now = ortmem__now_ns();
	uint32_t nt = plan->touch_idx[plan->n_bufs], b, k;
	int ret = ortmem__plan_fit_whole(plan, prof, deadline > now ? now + (deadline - now) / 2 : now,
					 res);

	if (ret < 0)
		return ret;
	if (!ret)
		return ortmem__plan_gaps(plan, home, deadline, res);
	plan->gap_off = calloc(nt + 1, 1);
	if (!plan->gap_off)
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			plan->touch_off[k] = plan->bufs[b].off;
	return 0;
}

int ortmem__plan_place(struct ortmem_plan *plan)
{
	uint64_t deadline = plan->deadline_ns ? plan->deadline_ns :
			    ortmem__now_ns() + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC;
	struct pk_result res[ORTMEM_TIER_COUNT] = { 0 };
	size_t cells = ((size_t)plan->n_nodes + 1) * ORTMEM_TIER_COUNT;
	uint64_t *prof = NULL;
	bool budgeted = false;
	uint32_t b;
	int t, ret = 0;

	for (b = 0; b < plan->n_bufs; b++)
		plan->bufs[b].tier = ORTMEM_TIER_DEVICE;
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		budgeted |= (plan->o.tiers & (1u << t)) && plan->o.budget[t];
	/* Without budgets every buffer stays on the device: no uses to index,
	 * no profile, no moves (big graphs pay for each page they touch). */
	if (budgeted) {
		ret = pl_touches(plan);
		if (ret)
			return ret;
		prof = malloc(sizeof(*prof) * (plan->n_nodes + 1ull));
		if (!prof)
			return ortmem__err_plain(-ENOMEM, "planner: cannot profile %u steps",
						 plan->n_nodes);
	}
	for (t = 0; t < ORTMEM_TIER_COUNT && !ret; t++) {
		if (!(plan->o.tiers & (1u << t)))
			continue;
		if (t == ORTMEM_TIER_DEVICE && plan->o.budget[t] && pl_next_tier(plan, t) >= 0)
			ret = pl_place_device(plan, pl_next_tier(plan, t), prof, deadline, &res[t]);
		else
			ret = ortmem__plan_fit_tier(plan, t, pl_next_tier(plan, t), prof,
						    t ? ortmem__now_ns() : deadline, &res[t]);
		plan->st.arena[t] = res[t].height;
		plan->st.tier_lower_bound[t] = res[t].lb;
		plan->st.iterations += res[t].iters;
		if (t == ORTMEM_TIER_DEVICE)
			plan->st.optimal = res[t].optimal;
	}
	free(prof);
	for (b = 0; b < plan->n_bufs && !ret; b++)
		if (plan->bufs[b].tier != ORTMEM_TIER_DEVICE)
			break;
	/* Moves only when a buffer left the device; NULL reads as none. */
	if (!ret && b < plan->n_bufs) {
		plan->prefetch = calloc(cells, sizeof(*plan->prefetch));
		plan->spill = calloc(cells, sizeof(*plan->spill));
		if (!plan->prefetch || !plan->spill)
			return ortmem__err_plain(-ENOMEM, "planner: cannot record the moves of %u steps",
						 plan->n_nodes);
		pl_gap_moves(plan);
	}
	return ret;
}
