// SPDX-License-Identifier: MIT
/*
 * Operations on one binding: release (now, deferred on pins, or after a
 * condition), pin (promoting a demoted allocation first), unpin, query and
 * explicit demotion.  Pins and releases race only through the slot word's
 * compare-and-swap, so a pinned binding can never be released.
 */
#include <errno.h>
#include <inttypes.h>

#include "gov_internal.h"

/* Pinned: busy (a handle another thread moves is ortmem__slot_refuse()'s). */
static int gov_refuse_busy(struct ortmem_handle h, uint64_t w, const char *what)
{
	return ortmem__err_plain(-EBUSY,
		"cannot %s handle %#" PRIx64 ": it holds %u pins; unpin it first%s",
		what, h.id, slot_pins(w),
		strcmp(what, "release") ? "" :
		", or pass ORTMEM_RELEASE_DEFER to release it at the last unpin");
}

/*
 * Does @w still belong to @h?  Every loop below re-reads the slot word when
 * its compare-and-swap fails, and by then the binding may have been
 * released and the slot reused by another reserve: a word of another
 * generation is never ours to pin, unpin or release.
 */
static inline bool slot_is_ours(uint64_t w, struct ortmem_handle h)
{
	return slot_gen(w) == handle_gen(h.id);
}

static inline bool slot_is_live(uint64_t w)
{
	return slot_live_or_demoted(w) && !(w & SLOT_PENDING);
}

/* Release slot @idx, whose word we hold at @w (pins 0, no one else can
 * change it but pinners, whose CAS then fails). */
static int release_word(struct ortmem_gov *gov, uint32_t idx, uint64_t w,
			uint64_t id)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(w);
	int ret;

	if (atomic_load_explicit(&s->kind, memory_order_relaxed) ==
	    SLOT_KIND_LEASE) {
		uint64_t size = atomic_load_explicit(&s->size,
						     memory_order_relaxed);
		int tier = atomic_load_explicit(&s->tier, memory_order_relaxed);
		uint64_t next = gen == SLOT_GEN_MAX ?
				slot_word(gen, 0, SLOT_RETIRED) :
				slot_word(gen + 1, 0, SLOT_FREE);

		if (!atomic_compare_exchange_strong_explicit(&s->word, &w, next,
				memory_order_acq_rel, memory_order_relaxed))
			return -EAGAIN;
		ortmem__credit(gov, tier, size);
		ortmem__slot_put(gov, idx, gen);
		return 0;
	}
	if (!atomic_compare_exchange_strong_explicit(&s->word, &w,
			slot_word(gen, 0, SLOT_MOVING),
			memory_order_acq_rel, memory_order_relaxed))
		return -EAGAIN;
	pthread_mutex_lock(&gov->lock);
	ret = ortmem__backend_release_locked(gov, idx, id);
	pthread_mutex_unlock(&gov->lock);
	return ret;
}

int ortmem__release_at(struct ortmem_gov *gov, struct ortmem_handle h,
		       uint32_t idx, uint64_t w, uint32_t flags)
{
	struct gov_slot *s = &gov->slots[idx];
	int ret;

	for (;;) {
		if (!slot_is_ours(w, h))
			return ortmem__slot_refuse(gov, h, w, "release");
		if (!slot_is_live(w))
			return ortmem__slot_refuse(gov, h, w, "release");
		if (slot_pins(w)) {
			if (!(flags & ORTMEM_RELEASE_DEFER))
				return gov_refuse_busy(h, w, "release");
			if (atomic_compare_exchange_weak_explicit(&s->word, &w,
					w | SLOT_PENDING, memory_order_acq_rel,
					memory_order_acquire))
				return 1;
			continue;
		}
		ret = release_word(gov, idx, w, h.id);
		if (ret != -EAGAIN)
			return ret;
		w = atomic_load_explicit(&s->word, memory_order_acquire);
	}
}

/*
 * The first step of the calls on a handle: refuse a NULL @gov, or @bad
 * (what else is wrong with the arguments, NULL when nothing), then look
 * @h up.
 */
static int gov_enter(struct ortmem_gov *gov, const char *bad,
		     struct ortmem_handle h, uint32_t *idx, uint64_t *w)
{
	if (__builtin_expect(!gov || bad, 0))
		return ortmem__err_invalid(-1, 0, "%s", gov ? bad : "gov is NULL");
	return ortmem__slot_lookup(gov, h, idx, w);
}

int ortmem__gov_enter(struct ortmem_gov *gov, const char *bad,
		      struct ortmem_handle h, uint32_t *idx, uint64_t *w)
{
	return gov_enter(gov, bad, h, idx, w);
}

/* A binding an authority claimed is released only through it. */
static inline int gov_check_auth(struct ortmem_gov *gov, struct ortmem_handle h,
				 uint32_t idx)
{
	uint32_t auth = atomic_load_explicit(&gov->slots[idx].auth,
					     memory_order_relaxed);

	return __builtin_expect(auth, 0) ? ortmem__auth_refuse(gov, h, auth) : 0;
}

