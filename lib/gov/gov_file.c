// SPDX-License-Identifier: MIT
/*
 * File-backed, read-only allocations: a range of a weights file that the
 * governor promotes to its home tier on pin or prefetch and, on demotion,
 * simply drops, since the file still holds the bytes.  The file is read
 * with the spill engine's lanes and verified against its checksum list
 * (lib/wfile.c); it is never written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <ortmem/wfile.h>

#include "gov_internal.h"
#include "spill/spill_internal.h"

struct gov_fsrc {
	struct ortmem_wfile *wf;
	uint64_t off;
};

static struct gov_fsrc *slot_src(struct gov_slot *s)
{
	return (struct gov_fsrc *)(uintptr_t)atomic_load(&s->src);
}

ORTMEM_API int ortmem_gov_alloc_file(struct ortmem_gov *gov, int tier,
				     uint32_t role, struct ortmem_wfile *wf,
				     uint64_t off, uint64_t len,
				     uint32_t flags, struct ortmem_handle *hp)
{
	struct gov_fsrc *src;
	struct gov_slot *s;
	uint64_t fsize = ortmem_wfile_size(wf);
	uint32_t idx, gen;
	int ret;

	if (!gov || !wf || !hp)
		return ortmem__err_invalid(tier, len, "%s is NULL",
					   !gov ? "gov" : !wf ? "wf" : "hp");
	if (!ortmem_role_name(role))
		return ortmem__err_invalid(tier, len, "role %#x is not a role", role);
	if (flags)
		return ortmem__err_invalid(tier, len,
			"file allocation flags %#x have unknown bits", flags);
	if (tier != ORTMEM_TIER_DEVICE && tier != ORTMEM_TIER_HOST)
		return ortmem__err_invalid(tier, len,
			"a file-backed allocation's home is the host or the device tier (got %d); the file itself is its disk copy",
			tier);
	if (!len || len > GOV_MAX_SIZE || off > fsize || len > fsize - off)
		return ortmem__err_invalid(tier, len,
			"range [%" PRIu64 ", +%" PRIu64 ") is empty or passes the end of the %" PRIu64 "-byte weights file",
			off, len, fsize);
	src = calloc(1, sizeof(*src));
	if (!src)
		return ortmem__err_plain(-ENOMEM, "out of memory for a file source");
	src->wf = wf;
	src->off = off;
	ret = ortmem__slot_get(gov, ortmem__gov_thread(gov), &idx);
	if (ret) {
		free(src);
		return ret;
	}
	s = &gov->slots[idx];
	gen = slot_gen(atomic_load(&s->word));
	atomic_store(&s->size, len);
	atomic_store(&s->role, role);
	atomic_store(&s->kind, SLOT_KIND_ALLOC);
	atomic_store(&s->home, (uint8_t)tier);
	atomic_store(&s->tier, (uint8_t)ORTMEM_TIER_DISK);
	atomic_store(&s->movable, 1);
	atomic_store(&s->bh, 0);
	atomic_store(&s->pf, PF_NONE);
	atomic_store(&s->src, (uintptr_t)src);
	atomic_store_explicit(&s->word, slot_word(gen, 0, SLOT_DEMOTED),
			      memory_order_release);
	hp->id = handle_make(gen, gov->tag, idx);
	return 0;
}

/*
 * The range into @dst; an announced read of it (ortmem__file_announce())
 * is taken, or cancelled when the read fails, so nothing is left in
 * flight into a buffer its owner is about to reuse or free.
 */
static int file_read(struct gov_fsrc *src, void *dst, uint64_t size)
{
	int ret = ortmem_wfile_read(src->wf, src->off, dst, size);

	if (ret)
		ortmem__wf_ahead_cancel(src->wf, dst);
	return ret;
}

