// SPDX-License-Identifier: MIT
/*
 * The "heap" backend: process memory from malloc (small) or anonymous mmap
 * (1 MiB and up).  No pinning and no device; for tests and for runtimes
 * without the kernel module.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <ortmem/governor.h>

#define HEAP_MMAP_MIN (1ull << 20)

static uint32_t heap_caps(void *ctx)
{
	(void)ctx;
	return ORTMEM_BACKEND_CAP_HOST_POINTER;
}

static int heap_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	void *p;

	(void)ctx;
	if (size > SIZE_MAX)
		return -ENOMEM;
	if (size < HEAP_MMAP_MIN) {
		p = malloc(size);
		if (!p)
			return -ENOMEM;
	} else {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
	}
	*bhp = (uintptr_t)p;
	return 0;
}

static int heap_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	(void)ctx;
	if (size < HEAP_MMAP_MIN) {
		free((void *)(uintptr_t)bh);
	} else if (munmap((void *)(uintptr_t)bh, size)) {
		*freedp = 0;
		return -errno;
	}
	*freedp = size;
	return 0;
}

static void *heap_ptr(void *ctx, uint64_t bh)
{
	(void)ctx;
	return (void *)(uintptr_t)bh;
}

static const struct ortmem_backend_ops heap_ops = {
	.sz = sizeof(struct ortmem_backend_ops),
	.name = "heap",
	/* malloc and mmap are thread-safe. */
	.flags = ORTMEM_BACKEND_CONCURRENT,
	.caps = heap_caps,
	.alloc = heap_alloc,
	.free = heap_free,
	.ptr = heap_ptr,
};

ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_heap(void)
{
	return &heap_ops;
}