ORTMEM_API int ortmem_gov_release(struct ortmem_gov *gov,
				  struct ortmem_handle h, uint32_t flags)
{
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, (flags & ~ORTMEM_RELEASE_DEFER) ?
			"release flags have unknown bits" : NULL, h, &idx, &w);
	if (__builtin_expect(ret, 0))
		return ret;
	ret = gov_check_auth(gov, h, idx);
	if (__builtin_expect(ret, 0))
		return ret;
	return ortmem__release_at(gov, h, idx, w, flags);
}

ORTMEM_API int ortmem_gov_release_after(struct ortmem_gov *gov,
					struct ortmem_handle h,
					int (*ready)(void *arg), void *arg)
{
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, ready ? NULL : "ready is NULL", h, &idx, &w);
	if (!ret)
		ret = gov_check_auth(gov, h, idx);
	if (ret)
		return ret;
	do {
		if (!slot_is_ours(w, h))
			return ortmem__slot_refuse(gov, h, w, "release");
		if (!slot_is_live(w))
			return ortmem__slot_refuse(gov, h, w, "release");
		if (slot_pins(w))
			return gov_refuse_busy(h, w, "release");
	} while (!atomic_compare_exchange_weak(&gov->slots[idx].word, &w,
			slot_word(slot_gen(w), 0, SLOT_MOVING)));
	pthread_mutex_lock(&gov->lock);
	ret = ortmem__deferred_queue(gov, idx, h.id, ready, arg);
	pthread_mutex_unlock(&gov->lock);
	return ret;
}

static void *gov_slot_ptr(struct ortmem_gov *gov, struct gov_slot *s)
{
	struct gov_tier *t;

	if (atomic_load_explicit(&s->kind, memory_order_relaxed) !=
	    SLOT_KIND_ALLOC || ortmem__file_absent(s))
		return NULL;	/* a lease, or bytes only in their file */
	t = &gov->tiers[atomic_load_explicit(&s->tier, memory_order_relaxed)];
	/* A CPU address with HOST_POINTER; a device tier's is a GPU one. */
	if (!t->has_backend || !t->ops.ptr)
		return NULL;
	return t->ops.ptr(t->ctx, atomic_load_explicit(&s->bh,
						       memory_order_relaxed));
}

int ortmem__pin_at(struct ortmem_gov *gov, struct ortmem_handle h,
		   uint32_t idx, uint64_t w, uint32_t flags, void **ptrp)
{
	struct gov_slot *s = &gov->slots[idx];
	bool waited = false, promoted = false;
	int ret;

	for (;;) {
		if (!slot_is_ours(w, h))
			return ortmem__slot_refuse(gov, h, w, "pin");
		if (!slot_is_live(w)) {
			if (slot_state(w) == SLOT_MOVING &&
			    ortmem__prefetch_wait(gov, idx, w)) {
				/* A prefetch had it in flight: now it is done. */
				waited = true;
				w = atomic_load_explicit(&s->word,
							 memory_order_acquire);
				continue;
			}
			return ortmem__slot_refuse(gov, h, w, "pin");
		}
		if (slot_pins(w) == SLOT_PINS_MAX)
			return ortmem__err_plain(-EOVERFLOW,
				"cannot pin handle %#" PRIx64 ": it already holds the most pins (%u)",
				h.id, SLOT_PINS_MAX);
		if (slot_state(w) == SLOT_DEMOTED &&
		    (flags & ORTMEM_PIN_NO_PROMOTE) &&
		    atomic_load(&s->in_place) &&
		    !(ortmem__backend_caps(&gov->tiers[atomic_load(&s->tier)]) &
		      ORTMEM_BACKEND_CAP_FAULT_BACK))
			return ortmem__err_plain(-EBUSY,
				"cannot pin handle %#" PRIx64 " without promoting it: it is demoted in place by a backend whose memory is released until promotion (pin without ORTMEM_PIN_NO_PROMOTE)",
				h.id);
		if (slot_state(w) == SLOT_DEMOTED &&
		    !(flags & ORTMEM_PIN_NO_PROMOTE)) {
			if (slot_pins(w))
				return gov_refuse_busy(h, w, "promote");
			ret = ortmem__prefetch_failed(gov, idx, slot_gen(w));
			if (ret)
				return ret;
			ret = ortmem__promote(gov, idx, w);
			if (ret != -EAGAIN) {
				if (ret)
					return ret;
				promoted = true;
				break;
			}
			w = atomic_load_explicit(&s->word, memory_order_acquire);
			continue;
		}
		if (atomic_compare_exchange_weak_explicit(&s->word, &w,
				w + (1ull << SLOT_PINS_SHIFT),
				memory_order_acq_rel, memory_order_acquire))
			break;
	}
	atomic_store_explicit(&s->last_use,
			      atomic_fetch_add_explicit(&gov->tick, 1,
							memory_order_relaxed),
			      memory_order_relaxed);
	if (__builtin_expect(atomic_load_explicit(&gov->pf,
						  memory_order_relaxed) != NULL, 0))
		ortmem__prefetch_note_pin(gov, s, waited, promoted);
	if (ptrp)
		*ptrp = gov_slot_ptr(gov, s);
	return 0;
}

