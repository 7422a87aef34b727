/* SPDX-License-Identifier: MIT */
/*
 * ortmem/governor.h - allocator backends, bindings, deferred release and the
 * governor: per-tier budgets, leases per role, reclaim, demotion/promotion.
 *
 * Thread safety: every function here may be called from any thread on the
 * same governor at the same time, except ortmem_gov_close() and
 * ortmem_gov_set_backend(), which the caller must not race with any other
 * call on that governor.  Reserve, release, pin and unpin of resident
 * allocations take no lock (per-thread budget credit and slot cache);
 * the slow paths (reclaim, demotion, promotion, deferred release,
 * quarantine) serialise on one mutex per governor, which is released while
 * a backend allocates or a demotion or promotion copies bytes.  Backend
 * hooks run with or without it, one at a time per tier unless the backend
 * says ORTMEM_BACKEND_CONCURRENT, and must not call back into the governor.  Reclaim callbacks are called with no governor lock
 * held and may call any function here except ortmem_gov_close().
 */
#ifndef ORTMEM_GOVERNOR_H
#define ORTMEM_GOVERNOR_H

#include <ortmem/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ortmem_gov;

/*
 * A binding: the identity of one lease or allocation.  It carries a slot
 * index, a tag of the governor that issued it and the slot's generation, so
 * a handle used after its release (stale) or made up (forged) is refused
 * with -ORTMEM_E_STALE_HANDLE and never reaches another allocation.  A
 * handle of another governor, open or closed, is refused the same way,
 * however many governors the process opens.  The all-zero handle is never
 * valid.
 */
struct ortmem_handle {
	uint64_t id;
};

/* ===================================================================
 * Allocator backends
 * =================================================================== */

/* Optional capabilities, discovered at run time through ops->caps(). */
/* ptr() returns a CPU address of the bytes (host RAM, a mapping). */
#define ORTMEM_BACKEND_CAP_HOST_POINTER (1u << 0)
/* Virtual backing: address space reserved first, physical memory mapped
 * into it later (cuMemCreate/cuMemMap). */
#define ORTMEM_BACKEND_CAP_VIRTUAL (1u << 1)
/* The memory can be shared with another process or device mapping. */
#define ORTMEM_BACKEND_CAP_SHARED_MAPPING (1u << 2)
/* An allocation demoted in place (the demote hook) stays usable through
 * its address: a touch brings its bytes back (the module's spill mapping).
 * Without it, an allocation demoted in place must be promoted before use. */
#define ORTMEM_BACKEND_CAP_FAULT_BACK (1u << 3)
#define ORTMEM_BACKEND_CAP_ALL (ORTMEM_BACKEND_CAP_HOST_POINTER | \
				ORTMEM_BACKEND_CAP_VIRTUAL | \
				ORTMEM_BACKEND_CAP_SHARED_MAPPING | \
				ORTMEM_BACKEND_CAP_FAULT_BACK)

/*
 * One tier's allocator.  A backend names its allocations with a 64-bit
 * value of its own (a pointer, an extent number): "bh" below.  Every hook
 * gets the ctx given to ortmem_gov_set_backend() and returns 0 or -errno;
 * a backend may explain a failure by leaving a detailed error (any failing
 * libortmem call does), which the governor keeps as the reason.
 *
 * Required: free, and one way to create allocations (alloc or store).
 * Data movement (demotion, promotion) uses, on the source, ptr (with
 * HOST_POINTER) or read; on the destination, store, or alloc followed by
 * ptr or write.  A tier lacking both is never a source or destination.
 */
