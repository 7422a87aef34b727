// SPDX-License-Identifier: MIT
/*
 * Bindings: the handle table.  Every lease or allocation occupies a slot
 * whose word holds its generation, pin count and state; a handle names the
 * slot, the governor and the generation, so a stale or forged one is
 * refused.  A slot whose generation would wrap is retired, never reused.
 *
 * Free slots live in a global stack (slot_lock) and, for speed, in the
 * per-thread context's cache (gov_tctx.c).
 *
 * A handle's tag names its governor among the open ones; for those that
 * held the tag before, the process remembers the first generation none of
 * them issued (tag_next_gen), and a governor taking the tag starts every
 * slot there.  So no number of governors, open at once or one after the
 * other, ever shares a handle: a foreign one is refused as stale.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "gov_internal.h"

static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;
/* Per tag: the first generation no governor issued; 0 stands for 1. */
static uint32_t tag_next_gen[GOV_TAGS + 1];
static uint64_t tag_live[(GOV_TAGS + 64) / 64];
static uint32_t tag_cursor;

static bool tag_usable(uint32_t t)
{
	return !(tag_live[t / 64] >> (t % 64) & 1) &&
	       tag_next_gen[t] <= SLOT_GEN_MAX - GOV_TAG_GENS_LEFT;
}

/* Give @gov a tag no open governor holds, cycling through them all. */
int ortmem__tag_take(struct ortmem_gov *gov)
{
	uint32_t i, t;

	pthread_mutex_lock(&tag_lock);
	for (i = 0; i < GOV_TAGS; i++) {
		t = (tag_cursor + i) % GOV_TAGS + 1;
		if (tag_usable(t))
			break;
	}
	if (i == GOV_TAGS) {
		pthread_mutex_unlock(&tag_lock);
		return ortmem__err_plain(-EMFILE,
			"cannot open a governor: %u governors are open at once (or their tags' generations are spent); close governors no longer used",
			GOV_TAGS);
	}
	tag_cursor = t;
	tag_live[t / 64] |= 1ull << (t % 64);
	gov->tag = (uint16_t)t;
	gov->gen_base = tag_next_gen[t] ? tag_next_gen[t] : 1;
	pthread_mutex_unlock(&tag_lock);
	return 0;
}

/* Give @gov's tag back, past every generation its slots issued. */
void ortmem__tag_give(struct ortmem_gov *gov)
{
	uint32_t i, top = gov->gen_base;

	for (i = 0; i < gov->nslots; i++) {
		uint32_t g = slot_gen(atomic_load(&gov->slots[i].word));

		if (g > top)
			top = g;
	}
	pthread_mutex_lock(&tag_lock);
	/* top + 1: the slot word's own generation may be out in a handle. */
	tag_next_gen[gov->tag] = top + 1;
	tag_live[gov->tag / 64] &= ~(1ull << (gov->tag % 64));
	pthread_mutex_unlock(&tag_lock);
}

int ortmem__binding_init(struct ortmem_gov *gov, uint32_t n)
{
	uint32_t i;

	gov->slots = calloc(n, sizeof(*gov->slots));
	gov->free_idx = calloc(n, sizeof(*gov->free_idx));
	if (!gov->slots || !gov->free_idx) {
		free(gov->slots);
		free(gov->free_idx);
		return -ENOMEM;
	}
	gov->nslots = n;
	for (i = 0; i < n; i++) {
		atomic_init(&gov->slots[i].word,
			    slot_word(gov->gen_base, 0, SLOT_FREE));
		gov->free_idx[i] = n - 1 - i;
	}
	gov->nfree = n;
	return 0;
}

void ortmem__binding_fini(struct ortmem_gov *gov)
{
	free(gov->slots);
	free(gov->free_idx);
}

static void mag_refill(struct ortmem_gov *gov, struct gov_thread *gt)
{
	pthread_mutex_lock(&gov->slot_lock);
	while (gt->nmag < GOV_MAG_BATCH && gov->nfree)
		gt->mag[gt->nmag++] = gov->free_idx[--gov->nfree];
	pthread_mutex_unlock(&gov->slot_lock);
}

int ortmem__slot_get(struct ortmem_gov *gov, struct gov_thread *gt,
		     uint32_t *idxp)
{
	if (__builtin_expect(!gt, 0))
		return ortmem__err_plain(-ENOMEM,
			"cannot allocate the per-thread handle cache");
	if (__builtin_expect(!gt->nmag, 0)) {
		mag_refill(gov, gt);
		if (!gt->nmag)
			return ortmem__err_plain(-ENOSPC,
				"all %u handles of this governor are live or retired; release some or open the governor with a larger max_handles",
				gov->nslots);
	}
	*idxp = gt->mag[--gt->nmag];
	/* A new binding starts unclaimed and shares nothing. */
	atomic_store_explicit(&gov->slots[*idxp].auth, 0, memory_order_relaxed);
	atomic_store_explicit(&gov->slots[*idxp].pctx, 0, memory_order_relaxed);
	atomic_store_explicit(&gov->slots[*idxp].share, 0, memory_order_relaxed);
	return 0;
}