ORTMEM_API int ortmem_gov_pin(struct ortmem_gov *gov, struct ortmem_handle h,
			      uint32_t flags, void **ptrp)
{
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, (flags & ~ORTMEM_PIN_NO_PROMOTE) ?
			"pin flags have unknown bits" : NULL, h, &idx, &w);
	if (ret)
		return ret;
	return ortmem__pin_at(gov, h, idx, w, flags, ptrp);
}

int ortmem__unpin_at(struct ortmem_gov *gov, struct ortmem_handle h,
		     uint32_t idx, uint64_t w)
{
	struct gov_slot *s = &gov->slots[idx];
	uint64_t next;
	int ret;

	do {
		if (!slot_is_ours(w, h))
			return ortmem__slot_refuse(gov, h, w, "unpin");
		if (!slot_live_or_demoted(w) || !slot_pins(w))
			return ortmem__err_plain(-EINVAL,
				"cannot unpin handle %#" PRIx64 ": it holds no pin; pair every ortmem_gov_unpin() with an ortmem_gov_pin()",
				h.id);
		next = w - (1ull << SLOT_PINS_SHIFT);
	} while (!atomic_compare_exchange_weak_explicit(&s->word, &w, next,
			memory_order_acq_rel, memory_order_acquire));
	if (!slot_pins(next) && (next & SLOT_PENDING)) {
		ret = release_word(gov, idx, next, h.id);
		/* Nobody else changes a PENDING word without pins: pinners,
		 * releasers and movers all refuse it. */
		if (ret == -EAGAIN)
			return ortmem__err_plain(-EIO,
				"internal error: the pending release of handle %#" PRIx64 " changed under its last unpin",
				h.id);
		return ret;
	}
	return 0;
}

ORTMEM_API int ortmem_gov_unpin(struct ortmem_gov *gov, struct ortmem_handle h)
{
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, NULL, h, &idx, &w);
	if (ret)
		return ret;
	return ortmem__unpin_at(gov, h, idx, w);
}

/*
 * The fields of a slot read after ortmem__slot_lookup() are @h's only if
 * the slot was not released and reused meanwhile: read them, then check
 * the word again (a seqlock read, the generation as the sequence).
 */
static int slot_recheck(struct ortmem_gov *gov, struct ortmem_handle h,
			uint32_t idx, const char *what)
{
	uint64_t w;

	atomic_thread_fence(memory_order_acquire);
	w = atomic_load_explicit(&gov->slots[idx].word, memory_order_relaxed);
	if (slot_is_ours(w, h) && slot_state(w) != SLOT_FREE &&
	    slot_state(w) != SLOT_RETIRED)
		return 0;
	return ortmem__slot_refuse(gov, h, w, what);
}

ORTMEM_API int ortmem_gov_query(struct ortmem_gov *gov, struct ortmem_handle h,
				struct ortmem_alloc_info *info)
{
	struct gov_slot *s;
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, info ? NULL : "info is NULL", h, &idx, &w);
	if (ret)
		return ret;
	if (slot_state(w) == SLOT_QUARANTINED || slot_state(w) == SLOT_RELEASING)
		return ortmem__slot_refuse(gov, h, w, "query");
	s = &gov->slots[idx];
	memset(info, 0, sizeof(*info));
	info->tier = atomic_load(&s->tier);
	info->home_tier = atomic_load(&s->home);
	info->role = atomic_load(&s->role);
	info->pins = slot_pins(w);
	info->size = atomic_load(&s->size);
	info->has_memory = atomic_load(&s->kind) == SLOT_KIND_ALLOC;
	info->movable = atomic_load(&s->movable);
	if (slot_state(w) == SLOT_DEMOTED) {
		info->demote_mode = ORTMEM_DEMOTE_COPIED;
		if (atomic_load(&s->in_place))
			info->demote_mode =
				ortmem__backend_caps(&gov->tiers[info->tier]) &
				ORTMEM_BACKEND_CAP_FAULT_BACK ?
				ORTMEM_DEMOTE_IN_PLACE_MAPPED :
				ORTMEM_DEMOTE_IN_PLACE_RELEASED;
	}
	return slot_recheck(gov, h, idx, "query");
}

ORTMEM_API int ortmem_gov_demote(struct ortmem_gov *gov, struct ortmem_handle h)
{
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = gov_enter(gov, NULL, h, &idx, &w);
	if (ret)
		return ret;
	if (atomic_load(&gov->slots[idx].kind) != SLOT_KIND_ALLOC) {
		ret = slot_recheck(gov, h, idx, "demote");
		if (ret)
			return ret;
		return ortmem__err_invalid(atomic_load(&gov->slots[idx].tier),
			atomic_load(&gov->slots[idx].size),
			"handle %#" PRIx64 " is a bare lease; only allocations (ortmem_gov_alloc()) have bytes to demote",
			h.id);
	}
	if (!slot_is_live(w))
		return ortmem__slot_refuse(gov, h, w, "demote");
	return ortmem__demote(gov, idx, slot_gen(w));
}
