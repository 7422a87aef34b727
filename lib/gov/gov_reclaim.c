// SPDX-License-Identifier: MIT
/*
 * Making room: the full charge (ortmem__gov_charge(), where a charge that
 * found no fast fit escalates), reclaim callbacks, demotion of victims to a
 * lower tier (gov_move.c) and promotion back on pin.
 *
 * When a charge does not fit, the governor, in this order: (1) returns the
 * credit of every thread and completes the deferred releases whose
 * condition is met; (2) calls the tier's reclaim callbacks, lowest priority
 * number first, ties in registration order, each asked for what is still
 * missing, stopping as soon as the charge fits; (3) demotes unpinned movable
 * allocations of the tier, least recently pinned first, to the first lower
 * tier with a capable backend and room; (4) refuses: tier-exhausted when
 * there was nothing to try, capacity-unavailable otherwise, with the last
 * refusal met on the way (a callback's, a demotion's) as its cause.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gov_internal.h"

__thread bool ortmem__reclaim_spare_ready;

#define RECLAIM_MAX 64
/* Victims lost to a concurrent pin or release before a demotion gives up. */
#define RECLAIM_RACES 64

struct reclaim_run {
	struct ortmem_error cause;	/* the last refusal met, head only */
	bool has_cause;
	bool attempted;
	unsigned int calls;
	uint64_t demoted;
};

static void run_save_cause(struct reclaim_run *run)
{
	const struct ortmem_error *e = ortmem_last_error();

	if (!e)
		return;
	run->cause = *e;
	if (e->cause) {
		/* Keep the whole chain as text in the saved head's reason,
		 * cut at a word and marked if it does not fit. */
		char full[4 * ORTMEM_ERROR_REASON_MAX];

		ortmem_error_format(e, full, sizeof(full));
		ortmem__text_fit(run->cause.reason, sizeof(run->cause.reason),
				 full);
		run->cause.kind = ORTMEM_ERR_NONE;
	}
	run->cause.cause = NULL;
	run->has_cause = true;
}

/* Push the saved refusal again as the head of a fresh chain. */
static void run_restore_cause(const struct reclaim_run *run)
{
	const struct ortmem_error *e = &run->cause;

	switch (e->kind) {
	case ORTMEM_ERR_TIER_EXHAUSTED:
		ortmem__err_tier_exhausted(e->tier, e->role, e->requested,
					   e->used, e->limit);
		break;
	case ORTMEM_ERR_INVALID_REQUEST:
		ortmem__err_invalid(e->tier, e->requested, "%s", e->reason);
		break;
	case ORTMEM_ERR_ALLOCATION_FAILED:
		ortmem__err_alloc_failed(e->code, e->tier, e->requested, "%s",
					 e->reason);
		break;
	case ORTMEM_ERR_CAPACITY_UNAVAILABLE:
		ortmem__err_capacity(false, e->tier, e->role, e->requested,
				     e->available, "%s", e->reason);
		break;
	default:
		ortmem__err_plain(e->code, "%s", e->reason);
		break;
	}
}

static bool reclaim_fits(struct ortmem_gov *gov, int tier, uint64_t size)
{
	ortmem__credit_drain(gov);
	return ortmem__tier_try_charge(gov, tier, size);
}

static uint64_t tier_missing(struct ortmem_gov *gov, int tier, uint64_t size)
{
	uint64_t used = atomic_load(&gov->tiers[tier].used);
	uint64_t usable = atomic_load(&gov->tiers[tier].usable);
	uint64_t avail = usable > used ? usable - used : 0;

	return size > avail ? size - avail : 0;
}

static int reclaim_callbacks(struct ortmem_gov *gov, int tier, uint64_t size,
			     struct reclaim_run *run)
{
	struct gov_reclaim snap[RECLAIM_MAX], *r;
	int n = 0, i, ret;

	pthread_mutex_lock(&gov->lock);
	for (r = gov->reclaims; r && n < RECLAIM_MAX; r = r->next)
		if (r->tier == tier)
			snap[n++] = *r;
	pthread_mutex_unlock(&gov->lock);
	for (i = 0; i < n; i++) {
		run->attempted = true;
		run->calls++;
		atomic_fetch_add(&gov->tiers[tier].reclaim_calls, 1);
		ortmem_error_clear();
		ret = snap[i].fn(gov, tier, tier_missing(gov, tier, size),
				 snap[i].arg);
		if (ret < 0) {
			if (!ortmem_last_error())
				ortmem__err_plain(ret,
					"reclaim callback '%s' of the %s tier refused with %d",
					snap[i].name, ortmem_tier_name(tier), ret);
			run_save_cause(run);
		}
		if (reclaim_fits(gov, tier, size))
			return 0;
	}
	return -ENOSPC;
}

