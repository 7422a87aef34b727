// SPDX-License-Identifier: MIT
/*
 * Claims and views.
 *
 * A claim records with a binding the authority that alone may release it
 * and the provider context it depends on.  The context stays registered
 * while anything still needs it: a live binding claimed under it, an owned
 * view of one, a release still deferred or quarantined.  The slot keeps
 * its claim until it is freed, so deferred and quarantined releases hold
 * the context with no bookkeeping of their own: the holders are counted
 * from the handle table when someone tries to tear the context down.
 *
 * A view is an offset and length inside a binding.  It is checked against
 * the binding's bounds and generation when made, and ortmem_view_check()
 * checks it again before each use: a released, reused or quarantined
 * binding is refused with its kind, and one whose bytes moved (its address
 * or tier changed) is refused as stale.  An owned view holds a pin.
 */
#include <errno.h>
#include <inttypes.h>

#include "gov_internal.h"

int ortmem__hold(struct ortmem_gov *gov, struct ortmem_handle h,
		 uint32_t *idxp)
{
	uint64_t w;
	int ret = ortmem__slot_lookup(gov, h, idxp, &w);

	return ret ?: ortmem__pin_at(gov, h, *idxp, w, ORTMEM_PIN_NO_PROMOTE,
				     NULL);
}

static int reg_register(struct ortmem_gov *gov, int kind, const char *name,
			uint32_t *idp)
{
	int ret;

	if (!gov || !name || !idp || !*name ||
	    strlen(name) >= ORTMEM_REGISTRY_NAME_MAX)
		return ortmem__err_invalid(-1, 0,
			"%s; pass a governor, a name of 1 to %d bytes and where to put the id",
			!gov ? "gov is NULL" : !name ? "name is NULL" :
			!idp ? "the id pointer is NULL" : !*name ? "the name is empty" :
			"the name is too long", ORTMEM_REGISTRY_NAME_MAX - 1);
	pthread_mutex_lock(&gov->lock);
	ret = ortmem__reg_add(gov, kind, name, idp);
	pthread_mutex_unlock(&gov->lock);
	return ret;
}

ORTMEM_API int ortmem_gov_authority_register(struct ortmem_gov *gov,
					     const char *name, uint32_t *authp)
{
	return reg_register(gov, GOV_REG_AUTH, name, authp);
}

ORTMEM_API int ortmem_gov_context_register(struct ortmem_gov *gov,
					   const char *name, uint32_t *ctxp)
{
	return reg_register(gov, GOV_REG_CTX, name, ctxp);
}

/* Count what holds context @ctx (or, with @auth, authority @auth). */
static void holds_scan_locked(struct ortmem_gov *gov, uint32_t id, bool auth,
			      struct ortmem_context_holds *out)
{
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		uint64_t w = atomic_load(&s->word);
		unsigned int st = slot_state(w);

		if (st == SLOT_FREE || st == SLOT_RETIRED ||
		    atomic_load(auth ? &s->auth : &s->pctx) != id)
			continue;
		if (st == SLOT_QUARANTINED)
			out->quarantined++;
		else if (st == SLOT_RELEASING || (w & SLOT_PENDING))
			out->deferred++;
		else
			out->bindings++;
		if (!out->first.id)
			out->first.id = handle_make(slot_gen(w), gov->tag, i);
	}
}

ORTMEM_API int ortmem_gov_context_holds(struct ortmem_gov *gov, uint32_t ctx,
					struct ortmem_context_holds *out)
{
	struct gov_reg_entry *e;

	if (!gov || !out)
		return ortmem__err_invalid(-1, 0, "%s is NULL",
					   gov ? "out" : "gov");
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&gov->lock);
	e = ortmem__reg_find(gov, GOV_REG_CTX, ctx);
	if (e) {
		holds_scan_locked(gov, ctx, false, out);
		out->views = atomic_load(&e->views);
	}
	pthread_mutex_unlock(&gov->lock);
	if (!e)
		return ortmem__err_plain(-ENOENT,
			"provider context id %#x is not registered with this governor; pass the id ortmem_gov_context_register() gave",
			ctx);
	return 0;
}

