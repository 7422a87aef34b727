/* SPDX-License-Identifier: MIT */
/*
 * lib/host/host_internal.h - the host tier's backends behind one small
 * vtable.  Never installed.
 */
#ifndef ORTMEM_LIB_HOST_INTERNAL_H
#define ORTMEM_LIB_HOST_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <ortmem/host.h>

struct ortmem__dev;

/* One live buffer. */
struct ortmem__host_buf {
	void *ptr;
	uint64_t size;		/* page-rounded */
	uint32_t handle;	/* module region handle; 0 with mlock */
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
};

extern const struct ortmem__host_ops ortmem__host_module_ops;
extern const struct ortmem__host_ops ortmem__host_mlock_ops;

#endif /* ORTMEM_LIB_HOST_INTERNAL_H */
