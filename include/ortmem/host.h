/* SPDX-License-Identifier: MIT */
/*
 * ortmem/host.h - the host tier: pinned host RAM.
 *
 * A host allocator hands out page-aligned, zeroed, pinned (never swapped)
 * buffers.  It uses the /dev/ortmem kernel module when it is loaded (found
 * with libudev, version handshake on open) and falls back to mmap + mlock
 * when it is not, saying so once through the log callback.  Either way the
 * memory is usable for O_DIRECT and io_uring I/O and for cuMemHostRegister().
 *
 * Environment:
 *  - ORTMEM_HOST_BACKEND=auto|module|mlock: "mlock" forces the fallback,
 *    "module" makes ortmem_host_open() fail when the module is missing;
 *    unset or "auto" tries the module first.
 *  - ORTMEM_DEVICE=/path: the device node to open instead of the one libudev
 *    finds (for tests and containers).
 *
 * Fork: buffers are not inherited by a child process (the module sets
 * VM_DONTCOPY, the fallback MADV_DONTFORK); a child must not use a host
 * object of its parent, only open its own.
 *
 * Thread safety: one struct ortmem_host may be used from any number of
 * threads at once; every call on it is serialised inside.
 */
#ifndef ORTMEM_HOST_H
#define ORTMEM_HOST_H

#include <ortmem/core.h>
#include <ortmem/spill.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ortmem_host;

/* Backends, as ortmem_host_backend() reports them. */
enum ortmem_host_backend {
	ORTMEM_HOST_BACKEND_MODULE = 1,	/* /dev/ortmem regions */
	ORTMEM_HOST_BACKEND_MLOCK = 2,	/* anonymous mmap + mlock */
};

/* ortmem_host_opts.flags */
#define ORTMEM_HOST_REQUIRE_MODULE (1u << 0)	/* fail (-ENODEV) without the module */
#define ORTMEM_HOST_FORCE_MLOCK	   (1u << 1)	/* never use the module */
#define ORTMEM_HOST_FLAGS (ORTMEM_HOST_REQUIRE_MODULE | ORTMEM_HOST_FORCE_MLOCK)

/*
 * Options of ortmem_host_open(); declare with ORTMEM_OPTS(ortmem_host_opts,
 * o, ...).  NULL means all defaults.
 */
struct ortmem_host_opts {
	size_t sz;
	uint32_t flags;		/* ORTMEM_HOST_* */
	uint32_t pad;		/* must be 0 */
	/* Device node to open instead of the one libudev finds; NULL: find it. */
	const char *device;
};
/* Its last field: the library checks a caller's struct for fields it does
 * not know from the end of this one (update it with the struct). */
#define ortmem_host_opts__last_field device

/**
 * ortmem_host_open() - Open a host-tier allocator.
 * @opts: options, or NULL for defaults.
 * @hostp: out: the allocator; set only on success.
 *
 * Return: 0, or -EINVAL (bad options or ORTMEM_HOST_BACKEND value),
 * -ENODEV (module required but not loaded), -EACCES (module present but the
 * device node is not accessible and the module was required),
 * -ORTMEM_E_ABI_MISMATCH (module and library ABI disagree), -ENOMEM.
 */
ORTMEM_API int ortmem_host_open(const struct ortmem_host_opts *opts,
				struct ortmem_host **hostp);

/**
 * ortmem_host_close() - Free every buffer of @host and @host itself.
 * @host: the allocator, or NULL.
 */
ORTMEM_API void ortmem_host_close(struct ortmem_host *host);

/**
 * ortmem_host_alloc() - Allocate pinned, zeroed host memory.
 * @host: the allocator.
 * @size: bytes (> 0); rounded up to whole pages.
 * @numa_node: NUMA node to take the pages from, or -1 for any.
 * @ptrp: out: the page-aligned buffer; set only on success.
 *
 * Return: 0, -EINVAL (invalid request: size 0 or too large, bad node, NULL
 * pointer), or an allocation failure with the backend's reason in the
 * detailed error: -ENOMEM (out of memory or over RLIMIT_MEMLOCK), -ENOSPC
 * (over the module's max_pinned_mb cap), -EPERM (mlock not permitted).
 */
ORTMEM_API int ortmem_host_alloc(struct ortmem_host *host, uint64_t size,
				 int numa_node, void **ptrp);

/**
 * ortmem_host_free() - Free a buffer from ortmem_host_alloc().
 * @host: the allocator.
 * @ptr: the buffer, exactly as returned.
 *
 * Return: 0, or -EINVAL when @ptr is not a live buffer of @host (nothing is
 * freed then).
 */
ORTMEM_API int ortmem_host_free(struct ortmem_host *host, void *ptr);

/**
 * ortmem_host_backend() - Which backend @host uses.
 * @host: the allocator.
 *
 * Return: ORTMEM_HOST_BACKEND_MODULE or ORTMEM_HOST_BACKEND_MLOCK, or
 * -EINVAL when @host is NULL.
 */
ORTMEM_API int ortmem_host_backend(const struct ortmem_host *host);

/**
 * ortmem_host_backend_name() - "module" or "mlock".
 * @backend: an enum ortmem_host_backend value.
 *
 * Return: the name, or NULL when @backend is not a backend.
 */
ORTMEM_API const char *ortmem_host_backend_name(int backend);

/*
 * Demotion to disk (ortmem_host_demote()), as ortmem_host_stats() reports
 * it in spill_mode.
 */
