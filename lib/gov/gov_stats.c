// SPDX-License-Identifier: MIT
/*
 * Statistics, in the spirit of PyTorch's memory_stats: per-tier counters
 * kept as atomics, plus lease counts, bytes by role and pins summed from
 * the handle table at the time of the call.
 */
#include <errno.h>
#include <stdio.h>

#include "gov_internal.h"

static void stats_tiers(struct ortmem_gov *gov, struct ortmem_gov_stats *st)
{
	int t;

	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		struct gov_tier *gt = &gov->tiers[t];
		struct ortmem_tier_stats *ts = &st->tier[t];

		ts->used = atomic_load(&gt->used);
		ts->limit = atomic_load(&gt->limit);
		ts->usable = atomic_load(&gt->usable);
		ts->peak = atomic_load(&gt->peak);
		ts->driver_reserve = t == ORTMEM_TIER_DEVICE ?
				     atomic_load(&gov->driver_reserve) : 0;
		ts->demoted_bytes = atomic_load(&gt->demoted);
		ts->promoted_bytes = atomic_load(&gt->promoted);
		ts->reclaim_calls = atomic_load(&gt->reclaim_calls);
		ts->refusals = atomic_load(&gt->refusals);
		ts->quarantined_bytes = atomic_load(&gt->quarantined);
		ts->deferred = atomic_load(&gt->deferred);
		ts->caps = ortmem__backend_caps(gt);
		snprintf(ts->backend, sizeof(ts->backend), "%s", gt->name);
	}
}

static void stats_slots(struct ortmem_gov *gov, struct ortmem_gov_stats *st)
{
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
		struct ortmem_tier_stats *ts;
		unsigned int st_ = slot_state(w);

		if (st_ == SLOT_FREE || st_ == SLOT_RETIRED)
			continue;
		st->handles_live++;
		if (st_ == SLOT_QUARANTINED)
			continue;
		ts = &st->tier[atomic_load_explicit(&s->tier,
						    memory_order_relaxed)];
		ts->leases++;
		ts->role_bytes[atomic_load_explicit(&s->role,
						    memory_order_relaxed) &
			       3] += atomic_load_explicit(&s->size,
							  memory_order_relaxed);
		st->pins += slot_pins(w);
	}
}

ORTMEM_API int ortmem_gov_stats(struct ortmem_gov *gov,
				struct ortmem_gov_stats *st)
{
	struct ortmem_gov_stats out;
	struct gov_quarantine *q;
	size_t sz;

	if (!gov || !st)
		return ortmem__err_invalid(-1, 0, "%s is NULL",
					   gov ? "st" : "gov");
	sz = st->sz;
	if (sz < sizeof(size_t))
		return ortmem__err_invalid(-1, 0,
			"struct ortmem_gov_stats has sz %zu; set sz = sizeof(struct ortmem_gov_stats)",
			sz);
	memset(&out, 0, sizeof(out));
	ortmem__credit_drain(gov);
	stats_tiers(gov, &out);
	stats_slots(gov, &out);
	out.handles_max = gov->nslots;
	out.handles_retired = atomic_load(&gov->retired);
	ortmem__prefetch_stats(gov, &out.prefetch);
	pthread_mutex_lock(&gov->lock);
	for (q = gov->quarantine; q; q = q->next)
		out.quarantined++;
	pthread_mutex_unlock(&gov->lock);
	ortmem__publish(gov);
	out.sz = sz < sizeof(out) ? sz : sizeof(out);
	memcpy(st, &out, out.sz);
	st->sz = sz;
	return 0;
}
