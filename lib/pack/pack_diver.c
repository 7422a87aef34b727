// SPDX-License-Identifier: MIT
/*
 * The driver of resumable dives over the skyline, shared by the heuristic
 * dives (pack_dive.c) and the compact search (pack_compact.c): each search
 * gives a begin hook (set up dive number r under a height) and a dive hook
 * (go on for a number of nodes); the driver restarts dives, keeps what a
 * dive finds, and pauses when the budget of a call is spent, to go on where
 * it stopped at the next call at the same height.
 */
#include "pack_internal.h"

/* Keep the packing of the items on @v's stack, all placed. */
static void sky_keep(const struct pk_diver *v)
{
	const struct pk_sky *k = v->sky;
	struct packer *pk = k->pk;
	uint32_t j;

	for (j = 0; j < k->m; j++)
		pk->off[v->stack[j]] = k->off[v->stack[j]];
	ortmem__pk_keep_placed(pk, v->stack, k->m);
}

int ortmem__pk_diver_run(struct pk_diver *v, uint64_t h, uint64_t budget,
			 uint64_t deadline)
{
	struct packer *pk = v->sky->pk;
	uint64_t start = pk->iters;

	if (h != v->h) {
		v->h = h;
		v->restart = 0;
		v->in_dive = false;
	}
	while (pk->iters - start < budget) {
		enum pk_dive r;

		if (!v->in_dive) {
			v->begin(v->search, v->restart++, h);
			v->in_dive = true;
		}
		r = v->dive(v->search, budget - (pk->iters - start), deadline);
		if (r == PK_DIVE_PAUSE)
			return PK_PROBE_PAUSED;
		v->in_dive = false;
		if (r == PK_DIVE_FOUND) {
			sky_keep(v);
			return PK_PROBE_FOUND;
		}
		if (r == PK_DIVE_INFEASIBLE)
			return PK_PROBE_INFEASIBLE;
		if (ortmem__pk_budget_spent(pk, 0, 1, deadline))
			break;
	}
	return PK_PROBE_PAUSED;
}
