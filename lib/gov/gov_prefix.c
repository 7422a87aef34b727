// SPDX-License-Identifier: MIT
/*
 * Shared prefixes over committed ranges: KV-cache prefix sharing.
 *
 * Sequences that start with the same prompt share its KV blocks.  A prefix
 * is physical memory committed once and charged once, to a lease its owner
 * holds; each sharer is a binding whose address range starts with the
 * prefix, mapped from the same physical memory (a memfd on the host tier,
 * a cuMemCreate handle mapped with cuMemMap on the device), followed by a
 * private tail committed and charged to the sharer alone.  No byte is
 * copied.
 *
 * The governor's prefixes authority owns the release of the owner's lease
 * and of every sharer: ortmem_gov_release() of one is refused, so a prefix
 * cannot lose its charge or its mapping behind the component's back.  The
 * prefix is never moved (its lease has no bytes the governor could demote)
 * and lives while its owner holds it or any sharer is bound: the owner's
 * release while sharers remain is deferred to the last ortmem_prefix_unbind().
 * A sharer pinned by an owned view cannot be unbound (-EBUSY).
 */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "gov_internal.h"
#include "../host/host_internal.h"

const struct ortmem_share_ops *ortmem__share_memfd(void);

struct gov_prefix {
	struct ortmem_gov *gov;
	struct ortmem_share_ops ops;
	void *ctx;
	int tier;
	uint32_t flags;
	uint64_t size;
	uint64_t phys;
	uint64_t addr;		/* the owner's mapping */
	struct ortmem_handle owner;
	uint64_t sharers;	/* gov->lock */
	bool owner_released;	/* gov->lock */
	struct gov_prefix *next;
};

/* Unmap @p (no sharer left) and give its charge back; it waits in
 * prefix_dead for prefix_reap(), which the caller runs after unlocking. */
static void prefix_destroy_locked(struct ortmem_gov *gov, struct gov_prefix *p,
				  bool release_lease)
{
	struct gov_prefix **pp;

	p->ops.destroy(p->ctx, p->phys, p->addr, p->size);
	atomic_fetch_sub(&gov->reg.shared[p->tier], p->size);
	gov->reg.prefixes[p->tier]--;
	for (pp = &gov->reg.prefix_list; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	/* A lease's release takes no lock: safe under gov->lock. */
	if (release_lease &&
	    ortmem_gov_release_as(gov, p->owner, gov->reg.prefix_auth, 0))
		pr_err("releasing shared prefix %#" PRIx64 ": %s",
		       p->owner.id, ortmem_last_error_message());
	p->next = gov->reg.prefix_dead;
	gov->reg.prefix_dead = p;
}

/*
 * Run the detach hooks of the prefixes destroyed so far, and free them;
 * called without gov->lock.  Detach is the pair of create's attach: it may
 * end the ctx (the device's ops drop their handle reference, and the last
 * one closes the device), so it runs after the prefix's last hook, and
 * outside the lock, as the demote and promote hooks do: a hook that calls
 * into the device layer, or back into the governor, must not find the
 * lock held.  Whichever thread takes the list runs each detach once.
 */
static void prefix_reap(struct ortmem_gov *gov)
{
	struct gov_prefix *p, *next;

	pthread_mutex_lock(&gov->lock);
	p = gov->reg.prefix_dead;
	gov->reg.prefix_dead = NULL;
	pthread_mutex_unlock(&gov->lock);
	for (; p; p = next) {
		next = p->next;
		if (p->ops.detach)
			p->ops.detach(p->ctx);
		free(p);
	}
}

/* ortmem_gov_drain() of @tier: every prefix and sharer there goes.  The
 * leases are freed by the drain itself, after this. */
/* Undo a sharer's map (or map_at): 0 or -errno. */
static int sharer_unmap(struct gov_sharer *sh)
{
	struct gov_prefix *p = sh->p;

	if (sh->at)
		return p->ops.unmap_at(p->ctx, sh->addr, sh->plen, sh->total);
	return p->ops.unmap(p->ctx, sh->addr, sh->plen, sh->total);
}

static void prefix_drain(struct ortmem_gov *gov, int tier)
{
	struct gov_prefix *p, *next;
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		struct gov_sharer *sh;

		/* A freed slot's field is stale until the slot is reused. */
		if (!slot_live_or_demoted(atomic_load(&s->word)))
			continue;
		sh = (void *)(uintptr_t)atomic_load(&s->share);
		if (!sh || sh->p->tier != tier)
			continue;
		sharer_unmap(sh);
		sh->p->sharers--;
		gov->reg.sharers[tier]--;
		atomic_store(&s->share, 0);
		free(sh);
	}
	for (p = gov->reg.prefix_list; p; p = next) {
		next = p->next;
		if (p->tier == tier)
			prefix_destroy_locked(gov, p, false);
	}
}

