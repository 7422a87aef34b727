// SPDX-License-Identifier: MIT
/*
 * Allocator backends behind struct ortmem_backend_ops: registration with
 * its checks, capabilities discovered at run time, and moving bytes from
 * one backend to another (demotion, promotion) with only the hooks each
 * one has.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gov_internal.h"

uint32_t ortmem__backend_caps(const struct gov_tier *t)
{
	uint32_t caps;

	if (!t->has_backend || !t->ops.caps)
		return 0;
	caps = t->ops.caps(t->ctx) & ORTMEM_BACKEND_CAP_ALL;
	if (!t->ops.ptr)
		caps &= ~ORTMEM_BACKEND_CAP_HOST_POINTER;
	return caps;
}

static int backend_check(int tier, const struct ortmem_backend_ops *ops)
{
	/* A sz that cuts a hook would copy half a pointer into the tier's
	 * ops (set_backend copies sz bytes), one that cuts flags half of it. */
	int ret = ORTMEM_OPTS_VALID(ops, ortmem_backend_ops) ?:
		  ORTMEM_OPTS_WHOLE(ops, ortmem_backend_ops,
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, name),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, caps),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, alloc),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, free),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, ptr),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, store),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, write),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, read),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, busy),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, close),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, demote),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, promote),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, staging_alloc),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, staging_free),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, flags),
			ORTMEM_OPTS_SPAN(ortmem_backend_ops, attach));

	if (ret)
		return ret;
	if (!ORTMEM_OPTS_GET(ops, free, NULL))
		return ortmem__err_invalid(tier, 0,
			"backend '%s' has no free hook; every backend must release what it allocates",
			ORTMEM_OPTS_GET(ops, name, NULL) ?: "?");
	if (!ORTMEM_OPTS_GET(ops, alloc, NULL) &&
	    !ORTMEM_OPTS_GET(ops, store, NULL))
		return ortmem__err_invalid(tier, 0,
			"backend '%s' has neither an alloc nor a store hook, so it can hold nothing",
			ORTMEM_OPTS_GET(ops, name, NULL) ?: "?");
	if (ORTMEM_OPTS_GET(ops, flags, 0) & ~ORTMEM_BACKEND_FLAGS_ALL)
		return ortmem__err_invalid(tier, 0,
			"backend '%s' has unknown flags %#" PRIx64 "; the library knows ORTMEM_BACKEND_CONCURRENT (%#" PRIx64 ")",
			ORTMEM_OPTS_GET(ops, name, NULL) ?: "?",
			ORTMEM_OPTS_GET(ops, flags, 0) & ~ORTMEM_BACKEND_FLAGS_ALL,
			ORTMEM_BACKEND_FLAGS_ALL);
	if (!ORTMEM_OPTS_GET(ops, staging_alloc, NULL) !=
	    !ORTMEM_OPTS_GET(ops, staging_free, NULL))
		return ortmem__err_invalid(tier, 0,
			"backend '%s' has only one of staging_alloc and staging_free; give both or neither",
			ORTMEM_OPTS_GET(ops, name, NULL) ?: "?");
	return 0;
}

static bool gov_tier_in_use(struct ortmem_gov *gov, int tier)
{
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		unsigned int st = slot_state(atomic_load(&s->word));

		if (st != SLOT_FREE && st != SLOT_RETIRED &&
		    atomic_load(&s->kind) == SLOT_KIND_ALLOC &&
		    atomic_load(&s->tier) == tier)
			return true;
	}
	return false;
}

