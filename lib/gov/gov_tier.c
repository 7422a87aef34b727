// SPDX-License-Identifier: MIT
/*
 * Tier accounting, the governor's lowest floor: the bytes charged to each
 * tier against its usable limit, the peak, and the checks of a tier and a
 * size.  Lock-free (one CAS on the tier's counter); it calls nothing else
 * of the governor, so every file above may charge and uncharge.  What to do
 * when a charge does not fit is decided above (gov_reclaim.c).
 */
#include "gov_internal.h"

void ortmem__tier_update_usable(struct ortmem_gov *gov, int tier)
{
	struct gov_tier *t = &gov->tiers[tier];
	uint64_t limit = atomic_load(&t->limit);
	uint64_t rsv = tier == ORTMEM_TIER_DEVICE ?
		       atomic_load(&gov->driver_reserve) : 0;
	uint64_t usable = limit > rsv ? limit - rsv : 0;

	atomic_store(&t->usable, usable);
	/* A thread's credit is at most 1/64 of the tier: small tiers (and
	 * tests of exact figures) charge every byte straight away. */
	atomic_store(&t->batch, usable / 64 < GOV_CREDIT_BATCH_MAX ?
				usable / 64 : GOV_CREDIT_BATCH_MAX);
}

int ortmem__check_tier(int tier, uint64_t size)
{
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return ortmem__err_invalid(-1, size,
			"tier %d is not a tier (0 device, 1 host, 2 disk)", tier);
	if (!size)
		return ortmem__err_invalid(tier, size,
			"a reservation of 0 bytes is not allowed");
	if (size > GOV_MAX_SIZE)
		return ortmem__err_invalid(tier, size,
			"the size exceeds the governor's maximum of %llu bytes",
			GOV_MAX_SIZE);
	return 0;
}

static inline bool tier_charge(struct gov_tier *t, uint64_t size,
			       uint64_t *nowp)
{
	uint64_t u = atomic_load_explicit(&t->used, memory_order_relaxed);
	uint64_t lim = atomic_load_explicit(&t->usable, memory_order_relaxed);

	do {
		if (size > lim || u > lim - size)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&t->used, &u, u + size,
							memory_order_relaxed,
							memory_order_relaxed));
	*nowp = u + size;
	return true;
}

void ortmem__note_peak(struct ortmem_gov *gov, int tier, uint64_t now)
{
	struct gov_tier *t = &gov->tiers[tier];
	uint64_t p = atomic_load_explicit(&t->peak, memory_order_relaxed);

	while (now > p) {
		if (atomic_compare_exchange_weak_explicit(&t->peak, &p, now,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			ortmem__publish(gov);
			return;
		}
	}
}

bool ortmem__tier_charge(struct ortmem_gov *gov, int tier, uint64_t size,
			 uint64_t *nowp)
{
	if (!tier_charge(&gov->tiers[tier], size, nowp))
		return false;
	ortmem__publish(gov);
	return true;
}

bool ortmem__tier_try_charge(struct ortmem_gov *gov, int tier, uint64_t size)
{
	uint64_t now;

	if (!tier_charge(&gov->tiers[tier], size, &now))
		return false;
	ortmem__publish(gov);
	ortmem__note_peak(gov, tier, now);
	return true;
}

void ortmem__tier_uncharge(struct ortmem_gov *gov, int tier, uint64_t size)
{
	if (!size)
		return;
	atomic_fetch_sub_explicit(&gov->tiers[tier].used, size,
				  memory_order_relaxed);
	ortmem__publish(gov);
}