static int prefix_check_ops(int tier, const struct ortmem_share_ops *ops)
{
	int ret;

	if (!ops)
		return tier == ORTMEM_TIER_HOST ? 0 :
			ortmem__err_invalid(tier, 0,
				"the built-in shared mapping serves the host tier only; pass the %s tier's share ops (the device tier's: ortmem_device_share_ops())",
				ortmem_tier_name(tier));
	ret = ORTMEM_OPTS_VALID(ops, ortmem_share_ops);
	if (ret)
		return ret;
	if (!ORTMEM_OPTS_HAS(ops, destroy) || !ops->create || !ops->map ||
	    !ops->unmap || !ops->destroy)
		return ortmem__err_invalid(tier, 0,
			"share ops '%s' lack a hook; create, map, unmap and destroy are all required",
			ops->name ? ops->name : "(unnamed)");
	if (!ORTMEM_OPTS_GET(ops, map_at, NULL) !=
	    !ORTMEM_OPTS_GET(ops, unmap_at, NULL))
		return ortmem__err_invalid(tier, 0,
			"share ops '%s' have only one of map_at and unmap_at; give both or neither",
			ops->name ? ops->name : "(unnamed)");
	if (!ORTMEM_OPTS_GET(ops, attach, NULL) !=
	    !ORTMEM_OPTS_GET(ops, detach, NULL))
		return ortmem__err_invalid(tier, 0,
			"share ops '%s' have only one of attach and detach; give both or neither",
			ops->name ? ops->name : "(unnamed)");
	return 0;
}

static int prefix_check(struct ortmem_gov *gov, int tier, uint64_t size,
			uint32_t flags, const struct ortmem_share_ops *ops,
			struct ortmem_prefix **pp)
{
	long page = sysconf(_SC_PAGESIZE);

	if (!gov || !pp)
		return ortmem__err_invalid(-1, size, "%s is NULL",
					   gov ? "pp" : "gov");
	if (flags & ~ORTMEM_PREFIX_WRITABLE)
		return ortmem__err_invalid(tier, size,
			"prefix flags %#x have unknown bits; pass 0 or ORTMEM_PREFIX_WRITABLE",
			flags);
	if (tier == ORTMEM_TIER_DISK)
		return ortmem__err_invalid(tier, size,
			"a shared prefix lives on the device or host tier, not on disk");
	/* The built-in mapping shares whole pages; other mechanisms round
	 * to their own granularity. */
	if (!ops && page > 0 && size % (uint64_t)page)
		return ortmem__err_invalid(tier, size,
			"a host prefix of %" PRIu64 " bytes: it must be a multiple of the page size (%ld), or its last page would be shared with the sharers' private tails; round it up",
			size, page);
	return ortmem__check_tier(tier, size) ?: prefix_check_ops(tier, ops) ?:
	       ortmem__mech_check(gov, tier, size);
}

/* The prefixes' authority, registered at the first prefix. */
static int prefix_auth_locked(struct ortmem_gov *gov)
{
	int ret;

	if (gov->reg.prefix_auth)
		return 0;
	ret = ortmem__reg_add(gov, GOV_REG_AUTH, "shared-prefix",
			      &gov->reg.prefix_auth);
	if (!ret) {
		gov->reg.prefix_drain = prefix_drain;
		gov->reg.prefix_reap = prefix_reap;
	}
	return ret;
}