ORTMEM_API int ortmem_gov_context_unregister(struct ortmem_gov *gov,
					     uint32_t ctx)
{
	struct ortmem_context_holds h;
	struct gov_reg_entry *e;
	char name[ORTMEM_REGISTRY_NAME_MAX];
	int ret;

	ret = ortmem_gov_context_holds(gov, ctx, &h);
	if (ret)
		return ret;
	pthread_mutex_lock(&gov->lock);
	/* Counted again under the lock that unregisters: nothing claims
	 * under it in between. */
	memset(&h, 0, sizeof(h));
	e = ortmem__reg_find(gov, GOV_REG_CTX, ctx);
	if (e) {
		holds_scan_locked(gov, ctx, false, &h);
		h.views = atomic_load(&e->views);
		ortmem__text_fit(name, sizeof(name), e->name);
		if (!h.bindings && !h.views && !h.deferred && !h.quarantined)
			e->id = 0;
	}
	pthread_mutex_unlock(&gov->lock);
	if (!e)
		return ortmem__err_plain(-ENOENT,
			"provider context id %#x was unregistered meanwhile", ctx);
	if (h.bindings || h.views || h.deferred || h.quarantined)
		return ortmem__err_plain(-EBUSY,
			"cannot tear down provider context '%s': %" PRIu64 " bindings (handle %#" PRIx64 " first), %" PRIu64 " owned views, %" PRIu64 " deferred releases and %" PRIu64 " quarantined releases still depend on it; release them, drop the views and poll, then tear it down",
			name, h.bindings, h.first.id, h.views, h.deferred,
			h.quarantined);
	return 0;
}

ORTMEM_API int ortmem_gov_authority_unregister(struct ortmem_gov *gov,
					       uint32_t auth)
{
	struct ortmem_context_holds h = { 0 };
	struct gov_reg_entry *e;
	char name[ORTMEM_REGISTRY_NAME_MAX] = "";
	bool prefixes;

	if (!gov)
		return ortmem__err_invalid(-1, 0, "gov is NULL");
	pthread_mutex_lock(&gov->lock);
	e = ortmem__reg_find(gov, GOV_REG_AUTH, auth);
	prefixes = e && auth == gov->reg.prefix_auth;
	if (e && !prefixes) {
		holds_scan_locked(gov, auth, true, &h);
		ortmem__text_fit(name, sizeof(name), e->name);
		if (!h.bindings && !h.deferred && !h.quarantined)
			e->id = 0;
	}
	pthread_mutex_unlock(&gov->lock);
	if (!e || prefixes)
		return ortmem__err_plain(e ? -EPERM : -ENOENT,
			"authority id %#x %s", auth, e ?
			"belongs to the governor's shared prefixes and cannot be unregistered" :
			"is not registered with this governor");
	if (h.bindings || h.deferred || h.quarantined)
		return ortmem__err_plain(-EBUSY,
			"cannot unregister authority '%s': it owns the release of %" PRIu64 " live, %" PRIu64 " deferred and %" PRIu64 " quarantined bindings (handle %#" PRIx64 " first); release them first",
			name, h.bindings, h.deferred, h.quarantined, h.first.id);
	return 0;
}

int ortmem__claim_locked(struct ortmem_gov *gov, struct ortmem_handle h,
			 uint32_t auth, uint32_t ctx)
{
	struct gov_slot *s = &gov->slots[handle_idx(h.id)];

	if (auth && !ortmem__reg_find(gov, GOV_REG_AUTH, auth))
		return ortmem__err_plain(-ENOENT,
			"authority id %#x is not registered; register it with ortmem_gov_authority_register()",
			auth);
	if (ctx && !ortmem__reg_find(gov, GOV_REG_CTX, ctx))
		return ortmem__err_plain(-ENOENT,
			"provider context id %#x is not registered (or was torn down); register it with ortmem_gov_context_register()",
			ctx);
	if ((auth && atomic_load(&s->auth)) || (ctx && atomic_load(&s->pctx)))
		return ortmem__err_plain(-EEXIST,
			"handle %#" PRIx64 " is already claimed (authority %#x, context %#x); a binding is claimed once",
			h.id, atomic_load(&s->auth), atomic_load(&s->pctx));
	if (auth)
		atomic_store(&s->auth, auth);
	if (ctx)
		atomic_store(&s->pctx, ctx);
	return 0;
}

