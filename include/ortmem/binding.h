/* SPDX-License-Identifier: MIT */
/*
 * ortmem/binding.h - the contracts around a binding: who may release it
 * (authorities), what execution-provider context it depends on (provider
 * contexts), validated views into it, the registry of allocator
 * mechanisms, and shared prefixes (KV-cache prefix sharing).
 *
 * Documentation/lib/contracts.rst maps each name of the original seed to
 * the construct here.  Thread safety: as <ortmem/governor.h>, and
 * ortmem_gov_drain() like ortmem_gov_close(); registering, claiming and
 * the prefix calls serialise on the governor's mutex; checking a view
 * takes no lock (it pins and unpins, or reads under its own pin).
 */
#ifndef ORTMEM_BINDING_H
#define ORTMEM_BINDING_H

#include <ortmem/core.h>
#include <ortmem/governor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================
 * Authorities and provider contexts
 * =================================================================== */

/* Most authorities, and provider contexts, registered at once. */
#define ORTMEM_REGISTRY_MAX 64
#define ORTMEM_REGISTRY_NAME_MAX 32

/* An authority is the component allowed to release a binding.  0 is the
 * application itself: every binding has it until claimed. */
ORTMEM_API int ortmem_gov_authority_register(struct ortmem_gov *gov,
					     const char *name,
					     uint32_t *authp);
ORTMEM_API int ortmem_gov_authority_unregister(struct ortmem_gov *gov,
					       uint32_t auth);
/* Record @auth (0: keep the application) and provider context @ctx (0:
 * none) with binding @h, once. */
ORTMEM_API int ortmem_gov_claim(struct ortmem_gov *gov, struct ortmem_handle h,
				uint32_t auth, uint32_t ctx);
/* ortmem_gov_release() on behalf of authority @auth. */
ORTMEM_API int ortmem_gov_release_as(struct ortmem_gov *gov,
				     struct ortmem_handle h, uint32_t auth,
				     uint32_t flags);

/* A provider context (a CUDA context and its streams, say). */
ORTMEM_API int ortmem_gov_context_register(struct ortmem_gov *gov,
					   const char *name, uint32_t *ctxp);
ORTMEM_API int ortmem_gov_context_unregister(struct ortmem_gov *gov,
					     uint32_t ctx);

/* What still holds a provider context (ortmem_gov_context_holds()). */
struct ortmem_context_holds {
	uint64_t bindings;	/* live bindings claimed under it */
	uint64_t views;		/* owned views of those */
	uint64_t deferred;	/* releases queued or waiting for a pin */
	uint64_t quarantined;	/* failed releases still owning bytes */
	struct ortmem_handle first;	/* one holding binding, 0 if none */
};
ORTMEM_API int ortmem_gov_context_holds(struct ortmem_gov *gov, uint32_t ctx,
					struct ortmem_context_holds *out);

/* ===================================================================
 * Views
 * =================================================================== */

/* ortmem_view_make() flags */
/* Owned: the view pins the binding, which stays alive and in place (a
 * release is refused, or deferred with ORTMEM_RELEASE_DEFER). */
#define ORTMEM_VIEW_OWNED (1u << 0)
/* The view's user writes through it. */
#define ORTMEM_VIEW_WRITE (1u << 1)
#define ORTMEM_VIEW_FLAGS (ORTMEM_VIEW_OWNED | ORTMEM_VIEW_WRITE)

/* An offset and length inside a binding, as kernels and I/O are given. */
struct ortmem_view {
	struct ortmem_handle handle;
	uint64_t offset;
	uint64_t len;
	uint64_t base;		/* the binding's address when made */
	uint32_t flags;		/* ORTMEM_VIEW_* */
	uint32_t ctx;		/* the provider context it holds, 0: none */
	int tier;		/* where the bytes were when made */
	int pad;
};

ORTMEM_API int ortmem_view_make(struct ortmem_gov *gov, struct ortmem_handle h,
				uint64_t offset, uint64_t len, uint32_t flags,
				struct ortmem_view *v);
ORTMEM_API int ortmem_view_check(struct ortmem_gov *gov,
				 const struct ortmem_view *v, void **ptrp);
ORTMEM_API int ortmem_view_drop(struct ortmem_gov *gov, struct ortmem_view *v);

/* ===================================================================
 * The registry of mechanisms (one per tier's backend)
 * =================================================================== */

enum ortmem_mech_lifecycle {
	ORTMEM_MECH_ABSENT = 0,		/* no backend set */
	ORTMEM_MECH_REGISTERED = 1,	/* set, nothing allocated yet */
	ORTMEM_MECH_ACTIVE = 2,		/* has allocated */
	ORTMEM_MECH_DRAINING = 3,	/* ortmem_gov_drain() frees what it holds */
	ORTMEM_MECH_RETIRED = 4,	/* drained; allocates no more */
};

enum ortmem_mech_coherence {
	ORTMEM_COHERENCE_NONE = 0,
	/* The CPU reads and writes the bytes (HOST_POINTER). */
	ORTMEM_COHERENCE_HOST = 1,
	/* Only the device reaches them (a GPU address). */
	ORTMEM_COHERENCE_DEVICE_ONLY = 2,
	/* Several mappings may see the same bytes (SHARED_MAPPING). */
	ORTMEM_COHERENCE_SHARED = 3,
};