ORTMEM_API int ortmem_gov_set_backend(struct ortmem_gov *gov, int tier,
				      const struct ortmem_backend_ops *ops,
				      void *ctx)
{
	void (*old_close)(void *ctx) = NULL;
	void *old_ctx = NULL;
	struct gov_tier *t;
	int ret;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return ortmem__err_invalid(-1, 0, "tier %d is not a tier", tier);
	if (ops) {
		ret = backend_check(tier, ops);
		if (ret)
			return ret;
	}
	t = &gov->tiers[tier];
	pthread_mutex_lock(&gov->lock);
	if (gov_tier_in_use(gov, tier)) {
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_plain(-EBUSY,
			"the %s tier still holds allocations of backend '%s'; release them before changing its backend",
			ortmem_tier_name(tier), t->name);
	}
	if (atomic_load(&t->moving)) {
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_plain(-EBUSY,
			"bytes are moving to or from the %s tier through backend '%s' (a demotion, promotion or prefetch); retry once it is done",
			ortmem_tier_name(tier), t->name);
	}
	/* Spare staging buffers may belong to the old backend's ctx, which
	 * its owner can close once it is no longer the tier's. */
	ortmem__staging_fini(gov);
	if (t->has_backend) {
		old_close = t->ops.close;
		old_ctx = t->ctx;
	}
	memset(&t->ops, 0, sizeof(t->ops));
	t->has_backend = ops != NULL;
	t->concurrent = ops && (ORTMEM_OPTS_GET(ops, flags, 0) &
				ORTMEM_BACKEND_CONCURRENT);
	t->ctx = ctx;
	t->name[0] = '\0';
	if (ops) {
		memcpy(&t->ops, ops, ops->sz < sizeof(t->ops) ? ops->sz :
		       sizeof(t->ops));
		t->ops.sz = sizeof(t->ops);
		snprintf(t->name, sizeof(t->name), "%s",
			 t->ops.name ? t->ops.name : "unnamed");
		/* Under the lock: no hook of the new backend runs before it. */
		if (t->ops.attach)
			t->ops.attach(ctx);
	}
	pthread_mutex_unlock(&gov->lock);
	/* The old backend is no longer the tier's: its pair of attach. */
	if (old_close)
		old_close(old_ctx);
	return 0;
}

ORTMEM_API int ortmem_gov_backend_caps(struct ortmem_gov *gov, int tier)
{
	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return ortmem__err_invalid(-1, 0, "tier %d is not a tier", tier);
	if (!gov->tiers[tier].has_backend)
		return ortmem__err_plain(-ENOENT,
			"the %s tier has no backend; set one with ortmem_gov_set_backend()",
			ortmem_tier_name(tier));
	return (int)ortmem__backend_caps(&gov->tiers[tier]);
}

/*
 * A hook failed with @ret: report it, keeping the backend's own words.
 * Only a failed alloc or store is an allocation failure (the advice then is
 * to free memory); a failed read, write or free moved or released nothing,
 * and telling the caller to free memory would send them the wrong way.
 */
int ortmem__backend_hook_failed(struct gov_tier *t, int tier, int ret,
				uint64_t size, const char *hook)
{
	const struct ortmem_error *e = ortmem_last_error();
	char why[ORTMEM_ERROR_REASON_MAX] = "", full[4 * ORTMEM_ERROR_REASON_MAX];

	if (ret >= 0)
		ret = -EIO;
	if (e) {
		ortmem_error_format(e, full, sizeof(full));
		ortmem__text_fit(why, sizeof(why), full);
	}
	if (!strcmp(hook, "alloc") || !strcmp(hook, "store"))
		return ortmem__err_alloc_failed(ret, tier, size,
			"backend '%s' %s returned %d%s%s", t->name, hook, ret,
			e ? ": " : "", why);
	return ortmem__err_io(ret, tier, size,
		"backend '%s' %s returned %d%s%s; %s",
		t->name, hook, ret,
		e ? ": " : "", why,
		strcmp(hook, "free") ? "nothing was moved, the data stays in its source tier"
				     : "the memory stays held by the backend");
}

static bool backend_can_source(const struct gov_tier *t)
{
	return t->has_backend &&
	       ((ortmem__backend_caps(t) & ORTMEM_BACKEND_CAP_HOST_POINTER) ||
		t->ops.read);
}