ORTMEM_API int ortmem_gov_claim(struct ortmem_gov *gov, struct ortmem_handle h,
				uint32_t auth, uint32_t ctx)
{
	uint32_t idx;
	int ret, ret2;

	if (!gov || (!auth && !ctx))
		return ortmem__err_invalid(-1, 0, "%s",
			gov ? "neither an authority nor a provider context to claim; pass at least one" :
			      "gov is NULL");
	/* The pin keeps the slot ours while the claim is written. */
	ret = ortmem__hold(gov, h, &idx);
	if (ret)
		return ret;
	pthread_mutex_lock(&gov->lock);
	ret = ortmem__claim_locked(gov, h, auth, ctx);
	pthread_mutex_unlock(&gov->lock);
	ret2 = ortmem__unpin_at(gov, h, idx,
				atomic_load(&gov->slots[idx].word));
	return ret ?: ret2;
}

ORTMEM_API int ortmem_gov_release_as(struct ortmem_gov *gov,
				     struct ortmem_handle h, uint32_t auth,
				     uint32_t flags)
{
	uint32_t idx, owner;
	uint64_t w;
	char a[64], b[64];
	int ret;

	ret = ortmem__gov_enter(gov, (flags & ~ORTMEM_RELEASE_DEFER) ?
				"release flags have unknown bits" : NULL,
				h, &idx, &w);
	if (ret)
		return ret;
	owner = atomic_load(&gov->slots[idx].auth);
	if (owner != auth) {
		pthread_mutex_lock(&gov->lock);
		ortmem__reg_name(gov, GOV_REG_AUTH, auth, a, sizeof(a));
		ortmem__reg_name(gov, GOV_REG_AUTH, owner, b, sizeof(b));
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_plain(-EPERM,
			"authority %s may not release handle %#" PRIx64 ": %s owns its release",
			auth ? a : "the application (0)", h.id,
			owner ? b : "the application (0)");
	}
	return ortmem__release_at(gov, h, idx, w, flags);
}

/* ---- views ---- */

/* The address of slot @idx's bytes now (pinned by the caller), its bounds
 * in *@sizep and, for a prefix's sharer, the prefix length in *@plenp. */
static uint64_t view_addr(struct ortmem_gov *gov, uint32_t idx,
			  uint64_t *sizep, uint64_t *plenp, bool *writablep)
{
	struct gov_slot *s = &gov->slots[idx];
	struct gov_tier *t = &gov->tiers[atomic_load(&s->tier)];
	uint64_t addr = 0;

	*sizep = atomic_load(&s->size);
	*plenp = 0;
	*writablep = true;
	if (atomic_load(&s->share)) {
		/* A sharer: fixed while it lives, and our pin keeps it. */
		const struct gov_sharer *sh =
			(const void *)(uintptr_t)atomic_load(&s->share);

		*sizep = sh->total;
		*plenp = sh->plen;
		*writablep = sh->writable;
		return sh->addr;
	}
	if (atomic_load(&s->kind) == SLOT_KIND_ALLOC && !ortmem__file_absent(s) &&
	    t->has_backend && t->ops.ptr)
		addr = (uint64_t)(uintptr_t)t->ops.ptr(t->ctx, atomic_load(&s->bh));
	return addr;
}

ORTMEM_API int ortmem_view_make(struct ortmem_gov *gov, struct ortmem_handle h,
				uint64_t offset, uint64_t len, uint32_t flags,
				struct ortmem_view *v)
{
	uint64_t size, plen;
	uint32_t idx, ctx;
	bool writable;
	int ret;

