// SPDX-License-Identifier: MIT
/*
 * The governor: opening and closing it, per-tier budgets changeable at run
 * time, and the lock-light reserve/release/pin/unpin fast paths.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "gov_internal.h"

static _Atomic uint64_t gov_serial;

static int gov_check_opts(const struct ortmem_gov_opts *opts)
{
	int ret = ORTMEM_OPTS_VALID(opts, ortmem_gov_opts) ?:
		  ORTMEM_OPTS_WHOLE(opts, ortmem_gov_opts,
			ORTMEM_OPTS_SPAN(ortmem_gov_opts, limit),
			ORTMEM_OPTS_SPAN(ortmem_gov_opts, driver_reserve),
			ORTMEM_OPTS_SPAN(ortmem_gov_opts, max_handles),
			ORTMEM_OPTS_SPAN(ortmem_gov_opts, flags));
	uint64_t dev = ORTMEM_OPTS_GET(opts, limit[0], 0);
	uint64_t rsv = ORTMEM_OPTS_GET(opts, driver_reserve, 0);
	int t;

	if (ret)
		return ret;
	if (ORTMEM_OPTS_GET(opts, flags, 0) & ~ORTMEM_GOV_NO_PUBLISH)
		return ortmem__err_invalid(-1, 0,
			"ortmem_gov_opts.flags %#x has unknown bits; pass 0 or ORTMEM_GOV_NO_PUBLISH",
			ORTMEM_OPTS_GET(opts, flags, 0));
	/* One rule for every budget, here and in ortmem_gov_set_limit(). */
	for (t = 0; ORTMEM_OPTS_HAS(opts, limit) && t < ORTMEM_TIER_COUNT; t++)
		if (opts->limit[t] > GOV_MAX_SIZE)
			return ortmem__err_invalid(t, opts->limit[t],
				"ortmem_gov_opts.limit[%s] is %" PRIu64 " bytes; a limit above 2^62 (%llu) bytes is not supported",
				ortmem_tier_name(t), opts->limit[t], GOV_MAX_SIZE);
	if (ORTMEM_OPTS_GET(opts, max_handles, 0) > GOV_MAX_HANDLES)
		return ortmem__err_invalid(-1, 0,
			"max_handles %u exceeds the most a governor supports (%u)",
			ORTMEM_OPTS_GET(opts, max_handles, 0), GOV_MAX_HANDLES);
	if (rsv > dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, rsv,
			"driver_reserve %" PRIu64 " exceeds the device limit %" PRIu64,
			rsv, dev);
	return 0;
}

static int gov_init_locks(struct ortmem_gov *gov)
{
	int t;

	if (pthread_mutex_init(&gov->lock, NULL))
		return -ENOMEM;
	if (pthread_mutex_init(&gov->thr_lock, NULL))
		goto err_lock;
	if (pthread_mutex_init(&gov->slot_lock, NULL))
		goto err_thr;
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		if (pthread_mutex_init(&gov->tiers[t].hook_lock, NULL))
			goto err_hooks;
	return 0;
err_hooks:
	while (t--)
		pthread_mutex_destroy(&gov->tiers[t].hook_lock);
	pthread_mutex_destroy(&gov->slot_lock);
err_thr:
	pthread_mutex_destroy(&gov->thr_lock);
err_lock:
	pthread_mutex_destroy(&gov->lock);
	return -ENOMEM;
}

static void gov_destroy_locks(struct ortmem_gov *gov)
{
	int t;

	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		pthread_mutex_destroy(&gov->tiers[t].hook_lock);
	pthread_mutex_destroy(&gov->slot_lock);
	pthread_mutex_destroy(&gov->thr_lock);
	pthread_mutex_destroy(&gov->lock);
}

ORTMEM_API int ortmem_gov_open(const struct ortmem_gov_opts *opts,
			       struct ortmem_gov **govp)
{
	struct ortmem_gov *gov;
	uint32_t n;
	int t, ret;