ORTMEM_API int ortmem_prefix_create(struct ortmem_gov *gov, int tier,
				    uint32_t role, uint64_t size,
				    uint32_t flags,
				    const struct ortmem_share_ops *ops,
				    void *ctx, struct ortmem_prefix **pp,
				    void **addrp)
{
	struct gov_prefix *p;
	int ret;

	ret = prefix_check(gov, tier, size, flags, ops, pp);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return ortmem__err_plain(-ENOMEM, "cannot allocate a prefix");
	p->gov = gov;
	/* sz bytes only: an older caller's struct ends before map_at. */
	if (!ops)
		ops = ortmem__share_memfd();
	memcpy(&p->ops, ops, ops->sz < sizeof(p->ops) ? ops->sz : sizeof(p->ops));
	p->ctx = ctx;
	p->tier = tier;
	p->flags = flags;
	p->size = size;
	/* Charged once, here, to the lease the owner holds. */
	ret = ortmem_gov_reserve(gov, tier, role, size, &p->owner);
	if (ret)
		goto err_free;
	/* The prefix holds its ctx (the device handle) until detach. */
	if (p->ops.attach)
		p->ops.attach(ctx);
	ortmem_error_clear();
	ret = p->ops.create(ctx, size, &p->phys, &p->addr);
	if (ret) {
		ret = ortmem__err_alloc_failed(ret, tier, size,
			"share ops '%s' could not create the prefix: %s",
			p->ops.name ? p->ops.name : "(unnamed)",
			ortmem_last_error() ? ortmem_last_error_message() :
					      ortmem_strerror(ret));
		goto err_lease;
	}
	pthread_mutex_lock(&gov->lock);
	ret = prefix_auth_locked(gov) ?:
	      ortmem__claim_locked(gov, p->owner, gov->reg.prefix_auth, 0);
	if (!ret) {
		atomic_fetch_add(&gov->reg.shared[tier], size);
		gov->reg.prefixes[tier]++;
		p->next = gov->reg.prefix_list;
		gov->reg.prefix_list = p;
	}
	pthread_mutex_unlock(&gov->lock);
	if (ret) {
		p->ops.destroy(ctx, p->phys, p->addr, size);
		goto err_lease;
	}
	*pp = (struct ortmem_prefix *)p;
	if (addrp)
		*addrp = (void *)(uintptr_t)p->addr;
	return 0;
err_lease:
	if (p->ops.detach)
		p->ops.detach(ctx);
	ortmem_gov_release(gov, p->owner, 0);
err_free:
	free(p);
	return ret;
}

ORTMEM_API int ortmem_prefix_release(struct ortmem_prefix *pub)
{
	struct gov_prefix *p = (struct gov_prefix *)pub;
	struct ortmem_gov *gov;

	if (!p)
		return ortmem__err_invalid(-1, 0, "the prefix is NULL");
	gov = p->gov;
	pthread_mutex_lock(&gov->lock);
	if (p->owner_released) {
		int ret = ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"the prefix was released already; it lives on only for its %" PRIu64 " sharers",
			p->sharers);

		pthread_mutex_unlock(&gov->lock);
		return ret;
	}
	p->owner_released = true;
	if (p->sharers) {
		pthread_mutex_unlock(&gov->lock);
		return 1;	/* the last unbind frees it */
	}
	prefix_destroy_locked(gov, p, true);
	pthread_mutex_unlock(&gov->lock);
	prefix_reap(gov);
	return 0;
}

ORTMEM_API int ortmem_prefix_info(struct ortmem_prefix *pub,
				  struct ortmem_prefix_info *info)
{
	struct gov_prefix *p = (struct gov_prefix *)pub;

	if (!p || !info)
		return ortmem__err_invalid(-1, 0, "%s is NULL",
					   p ? "info" : "the prefix");
	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&p->gov->lock);
	info->tier = p->tier;
	info->flags = p->flags;
	info->size = p->size;
	info->sharers = p->sharers;
	info->owner_released = p->owner_released;
	info->owner_addr = p->owner_released ? 0 : p->addr;
	info->owner = p->owner;
	pthread_mutex_unlock(&p->gov->lock);
	return 0;
}

/*
 * What the library can check of a range the caller says it reserved, on
 * top of the share ops' own checks (the host's: page-aligned, anonymous
 * PROT_NONE in /proc/self/maps): that none of it is a buffer of ortmem's
 * host tier.  A demoted buffer of the mlock fallback is anonymous
 * PROT_NONE too, so the maps cannot tell it from a reservation; mapping
 * a prefix over it would lose its bytes' home when it is promoted.  Whose
 * reservation a PROT_NONE range is, the library cannot know: the caller's
 * promise (ortmem_prefix_create(3)).
 */