	if (!gov || !v || (flags & ~ORTMEM_VIEW_FLAGS) || !len ||
	    offset + len < offset)
		return ortmem__err_invalid(-1, len, "%s",
			!gov ? "gov is NULL" : !v ? "v is NULL" :
			(flags & ~ORTMEM_VIEW_FLAGS) ? "view flags have unknown bits" :
			!len ? "a view of 0 bytes; pass a length of at least 1" :
			"offset + len overflows");
	ret = ortmem__hold(gov, h, &idx);
	if (ret)
		return ret;
	memset(v, 0, sizeof(*v));
	v->base = view_addr(gov, idx, &size, &plen, &writable);
	if (offset + len > size) {
		ret = ortmem__err_invalid(atomic_load(&gov->slots[idx].tier), len,
			"a view of bytes %" PRIu64 "..%" PRIu64 " of handle %#" PRIx64 ", which has %" PRIu64 " bytes; keep the view inside the binding",
			offset, offset + len, h.id, size);
		goto out_unpin;
	}
	if ((flags & ORTMEM_VIEW_WRITE) && offset < plen && !writable) {
		ret = ortmem__err_plain(-EACCES,
			"cannot make a writable view of bytes %" PRIu64 "..%" PRIu64 " of handle %#" PRIx64 ": its first %" PRIu64 " bytes are a shared prefix that its owner did not make writable (ORTMEM_PREFIX_WRITABLE); write only past the prefix",
			offset, offset + len, h.id, plen);
		goto out_unpin;
	}
	v->handle = h;
	v->offset = offset;
	v->len = len;
	v->flags = flags;
	v->tier = atomic_load(&gov->slots[idx].tier);
	if (!(flags & ORTMEM_VIEW_OWNED))
		goto out_unpin;
	ctx = atomic_load(&gov->slots[idx].pctx);
	if (ctx) {
		struct gov_reg_entry *e;

		/* The slot keeps its context while we pin it. */
		pthread_mutex_lock(&gov->lock);
		e = ortmem__reg_find(gov, GOV_REG_CTX, ctx);
		if (e) {
			atomic_fetch_add(&e->views, 1);
			v->ctx = ctx;
		}
		pthread_mutex_unlock(&gov->lock);
	}
	return 0;
out_unpin:
	ortmem__unpin_at(gov, h, idx, atomic_load(&gov->slots[idx].word));
	if (ret)
		memset(v, 0, sizeof(*v));
	return ret;
}

ORTMEM_API int ortmem_view_check(struct ortmem_gov *gov,
				 const struct ortmem_view *v, void **ptrp)
{
	uint64_t size, plen, addr, w;
	bool writable, owned;
	uint32_t idx;
	int ret;

	if (!gov || !v || !v->handle.id)
		return ortmem__err_invalid(-1, 0, "%s", !gov ? "gov is NULL" :
			!v ? "v is NULL" : "the view was dropped or never made");
	owned = v->flags & ORTMEM_VIEW_OWNED;
	if (owned) {
		/* Our pin keeps the slot; a pending release does not end it. */
		ret = ortmem__slot_lookup(gov, v->handle, &idx, &w);
		if (!ret && slot_pins(w) == 0)
			ret = ortmem__err_plain(-EIO,
				"internal error: owned view of handle %#" PRIx64 " found no pin",
				v->handle.id);
	} else {
		ret = ortmem__hold(gov, v->handle, &idx);
	}
	if (ret)
		return ret;
	addr = view_addr(gov, idx, &size, &plen, &writable);
	if (addr != v->base ||
	    atomic_load(&gov->slots[idx].tier) != (uint8_t)v->tier)
		ret = ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"the view of handle %#" PRIx64 " is stale: its bytes moved (from the %s tier at %#" PRIx64 " to the %s tier at %#" PRIx64 ") since it was made; make the view again, or make it owned to keep the bytes in place",
			v->handle.id, ortmem_tier_name(v->tier), v->base,
			ortmem_tier_name(atomic_load(&gov->slots[idx].tier)), addr);
	else if (ptrp)
		*ptrp = addr ? (void *)(uintptr_t)(addr + v->offset) : NULL;
	if (!owned)
		ortmem__unpin_at(gov, v->handle, idx,
				 atomic_load(&gov->slots[idx].word));
	return ret;
}

ORTMEM_API int ortmem_view_drop(struct ortmem_gov *gov, struct ortmem_view *v)
{
	struct ortmem_view old;
	uint32_t idx;
	uint64_t w;
	int ret;

	if (!gov || !v || !v->handle.id)
		return ortmem__err_invalid(-1, 0, "%s", !gov ? "gov is NULL" :
			!v ? "v is NULL" : "the view was dropped already or never made");
	old = *v;
	memset(v, 0, sizeof(*v));
	if (!(old.flags & ORTMEM_VIEW_OWNED))
		return 0;
	if (old.ctx) {
		struct gov_reg_entry *e;

		pthread_mutex_lock(&gov->lock);
		e = ortmem__reg_find(gov, GOV_REG_CTX, old.ctx);
		if (e)
			atomic_fetch_sub(&e->views, 1);
		pthread_mutex_unlock(&gov->lock);
	}
	ret = ortmem__slot_lookup(gov, old.handle, &idx, &w);
	return ret ?: ortmem__unpin_at(gov, old.handle, idx, w);
}