	if (!govp)
		return ortmem__err_invalid(-1, 0, "govp is NULL");
	ret = gov_check_opts(opts);
	if (ret)
		return ret;
	if (posix_memalign((void **)&gov, GOV_CACHELINE, sizeof(*gov)))
		return ortmem__err_plain(-ENOMEM, "cannot allocate a governor");
	memset(gov, 0, sizeof(*gov));
	gov->serial = atomic_fetch_add(&gov_serial, 1) + 1;
	gov->deferred_tail = &gov->deferred;
	atomic_store(&gov->driver_reserve, ORTMEM_OPTS_GET(opts, driver_reserve, 0));
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		atomic_store(&gov->tiers[t].limit,
			     ORTMEM_OPTS_HAS(opts, limit) ? opts->limit[t] : 0);
		ortmem__tier_update_usable(gov, t);
	}
	n = ORTMEM_OPTS_GET(opts, max_handles, 0);
	if (gov_init_locks(gov))
		goto err_free;
	ret = ortmem__tag_take(gov);
	if (ret)
		goto err_tag;
	if (ortmem__binding_init(gov, n ? n : GOV_DEFAULT_HANDLES)) {
		gov->nslots = 0;
		ortmem__tag_give(gov);
		goto err_locks;
	}
	/* Publishing is best effort: a governor without a run folder
	 * works all the same, ortmem-stat just does not see it. */
	if (!(ORTMEM_OPTS_GET(opts, flags, 0) & ORTMEM_GOV_NO_PUBLISH) &&
	    ortmem__publish_open(gov, ORTMEM_OPTS_GET(opts, run_dir, NULL),
				 ORTMEM_OPTS_GET(opts, name, NULL))) {
		ortmem__tag_give(gov);
		ortmem__binding_fini(gov);
		goto err_locks;
	}
	*govp = gov;
	return 0;
err_tag:
	gov_destroy_locks(gov);
	free(gov);
	return ret;
err_locks:
	gov_destroy_locks(gov);
err_free:
	free(gov);
	return ortmem__err_plain(-ENOMEM, "cannot allocate the governor's tables");
}

/* Free what is still live; what cannot be freed safely is logged. */
static void gov_close_slots(struct ortmem_gov *gov)
{
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		uint64_t w = atomic_load(&s->word), freed = 0;
		int tier = atomic_load(&s->tier);

		if (!slot_live_or_demoted(w) ||
		    atomic_load(&s->kind) != SLOT_KIND_ALLOC)
			continue;
		if (ortmem__file_absent(s)) {
			ortmem__file_forget(s);
			continue;
		}
		if (slot_pins(w))
			pr_warn("governor closed with slot %u still pinned (%u pins); freeing it",
				i, slot_pins(w));
		if (ortmem__backend_free(gov, tier, atomic_load(&s->bh),
					 atomic_load(&s->size), &freed))
			pr_err("closing the governor: %s",
			       ortmem_last_error_message());
		if (atomic_load(&s->src))
			ortmem__file_forget(s);
	}
}

ORTMEM_API void ortmem_gov_close(struct ortmem_gov *gov)
{
	int t;

	if (!gov)
		return;
	/* The prefetch worker publishes as it moves: stop it first. */
	ortmem__prefetch_fini(gov);
	ortmem__publish_close(gov);
	/* Fastest tier first, each reporting what it still held. */
	ortmem__mech_drain(gov, NULL, 0);
	pthread_mutex_lock(&gov->lock);
	ortmem__poll_locked(gov);
	ortmem__deferred_fini(gov);
	gov_close_slots(gov);
	pthread_mutex_unlock(&gov->lock);
	/* Spare staging buffers are the backends' (staging_free): before
	 * close, which may end the backend's ctx (the device handle's). */
	ortmem__staging_fini(gov);
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		if (gov->tiers[t].has_backend && gov->tiers[t].ops.close)
			gov->tiers[t].ops.close(gov->tiers[t].ctx);
	ortmem__tctx_fini(gov);
	ortmem__tag_give(gov);
	ortmem__binding_fini(gov);
	gov_destroy_locks(gov);
	free(gov);
}