/*
 * Return a slot, whose word the caller already moved to @gen's successor
 * state (FREE or RETIRED).  Retired slots are dropped.
 */
void ortmem__slot_put(struct ortmem_gov *gov, uint32_t idx, uint32_t gen)
{
	struct gov_thread *gt;

	if (gen == SLOT_GEN_MAX) {
		atomic_fetch_add_explicit(&gov->retired, 1, memory_order_relaxed);
		return;
	}
	gt = ortmem__gov_thread(gov);
	if (__builtin_expect(!gt, 0)) {
		pthread_mutex_lock(&gov->slot_lock);
		gov->free_idx[gov->nfree++] = idx;
		pthread_mutex_unlock(&gov->slot_lock);
		return;
	}
	if (__builtin_expect(gt->nmag == GOV_MAG, 0)) {
		pthread_mutex_lock(&gov->slot_lock);
		while (gt->nmag > GOV_MAG - GOV_MAG_BATCH)
			gov->free_idx[gov->nfree++] = gt->mag[--gt->nmag];
		pthread_mutex_unlock(&gov->slot_lock);
	}
	gt->mag[gt->nmag++] = idx;
}

int ortmem__slot_refuse(struct ortmem_gov *gov, struct ortmem_handle h,
			uint64_t word, const char *what)
{
	uint32_t idx = handle_idx(h.id);
	unsigned int st = slot_state(word);

	if (st == SLOT_QUARANTINED && slot_gen(word) == handle_gen(h.id))
		return ortmem__err_plain(-ORTMEM_E_QUARANTINED,
			"cannot %s handle %#" PRIx64 ": its release failed and it is quarantined; see ortmem_gov_quarantine()",
			what, h.id);
	/* Its own generation, owned by a slow path (a prefetch's transfer, a
	 * demotion, a reclaim): not stale, busy until that is done. */
	if (st == SLOT_MOVING && slot_gen(word) == handle_gen(h.id))
		return ortmem__err_plain(-EBUSY,
			"cannot %s handle %#" PRIx64 ": another thread is moving it between tiers; retry",
			what, h.id);
	if ((st == SLOT_RELEASING || (word & SLOT_PENDING)) &&
	    slot_gen(word) == handle_gen(h.id))
		return ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"cannot %s handle %#" PRIx64 ": it was released (the release is pending); do not use a handle after releasing it",
			what, h.id);
	return ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
		"cannot %s handle %#" PRIx64 ": it names slot %u generation %u, but the slot is at generation %u (%s); the handle was released or never issued by this governor (%u slots)",
		what, h.id, idx, handle_gen(h.id), slot_gen(word),
		st == SLOT_RETIRED ? "retired" : st == SLOT_FREE ? "free" : "reused",
		gov->nslots);
}

/*
 * Resolve @h to its slot.  On success *@wordp is the slot's word, which has
 * the handle's generation; its state may be anything but FREE or RETIRED.
 */
int ortmem__slot_lookup(struct ortmem_gov *gov, struct ortmem_handle h,
			uint32_t *idxp, uint64_t *wordp)
{
	uint32_t idx = handle_idx(h.id);
	uint64_t w;

	if (__builtin_expect(handle_tag(h.id) != gov->tag ||
			     idx >= gov->nslots, 0))
		return ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"handle %#" PRIx64 " was not issued by this governor (tag %u, slot %u of %u); pass the handle ortmem_gov_reserve() or ortmem_gov_alloc() returned",
			h.id, (unsigned int)handle_tag(h.id), idx, gov->nslots);
	w = atomic_load_explicit(&gov->slots[idx].word, memory_order_acquire);
	if (__builtin_expect(slot_gen(w) != handle_gen(h.id) ||
			     slot_state(w) == SLOT_FREE ||
			     slot_state(w) == SLOT_RETIRED, 0))
		return ortmem__slot_refuse(gov, h, w, "use");
	*idxp = idx;
	*wordp = w;
	return 0;
}

int ortmem__binding_set_gen(struct ortmem_gov *gov, uint32_t idx, uint32_t gen)
{
	struct gov_slot *s;
	uint64_t w;

	if (idx >= gov->nslots || !gen)
		return -EINVAL;
	s = &gov->slots[idx];
	w = atomic_load(&s->word);
	if (slot_state(w) != SLOT_FREE)
		return -EBUSY;
	atomic_store(&s->word, slot_word(gen, 0, SLOT_FREE));
	return 0;
}