struct ortmem_backend_ops {
	size_t sz;		/* sizeof(struct ortmem_backend_ops) */
	const char *name;	/* shown in statistics and errors */
	/* ORTMEM_BACKEND_CAP_* this instance has now; NULL means none. */
	uint32_t (*caps)(void *ctx);
	/* Allocate @size bytes (contents undefined). */
	int (*alloc)(void *ctx, uint64_t size, uint64_t *bhp);
	/*
	 * Release @bh (@size bytes).  On failure set *@freedp to the bytes that
	 * were released anyway (0..size); @bh must stay valid for a later
	 * free of the rest, which is called with the residual size.
	 */
	int (*free)(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp);
	/* Address of @bh, as ortmem_gov_pin() returns it: a CPU address
	 * with ORTMEM_BACKEND_CAP_HOST_POINTER (then required), else the
	 * tier's own (the device tier's: the GPU address). */
	void *(*ptr)(void *ctx, uint64_t bh);
	/* Create an allocation holding @len bytes copied from @src. */
	int (*store)(void *ctx, const void *src, uint64_t len, uint64_t *bhp);
	/* Copy @len bytes from @src into @bh / from @bh into @dst. */
	int (*write)(void *ctx, uint64_t bh, const void *src, uint64_t len);
	int (*read)(void *ctx, uint64_t bh, void *dst, uint64_t len);
	/* > 0 while an operation of the backend still uses @bh (in-flight
	 * I/O), 0 when idle, -errno when that cannot be known. */
	int (*busy)(void *ctx, uint64_t bh);
	/* Called when the backend stops being the tier's: by
	 * ortmem_gov_close() after the last free, and (since 0.2) by
	 * ortmem_gov_set_backend() when another backend (or NULL) replaces
	 * it.  The pair of attach below. */
	void (*close)(void *ctx);
	/*
	 * Optional: demote @bh in place, to the backend's own disk tier,
	 * giving its RAM back while ptr(@bh) stays the same; -EOPNOTSUPP lets
	 * the governor copy it to a lower tier instead.  promote brings it
	 * back (required with demote).  The governor gives the tier's budget
	 * back at demote and charges it again at promote.
	 */
	int (*demote)(void *ctx, uint64_t bh, uint64_t size);
	int (*promote)(void *ctx, uint64_t bh, uint64_t size);
	/*
	 * Optional, together: page-aligned host memory that write() copies
	 * from fastest (the device tier's is pinned and registered with the
	 * GPU, so a copy is DMA rather than the driver's staging), or NULL.
	 * The governor reads file-backed bytes into it on their way to a
	 * tier without host pointers, and keeps a spare between promotions.
	 * Both may run from any thread, without the governor's lock.
	 */
	void *(*staging_alloc)(void *ctx, uint64_t size);
	void (*staging_free)(void *ctx, void *p, uint64_t size);
	/* ORTMEM_BACKEND_* below; 0 (or a struct without the field): the
	 * governor calls this backend's hooks one at a time.  64 bits, so
	 * the struct ends with no padding that a copy could leave dirty. */
	uint64_t flags;
	/*
	 * Optional (added in 0.2): called by ortmem_gov_set_backend() when
	 * the backend becomes the tier's, before any other hook; close() is
	 * called once for each attach.  The device backend takes a reference
	 * to its handle here, so that the handle's CUDA context, streams and
	 * memory outlive every tier that uses them, whatever the order of
	 * ortmem_device_close() and ortmem_gov_close().
	 */
	void (*attach)(void *ctx);
};
/* Its last field: the library checks a caller's struct for fields it does
 * not know from the end of this one (update it with the struct). */
#define ortmem_backend_ops__last_field attach

/*
 * The backend's hooks (alloc, free, store, read, write, busy, demote,
 * promote) may run on several threads at once, on different allocations.
 * Without it the governor holds a lock of the tier around each hook.
 */
#define ORTMEM_BACKEND_CONCURRENT ((uint64_t)1 << 0)
#define ORTMEM_BACKEND_FLAGS_ALL ORTMEM_BACKEND_CONCURRENT

/**
 * ortmem_backend_heap() - The "heap" backend: plain process memory.
 *
 * Allocations come from malloc (below 1 MiB) or anonymous mmap; no pinning,
 * no device.  Capabilities: HOST_POINTER.  For tests and for runtimes without
 * the kernel module.  Its ctx is unused (pass NULL).
 *
 * Return: the ops, static, never NULL.
 */
ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_heap(void);