ORTMEM_API int ortmem_gov_set_limit(struct ortmem_gov *gov, int tier,
				    uint64_t limit)
{
	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return ortmem__err_invalid(-1, limit, "tier %d is not a tier",
					   tier);
	if (limit > GOV_MAX_SIZE)
		return ortmem__err_invalid(tier, limit,
			"a limit of %" PRIu64 " bytes for the %s tier: a limit above 2^62 (%llu) bytes is not supported",
			limit, ortmem_tier_name(tier), GOV_MAX_SIZE);
	pthread_mutex_lock(&gov->lock);
	if (tier == ORTMEM_TIER_DEVICE &&
	    limit < atomic_load(&gov->driver_reserve)) {
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_invalid(tier, limit,
			"the device limit cannot be below the driver reserve (%" PRIu64 " bytes); lower the reserve first",
			atomic_load(&gov->driver_reserve));
	}
	atomic_store(&gov->tiers[tier].limit, limit);
	ortmem__tier_update_usable(gov, tier);
	pthread_mutex_unlock(&gov->lock);
	/* Credit taken under the old limit must not outlive it. */
	ortmem__credit_drain(gov);
	return 0;
}

ORTMEM_API int ortmem_gov_set_driver_reserve(struct ortmem_gov *gov,
					     uint64_t bytes)
{
	uint64_t limit;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	pthread_mutex_lock(&gov->lock);
	limit = atomic_load(&gov->tiers[ORTMEM_TIER_DEVICE].limit);
	if (bytes > limit) {
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, bytes,
			"the driver reserve cannot exceed the device limit (%" PRIu64 " bytes)",
			limit);
	}
	atomic_store(&gov->driver_reserve, bytes);
	ortmem__tier_update_usable(gov, ORTMEM_TIER_DEVICE);
	pthread_mutex_unlock(&gov->lock);
	ortmem__credit_drain(gov);
	return 0;
}

/* ortmem_role_name()'s rule, without a call through the PLT. */
static inline bool gov_role_valid(uint32_t role)
{
	uint32_t kind = role & ORTMEM_ROLE_KIND_MASK;

	if (kind > ORTMEM_ROLE_ACTIVATION)
		return false;
	return role == kind || (role == (kind | ORTMEM_ROLE_STEP_SCOPED) &&
				kind == ORTMEM_ROLE_WORKSPACE);
}

static inline int gov_check_args(struct ortmem_gov *gov, int tier,
				 uint32_t role, uint64_t size,
				 struct ortmem_handle *hp)
{
	if (__builtin_expect(gov && hp && gov_role_valid(role) && size &&
			     size <= GOV_MAX_SIZE && tier >= 0 &&
			     tier < ORTMEM_TIER_COUNT, 1))
		return 0;
	if (!gov || !hp)
		return ortmem__err_invalid(-1, size, "%s is NULL",
					   gov ? "hp" : "gov");
	if (!gov_role_valid(role))
		return ortmem__err_invalid(tier, size,
			"role %#x is not a role (a kind, plus ORTMEM_ROLE_STEP_SCOPED on a workspace)",
			role);
	return ortmem__check_tier(tier, size);
}

