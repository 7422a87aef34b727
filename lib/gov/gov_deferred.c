// SPDX-License-Identifier: MIT
/*
 * Deferred release and quarantine.
 *
 * A release that must wait (the backend reports the bytes busy, or the
 * caller gave a completion condition) is queued; ortmem_gov_poll(), every
 * charge that does not fit, and ortmem_gov_close() complete the entries
 * whose condition is met, oldest first (an entry that is not ready does not
 * hold back younger ones).  A free that fails part-way, or a condition that
 * fails, quarantines the allocation: the bytes still owned stay charged to
 * their tier, and the entry says how many and who owns them.  The binding
 * answers -ORTMEM_E_QUARANTINED until a retry frees the rest.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "gov_internal.h"

/* Return slot @idx (ours) to the free stack with its next generation. */
static void slot_free_locked(struct ortmem_gov *gov, uint32_t idx)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(atomic_load(&s->word));

	if (atomic_load(&s->src))
		ortmem__file_forget(s);
	atomic_store(&s->pf, PF_NONE);
	if (gen == SLOT_GEN_MAX) {
		atomic_store(&s->word, slot_word(gen, 0, SLOT_RETIRED));
		atomic_fetch_add(&gov->retired, 1);
		return;
	}
	atomic_store_explicit(&s->word, slot_word(gen + 1, 0, SLOT_FREE),
			      memory_order_release);
	pthread_mutex_lock(&gov->slot_lock);
	gov->free_idx[gov->nfree++] = idx;
	pthread_mutex_unlock(&gov->slot_lock);
}

void ortmem__quarantine_add(struct ortmem_gov *gov, int32_t slot, uint64_t id,
			    int tier, int owner, uint64_t size,
			    uint64_t residual, uint64_t bh, int code)
{
	struct gov_quarantine *q = calloc(1, sizeof(*q));
	struct gov_tier *t = &gov->tiers[tier];

	atomic_fetch_add(&t->quarantined, residual);
	ortmem__publish(gov);
	pr_warn("quarantined %" PRIu64 " of %" PRIu64 " bytes of handle %#" PRIx64 " on the %s tier: %s",
		residual, size, id, ortmem_tier_name(tier),
		ortmem_last_error_message());
	if (!q) {
		pr_err("cannot record the quarantine of handle %#" PRIx64 "; %" PRIu64 " bytes stay charged",
		       id, residual);
		return;
	}
	q->e.handle.id = id;
	q->e.tier = tier;
	q->e.owner = owner;
	q->e.size = size;
	q->e.residual = residual;
	q->e.code = code;
	snprintf(q->e.backend, sizeof(q->e.backend), "%s", t->name);
	ortmem_error_format(ortmem_last_error(), q->e.reason,
			    sizeof(q->e.reason));
	q->slot = slot;
	q->bh = bh;
	q->next = gov->quarantine;
	gov->quarantine = q;
}

static int quarantine_refusal(struct ortmem_gov *gov, uint32_t idx,
			      uint64_t id, int owner, uint64_t size,
			      uint64_t residual, int code)
{
	struct gov_slot *s = &gov->slots[idx];
	int tier = atomic_load(&s->tier);

	ortmem__quarantine_add(gov, (int32_t)idx, id, tier, owner, size,
			       residual, atomic_load(&s->bh), code);
	atomic_store(&s->word, slot_word(slot_gen(atomic_load(&s->word)), 0,
					 SLOT_QUARANTINED));
	return ortmem__err_plain(-ORTMEM_E_QUARANTINED,
		"release of handle %#" PRIx64 " failed (%s): %" PRIu64 " of its %" PRIu64 " bytes are still owned by %s '%s' and stay charged to the %s tier; it is quarantined, see ortmem_gov_quarantine()",
		id, ortmem_strerror(code), residual, size,
		owner == ORTMEM_OWNER_BACKEND ? "backend" : "an in-flight operation on",
		gov->tiers[tier].name, ortmem_tier_name(tier));
}

