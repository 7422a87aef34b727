/* SPDX-License-Identifier: MIT */
/*
 * lib/host/host_internal.h - the host tier inside libortmem: its backends
 * behind one small vtable, and /dev/ortmem (ioctl wrappers, discovery,
 * open and handshake).  Never installed.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   host_sys.c     one wrapper per ioctl and mmap, returning -errno
 *   host_dev.c     finding /dev/ortmem with libudev, open, handshake
 *   host_module.c  the backend on the module: one region per buffer
 *   host_mlock.c   the fallback backend: anonymous mmap + mlock
 *   host_fixed.c   buffers as io_uring fixed buffers of the spill engine,
 *                  where the kernel's probe says it takes them
 *   host_spill.c   demotion to the spill engine keeping the address (the
 *                  module's spill mapping, or write-out and release), and
 *                  the order of the buffer tree both it and host.c search
 *   host.c         the public API: backend choice, live buffers, checks
 */
#ifndef ORTMEM_LIB_HOST_INTERNAL_H
#define ORTMEM_LIB_HOST_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ortmem/host.h>
#include <ortmem/spill.h>
#include <uapi/linux/ortmem.h>

#include "internal.h"	/* struct ortmem__fixed_user */

/* ---- host_sys.c: one wrapper per command; 0 or -errno, never errno ---- */

int ortmem__sys_get_version(int fd, struct ortmem_version_args *args);
int ortmem__sys_alloc(int fd, struct ortmem_alloc_args *args);
int ortmem__sys_free(int fd, uint32_t handle);
/* mmap of a region: 0 and *addrp, or -errno. */
int ortmem__sys_map(int fd, uint64_t len, uint64_t offset, void **addrp);
int ortmem__sys_unmap(void *addr, uint64_t len);
/* The spill mapping (ORTMEM_FEAT_SPILL_MAP); UNBIND and RESTORE by cmd. */
int ortmem__sys_bind(int fd, struct ortmem_bind_args *args);
int ortmem__sys_range(int fd, unsigned long cmd, uint32_t handle,
		      uint64_t off, uint64_t len, uint32_t flags);
int ortmem__sys_evict(int fd, struct ortmem_evict_args *args);
int ortmem__sys_spill_stats(int fd, struct ortmem_spill_stats_args *args);

/*
 * The module's promotion of a buffer larger than this brings its pages
 * back (RESTORE without fill) this many bytes at a time, the next piece
 * while the engine's reads of the last are in flight; one of this size or
 * less comes back in one piece and is read by the fixed-buffer path where
 * the kernel has it.  4 MiB: measured (Documentation/kmod/spill-map.rst,
 * "When to use which path").  bench/kmod/spillbench.c mirrors it.
 */
#define ORTMEM__PROMOTE_STEP (4ull << 20)

/* ---- host_dev.c ---- */

struct ortmem__dev {
	int fd;
	char node[PATH_MAX];		/* e.g. /dev/ortmem */
	char syspath[PATH_MAX];		/* sysfs folder; "" when unknown */
	struct ortmem_version_args version;
};

/*
 * ortmem__dev_open() - Find /dev/ortmem (libudev, or @node when not NULL,
 * or $ORTMEM_DEVICE), open it and run the version handshake.
 *
 * Return: 0, -ENODEV (no module), -EACCES/-EPERM (node not accessible),
 * -ORTMEM_E_ABI_MISMATCH, -ENOMEM; the detailed error says which and why.
 */
int ortmem__dev_open(const char *node, struct ortmem__dev **devp);
void ortmem__dev_close(struct ortmem__dev *dev);

/* Read a numeric sysfs attribute of the device: 0 or -errno. */
int ortmem__dev_attr(const struct ortmem__dev *dev, const char *name,
		     uint64_t *val);

/* ---- the backends (host_module.c, host_mlock.c) and host.c ---- */

/* One live buffer. */
struct ortmem__host_buf {
	void *ptr;
	uint64_t size;		/* page-rounded */
	uint32_t handle;	/* module region handle; 0 with mlock */
	bool demoted;		/* its bytes are in @extent (host_spill.c) */
	uint64_t extent;	/* spill extent while demoted */
	bool fixed;		/* registered with the spill engine's rings */
	bool unregistered;	/* since the last EVICT: its unpin may lag */
};

struct ortmem__fixed;

struct ortmem__host_ops {
	int backend;
	/* Fill b->ptr (and b->handle) for b->size bytes; 0 or a detailed error. */
	int (*alloc)(struct ortmem_host *host, struct ortmem__host_buf *b,
		     int numa_node);
	/* Give the buffer back; 0 or -errno (logged, the buffer is gone). */
	int (*free)(struct ortmem_host *host, struct ortmem__host_buf *b);
};

struct ortmem_host {
	pthread_mutex_t lock;
	const struct ortmem__host_ops *ops;
	struct ortmem__dev *dev;	/* module backend only */
	void *bufs;			/* tsearch tree of struct ortmem__host_buf */
	uint64_t bytes;
	uint64_t nbufs;
	long page_size;
	struct ortmem_spill *spill;	/* where demoted buffers go; not owned */
	uint64_t demoted_bytes;
	struct ortmem__fixed *fixed;	/* the spill's registry, a reference */
	bool fixed_on;			/* the probe said yes: register */
	struct ortmem__fixed_user fixed_user;	/* joined while @fixed is set */
	struct ortmem_host *next_open;	/* host.c's list of open allocators */
};

/* host_fixed.c, host lock held: attach to @spill's rings (NULL: detach),
 * probing the kernel once per backend; register or unregister one buffer. */
void ortmem__host_fixed_attach(struct ortmem_host *host, struct ortmem_spill *spill);
void ortmem__host_fixed_detach(struct ortmem_host *host);
void ortmem__host_fixed_add(struct ortmem_host *host, struct ortmem__host_buf *b);
void ortmem__host_fixed_del(struct ortmem_host *host, struct ortmem__host_buf *b);
/* This tier's fixed-buffer path, why not, and its buffers registered now
 * (NONE, 0, 0 without a spill handle). */
void ortmem__host_fixed_stats(struct ortmem_host *host, uint32_t *state,
			      int32_t *err, uint64_t *buffers);

/* host_spill.c: order of the buffer tree (by address). */
int ortmem__host_buf_cmp(const void *a, const void *b);
/* host_spill.c: free a demoted buffer's extent (host lock held). */
void ortmem__host_drop_extent(struct ortmem_host *host,
			      struct ortmem__host_buf *b);
/* host_spill.c: the demotion mode of @host (enum ortmem_host_spill_mode). */
int ortmem__host_spill_mode(const struct ortmem_host *host);

/*
 * host.c: whether [addr, addr + len) overlaps a live buffer of any open
 * host allocator of this process; the first found in *@hit (a copy).  For
 * a caller handing a range over as its own reservation (a demoted
 * buffer of the mlock fallback is anonymous PROT_NONE, as one is).
 * Takes each allocator's lock: call it without one held.
 */
bool ortmem__host_owned(uint64_t addr, uint64_t len,
			struct ortmem__host_buf *hit);

extern const struct ortmem__host_ops ortmem__host_module_ops;
extern const struct ortmem__host_ops ortmem__host_mlock_ops;
#endif /* ORTMEM_LIB_HOST_INTERNAL_H */