/*
 * The host tier on pinned host RAM (ortmem_host_open(), <ortmem/host.h>):
 * pass a struct ortmem_host * as the ctx of ortmem_gov_set_backend().  The
 * caller keeps owning the host allocator and closes it after
 * ortmem_gov_close().  Capabilities: HOST_POINTER, plus SHARED_MAPPING
 * while the allocator uses the kernel module.
 */
ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_host(void);

/*
 * The disk tier on the spill engine: pass a struct ortmem_spill * as the
 * ctx of ortmem_gov_set_backend().  The caller keeps owning the spill
 * handle and closes it after ortmem_gov_close().
 */
ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_spill(void);

/* ===================================================================
 * Governor
 * =================================================================== */

struct ortmem_gov_opts {
	size_t sz;
	/* Budget of each tier in bytes, at most 2^62; 0 closes the tier. */
	uint64_t limit[ORTMEM_TIER_COUNT];
	/* Device bytes left to the driver (contexts, cuBLAS workspaces): the
	 * device tier grants at most limit - driver_reserve. */
	uint64_t driver_reserve;
	/* Most live handles at once; 0 means 65536, at most 1 << 24. */
	uint32_t max_handles;
	uint32_t flags;		/* ORTMEM_GOV_* below; others must be 0 */
	/* Folder of the published statistics file (see ortmem_gov_scan());
	 * NULL: $ORTMEM_RUN_DIR, else /run/ortmem when writable, else
	 * $XDG_RUNTIME_DIR/ortmem. */
	const char *run_dir;
	/* Name shown by ortmem-stat (NULL: the program's name); at most
	 * ORTMEM_GOV_NAME_MAX - 1 bytes are kept. */
	const char *name;
};
/* Its last field: the library checks a caller's struct for fields it does
 * not know from the end of this one (update it with the struct). */
#define ortmem_gov_opts__last_field name

/* ortmem_gov_opts.flags: publish no statistics file for this governor. */
#define ORTMEM_GOV_NO_PUBLISH (1u << 0)

/* ortmem_gov_alloc() flags. */
/* The allocation may be demoted to a lower tier to make room. */
#define ORTMEM_ALLOC_MOVABLE (1u << 0)

/* ortmem_gov_release() flags. */
/* Pinned: release when the last pin goes instead of refusing. */
#define ORTMEM_RELEASE_DEFER (1u << 0)

/* ortmem_gov_pin() flags. */
/* Pin where it is; do not promote a demoted allocation first. */
#define ORTMEM_PIN_NO_PROMOTE (1u << 0)

ORTMEM_API int ortmem_gov_open(const struct ortmem_gov_opts *opts,
			       struct ortmem_gov **govp);
ORTMEM_API void ortmem_gov_close(struct ortmem_gov *gov);

ORTMEM_API int ortmem_gov_set_backend(struct ortmem_gov *gov, int tier,
				      const struct ortmem_backend_ops *ops,
				      void *ctx);
ORTMEM_API int ortmem_gov_backend_caps(struct ortmem_gov *gov, int tier);

ORTMEM_API int ortmem_gov_set_limit(struct ortmem_gov *gov, int tier,
				    uint64_t limit);
ORTMEM_API int ortmem_gov_set_driver_reserve(struct ortmem_gov *gov,
					     uint64_t bytes);

/* Leases: budget only, no memory. */
ORTMEM_API int ortmem_gov_reserve(struct ortmem_gov *gov, int tier,
				  uint32_t role, uint64_t size,
				  struct ortmem_handle *hp);
/* Allocations: a lease plus backend memory. */
ORTMEM_API int ortmem_gov_alloc(struct ortmem_gov *gov, int tier,
				uint32_t role, uint64_t size, uint32_t flags,
				struct ortmem_handle *hp);
ORTMEM_API int ortmem_gov_release(struct ortmem_gov *gov,
				  struct ortmem_handle h, uint32_t flags);
