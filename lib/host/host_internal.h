/* SPDX-License-Identifier: MIT */
/*
 * lib/host/host_internal.h - the host tier's backends behind one small
 * vtable.  Never installed.
 */
#ifndef ORTMEM_LIB_HOST_INTERNAL_H
#define ORTMEM_LIB_HOST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <ortmem/host.h>

struct ortmem__dev;
struct ortmem_spill;

/* One live buffer. */
struct ortmem__host_buf {
	void *ptr;
	uint64_t size;		/* page-rounded */
	uint32_t handle;	/* module region handle; 0 with mlock */
	bool demoted;		/* its bytes are in @extent (host_spill.c) */
	uint64_t extent;	/* spill extent while demoted */
};

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
};

/* host.c: order of the buffer tree (by address). */
int ortmem__host_buf_cmp(const void *a, const void *b);
/* host_spill.c: free a demoted buffer's extent (host lock held). */
void ortmem__host_drop_extent(struct ortmem_host *host,
			      struct ortmem__host_buf *b);
/* host_spill.c: the demotion mode of @host (enum ortmem_host_spill_mode). */
int ortmem__host_spill_mode(const struct ortmem_host *host);

extern const struct ortmem__host_ops ortmem__host_module_ops;
extern const struct ortmem__host_ops ortmem__host_mlock_ops;

#endif /* ORTMEM_LIB_HOST_INTERNAL_H */