bool ortmem__backend_can_sink(const struct gov_tier *t)
{
	return t->has_backend &&
	       (t->ops.store ||
		(t->ops.alloc &&
		 ((ortmem__backend_caps(t) & ORTMEM_BACKEND_CAP_HOST_POINTER) ||
		  t->ops.write)));
}

int ortmem__backend_free(struct ortmem_gov *gov, int tier, uint64_t bh,
			 uint64_t size, uint64_t *freedp)
{
	struct gov_tier *t = &gov->tiers[tier];
	bool locked;
	int ret;

	*freedp = 0;
	ortmem_error_clear();
	locked = ortmem__hook_lock(t);
	ret = t->ops.free(t->ctx, bh, size, freedp);
	ortmem__hook_unlock(t, locked);
	if (!ret) {
		*freedp = size;
		return 0;
	}
	if (*freedp > size)
		*freedp = size;
	return ortmem__backend_hook_failed(t, tier, ret, size, "free");
}

int ortmem__backend_busy(struct gov_tier *t, uint64_t bh)
{
	bool locked = ortmem__hook_lock(t);
	int ret = t->ops.busy(t->ctx, bh);

	ortmem__hook_unlock(t, locked);
	return ret;
}

/* The source bytes as a CPU address: direct, or read into *@bouncep. */
static int move_source(struct gov_tier *src, int from, uint64_t bh,
		       uint64_t size, const void **datap, void **bouncep)
{
	bool locked;
	int ret;

	*bouncep = NULL;
	if (ortmem__backend_caps(src) & ORTMEM_BACKEND_CAP_HOST_POINTER) {
		*datap = src->ops.ptr(src->ctx, bh);
		return 0;
	}
	if (size > SIZE_MAX || !(*bouncep = malloc(size)))
		return ortmem__err_plain(-ENOMEM,
			"cannot allocate a %" PRIu64 "-byte bounce buffer to move data out of the %s tier",
			size, ortmem_tier_name(from));
	ortmem_error_clear();
	locked = ortmem__hook_lock(src);
	ret = src->ops.read(src->ctx, bh, *bouncep, size);
	ortmem__hook_unlock(src, locked);
	if (ret) {
		ret = ortmem__backend_hook_failed(src, from, ret, size, "read");
		free(*bouncep);
		*bouncep = NULL;
		return ret;
	}
	*datap = *bouncep;
	return 0;
}

static int move_sink(struct gov_tier *dst, int to, const void *data,
		     uint64_t size, uint64_t *bhp)
{
	uint64_t freed;
	bool locked;
	int ret;

	ortmem_error_clear();
	if (dst->ops.store) {
		locked = ortmem__hook_lock(dst);
		ret = dst->ops.store(dst->ctx, data, size, bhp);
		ortmem__hook_unlock(dst, locked);
		return ret ? ortmem__backend_hook_failed(dst, to, ret, size,
							 "store") : 0;
	}
	locked = ortmem__hook_lock(dst);
	ret = dst->ops.alloc(dst->ctx, size, bhp);
	ortmem__hook_unlock(dst, locked);
	if (ret)
		return ortmem__backend_hook_failed(dst, to, ret, size, "alloc");
	if (ortmem__backend_caps(dst) & ORTMEM_BACKEND_CAP_HOST_POINTER) {
		memcpy(dst->ops.ptr(dst->ctx, *bhp), data, size);
		return 0;
	}
	locked = ortmem__hook_lock(dst);
	ret = dst->ops.write(dst->ctx, *bhp, data, size);
	ortmem__hook_unlock(dst, locked);
	if (!ret)
		return 0;
	ret = ortmem__backend_hook_failed(dst, to, ret, size, "write");
	locked = ortmem__hook_lock(dst);
	if (dst->ops.free(dst->ctx, *bhp, size, &freed))
		pr_err("backend '%s' leaked %" PRIu64 " bytes: free after a failed write failed too",
		       dst->name, size - freed);
	ortmem__hook_unlock(dst, locked);
	return ret;
}