static int bind_at_check(const struct gov_prefix *p, uint64_t at, uint64_t total)
{
	struct ortmem__host_buf b;

	if (p->tier != ORTMEM_TIER_HOST || !ortmem__host_owned(at, total, &b))
		return 0;
	return ortmem__err_invalid(p->tier, total,
		"the range at %#" PRIx64 " (%" PRIu64 " bytes) overlaps %s buffer of ortmem's host tier at %p (%" PRIu64 " bytes): ortmem's memory, not address space the caller reserved; nothing was mapped",
		at, total, b.demoted ? "a demoted" : "a live", b.ptr, b.size);
}

/* A sharer of @p in a range of its own (@at 0) or in the caller's at @at. */
static int prefix_bind(struct gov_prefix *p, uint64_t tail, uint64_t at,
		       struct ortmem_handle *hp, void **addrp)
{
	struct ortmem_handle h;
	struct gov_sharer *sh;
	struct ortmem_gov *gov;
	int ret;

	if (!p || !hp || !tail || tail > GOV_MAX_SIZE - p->size)
		return ortmem__err_invalid(p ? p->tier : -1, tail, "%s",
			!p ? "the prefix is NULL" : !hp ? "hp is NULL" :
			!tail ? "a sharer with no tail of its own; pass the private bytes that follow the prefix (at least 1)" :
			"the prefix and its tail together exceed 2^62 bytes");
	if (at && !p->ops.map_at)
		return ortmem__err_plain(-EOPNOTSUPP,
			"share ops '%s' cannot map a prefix into a range the caller reserved (no map_at); use ortmem_prefix_bind(), which reserves the range itself",
			p->ops.name ? p->ops.name : "(unnamed)");
	if (at && at > UINT64_MAX - p->size - tail)
		return ortmem__err_invalid(p->tier, tail,
			"the range at %#" PRIx64 " of %" PRIu64 " bytes wraps around the address space",
			at, p->size + tail);
	ret = at ? bind_at_check(p, at, p->size + tail) : 0;
	if (ret)
		return ret;
	gov = p->gov;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return ortmem__err_plain(-ENOMEM, "cannot allocate a sharer");
	/* The tail is the sharer's own: charged to it alone. */
	ret = ortmem_gov_reserve(gov, p->tier, ORTMEM_ROLE_KV_CACHE, tail, &h);
	if (ret)
		goto err_free;
	sh->p = p;
	sh->plen = p->size;
	sh->total = p->size + tail;
	sh->writable = p->flags & ORTMEM_PREFIX_WRITABLE;
	pthread_mutex_lock(&gov->lock);
	if (p->owner_released) {
		/* Said under the lock: the sharers come and go. */
		ret = ortmem__err_plain(-ORTMEM_E_STALE_HANDLE,
			"cannot bind a released prefix (%" PRIu64 " bytes, %" PRIu64 " sharers left); bind before the owner releases it",
			p->size, p->sharers);
		pthread_mutex_unlock(&gov->lock);
		goto err_lease;
	}
	ortmem_error_clear();
	sh->at = at != 0;
	sh->addr = at;
	ret = at ? p->ops.map_at(p->ctx, p->phys, p->size, sh->total,
				 sh->writable, at) :
		   p->ops.map(p->ctx, p->phys, p->size, sh->total, sh->writable,
			      &sh->addr);
	if (ret == -EINVAL && at) {
		ret = ortmem__err_invalid(p->tier, sh->total,
			"share ops '%s' refused the range at %#" PRIx64 " (%" PRIu64 " bytes): it must be aligned (host: to the page size) and lie wholly in address space the caller reserved (host: an anonymous PROT_NONE mapping); nothing was mapped",
			p->ops.name ? p->ops.name : "(unnamed)", at, sh->total);
		pthread_mutex_unlock(&gov->lock);
		goto err_lease;
	}
	if (ret) {
		ret = ortmem__err_alloc_failed(ret, p->tier, sh->total,
			"share ops '%s' could not map the prefix: %s",
			p->ops.name ? p->ops.name : "(unnamed)",
			ortmem_last_error() ? ortmem_last_error_message() :
					      ortmem_strerror(ret));
		pthread_mutex_unlock(&gov->lock);
		goto err_lease;
	}
	ortmem__claim_locked(gov, h, gov->reg.prefix_auth, 0);
	atomic_store(&gov->slots[handle_idx(h.id)].share, (uint64_t)(uintptr_t)sh);
	p->sharers++;
	gov->reg.sharers[p->tier]++;
	pthread_mutex_unlock(&gov->lock);
	*hp = h;
	if (addrp)
		*addrp = (void *)(uintptr_t)sh->addr;
	return 0;
err_lease:
	ortmem_gov_release(gov, h, 0);
err_free:
	free(sh);
	return ret;
}