/* The least recently pinned unpinned movable allocation on @tier. */
static int pick_victim(struct ortmem_gov *gov, int tier, uint32_t *idxp,
		       uint32_t *genp)
{
	uint64_t best = UINT64_MAX;
	uint32_t i;
	int found = 0;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
		uint64_t use;

		if (!slot_live_or_demoted(w) ||
		    slot_pins(w) || (w & SLOT_PENDING) ||
		    atomic_load_explicit(&s->kind, memory_order_relaxed) !=
			    SLOT_KIND_ALLOC ||
		    !atomic_load_explicit(&s->movable, memory_order_relaxed) ||
		    atomic_load_explicit(&s->in_place, memory_order_relaxed) ||
		    atomic_load_explicit(&s->tier, memory_order_relaxed) != tier ||
		    ortmem__file_absent(s) ||
		    (ortmem__reclaim_spare_ready &&
		     atomic_load_explicit(&s->pf, memory_order_relaxed) == PF_READY))
			continue;
		use = atomic_load_explicit(&s->last_use, memory_order_relaxed);
		if (!found || use < best) {
			best = use;
			*idxp = i;
			*genp = slot_gen(w);
			found = 1;
		}
	}
	return found;
}

static int reclaim_demote(struct ortmem_gov *gov, int tier, uint64_t size,
			  struct reclaim_run *run)
{
	unsigned int races = 0;
	uint32_t idx, gen;
	uint64_t victim_size;
	int ret;

	for (;;) {
		pthread_mutex_lock(&gov->lock);
		if (!pick_victim(gov, tier, &idx, &gen)) {
			pthread_mutex_unlock(&gov->lock);
			return -ENOSPC;
		}
		victim_size = atomic_load(&gov->slots[idx].size);
		pthread_mutex_unlock(&gov->lock);
		run->attempted = true;
		/* Another thread may take the victim before the demotion
		 * claims it: the demotion checks @gen and refuses then. */
		ret = ortmem__demote(gov, idx, gen);
		if (!ret)
			run->demoted += victim_size;
		/* Pinned or released since we picked it: pick again. */
		if ((ret == -EBUSY || ret == -ORTMEM_E_STALE_HANDLE) &&
		    ++races < RECLAIM_RACES)
			continue;
		if (ret) {
			run_save_cause(run);
			return ret;
		}
		if (reclaim_fits(gov, tier, size))
			return 0;
	}
}

/*
 * The reclaims this thread is inside of, innermost first.  A callback (or a
 * demotion's backend) that charges the tier being reclaimed, and needs
 * reclaim for it, would reclaim that tier again from within itself, without
 * bound: that charge is refused instead.
 */
struct reclaim_frame {
	const struct ortmem_gov *gov;
	int tier;
	struct reclaim_frame *up;
};
static __thread struct reclaim_frame *tl_reclaiming;

static const struct reclaim_frame *reclaim_frame_find(
	const struct ortmem_gov *gov, int tier)
{
	const struct reclaim_frame *f;

	for (f = tl_reclaiming; f; f = f->up)
		if (f->gov == gov && f->tier == tier)
			return f;
	return NULL;
}

static int reclaim_steps(struct ortmem_gov *gov, int tier, uint64_t size,
			 struct reclaim_run *run)
{
	struct reclaim_frame frame = { gov, tier, tl_reclaiming };
	int ret;

	tl_reclaiming = &frame;
	ret = reclaim_callbacks(gov, tier, size, run);
	if (ret)
		ret = reclaim_demote(gov, tier, size, run);
	tl_reclaiming = frame.up;
	return ret;
}

static int reclaim_for_charge(struct ortmem_gov *gov, int tier,
			      uint32_t role, uint64_t size)
{
	struct gov_tier *t = &gov->tiers[tier];
	struct reclaim_run run = { .has_cause = false };
	uint64_t used, usable;

	if (reclaim_frame_find(gov, tier)) {
		atomic_fetch_add(&t->refusals, 1);
		return ortmem__err_plain(-EDEADLK,
			"cannot charge %" PRIu64 " bytes to the %s tier from within its own reclaim (a reclaim callback, or a backend it called, reserves on the tier it is asked to free): it does not fit, and reclaim does not re-enter itself; release or demote in the callback, or reserve on another tier",
			size, ortmem_tier_name(tier));
	}
	if (size <= atomic_load(&t->usable) &&
	    !reclaim_steps(gov, tier, size, &run))
		return 0;
	atomic_fetch_add(&t->refusals, 1);
	used = atomic_load(&t->used);
	usable = atomic_load(&t->usable);
	if (!run.attempted)
		return ortmem__err_tier_exhausted(tier, role, size, used, usable);
	if (run.has_cause)
		run_restore_cause(&run);
	return ortmem__err_capacity(run.has_cause, tier, role, size,
		usable > used ? usable - used : 0,
		"reclaim called %u callbacks and demoted %" PRIu64 " bytes, but %" PRIu64 " of the %s tier's %" PRIu64 " usable bytes are still leased",
		run.calls, run.demoted, used, ortmem_tier_name(tier), usable);
}

