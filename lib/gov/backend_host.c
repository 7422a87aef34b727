// SPDX-License-Identifier: MIT
/*
 * The "host" backend: the host tier of a governor on pinned host RAM
 * (ortmem_host_*: the /dev/ortmem module, or the mmap + mlock fallback).
 * Its context is a struct ortmem_host the caller opened and still owns (the
 * governor never closes it).  A buffer's bh is its address, so ptr is a
 * cast.  With a spill handle set on the host allocator, demotion and
 * promotion happen in place (ortmem_host_demote()): the address stays;
 * without one they copy through it to and from a lower tier.
 */
#include <errno.h>

#include <ortmem/governor.h>
#include <ortmem/host.h>

static uint32_t host_caps(void *ctx)
{
	uint32_t caps = ORTMEM_BACKEND_CAP_HOST_POINTER;

	/* The module's regions are mappings another process or a device
	 * can share; the fallback's anonymous memory is not. */
	if (ortmem_host_backend(ctx) == ORTMEM_HOST_BACKEND_MODULE)
		caps |= ORTMEM_BACKEND_CAP_SHARED_MAPPING;
	if (ortmem_host_spill_mode(ctx) == ORTMEM_HOST_SPILL_MAP)
		caps |= ORTMEM_BACKEND_CAP_FAULT_BACK;
	return caps;
}

/* In place, through the host allocator's spill handle (ortmem_host_demote). */
static int host_demote(void *ctx, uint64_t bh, uint64_t size)
{
	(void)size;
	if (ortmem_host_spill_mode(ctx) == ORTMEM_HOST_SPILL_NONE)
		return -EOPNOTSUPP;
	return ortmem_host_demote(ctx, (void *)(uintptr_t)bh);
}

static int host_promote(void *ctx, uint64_t bh, uint64_t size)
{
	(void)size;
	return ortmem_host_promote(ctx, (void *)(uintptr_t)bh);
}

static int host_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	void *p;
	int ret;

	ret = ortmem_host_alloc(ctx, size, -1, &p);
	if (ret)
		return ret;
	*bhp = (uintptr_t)p;
	return 0;
}

/* A buffer is freed whole or not at all. */
static int host_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	int ret = ortmem_host_free(ctx, (void *)(uintptr_t)bh);

	*freedp = ret ? 0 : size;
	return ret;
}

static void *host_ptr(void *ctx, uint64_t bh)
{
	(void)ctx;
	return (void *)(uintptr_t)bh;
}

static const struct ortmem_backend_ops host_ops = {
	.sz = sizeof(struct ortmem_backend_ops),
	.name = "host",
	/* ortmem_host_open(3): any number of threads at once. */
	.flags = ORTMEM_BACKEND_CONCURRENT,
	.caps = host_caps,
	.alloc = host_alloc,
	.free = host_free,
	.ptr = host_ptr,
	.demote = host_demote,
	.promote = host_promote,
};

ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_host(void)
{
	return &host_ops;
}