ORTMEM_API int ortmem_gov_release_after(struct ortmem_gov *gov,
					struct ortmem_handle h,
					int (*ready)(void *arg), void *arg);
ORTMEM_API int ortmem_gov_poll(struct ortmem_gov *gov);

ORTMEM_API int ortmem_gov_pin(struct ortmem_gov *gov, struct ortmem_handle h,
			      uint32_t flags, void **ptrp);
ORTMEM_API int ortmem_gov_unpin(struct ortmem_gov *gov,
				struct ortmem_handle h);
ORTMEM_API int ortmem_gov_demote(struct ortmem_gov *gov,
				 struct ortmem_handle h);

struct ortmem_wfile;

/**
 * ortmem_gov_alloc_file() - A read-only allocation backed by a file range.
 * @gov: the governor.
 * @tier: the home tier the bytes are promoted to (host or device).
 * @role: what the bytes are; normally ORTMEM_ROLE_WEIGHTS.
 * @wf: the weights file (<ortmem/wfile.h>); it must outlive the handle.
 * @off: first byte of the range in the file.
 * @len: its length, at least 1.
 * @flags: 0 (reserved).
 * @hp: receives the handle.
 *
 * The allocation starts in its file (ortmem_gov_query() says tier disk)
 * and holds no budget there.  A pin (or ortmem_gov_prefetch()) promotes
 * it: @len bytes of @tier are charged, reclaiming as any charge does, and
 * the range is read with the spill engine (io_uring, O_DIRECT) and checked
 * against the file's checksum list.  Demotion just drops the copy: the
 * bytes are never written anywhere and the file never changes.  Pinned
 * bytes are read-only by contract: writes to them are lost at the next
 * demotion.  Such an allocation is always movable.
 *
 * Return: 0; -EINVAL (NULL argument, unknown flag, bad role, @tier disk or
 * not a tier, empty range or one past the end of the file); -ENOSPC when
 * the handle table is full.  A pin's promotion fails with
 * -ORTMEM_E_CHECKSUM naming the file and the range when the bytes read do
 * not match, or with the read's errno; the allocation then stays in its
 * file and a later pin tries again.
 */
ORTMEM_API int ortmem_gov_alloc_file(struct ortmem_gov *gov, int tier,
				     uint32_t role, struct ortmem_wfile *wf,
				     uint64_t off, uint64_t len,
				     uint32_t flags, struct ortmem_handle *hp);

/**
 * ortmem_gov_prefetch() - Start promoting allocations the caller needs next.
 * @gov: the governor.
 * @hs: the handles, in the order they will be needed.
 * @n: their number, 1 to the handle table's size.
 * @flags: 0 (reserved).
 *
 * Each demoted allocation, in order, is charged to its home tier and its
 * transfer started on a worker thread, which moves it with the spill
 * engine's rings while the caller computes; a later ortmem_gov_pin()
 * waits only for what is still in flight.  What is already home or in
 * flight counts as done.  A charge may reclaim as any charge does, but
 * never evicts what a prefetch brought in and no pin has used yet, so a
 * prefetch never thrashes: it stops at the first allocation that does not
 * fit and returns how far it got.  A transfer that fails leaves the
 * allocation where it was; the next pin of it returns that failure.
 *
 * Return: the number of leading handles of @hs now home or in flight
 * (1 to @n); -ORTMEM_E_CAPACITY_UNAVAILABLE or -ORTMEM_E_TIER_EXHAUSTED
 * (with the figures) when not even the first fits; -EINVAL (NULL
 * argument, @n 0 or too large, unknown flag, a bare lease);
 * -ORTMEM_E_STALE_HANDLE for a released or forged handle; -ENOMEM, or
 * the errno of pthread_create() when the worker cannot start.
 */
ORTMEM_API int ortmem_gov_prefetch(struct ortmem_gov *gov,
				   const struct ortmem_handle *hs,
				   unsigned int n, uint32_t flags);