/* Read the range into @bh of @home: straight in, or through a bounce. */
static int file_copy_in(struct ortmem_gov *gov, struct gov_slot *s, int home,
			uint64_t bh, uint64_t size)
{
	struct gov_fsrc *src = slot_src(s);
	struct gov_tier *t = &gov->tiers[home];
	struct gov_bounce *b;
	bool locked;
	void *dst;
	int ret;

	if (ortmem__backend_caps(t) & ORTMEM_BACKEND_CAP_HOST_POINTER) {
		pthread_mutex_lock(&gov->lock);
		dst = t->ops.ptr(t->ctx, bh);
		pthread_mutex_unlock(&gov->lock);
		/* The slot is ours (MOVING): no lock while the disk works. */
		return file_read(src, dst, size);
	}
	/* An announced read into a staging buffer: this read takes it. */
	b = (struct gov_bounce *)(uintptr_t)atomic_exchange(&s->ahead, 0);
	if (!b)
		b = ortmem__staging_get(gov, t, size);
	if (!b)
		return ortmem__err_plain(-ENOMEM,
			"cannot allocate a %" PRIu64 "-byte bounce buffer to promote file-backed bytes to the %s tier",
			size, ortmem_tier_name(home));
	ret = file_read(src, b->data, size);
	if (!ret) {
		/* Nor while the backend copies it on (the device tier's
		 * synchronous copy of a whole layer). */
		ortmem_error_clear();
		locked = ortmem__hook_lock(t);
		ret = t->ops.write(t->ctx, bh, b->data, size);
		ortmem__hook_unlock(t, locked);
		if (ret)
			ret = ortmem__backend_hook_failed(t, home, ret, size, "write");
	}
	ortmem__staging_put(gov, b);
	return ret;
}

int ortmem__file_fill(struct ortmem_gov *gov, uint32_t idx, int home,
		      bool reuse, uint64_t *nbhp)
{
	struct gov_slot *s = &gov->slots[idx];
	struct gov_tier *t = &gov->tiers[home];
	uint64_t size = atomic_load(&s->size), freed;
	struct ortmem_error saved;
	bool locked;
	int ret;

	if (!t->has_backend || !t->ops.alloc ||
	    (!(ortmem__backend_caps(t) & ORTMEM_BACKEND_CAP_HOST_POINTER) &&
	     !t->ops.write))
		return ortmem__err_invalid(home, size,
			"the %s tier has no backend that can take file-backed bytes (it needs alloc, and ptr or write)",
			ortmem_tier_name(home));
	/* @reuse: *@nbhp was handed over by ortmem__file_recycle_locked(). */
	if (!reuse) {
		ortmem_error_clear();
		locked = ortmem__hook_lock(t);
		ret = t->ops.alloc(t->ctx, size, nbhp);
		ortmem__hook_unlock(t, locked);
		if (ret)
			ret = ortmem__backend_hook_failed(t, home, ret, size, "alloc");
		if (ret)
			return ret;
	}
	ret = file_copy_in(gov, s, home, *nbhp, size);
	if (!ret)
		return 0;
	saved = *ortmem_last_error();
	locked = ortmem__hook_lock(t);
	if (t->ops.free(t->ctx, *nbhp, size, &freed))
		pr_err("backend '%s' leaked %" PRIu64 " bytes: free after a failed file read failed too",
		       t->name, size - freed);
	ortmem__hook_unlock(t, locked);
	return ortmem__err_restore(&saved, ret);
}

int ortmem__file_drop_locked(struct ortmem_gov *gov, uint32_t idx)
{
	struct gov_slot *s = &gov->slots[idx];
	int tier = atomic_load(&s->tier);
	uint64_t size = atomic_load(&s->size), freed = 0;
	int ret;

	ret = ortmem__backend_free(gov, tier, atomic_load(&s->bh), size, &freed);
	ortmem__tier_uncharge(gov, tier, freed);
	if (ret) {
		ortmem__quarantine_add(gov, -1,
			handle_make(slot_gen(atomic_load(&s->word)), gov->tag, idx),
			tier, ORTMEM_OWNER_BACKEND, size, size - freed,
			atomic_load(&s->bh), ret);
	}
	atomic_fetch_add(&gov->tiers[tier].demoted, size);
	atomic_store(&s->pf, PF_NONE);
	atomic_store(&s->bh, 0);
	atomic_store(&s->tier, (uint8_t)ORTMEM_TIER_DISK);
	return 0;
}

