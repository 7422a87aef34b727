// SPDX-License-Identifier: MIT
/*
 * The "device" backend: a governor's device tier on a struct ortmem_device
 * the caller opened and still owns.  bh is the device address.  Demotion
 * reads and promotion writes through the handle's streams; a release while
 * one of those copies still runs is deferred by the governor (busy), and a
 * caller's own GPU work is waited for with ortmem_device_release_after().
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"
#include "device_internal.h"

static uint32_t device_caps(void *ctx)
{
	struct ortmem_device *dev = ctx;

	return dev->granularity && !atomic_load(&dev->lost) ?
	       ORTMEM_BACKEND_CAP_VIRTUAL : 0;
}

static int device_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	return ortmem_device_alloc(ctx, size, 0, bhp);
}

static int device_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	int ret = ortmem_device_free(ctx, bh);

	*freedp = ret ? 0 : size;
	return ret;
}

/* The GPU address: what ortmem_gov_pin() gives a runtime on this tier. */
static void *device_ptr(void *ctx, uint64_t bh)
{
	(void)ctx;
	return (void *)(uintptr_t)bh;
}

static int device_write(void *ctx, uint64_t bh, const void *src, uint64_t len)
{
	return ortmem_device_copy_to(ctx, bh, src, len, NULL);
}

static int device_read(void *ctx, uint64_t bh, void *dst, uint64_t len)
{
	return ortmem_device_copy_from(ctx, dst, bh, len, NULL);
}

static int device_busy(void *ctx, uint64_t bh)
{
	struct ortmem_device *dev = ctx;
	struct dev_alloc *a;
	int ret;

	pthread_mutex_lock(&dev->lock);
	a = ortmem__dev_find_locked(dev, bh);
	pthread_mutex_unlock(&dev->lock);
	if (!a)
		return 0;
	ret = ortmem__alloc_busy(dev, a);
	return ret;
}

/*
 * The governor reads file-backed bytes bound for this tier into this: in
 * huge pages where the kernel has them (fewer pages to pin), registered
 * with the GPU, so the copy on is DMA at the bus's rate.
 */
static void *device_staging_alloc(void *ctx, uint64_t size)
{
	void *p;

	if (size > SIZE_MAX)
		return NULL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_HUGEPAGE);
	if (ortmem_device_register(ctx, p, size)) {
		munmap(p, size);
		return NULL;
	}
	return p;
}

static void device_staging_free(void *ctx, void *p, uint64_t size)
{
	ortmem_device_unregister(ctx, p);
	munmap(p, size);
}

/* A governor's tier holds the handle: its context outlives the tier. */
static void device_attach(void *ctx)
{
	if (ctx)
		ortmem__device_get(ctx);
}

static void device_detach(void *ctx)
{
	if (ctx)
		ortmem__device_put(ctx);
}

static const struct ortmem_backend_ops device_ops = {
	.sz = sizeof(struct ortmem_backend_ops),
	.name = "device",
	/* ortmem_device_open(3): any call from any thread. */
	.flags = ORTMEM_BACKEND_CONCURRENT,
	.caps = device_caps,
	.alloc = device_alloc,
	.free = device_free,
	.ptr = device_ptr,
	.write = device_write,
	.read = device_read,
	.busy = device_busy,
	.staging_alloc = device_staging_alloc,
	.staging_free = device_staging_free,
	.close = device_detach,
	.attach = device_attach,
};

ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_device(void)
{
	return &device_ops;
}
