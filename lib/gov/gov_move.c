// SPDX-License-Identifier: MIT
/*
 * Demotion (device -> host -> disk) and the move back to the home tier,
 * through the backends.  Promotion, which first charges the home tier and
 * so may need room made, is in gov_reclaim.c.  The mover owns the slot
 * (state MOVING) for the whole move, so nobody pins or releases bytes in
 * flight; the budget moves with the bytes, and a source that cannot be
 * freed afterwards is quarantined with the backend as residual owner.
 *
 * A move claims the slot and charges the target under gov->lock, copies
 * without it (a device copy or a disk write of a large layer would stall
 * every other governor call), frees the source without it too (a GPU free
 * may synchronise the device), and commits under it again.  While it
 * copies and frees it is counted in both tiers' moving, which keeps their
 * backends set.  An in-place demotion or promotion (the host tier's: a
 * disk write, or a read back) runs its hook the same way, counted in its
 * tier's moving.  The slot is the mover's (MOVING) throughout: nobody pins,
 * releases or moves it, so nothing of it changes under the unlocked hook.
 */
#include <errno.h>
#include <inttypes.h>

#include "gov_internal.h"

/* How the free of a copied move's source went (move_copy_unlocked()). */
struct move_freed {
	uint64_t bytes;
	int ret;
};

/* Account the source's free (gov->lock held): give its budget back, and
 * quarantine what stays behind. */
static void move_source_freed(struct ortmem_gov *gov, int from, uint64_t bh,
			      uint64_t size, uint64_t id,
			      const struct move_freed *f)
{
	ortmem__tier_uncharge(gov, from, f->bytes);
	if (f->ret)
		ortmem__quarantine_add(gov, -1, id, from, ORTMEM_OWNER_BACKEND,
				       size, size - f->bytes, bh, f->ret);
}

/* Charge the first lower tier that can take the bytes; -errno if none. */
static int demote_target(struct ortmem_gov *gov, int from, uint32_t role,
			 uint64_t size)
{
	bool any = false;
	int to;

	for (to = from + 1; to < ORTMEM_TIER_COUNT; to++) {
		struct gov_tier *t = &gov->tiers[to];

		if (!ortmem__backend_can_sink(t))
			continue;
		any = true;
		if (ortmem__tier_try_charge(gov, to, size))
			return to;
		ortmem__credit_drain(gov);
		if (ortmem__tier_try_charge(gov, to, size))
			return to;
		ortmem__err_tier_exhausted(to, role, size, atomic_load(&t->used),
					   atomic_load(&t->usable));
	}
	if (any)
		return -ORTMEM_E_TIER_EXHAUSTED;
	return ortmem__err_plain(-EOPNOTSUPP,
		"no tier below %s has a backend that can take demoted data; set a host or disk backend with store, or alloc with ptr or write",
		ortmem_tier_name(from));
}

/*
 * The backend of @from demotes @bh in place (its address stays): 0, or
 * -EOPNOTSUPP to copy instead, or the backend's error.
 */
typedef int (*in_place_hook)(void *ctx, uint64_t bh, uint64_t size);

/*
 * Run @hook (@from's demote or promote) on @bh, ours (MOVING), without
 * gov->lock, which is held on entry and exit; the tier counted as moving
 * keeps its backend set meanwhile.
 */
static int in_place_unlocked(struct ortmem_gov *gov, int from,
			     in_place_hook hook, uint64_t bh, uint64_t size)
{
	struct gov_tier *t = &gov->tiers[from];
	void *ctx = t->ctx;
	bool locked;
	int ret;

	atomic_fetch_add(&t->moving, 1);
	pthread_mutex_unlock(&gov->lock);
	locked = ortmem__hook_lock(t);
	ret = hook(ctx, bh, size);
	ortmem__hook_unlock(t, locked);
	pthread_mutex_lock(&gov->lock);
	atomic_fetch_sub(&t->moving, 1);
	return ret;
}

static int demote_in_place(struct ortmem_gov *gov, struct gov_slot *s,
			   int from, uint64_t bh, uint64_t size)
{
	struct gov_tier *t = &gov->tiers[from];
	int ret;

	if (!t->ops.demote || !t->ops.promote)
		return -EOPNOTSUPP;
	ret = in_place_unlocked(gov, from, t->ops.demote, bh, size);
	if (ret)
		return ret;
	ortmem__tier_uncharge(gov, from, size);
	atomic_store(&s->in_place, 1);
	atomic_fetch_add(&t->demoted, size);
	return 0;
}

static void move_begin_locked(struct ortmem_gov *gov, int from, int to)
{
	atomic_fetch_add(&gov->tiers[from].moving, 1);
	atomic_fetch_add(&gov->tiers[to].moving, 1);
}

static void move_end_locked(struct ortmem_gov *gov, int from, int to)
{
	atomic_fetch_sub(&gov->tiers[from].moving, 1);
	atomic_fetch_sub(&gov->tiers[to].moving, 1);
}

/*
 * Copy the bytes of slot @idx (ours, MOVING) from @from to @to, charged
 * already, and once copied free the source, into @freed; gov->lock is
 * held on entry and exit but not while copying or freeing.
 */
static int move_copy_unlocked(struct ortmem_gov *gov, int from, uint64_t bh,
			      int to, uint64_t size, uint64_t *nbhp,
			      struct move_freed *freed)
{
	int ret;

	move_begin_locked(gov, from, to);
	pthread_mutex_unlock(&gov->lock);
	ret = ortmem__backend_move(gov, from, bh, to, size, nbhp);
	if (!ret)
		freed->ret = ortmem__backend_free(gov, from, bh, size,
						  &freed->bytes);
	pthread_mutex_lock(&gov->lock);
	move_end_locked(gov, from, to);
	return ret;
}