/* What a handle refers to now. */
struct ortmem_alloc_info {
	int tier;		/* where the bytes are */
	int home_tier;		/* where they were reserved */
	uint32_t role;
	uint32_t pins;
	uint64_t size;
	int has_memory;		/* an allocation, not a bare lease */
	int movable;
	int demote_mode;	/* enum ortmem_demote_mode; 0 when not demoted */
	int pad;
};

/* How a demoted allocation's bytes left its home tier (ortmem_alloc_info). */
enum ortmem_demote_mode {
	/* Copied to a lower tier (tier says which); its pointer changes. */
	ORTMEM_DEMOTE_COPIED = 1,
	/* In place, address kept; a touch brings the bytes back (the host
	 * tier on the module's spill mapping). */
	ORTMEM_DEMOTE_IN_PLACE_MAPPED = 2,
	/* In place, address kept but unusable until promoted (the host tier
	 * on the mlock fallback). */
	ORTMEM_DEMOTE_IN_PLACE_RELEASED = 3,
};
ORTMEM_API int ortmem_gov_query(struct ortmem_gov *gov, struct ortmem_handle h,
				struct ortmem_alloc_info *info);

/*
 * A holder that can give memory back.  Called with @want, the bytes still
 * missing on @tier; it releases what it can (with ortmem_gov_release() or
 * ortmem_gov_demote()) and returns 0, or -errno when it cannot (its
 * detailed error, if it left one, becomes the cause of the refusal).
 * Reclaim does not re-enter itself: a charge on @tier from within the
 * callback that does not fit fails with -EDEADLK.
 */
typedef int (*ortmem_reclaim_fn)(struct ortmem_gov *gov, int tier,
				 uint64_t want, void *arg);

ORTMEM_API int ortmem_gov_add_reclaim(struct ortmem_gov *gov, int tier,
				      int priority, const char *name,
				      ortmem_reclaim_fn fn, void *arg);
ORTMEM_API int ortmem_gov_remove_reclaim(struct ortmem_gov *gov, int id);
ORTMEM_API int ortmem_gov_reclaim(struct ortmem_gov *gov, int tier,
				  uint32_t role, uint64_t bytes);

/* ===================================================================
 * Quarantine
 * =================================================================== */

/* Who still owns the bytes of a quarantined allocation. */
enum ortmem_residual_owner {
	/* The backend still holds them; ortmem_gov_quarantine_retry() frees. */
	ORTMEM_OWNER_BACKEND = 1,
	/* An operation (I/O, device work) may still use them: its completion
	 * condition failed, so nobody can say when they are safe to free. */
	ORTMEM_OWNER_INFLIGHT = 2,
};

struct ortmem_quarantine_entry {
	struct ortmem_handle handle;	/* the binding the bytes belonged to */
	int tier;
	int owner;			/* enum ortmem_residual_owner */
	uint64_t size;			/* the allocation */
	uint64_t residual;		/* bytes still owned, still charged */
	int code;			/* the failure, negative */
	char backend[32];
	char reason[ORTMEM_ERROR_REASON_MAX];
};

ORTMEM_API int ortmem_gov_quarantine(struct ortmem_gov *gov,
				     struct ortmem_quarantine_entry *out,
				     size_t max);
ORTMEM_API int ortmem_gov_quarantine_retry(struct ortmem_gov *gov);

/* ===================================================================
 * Statistics (in the spirit of PyTorch's memory_stats)
 * =================================================================== */

struct ortmem_tier_stats {
	uint64_t used;		/* bytes leased (includes quarantined) */
	uint64_t limit;		/* budget as set */
	uint64_t usable;	/* limit less the driver reserve */
	uint64_t peak;		/* most bytes leased at once */
	uint64_t driver_reserve;
	uint64_t leases;	/* live leases and allocations */
	uint64_t role_bytes[4];	/* by enum ortmem_role_kind */
	uint64_t demoted_bytes;	/* moved out to a lower tier */
	uint64_t promoted_bytes;	/* moved in from a lower tier */
	uint64_t reclaim_calls;	/* reclaim callbacks called */
	uint64_t refusals;	/* reservations refused */
	uint64_t quarantined_bytes;
	uint64_t deferred;	/* releases waiting */
	uint32_t caps;		/* backend capabilities */
	char backend[32];	/* backend name, "" when none */
};