/* Free slot @idx (ours, in MOVING or RELEASING) now. */
static int finish_release_locked(struct ortmem_gov *gov, uint32_t idx,
				 uint64_t id)
{
	struct gov_slot *s = &gov->slots[idx];
	uint64_t size = atomic_load(&s->size), freed = size;
	int tier = atomic_load(&s->tier), ret = 0;

	if (ortmem__file_absent(s)) {
		/* Only in its file: nothing to free, nothing charged. */
		slot_free_locked(gov, idx);
		return 0;
	}
	if (atomic_load(&s->kind) == SLOT_KIND_ALLOC)
		ret = ortmem__backend_free(gov, tier, atomic_load(&s->bh), size,
					   &freed);
	/* Demoted in place: its budget went back at demotion. */
	if (!atomic_load(&s->in_place))
		ortmem__tier_uncharge(gov, tier, freed);
	if (ret)
		return quarantine_refusal(gov, idx, id, ORTMEM_OWNER_BACKEND,
					  size, size - freed, ret);
	slot_free_locked(gov, idx);
	return 0;
}

int ortmem__deferred_queue(struct ortmem_gov *gov, uint32_t idx, uint64_t id,
			   int (*ready)(void *arg), void *arg)
{
	struct gov_slot *s = &gov->slots[idx];
	struct gov_deferred *d = calloc(1, sizeof(*d));
	uint32_t gen = slot_gen(atomic_load(&s->word));

	if (!d) {
		atomic_store(&s->word, slot_word(gen, 0, SLOT_LIVE));
		return ortmem__err_plain(-ENOMEM,
			"cannot queue the release of handle %#" PRIx64 "; it is still live",
			id);
	}
	d->idx = idx;
	d->id = id;
	d->ready = ready;
	d->arg = arg;
	*gov->deferred_tail = d;
	gov->deferred_tail = &d->next;
	atomic_fetch_add(&gov->tiers[atomic_load(&s->tier)].deferred, 1);
	atomic_store(&s->word, slot_word(gen, 0, SLOT_RELEASING));
	return 1;
}

/* Release slot @idx (ours, MOVING): now, or queued while the backend is busy. */
int ortmem__backend_release_locked(struct ortmem_gov *gov, uint32_t idx,
				   uint64_t id)
{
	struct gov_slot *s = &gov->slots[idx];
	struct gov_tier *t = &gov->tiers[atomic_load(&s->tier)];
	int busy;

	if (t->ops.busy && !ortmem__file_absent(s)) {
		ortmem_error_clear();
		busy = ortmem__backend_busy(t, atomic_load(&s->bh));
		if (busy > 0)
			return ortmem__deferred_queue(gov, idx, id, NULL, NULL);
		if (busy < 0) {
			ortmem__backend_hook_failed(t, atomic_load(&s->tier),
						    busy, atomic_load(&s->size),
						    "busy");
			return quarantine_refusal(gov, idx, id,
						  ORTMEM_OWNER_INFLIGHT,
						  atomic_load(&s->size),
						  atomic_load(&s->size), busy);
		}
	}
	return finish_release_locked(gov, idx, id);
}

/* > 0 ready, 0 not yet, < 0 the condition failed. */
static int deferred_ready(struct ortmem_gov *gov, struct gov_deferred *d)
{
	struct gov_slot *s = &gov->slots[d->idx];
	struct gov_tier *t = &gov->tiers[atomic_load(&s->tier)];
	int ret;

	ortmem_error_clear();
	if (d->ready)
		return d->ready(d->arg);
	if (atomic_load(&s->kind) != SLOT_KIND_ALLOC || !t->ops.busy)
		return 1;
	ret = ortmem__backend_busy(t, atomic_load(&s->bh));
	return ret > 0 ? 0 : ret < 0 ? ret : 1;
}

static void deferred_complete(struct ortmem_gov *gov, struct gov_deferred *d,
			      int ready)
{
	struct gov_slot *s = &gov->slots[d->idx];
	uint64_t size = atomic_load(&s->size);
	int tier = atomic_load(&s->tier);
	struct gov_quarantine *q;

	atomic_fetch_sub(&gov->tiers[tier].deferred, 1);
	if (ready > 0) {
		finish_release_locked(gov, d->idx, d->id);
		return;
	}
	if (!ortmem_last_error())
		ortmem__err_plain(ready,
			"the completion condition of the release of handle %#" PRIx64 " failed with %d",
			d->id, ready);
	quarantine_refusal(gov, d->idx, d->id, ORTMEM_OWNER_INFLIGHT, size,
			   size, ready);
	q = gov->quarantine;
	if (q && q->slot == (int32_t)d->idx) {
		q->ready = d->ready;
		q->arg = d->arg;
	}
}