/* Demote slot @idx if it still holds generation @gen (gov->lock held). */
static int demote_locked(struct ortmem_gov *gov, uint32_t idx, uint32_t gen)
{
	struct gov_slot *s = &gov->slots[idx];
	uint64_t w = atomic_load(&s->word), size, bh, nbh = 0, id;
	struct move_freed freed = { 0, 0 };
	int from, to, ret;

	if (slot_gen(w) != gen)
		return ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"cannot demote handle %#" PRIx64 ": it was released and its slot %u reused (generation %u, now %u)",
			handle_make(gen, gov->tag, idx), idx, gen, slot_gen(w));
	if (!slot_live_or_demoted(w) ||
	    slot_pins(w) || (w & SLOT_PENDING) ||
	    !atomic_compare_exchange_strong(&s->word, &w,
					    slot_word(gen, 0, SLOT_MOVING)))
		return ortmem__err_plain(-EBUSY,
			"cannot demote slot %u: it is pinned (%u pins), moving or being released",
			idx, slot_pins(w));
	from = atomic_load(&s->tier);
	size = atomic_load(&s->size);
	bh = atomic_load(&s->bh);
	id = handle_make(gen, gov->tag, idx);
	if (atomic_load(&s->src)) {
		/* File-backed: the file keeps the bytes, drop the copy. */
		if (ortmem__file_absent(s)) {
			atomic_store(&s->word, w);
			return ortmem__err_plain(-EBUSY,
				"cannot demote slot %u: it is file-backed and already only in its file",
				idx);
		}
		ortmem__file_drop_locked(gov, idx);
		atomic_store_explicit(&s->word, slot_word(gen, 0, SLOT_DEMOTED),
				      memory_order_release);
		return 0;
	}
	if (atomic_load(&s->in_place)) {
		atomic_store(&s->word, w);
		return ortmem__err_plain(-EALREADY,
			"handle %#" PRIx64 " is demoted in place already", id);
	}
	ret = demote_in_place(gov, s, from, bh, size);
	if (ret != -EOPNOTSUPP) {
		atomic_store_explicit(&s->word, ret ? w :
				      slot_word(gen, 0, SLOT_DEMOTED),
				      memory_order_release);
		return ret;
	}
	ortmem_error_clear();
	to = demote_target(gov, from, atomic_load(&s->role), size);
	if (to < 0) {
		atomic_store(&s->word, w);
		return to;
	}
	ret = move_copy_unlocked(gov, from, bh, to, size, &nbh, &freed);
	if (ret) {
		ortmem__tier_uncharge(gov, to, size);
		atomic_store(&s->word, w);
		return ret;
	}
	move_source_freed(gov, from, bh, size, id, &freed);
	atomic_fetch_add(&gov->tiers[from].demoted, size);
	ortmem__publish(gov);
	atomic_store(&s->tier, (uint8_t)to);
	atomic_store(&s->bh, nbh);
	atomic_store_explicit(&s->word, slot_word(gen, 0, SLOT_DEMOTED),
			      memory_order_release);
	return 0;
}

int ortmem__demote(struct ortmem_gov *gov, uint32_t idx, uint32_t gen)
{
	int ret;

	pthread_mutex_lock(&gov->lock);
	ret = demote_locked(gov, idx, gen);
	pthread_mutex_unlock(&gov->lock);
	return ret;
}

/*
 * Move slot @idx (ours, state MOVING, its home tier already charged) back
 * to @home: 0, or -errno with the slot's bytes where they were.
 */
int ortmem__move_in(struct ortmem_gov *gov, uint32_t idx, int home)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(atomic_load(&s->word));
	uint64_t size = atomic_load(&s->size), nbh = 0;
	uint64_t bh = atomic_load(&s->bh);
	struct move_freed freed = { 0, 0 };
	int from = atomic_load(&s->tier), ret;

	if (atomic_load(&s->src)) {
		/* File-backed: read from the file, no lock while it reads;
		 * counted as a move so the home tier's backend stays. */
		pthread_mutex_lock(&gov->lock);
		atomic_fetch_add(&gov->tiers[home].moving, 1);
		pthread_mutex_unlock(&gov->lock);
		ret = ortmem__file_fill(gov, idx, home, false, &nbh);
		pthread_mutex_lock(&gov->lock);
		atomic_fetch_sub(&gov->tiers[home].moving, 1);
		if (ret) {
			pthread_mutex_unlock(&gov->lock);
			return ret;
		}
	} else {
		pthread_mutex_lock(&gov->lock);
		if (atomic_load(&s->in_place)) {
			/* Demoted in place: the backend brings it back, same bh. */
			ret = in_place_unlocked(gov, from,
						gov->tiers[from].ops.promote,
						bh, size);
			if (!ret) {
				atomic_store(&s->in_place, 0);
				atomic_fetch_add(&gov->tiers[home].promoted, size);
			}
			pthread_mutex_unlock(&gov->lock);
			return ret;
		}
		ret = move_copy_unlocked(gov, from, bh, home, size, &nbh,
					 &freed);
		if (ret) {
			pthread_mutex_unlock(&gov->lock);
			return ret;
		}
		move_source_freed(gov, from, bh, size,
				  handle_make(gen, gov->tag, idx), &freed);
	}
	atomic_fetch_add(&gov->tiers[home].promoted, size);
	ortmem__publish(gov);
	atomic_store(&s->tier, (uint8_t)home);
	atomic_store(&s->bh, nbh);
	pthread_mutex_unlock(&gov->lock);
	return 0;
}