ORTMEM_API int ortmem_prefix_bind(struct ortmem_prefix *p, uint64_t tail,
				  struct ortmem_handle *hp, void **addrp)
{
	return prefix_bind((struct gov_prefix *)p, tail, 0, hp, addrp);
}

ORTMEM_API int ortmem_prefix_bind_at(struct ortmem_prefix *p, uint64_t tail,
				     void *addr, struct ortmem_handle *hp)
{
	if (!addr)
		return ortmem__err_invalid(-1, tail,
			"addr is NULL; pass the start of a range you reserved, or use ortmem_prefix_bind()");
	return prefix_bind((struct gov_prefix *)p, tail,
			   (uint64_t)(uintptr_t)addr, hp, NULL);
}

ORTMEM_API int ortmem_prefix_unbind(struct ortmem_gov *gov,
				    struct ortmem_handle h)
{
	struct gov_sharer *sh;
	struct gov_prefix *p;
	uint32_t idx;
	uint64_t w;
	int ret;

	ret = ortmem__gov_enter(gov, NULL, h, &idx, &w);
	if (ret)
		return ret;
	sh = (void *)(uintptr_t)atomic_load(&gov->slots[idx].share);
	if (!sh)
		return ortmem__err_invalid(-1, 0,
			"handle %#" PRIx64 " does not map a shared prefix; release it with ortmem_gov_release()",
			h.id);
	/* Only the release that wins frees the sharer; a second unbind, or
	 * one while an owned view pins it, is refused here. */
	ret = ortmem_gov_release_as(gov, h, gov->reg.prefix_auth, 0);
	if (ret)
		return ret;
	p = sh->p;
	pthread_mutex_lock(&gov->lock);
	/* Unless a new sharer took the slot already (then it is its own). */
	atomic_compare_exchange_strong(&gov->slots[idx].share,
				       &(uint64_t){ (uint64_t)(uintptr_t)sh }, 0);
	ret = sharer_unmap(sh);
	if (ret)
		pr_err("unmapping a sharer of a prefix: %s", ortmem_strerror(ret));
	p->sharers--;
	gov->reg.sharers[p->tier]--;
	if (!p->sharers && p->owner_released)
		prefix_destroy_locked(gov, p, true);
	pthread_mutex_unlock(&gov->lock);
	prefix_reap(gov);
	free(sh);
	return 0;
}

ORTMEM_API int ortmem_prefix_ranges(struct ortmem_gov *gov,
				    struct ortmem_handle h,
				    struct ortmem_commit_range *out, size_t max)
{
	struct ortmem_commit_range r[2];
	struct gov_sharer *sh;
	uint32_t idx;
	int ret, n;

	if (!gov || (!out && max))
		return ortmem__err_invalid(-1, 0, "%s", !gov ? "gov is NULL" :
					   "out is NULL but max is not 0");
	/* The pin keeps the sharer from being unbound while we read it. */
	ret = ortmem__hold(gov, h, &idx);
	if (ret)
		return ret;
	memset(r, 0, sizeof(r));
	sh = (void *)(uintptr_t)atomic_load(&gov->slots[idx].share);
	if (sh) {
		r[0].len = sh->plen;
		r[0].shared = 1;
		r[0].writable = sh->writable;
		r[1].offset = sh->plen;
		r[1].len = sh->total - sh->plen;
		r[1].writable = 1;
		n = 2;
	} else {
		r[0].len = atomic_load(&gov->slots[idx].size);
		r[0].writable = 1;
		n = 1;
	}
	ortmem__unpin_at(gov, h, idx, atomic_load(&gov->slots[idx].word));
	if (max)
		memcpy(out, r, sizeof(r[0]) * (max < (size_t)n ? max : (size_t)n));
	return n;
}
