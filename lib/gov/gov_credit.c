// SPDX-License-Identifier: MIT
/*
 * Per-thread budget credit.  A reserve that finds no credit charges the
 * tier's shared counter for its own bytes plus a batch (1/64 of the tier,
 * at most GOV_CREDIT_BATCH_MAX) and keeps the batch as its thread's credit;
 * the thread's next reserves take from the credit (a CAS on a cache line no
 * other thread writes but a drain), and its releases add to a counter only
 * the thread writes, which a reserve claims into the credit when it runs
 * short; so threads do not contend on the tier.  A thread's released bytes
 * beyond two batches go back to the tier at once, and all of it while the
 * tier is over its limit (lowered under live leases; ortmem_gov_set_limit()
 * drains every credit).
 *
 * A refill only says whether a fast fit was found; it never reclaims.  The
 * caller escalates to ortmem__gov_charge() (gov_reclaim.c), which sits
 * above this file.  The blocks that hold the credit are gov_tctx.c's.
 *
 * Exactness: credit is charged, so the tier's counter never exceeds its
 * limit.  A charge that does not fit (ortmem__gov_charge()) raises the
 * tier's "exact" count, which stops new batches, and drains every thread's
 * credit before it tries again, reclaims or refuses: a refusal means the
 * bytes are leased, not parked in some thread's credit.  A thread marks
 * its credit word REFILLING before it reads "exact" and charges the tier,
 * and a drainer waits for that mark to clear: either the refiller sees the
 * count raised and takes no batch, or the drainer sees the batch.
 */
#include <sched.h>

#include "gov_internal.h"

static void credit_peak(struct ortmem_gov *gov, int tier, uint64_t now,
			uint64_t credit)
{
	if (now > credit)
		ortmem__note_peak(gov, tier, now - credit);
}

/*
 * The thread's credit is short of @size: take its released bytes, else a
 * new batch, else @size alone from the tier.  False: no fast fit, and
 * nothing charged.
 */
bool ortmem__credit_refill(struct ortmem_gov *gov, struct gov_thread *gt,
			   int tier, uint64_t size)
{
	struct gov_tier *t = &gov->tiers[tier];
	uint64_t batch = atomic_load_explicit(&t->batch, memory_order_relaxed);
	uint64_t old, now, got = ortmem__tctx_claim_freed(gt, tier);

	/* What we released first, unless a drain took it meanwhile. */
	if (got) {
		old = atomic_fetch_add(&gt->credit[tier], got) + got;
		while (old >= size)
			if (atomic_compare_exchange_weak(&gt->credit[tier], &old,
							 old - size)) {
				credit_peak(gov, tier, atomic_load_explicit(
						&t->used, memory_order_relaxed),
					    old - size);
				return true;
			}
	}
	if (batch) {
		old = atomic_fetch_or(&gt->credit[tier], GOV_CREDIT_REFILLING);
		if (!atomic_load(&t->exact) &&
		    ortmem__tier_charge(gov, tier, size + batch, &now)) {
			atomic_store_explicit(&gt->credit[tier], old + batch,
					      memory_order_release);
			credit_peak(gov, tier, now, old + batch);
			return true;
		}
		atomic_store_explicit(&gt->credit[tier], old,
				      memory_order_release);
	}
	if (ortmem__tier_charge(gov, tier, size, &now)) {
		credit_peak(gov, tier, now,
			    atomic_load_explicit(&gt->credit[tier],
						 memory_order_relaxed));
		return true;
	}
	return false;
}

/* Give @gt's credit on @tier above @keep back to the tier. */
static void credit_give_back(struct ortmem_gov *gov, struct gov_thread *gt,
			     int tier, uint64_t keep)
{
	uint64_t c, got = ortmem__tctx_claim_freed(gt, tier);

	c = got ? atomic_fetch_add(&gt->credit[tier], got) + got :
		  atomic_load_explicit(&gt->credit[tier], memory_order_relaxed);
	while (c > keep &&
	       !atomic_compare_exchange_weak_explicit(&gt->credit[tier], &c,
				keep, memory_order_relaxed, memory_order_relaxed))
		;
	if (c > keep)
		ortmem__tier_uncharge(gov, tier, c - keep);
}

/*
 * The bytes of a released lease become the releasing thread's credit: a
 * plain store to a counter only this thread writes, claimed by its next
 * reserve that finds its credit short (or by a drain).
 */
void ortmem__credit(struct ortmem_gov *gov, int tier, uint64_t size)
{
	struct gov_thread *gt = ortmem__gov_thread(gov);
	struct gov_tier *t = &gov->tiers[tier];
	uint64_t f, batch;

	if (__builtin_expect(!gt, 0)) {
		ortmem__tier_uncharge(gov, tier, size);
		return;
	}
	f = atomic_load_explicit(&gt->freed[tier], memory_order_relaxed) + size;
	atomic_store_explicit(&gt->freed[tier], f, memory_order_relaxed);
	batch = atomic_load_explicit(&t->batch, memory_order_relaxed);
	/* Over the limit (lowered under live leases) or about to refuse:
	 * no credit may stay, or a reserve would take bytes not there. */
	if (__builtin_expect(atomic_load_explicit(&t->exact,
						  memory_order_relaxed) ||
			     atomic_load_explicit(&t->used, memory_order_relaxed) >
			     atomic_load_explicit(&t->usable, memory_order_relaxed),
			     0))
		credit_give_back(gov, gt, tier, 0);
	else if (__builtin_expect(f - atomic_load_explicit(&gt->taken[tier],
					memory_order_relaxed) > 2 * batch, 0))
		credit_give_back(gov, gt, tier, batch);
}

void ortmem__credit_drain(struct ortmem_gov *gov)
{
	struct gov_thread *gt;

	pthread_mutex_lock(&gov->thr_lock);
	for (gt = gov->threads; gt; gt = gt->gov_next)
		ortmem__tctx_return_credit_locked(gov, gt);
	pthread_mutex_unlock(&gov->thr_lock);
}