/* Publish slot @idx as a live binding and return its handle. */
static void gov_slot_publish(struct ortmem_gov *gov, uint32_t idx, int tier,
			     uint32_t role, uint64_t size, uint8_t kind,
			     uint32_t flags, uint64_t bh,
			     struct ortmem_handle *hp)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(atomic_load_explicit(&s->word,
						     memory_order_relaxed));

	atomic_store_explicit(&s->size, size, memory_order_relaxed);
	atomic_store_explicit(&s->role, role, memory_order_relaxed);
	atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
	atomic_store_explicit(&s->home, (uint8_t)tier, memory_order_relaxed);
	atomic_store_explicit(&s->tier, (uint8_t)tier, memory_order_relaxed);
	atomic_store_explicit(&s->in_place, 0, memory_order_relaxed);
	atomic_store_explicit(&s->movable, !!(flags & ORTMEM_ALLOC_MOVABLE),
			      memory_order_relaxed);
	atomic_store_explicit(&s->bh, bh, memory_order_relaxed);
	atomic_store_explicit(&s->word, slot_word(gen, 0, SLOT_LIVE),
			      memory_order_release);
	hp->id = handle_make(gen, gov->tag, idx);
}

ORTMEM_API int ortmem_gov_reserve(struct ortmem_gov *gov, int tier,
				  uint32_t role, uint64_t size,
				  struct ortmem_handle *hp)
{
	struct gov_thread *gt;
	uint32_t idx;
	int ret;

	ret = gov_check_args(gov, tier, role, size, hp);
	if (__builtin_expect(ret, 0))
		return ret;
	if (__builtin_expect(atomic_load_explicit(&gov->reg.mech[tier],
			memory_order_relaxed) >= ORTMEM_MECH_DRAINING, 0))
		return ortmem__mech_check(gov, tier, size);
	gt = ortmem__gov_thread(gov);
	ret = ortmem__slot_get(gov, gt, &idx);
	if (__builtin_expect(ret, 0))
		return ret;
	if (__builtin_expect(!ortmem__credit_take(gov, gt, tier, size), 0)) {
		/* No fast fit: the full charge drains, polls and reclaims. */
		ret = ortmem__gov_charge(gov, tier, role, size);
		if (ret) {
			ortmem__slot_put(gov, idx, 0);
			return ret;
		}
	}
	gov_slot_publish(gov, idx, tier, role, size, SLOT_KIND_LEASE, 0, 0, hp);
	return 0;
}

ORTMEM_API int ortmem_gov_alloc(struct ortmem_gov *gov, int tier,
				uint32_t role, uint64_t size, uint32_t flags,
				struct ortmem_handle *hp)
{
	struct gov_tier *t;
	uint64_t bh = 0;
	uint32_t idx;
	bool locked;
	int ret;

	ret = gov_check_args(gov, tier, role, size, hp);
	if (ret)
		return ret;
	if (flags & ~ORTMEM_ALLOC_MOVABLE)
		return ortmem__err_invalid(tier, size,
			"allocation flags %#x have unknown bits", flags);
	ret = ortmem__mech_check(gov, tier, size);
	if (ret)
		return ret;
	t = &gov->tiers[tier];
	if (!t->has_backend || !t->ops.alloc)
		return ortmem__err_invalid(tier, size,
			"the %s tier has no backend that can allocate; set one with ortmem_gov_set_backend()",
			ortmem_tier_name(tier));
	ret = ortmem__slot_get(gov, ortmem__gov_thread(gov), &idx);
	if (ret)
		return ret;
	ret = ortmem__gov_charge(gov, tier, role, size);
	if (ret)
		goto err_slot;
	/* The slot is not published yet: only the backend's own lock. */
	ortmem_error_clear();
	locked = ortmem__hook_lock(t);
	ret = t->ops.alloc(t->ctx, size, &bh);
	ortmem__hook_unlock(t, locked);
	if (ret)
		ret = ortmem__backend_hook_failed(t, tier, ret, size, "alloc");
	if (ret)
		goto err_charge;
	gov_slot_publish(gov, idx, tier, role, size, SLOT_KIND_ALLOC, flags, bh,
			 hp);
	return 0;
err_charge:
	ortmem__tier_uncharge(gov, tier, size);
err_slot:
	ortmem__slot_put(gov, idx, 0);
	return ret;
}