int ortmem__poll_locked(struct ortmem_gov *gov)
{
	struct gov_deferred **pp = &gov->deferred, *d;
	int done = 0, ready;

	while ((d = *pp)) {
		ready = deferred_ready(gov, d);
		if (!ready) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		if (gov->deferred_tail == &d->next)
			gov->deferred_tail = pp;
		deferred_complete(gov, d, ready);
		free(d);
		done++;
	}
	return done;
}

ORTMEM_API int ortmem_gov_poll(struct ortmem_gov *gov)
{
	int n;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	pthread_mutex_lock(&gov->lock);
	n = ortmem__poll_locked(gov);
	pthread_mutex_unlock(&gov->lock);
	return n;
}

/* At close: what is still waiting cannot be freed safely; say so. */
void ortmem__deferred_fini(struct ortmem_gov *gov)
{
	struct gov_deferred *d, *dn;
	struct gov_quarantine *q, *qn;
	struct gov_reclaim *r, *rn;

	for (d = gov->deferred; d; d = dn) {
		dn = d->next;
		pr_warn("governor closed while the release of handle %#" PRIx64 " (%" PRIu64 " bytes) still waits; its bytes are left to the backend",
			d->id, atomic_load(&gov->slots[d->idx].size));
		free(d);
	}
	gov->deferred = NULL;
	for (q = gov->quarantine; q; q = qn) {
		qn = q->next;
		pr_warn("governor closed with handle %#" PRIx64 " quarantined: %" PRIu64 " bytes still owned on the %s tier",
			q->e.handle.id, q->e.residual, ortmem_tier_name(q->e.tier));
		free(q);
	}
	gov->quarantine = NULL;
	for (r = gov->reclaims; r; r = rn) {
		rn = r->next;
		free(r);
	}
	gov->reclaims = NULL;
}

ORTMEM_API int ortmem_gov_quarantine(struct ortmem_gov *gov,
				     struct ortmem_quarantine_entry *out,
				     size_t max)
{
	struct gov_quarantine *q;
	size_t n = 0;

	if (!gov || (!out && max))
		return ortmem__err_invalid(-1, 0, "%s is NULL",
					   gov ? "out" : "gov");
	pthread_mutex_lock(&gov->lock);
	for (q = gov->quarantine; q; q = q->next, n++)
		if (n < max)
			out[n] = q->e;
	pthread_mutex_unlock(&gov->lock);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Try to free one entry's residual; true when it is gone. */
static bool quarantine_retry_one(struct ortmem_gov *gov,
				 struct gov_quarantine *q)
{
	struct gov_tier *t = &gov->tiers[q->e.tier];
	uint64_t freed = 0;
	int ret;

	if (q->e.owner == ORTMEM_OWNER_INFLIGHT) {
		ortmem_error_clear();
		ret = q->ready ? q->ready(q->arg) :
		      t->ops.busy ? !ortmem__backend_busy(t, q->bh) : 1;
		if (ret <= 0)
			return false;
		q->e.owner = ORTMEM_OWNER_BACKEND;
	}
	if (q->slot >= 0 &&
	    atomic_load(&gov->slots[q->slot].kind) != SLOT_KIND_ALLOC)
		freed = q->e.residual;
	else if (ortmem__backend_free(gov, q->e.tier, q->bh, q->e.residual,
				      &freed))
		ortmem_error_format(ortmem_last_error(), q->e.reason,
				    sizeof(q->e.reason));
	ortmem__tier_uncharge(gov, q->e.tier, freed);
	atomic_fetch_sub(&t->quarantined, freed);
	q->e.residual -= freed;
	if (q->e.residual)
		return false;
	if (q->slot >= 0)
		slot_free_locked(gov, (uint32_t)q->slot);
	return true;
}

ORTMEM_API int ortmem_gov_quarantine_retry(struct ortmem_gov *gov)
{
	struct gov_quarantine **pp, *q;
	int left = 0;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	pthread_mutex_lock(&gov->lock);
	for (pp = &gov->quarantine; (q = *pp);) {
		if (quarantine_retry_one(gov, q)) {
			*pp = q->next;
			free(q);
			continue;
		}
		left++;
		pp = &q->next;
	}
	pthread_mutex_unlock(&gov->lock);
	return left;
}
