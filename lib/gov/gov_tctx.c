// SPDX-License-Identifier: MIT
/*
 * The per-thread context: one block per thread and governor, found through
 * thread-local pointers, holding the thread's cache of free slots and its
 * budget credit per tier (what the credit means: gov_credit.c).  This file
 * owns the blocks' life: made on a thread's first call, given back (credit
 * to the tiers, cached slots to the free stack) when the thread exits,
 * detached when the governor closes.  It calls only the tier accounting
 * below it.
 */
#include <sched.h>
#include <stdlib.h>

#include "gov_internal.h"

static pthread_mutex_t ortmem__thr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t thr_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t thr_key;

/* The thread's governor blocks, and the one it used last. */
/* initial-exec: the fast path reads these without a __tls_get_addr call. */
#define GOV_TLS __thread __attribute__((tls_model("initial-exec")))
static GOV_TLS struct gov_thread *tl_threads;
static GOV_TLS struct ortmem_gov *tl_gov;
static GOV_TLS uint64_t tl_serial;
static GOV_TLS struct gov_thread *tl_gt;

/* Claim the bytes @gt released and nobody claimed yet. */
uint64_t ortmem__tctx_claim_freed(struct gov_thread *gt, int tier)
{
	uint64_t t = atomic_load(&gt->taken[tier]), f;

	do {
		f = atomic_load_explicit(&gt->freed[tier], memory_order_relaxed);
		if (f == t)
			return 0;
	} while (!atomic_compare_exchange_weak(&gt->taken[tier], &t, f));
	return f - t;
}

/* Take all of @gt's credit back to the tiers; under gov->thr_lock. */
void ortmem__tctx_return_credit_locked(struct ortmem_gov *gov,
				       struct gov_thread *gt)
{
	int tier;

	for (tier = 0; tier < ORTMEM_TIER_COUNT; tier++) {
		uint64_t c = atomic_load(&gt->credit[tier]);

		for (;;) {
			if (c & GOV_CREDIT_REFILLING) {
				/* Its owner is between two stores. */
				sched_yield();
				c = atomic_load(&gt->credit[tier]);
				continue;
			}
			if (atomic_compare_exchange_weak(&gt->credit[tier], &c, 0))
				break;
		}
		ortmem__tier_uncharge(gov, tier, c + ortmem__tctx_claim_freed(gt, tier));
	}
}

/* Give a thread block's cache and credit back; under ortmem__thr_lock. */
static void gov_thread_detach(struct gov_thread *gt)
{
	struct ortmem_gov *gov = gt->gov;
	struct gov_thread **pp;

	pthread_mutex_lock(&gov->thr_lock);
	ortmem__tctx_return_credit_locked(gov, gt);
	for (pp = &gov->threads; *pp; pp = &(*pp)->gov_next)
		if (*pp == gt) {
			*pp = gt->gov_next;
			break;
		}
	pthread_mutex_unlock(&gov->thr_lock);
	pthread_mutex_lock(&gov->slot_lock);
	while (gt->nmag)
		gov->free_idx[gov->nfree++] = gt->mag[--gt->nmag];
	pthread_mutex_unlock(&gov->slot_lock);
	gt->gov = NULL;
}

static void thr_exit(void *arg)
{
	struct gov_thread *gt = arg, *next;

	pthread_mutex_lock(&ortmem__thr_lock);
	for (; gt; gt = next) {
		next = gt->thr_next;
		if (gt->gov)
			gov_thread_detach(gt);
		free(gt);
	}
	pthread_mutex_unlock(&ortmem__thr_lock);
	tl_threads = NULL;
	tl_gov = NULL;
	tl_gt = NULL;
}

static void thr_key_make(void)
{
	pthread_key_create(&thr_key, thr_exit);
}

/* The governor closes: its blocks stay with their threads, detached. */
void ortmem__tctx_fini(struct ortmem_gov *gov)
{
	struct gov_thread *gt;

	pthread_mutex_lock(&ortmem__thr_lock);
	for (gt = gov->threads; gt; gt = gt->gov_next)
		gt->gov = NULL;
	gov->threads = NULL;
	pthread_mutex_unlock(&ortmem__thr_lock);
}

/* Slow lookup: find or make this thread's block for @gov. */
static struct gov_thread *gov_thread_find(struct ortmem_gov *gov)
{
	struct gov_thread *gt, **pp;

	pthread_once(&thr_key_once, thr_key_make);
	pthread_mutex_lock(&ortmem__thr_lock);
	for (pp = &tl_threads; (gt = *pp);) {
		if (!gt->gov) {		/* its governor closed */
			*pp = gt->thr_next;
			free(gt);
			continue;
		}
		if (gt->gov == gov)
			break;
		pp = &gt->thr_next;
	}
	if (!gt) {
		if (posix_memalign((void **)&gt, GOV_CACHELINE, sizeof(*gt)))
			gt = NULL;
		if (gt) {
			memset(gt, 0, sizeof(*gt));
			gt->gov = gov;
			gt->thr_next = tl_threads;
			tl_threads = gt;
			pthread_mutex_lock(&gov->thr_lock);
			gt->gov_next = gov->threads;
			gov->threads = gt;
			pthread_mutex_unlock(&gov->thr_lock);
		}
	}
	pthread_setspecific(thr_key, tl_threads);
	pthread_mutex_unlock(&ortmem__thr_lock);
	if (gt) {
		tl_gov = gov;
		tl_serial = gov->serial;
		tl_gt = gt;
	}
	return gt;
}

struct gov_thread *ortmem__gov_thread(struct ortmem_gov *gov)
{
	if (__builtin_expect(tl_gov == gov && tl_serial == gov->serial, 1))
		return tl_gt;
	return gov_thread_find(gov);
}