/*
 * Copy @size bytes of @bh on tier @from into a new allocation on @to.
 * Runs without gov->lock: the caller owns the slot (MOVING) and counts the
 * move in both tiers' moving, so neither backend changes meanwhile.
 */
int ortmem__backend_move(struct ortmem_gov *gov, int from, uint64_t bh,
			 int to, uint64_t size, uint64_t *newbhp)
{
	struct gov_tier *src = &gov->tiers[from], *dst = &gov->tiers[to];
	const void *data = NULL;
	void *bounce;
	int ret;

	if (!backend_can_source(src) || !ortmem__backend_can_sink(dst))
		return ortmem__err_plain(-EOPNOTSUPP,
			"cannot move %" PRIu64 " bytes from the %s tier (backend '%s') to the %s tier (backend '%s'): the source needs ptr or read, the destination store, or alloc with ptr or write",
			size, ortmem_tier_name(from), src->name,
			ortmem_tier_name(to), dst->name);
	ret = move_source(src, from, bh, size, &data, &bounce);
	if (ret)
		return ret;
	ret = move_sink(dst, to, data, size, newbhp);
	free(bounce);
	return ret;
}

/* ---- staging buffers of file-backed promotions (struct gov_bounce) ---- */

#define BOUNCE_ALIGN 4096u

static void staging_free(struct gov_bounce *b)
{
	if (!b)
		return;
	if (b->release)
		b->release(b->ctx, b->data, b->size);
	else
		free(b->data);
	free(b);
}

/* A spare made the way @t would make one, of at least @size bytes. */
static struct gov_bounce *staging_spare(struct ortmem_gov *gov,
				       const struct gov_tier *t, uint64_t size)
{
	struct gov_bounce *b, *none;
	int i;

	for (i = 0; i < GOV_BOUNCE_SPARES; i++) {
		b = atomic_exchange(&gov->bounce[i], NULL);
		if (!b)
			continue;
		if (b->size >= size && b->made_by == t->ops.staging_alloc &&
		    b->ctx == t->ctx)
			return b;
		none = NULL;
		if (!atomic_compare_exchange_strong(&gov->bounce[i], &none, b))
			staging_free(b);
	}
	return NULL;
}

struct gov_bounce *ortmem__staging_get(struct ortmem_gov *gov,
				       const struct gov_tier *t, uint64_t size)
{
	struct gov_bounce *b = staging_spare(gov, t, size);

	if (b)
		return b;
	if (size > SIZE_MAX - BOUNCE_ALIGN || !(b = calloc(1, sizeof(*b))))
		return NULL;
	b->size = (size + BOUNCE_ALIGN - 1) / BOUNCE_ALIGN * BOUNCE_ALIGN;
	if (t->ops.staging_alloc && t->ops.staging_free) {
		b->data = t->ops.staging_alloc(t->ctx, b->size);
		if (b->data) {
			b->made_by = t->ops.staging_alloc;
			b->release = t->ops.staging_free;
			b->ctx = t->ctx;
			return b;
		}
		/* Staging is a speed-up: plain memory still works. */
		ortmem_error_clear();
	}
	b->data = aligned_alloc(BOUNCE_ALIGN, b->size);
	if (!b->data) {
		free(b);
		return NULL;
	}
	return b;
}

void ortmem__staging_put(struct ortmem_gov *gov, struct gov_bounce *b)
{
	struct gov_bounce *none;
	int i;

	for (i = 0; i < GOV_BOUNCE_SPARES; i++) {
		none = NULL;
		if (atomic_compare_exchange_strong(&gov->bounce[i], &none, b))
			return;
	}
	staging_free(b);
}

void ortmem__staging_fini(struct ortmem_gov *gov)
{
	int i;

	for (i = 0; i < GOV_BOUNCE_SPARES; i++)
		staging_free(atomic_exchange(&gov->bounce[i], NULL));
}