/*
 * Make room for file-backed slot @idx on @home without freeing anything:
 * the least recently pinned unpinned file-backed copy of the same size on
 * @home (not one a prefetch brought in and no pin used yet) goes back to
 * its file, and its buffer, with its charge, is handed over in *@bhp.
 * Same tier, same size: the budget does not move, and the backend is
 * spared a free and an alloc (for pinned host memory, unmapping, mapping
 * and zeroing the pages) per layer streamed.  False when there is none.
 */
bool ortmem__file_recycle_locked(struct ortmem_gov *gov, uint32_t idx,
				 int home, uint64_t *bhp)
{
	uint64_t size = atomic_load(&gov->slots[idx].size), best = UINT64_MAX, w;
	struct gov_slot *v;
	uint32_t i, pick = UINT32_MAX;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *c = &gov->slots[i];

		w = atomic_load_explicit(&c->word, memory_order_acquire);
		if (i == idx || slot_state(w) != SLOT_LIVE || slot_pins(w) ||
		    (w & SLOT_PENDING) || !atomic_load(&c->src) ||
		    atomic_load(&c->tier) != home || atomic_load(&c->size) != size ||
		    atomic_load(&c->pf) == PF_READY)
			continue;
		if (atomic_load(&c->last_use) < best) {
			best = atomic_load(&c->last_use);
			pick = i;
		}
	}
	if (pick == UINT32_MAX)
		return false;
	v = &gov->slots[pick];
	w = atomic_load(&v->word);
	if (slot_state(w) != SLOT_LIVE || slot_pins(w) || (w & SLOT_PENDING) ||
	    !atomic_compare_exchange_strong(&v->word, &w,
					    slot_word(slot_gen(w), 0, SLOT_MOVING)))
		return false;	/* pinned meanwhile: the caller reclaims */
	*bhp = atomic_load(&v->bh);
	atomic_fetch_add(&gov->tiers[home].demoted, size);
	atomic_store(&v->pf, PF_NONE);
	atomic_store(&v->bh, 0);
	atomic_store(&v->tier, (uint8_t)ORTMEM_TIER_DISK);
	atomic_store_explicit(&v->word, slot_word(slot_gen(w), 0, SLOT_DEMOTED),
			      memory_order_release);
	return true;
}

/*
 * A prefetch that recycled @bh for slot @idx knows where the bytes go
 * before its worker gets to them: announce the read to the weights file,
 * whose lane starts it behind the read in flight, so the disk's queue
 * does not drain between two layers (lib/spill/spill_wahead.c).  Best
 * effort: without it the worker's read runs as it would have.  The
 * worker's ortmem_wfile_read() of the same range into the same buffer
 * (file_copy_in()) takes it.
 */
void ortmem__file_announce(struct ortmem_gov *gov, uint32_t idx, int home,
			   uint64_t bh)
{
	struct gov_slot *s = &gov->slots[idx];
	struct gov_tier *t = &gov->tiers[home];
	struct gov_fsrc *src = slot_src(s);
	uint64_t size = atomic_load(&s->size);
	struct gov_bounce *b;
	void *dst;

	if (!src || !t->has_backend || !t->ops.alloc)
		return;
	if (!(ortmem__backend_caps(t) & ORTMEM_BACKEND_CAP_HOST_POINTER)) {
		/* The bytes go through a staging buffer (the device
		 * tier's, registered with the GPU): announce into one,
		 * which the worker's file_copy_in() takes with the slot. */
		if (!t->ops.write || !(b = ortmem__staging_get(gov, t, size)))
			return;
		if (ortmem__wf_ahead(src->wf, src->off, b->data, size)) {
			ortmem_error_clear();
			ortmem__staging_put(gov, b);
			return;
		}
		atomic_store(&s->ahead, (uint64_t)(uintptr_t)b);
		return;
	}
	if (!t->ops.ptr)
		return;
	pthread_mutex_lock(&gov->lock);
	dst = t->ops.ptr(t->ctx, bh);
	pthread_mutex_unlock(&gov->lock);
	if (dst)
		ortmem__wf_ahead(src->wf, src->off, dst, size);
}