/*
 * Charge @size to @tier, reclaiming when it does not fit.  While a charge is
 * here no thread takes a batch of credit from the tier, and the credit
 * already taken is drained, so a refusal means the bytes are leased.
 */
int ortmem__gov_charge(struct ortmem_gov *gov, int tier, uint32_t role,
		       uint64_t size)
{
	struct gov_tier *t = &gov->tiers[tier];
	int ret = 0;

	if (ortmem__tier_try_charge(gov, tier, size))
		return 0;
	atomic_fetch_add(&t->exact, 1);
	ortmem__credit_drain(gov);
	if (ortmem__tier_try_charge(gov, tier, size))
		goto out;
	pthread_mutex_lock(&gov->lock);
	ortmem__poll_locked(gov);
	pthread_mutex_unlock(&gov->lock);
	if (ortmem__tier_try_charge(gov, tier, size))
		goto out;
	ret = reclaim_for_charge(gov, tier, role, size);
out:
	atomic_fetch_sub(&t->exact, 1);
	return ret;
}


/*
 * Promote slot @idx, seen in state DEMOTED with no pins at @w, to its home
 * tier and leave it pinned once.  -EAGAIN when @w changed under us.
 */
int ortmem__promote(struct ortmem_gov *gov, uint32_t idx, uint64_t w)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(w);
	int home, ret;

	if (!atomic_compare_exchange_strong(&s->word, &w,
					    slot_word(gen, 0, SLOT_MOVING)))
		return -EAGAIN;
	home = atomic_load(&s->home);
	ret = ortmem__gov_charge(gov, home, atomic_load(&s->role),
				 atomic_load(&s->size));
	if (ret)
		goto err_restore;
	ret = ortmem__move_in(gov, idx, home);
	if (ret) {
		ortmem__tier_uncharge(gov, home, atomic_load(&s->size));
		goto err_restore;
	}
	atomic_store_explicit(&s->word, slot_word(gen, 1, SLOT_LIVE),
			      memory_order_release);
	return 0;
err_restore:
	atomic_store(&s->word, slot_word(gen, 0, SLOT_DEMOTED));
	return ret;
}

ORTMEM_API int ortmem_gov_reclaim(struct ortmem_gov *gov, int tier,
				  uint32_t role, uint64_t bytes)
{
	int ret;

	if (!gov)
		return ortmem__err_invalid(-1, bytes, "gov is NULL");
	if (!ortmem_role_name(role))
		return ortmem__err_invalid(tier, bytes, "role %#x is not a role",
					   role);
	ret = ortmem__check_tier(tier, bytes);
	if (ret)
		return ret;
	ret = ortmem__gov_charge(gov, tier, role, bytes);
	if (ret)
		return ret;
	ortmem__tier_uncharge(gov, tier, bytes);
	return 0;
}

ORTMEM_API int ortmem_gov_add_reclaim(struct ortmem_gov *gov, int tier,
				      int priority, const char *name,
				      ortmem_reclaim_fn fn, void *arg)
{
	struct gov_reclaim *r, **pp;
	int n = 0;

	if (!gov || !fn)
		return ortmem__err_invalid(-1, 0, "%s is NULL",
					   gov ? "fn" : "gov");
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return ortmem__err_invalid(-1, 0, "tier %d is not a tier", tier);
	r = calloc(1, sizeof(*r));
	if (!r)
		return ortmem__err_plain(-ENOMEM, "cannot allocate a reclaim entry");
	r->tier = tier;
	r->priority = priority;
	r->fn = fn;
	r->arg = arg;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "unnamed");
	pthread_mutex_lock(&gov->lock);
	for (pp = &gov->reclaims; *pp; pp = &(*pp)->next)
		n++;
	if (n >= RECLAIM_MAX) {
		pthread_mutex_unlock(&gov->lock);
		free(r);
		return ortmem__err_plain(-ENOSPC,
			"a governor takes at most %d reclaim callbacks", RECLAIM_MAX);
	}
	r->id = ++gov->next_reclaim_id;
	for (pp = &gov->reclaims; *pp && (*pp)->priority <= priority;
	     pp = &(*pp)->next)
		;
	r->next = *pp;
	*pp = r;
	pthread_mutex_unlock(&gov->lock);
	return r->id;
}

ORTMEM_API int ortmem_gov_remove_reclaim(struct ortmem_gov *gov, int id)
{
	struct gov_reclaim *r, **pp;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	pthread_mutex_lock(&gov->lock);
	for (pp = &gov->reclaims; (r = *pp); pp = &r->next)
		if (r->id == id) {
			*pp = r->next;
			pthread_mutex_unlock(&gov->lock);
			free(r);
			return 0;
		}
	pthread_mutex_unlock(&gov->lock);
	return ortmem__err_plain(-ENOENT,
		"no reclaim callback has id %d; pass what ortmem_gov_add_reclaim() returned",
		id);
}