/* Asynchronous promotion (ortmem_gov_prefetch()). */
struct ortmem_prefetch_stats {
	uint64_t issued;	/* promotions started by prefetch */
	uint64_t bytes;		/* their bytes */
	uint64_t hits;		/* pins that found a prefetch done */
	uint64_t waits;		/* pins that waited for one in flight */
	uint64_t wait_ns;	/* time those pins waited */
	uint64_t misses;	/* pins that promoted synchronously */
	uint64_t refused;	/* prefetch calls refused: not one fit */
	uint64_t failed;	/* prefetches whose transfer failed */
	uint64_t inflight;	/* in flight now */
};

struct ortmem_gov_stats {
	size_t sz;		/* sizeof(struct ortmem_gov_stats) */
	struct ortmem_tier_stats tier[ORTMEM_TIER_COUNT];
	uint64_t handles_live;
	uint64_t handles_max;
	uint64_t handles_retired;	/* slots whose generation ran out */
	uint64_t pins;			/* pins held, all handles */
	uint64_t quarantined;		/* entries */
	struct ortmem_prefetch_stats prefetch;
};

ORTMEM_API int ortmem_gov_stats(struct ortmem_gov *gov,
				struct ortmem_gov_stats *st);

/*
 * Published statistics: every governor (unless ORTMEM_GOV_NO_PUBLISH) keeps
 * a small shared file gov.PID.SERIAL in its run folder up to date, with no
 * system call on the fast paths; ortmem_gov_scan() reads every live one.
 */
#define ORTMEM_GOV_NAME_MAX 64

struct ortmem_gov_tier_record {
	uint64_t used;		/* charged, including unspent thread credit */
	uint64_t limit;
	uint64_t peak;
	uint64_t demoted_bytes;
	uint64_t promoted_bytes;
	uint64_t quarantined_bytes;
	uint64_t refusals;
	uint64_t reclaim_calls;
};

/* Prefetch figures (struct ortmem_prefetch_stats), record version 2 on. */
struct ortmem_gov_prefetch_record {
	uint64_t issued;	/* promotions started by prefetch */
	uint64_t bytes;		/* their bytes */
	uint64_t hits;		/* pins that found a prefetch done */
	uint64_t waits;		/* pins that waited for one in flight */
	uint64_t wait_ns;	/* time those pins waited */
	uint64_t misses;	/* pins that promoted synchronously */
	uint64_t refused;	/* prefetch calls refused: not one fit */
	uint64_t failed;	/* prefetches whose transfer failed */
};

/* The record version this library writes; a file of an older version is
 * read too, with what it lacks zeroed (see ortmem_gov_scan(3)). */
#define ORTMEM_GOV_RECORD_VERSION 2
/* The first record version with the prefetch figures. */
#define ORTMEM_GOV_RECORD_PREFETCH 2

struct ortmem_gov_record {
	size_t sz;		/* sizeof(struct ortmem_gov_record) */
	int32_t pid;
	uint64_t serial;	/* the governor's number in its process */
	char name[ORTMEM_GOV_NAME_MAX];
	struct ortmem_gov_tier_record tier[ORTMEM_TIER_COUNT];
	/* Appended by version 2; fields are only ever appended. */
	uint32_t version;	/* of the file read (1: no prefetch figures) */
	uint32_t reserved;	/* 0 */
	struct ortmem_gov_prefetch_record prefetch;
};

typedef int (*ortmem_gov_scan_fn)(const struct ortmem_gov_record *rec,
				  void *arg);

ORTMEM_API int ortmem_gov_scan(const char *run_dir, ortmem_gov_scan_fn fn,
			       void *arg);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_GOVERNOR_H */