enum ortmem_host_spill_mode {
	/* No spill handle set (ortmem_host_set_spill()): no demotion. */
	ORTMEM_HOST_SPILL_NONE = 0,
	/* The module's spill mapping: the RAM goes back, the address stays
	 * valid, a touch brings the bytes back (verified); promote ahead of
	 * use for speed. */
	ORTMEM_HOST_SPILL_MAP = 1,
	/* The mlock fallback: the bytes are written out and the memory
	 * released; the address stays reserved but is inaccessible (SIGSEGV)
	 * until ortmem_host_promote(). */
	ORTMEM_HOST_SPILL_RELEASE = 2,
};

/**
 * ortmem_host_set_spill() - Give the allocator a disk tier to demote to.
 * @host: the allocator.
 * @spill: a spill handle (ortmem_spill_open()) the caller keeps owning and
 *	closes after @host; NULL to stop demoting (refused while a buffer is
 *	demoted).
 *
 * Return: 0, -EINVAL (NULL @host), -EBUSY (a buffer is demoted).
 */
ORTMEM_API int ortmem_host_set_spill(struct ortmem_host *host,
				     struct ortmem_spill *spill);

/**
 * ortmem_host_spill_mode() - How ortmem_host_demote() works on @host now.
 * @host: the allocator.
 *
 * Return: an enum ortmem_host_spill_mode value, or -EINVAL for NULL.
 */
ORTMEM_API int ortmem_host_spill_mode(const struct ortmem_host *host);

/**
 * ortmem_host_demote() - Write a buffer to disk and give its RAM back.
 * @host: the allocator, with a spill handle set.
 * @ptr: a live buffer, exactly as returned by ortmem_host_alloc().
 *
 * The spill engine writes the bytes to a new extent; with the module
 * (ORTMEM_HOST_SPILL_MAP) the module then evicts the buffer's pages: the
 * address stays valid and any touch brings its page back, verified.
 * Without it (ORTMEM_HOST_SPILL_RELEASE) the memory is released and the
 * address made inaccessible until ortmem_host_promote().  The buffer keeps
 * its address either way.  On failure the buffer is unchanged and resident.
 *
 * Return: 0; -EINVAL (not a live buffer); -EALREADY (demoted already);
 * -EOPNOTSUPP (no spill handle, or a module without the spill mapping);
 * -EBUSY (the module found a page pinned by I/O in flight or a device
 * registration); the spill engine's errors (-ORTMEM_E_TIER_EXHAUSTED,
 * -ENOSPC, -EIO).
 */
ORTMEM_API int ortmem_host_demote(struct ortmem_host *host, void *ptr);

/**
 * ortmem_host_promote() - Bring a demoted buffer back into RAM.
 * @host: the allocator.
 * @ptr: a live buffer.
 *
 * With the module: pages still evicted come back with one io_uring read of
 * the spill engine (module restore without fill) or, when some were faulted
 * back already, with the module's verified restore; bytes written since a
 * fault-back are kept.  Without it: the memory is mapped and locked again
 * and read back.  The extent is freed.  A buffer not demoted is left alone.
 *
 * Return: 0; -EINVAL (not a live buffer); -ORTMEM_E_CHECKSUM or -EBADMSG
 * (the extent changed on disk: the buffer stays demoted, and a touch with
 * the module gets SIGBUS, never wrong bytes); -ENOMEM/-ENOSPC (no room to
 * pin it); -EIO.
 */
ORTMEM_API int ortmem_host_promote(struct ortmem_host *host, void *ptr);

/* Usage of a host allocator and, with the module, of the whole module. */
struct ortmem_host_stats {
	size_t sz;
	int backend;			/* enum ortmem_host_backend */
	uint32_t pad;
	uint64_t bytes;			/* this allocator's live bytes */
	uint64_t buffers;		/* this allocator's live buffers */
	/* Module-wide figures from sysfs; 0 with the mlock backend. */
	uint64_t module_pinned_bytes;
	uint64_t module_max_pinned_bytes;
	uint64_t module_regions;
	uint64_t module_outstanding_pages;
	uint32_t module_abi_version;
	uint32_t pad2;
	/* Demotion: enum ortmem_host_spill_mode, and this allocator's bytes
	 * demoted now. */
	int spill_mode;
	uint32_t pad3;
	uint64_t demoted_bytes;
	/* Module-wide spill mapping (sysfs spill/); 0 without the module. */
	uint64_t module_evicted_bytes;
	uint64_t module_fault_backs;
	uint64_t module_failed_fault_backs;
	/* This tier's buffers as io_uring fixed buffers of its spill handle
	 * (added in 0.2): ORTMEM_SPILL_FIXED_ON or _OFF, _NONE without a
	 * spill handle; when OFF, why, a positive errno as
	 * ortmem_spill_stats() gives it; and how many of this tier's buffers
	 * are registered now.  ortmem_spill_stats() sums over the tiers. */
	uint32_t fixed_host;
	int32_t fixed_error;
	uint64_t fixed_buffers;
};

/**
 * ortmem_host_stats() - Read usage figures.
 * @host: the allocator.
 * @stats: out: filled up to @stats->sz, which the caller sets.
 *
 * Return: 0, or -EINVAL (NULL argument, or @stats->sz too small), or -EIO
 * when the module's sysfs attributes cannot be read.
 */
ORTMEM_API int ortmem_host_stats(const struct ortmem_host *host,
				 struct ortmem_host_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_HOST_H */
