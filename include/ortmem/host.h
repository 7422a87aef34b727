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