/* A mechanism's snapshot, for the statistics. */
struct ortmem_mechanism {
	uint64_t id;		/* governor serial << 8 | tier + 1 */
	int tier;
	int lifecycle;		/* enum ortmem_mech_lifecycle */
	int coherence;		/* enum ortmem_mech_coherence */
	uint32_t caps;		/* ORTMEM_BACKEND_CAP_* */
	char name[32];
	uint64_t used;		/* bytes charged to the tier */
	uint64_t shared_bytes;	/* of which shared prefixes (charged once) */
	uint64_t private_bytes;	/* used - shared_bytes */
	uint64_t bindings;	/* live bindings */
	uint64_t prefixes;	/* live shared prefixes */
	uint64_t sharers;	/* bindings mapping one */
	uint64_t deferred;	/* releases waiting */
	uint64_t quarantined_bytes;
};

ORTMEM_API int ortmem_gov_mechanisms(struct ortmem_gov *gov,
				     struct ortmem_mechanism *out, size_t max);
ORTMEM_API int ortmem_gov_drain(struct ortmem_gov *gov,
				struct ortmem_mechanism *out, size_t max);

/* ===================================================================
 * Shared prefixes over committed ranges
 * =================================================================== */

struct ortmem_prefix;

/*
 * How a tier maps one physical range at several addresses.  NULL in
 * ortmem_prefix_create() means the built-in shared mapping (a memfd) for
 * the host tier; the device tier's is ortmem_device_share_ops().  Every
 * hook returns 0 or -errno.
 */
struct ortmem_share_ops {
	size_t sz;
	const char *name;
	/* Create @size bytes of physical memory (*@physp) and map it,
	 * writable, for its owner (*@addrp). */
	int (*create)(void *ctx, uint64_t size, uint64_t *physp,
		      uint64_t *addrp);
	/* Reserve @total bytes of address space and commit them: the first
	 * @plen mapped from @phys (writable only when @writable), the rest
	 * private memory.  *@addrp: the start. */
	int (*map)(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
		   int writable, uint64_t *addrp);
	/* Undo one map. */
	int (*unmap)(void *ctx, uint64_t addr, uint64_t plen, uint64_t total);
	/* Unmap the owner's mapping and free the physical memory. */
	void (*destroy)(void *ctx, uint64_t phys, uint64_t addr,
			uint64_t size);
	/* Optional, together (added in 0.2): as map, but into [@addr,
	 * @addr + @total), address space the caller reserved itself
	 * (ortmem_prefix_bind_at()); -EINVAL when it is not such a range.
	 * unmap_at undoes one, leaving the range reserved as it was. */
	int (*map_at)(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
		      int writable, uint64_t addr);
	int (*unmap_at)(void *ctx, uint64_t addr, uint64_t plen,
			uint64_t total);
	/* Optional, together (added in 0.2): attach is called by
	 * ortmem_prefix_create() before create, detach once the prefix is
	 * gone (after destroy, or when the create fails).  The device's ops
	 * take a reference to the handle here, so that its CUDA context and
	 * memory outlive the prefix and its sharers, whatever the order of
	 * ortmem_device_close() and the prefix's release.  detach runs
	 * without the governor's lock, as attach and create do (it may end
	 * the ctx, and call the governor); map, map_at, unmap, unmap_at
	 * and destroy run under it. */
	void (*attach)(void *ctx);
	void (*detach)(void *ctx);
};
#define ortmem_share_ops__last_field detach

/* ortmem_prefix_create() flags */
/* Sharers map the prefix writable too (the owner allows it). */
#define ORTMEM_PREFIX_WRITABLE (1u << 0)

/* A committed range of a binding's address space. */
struct ortmem_commit_range {
	uint64_t offset;
	uint64_t len;
	uint32_t shared;	/* mapped from a shared prefix */
	uint32_t writable;
};

/* A prefix's commit info. */
struct ortmem_prefix_info {
	int tier;
	uint32_t flags;		/* ORTMEM_PREFIX_* */
	uint64_t size;		/* bytes, charged once to the tier */
	uint64_t sharers;	/* bindings mapping it now */
	uint64_t owner_addr;	/* the owner's mapping; 0 once released */
	int owner_released;
	int pad;
	struct ortmem_handle owner;	/* the lease that carries the charge */
};

ORTMEM_API int ortmem_prefix_create(struct ortmem_gov *gov, int tier,
				    uint32_t role, uint64_t size,
				    uint32_t flags,
				    const struct ortmem_share_ops *ops,
				    void *ctx, struct ortmem_prefix **pp,
				    void **addrp);
ORTMEM_API int ortmem_prefix_release(struct ortmem_prefix *p);
ORTMEM_API int ortmem_prefix_info(struct ortmem_prefix *p,
				  struct ortmem_prefix_info *info);
ORTMEM_API int ortmem_prefix_bind(struct ortmem_prefix *p, uint64_t tail,
				  struct ortmem_handle *hp, void **addrp);
/*
 * As ortmem_prefix_bind(), but into [@addr, @addr + size + @tail), which
 * the caller reserved and keeps owning: on the host tier an anonymous
 * PROT_NONE mapping (mmap(NULL, len, PROT_NONE, MAP_PRIVATE |
 * MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)), page-aligned.  Unbinding gives
 * the range back reserved, not unmapped.
 */
ORTMEM_API int ortmem_prefix_bind_at(struct ortmem_prefix *p, uint64_t tail,
				     void *addr, struct ortmem_handle *hp);
ORTMEM_API int ortmem_prefix_unbind(struct ortmem_gov *gov,
				    struct ortmem_handle h);
ORTMEM_API int ortmem_prefix_ranges(struct ortmem_gov *gov,
				    struct ortmem_handle h,
				    struct ortmem_commit_range *out,
				    size_t max);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_BINDING_H */
