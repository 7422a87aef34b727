// SPDX-License-Identifier: MIT
/*
 * Fake CUDA driver: device memory.  Every device allocation is an anonymous
 * mapping of its own (so it is apart from the host tier's memory, and a
 * use after free faults); virtual backing reserves PROT_NONE address space
 * and maps memfd "physical" handles into it, inaccessible until
 * cuMemSetAccess, as on a GPU.  One handle mapped at several addresses is
 * the same pages at each (MAP_SHARED of its memfd), as on a GPU.  Host registration is bookkeeping, with the
 * driver's refusals (overlap, unknown pointer).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake.h"

enum { RANGE_ALLOC, RANGE_RESERVE, RANGE_HOSTREG, RANGE_HOSTALLOC };

struct fake_range {
	int kind, dev;
	uintptr_t start;
	size_t len;
	struct fake_range *next;
};

struct fake_phys {
	int fd, dev;
	size_t size;
};

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_range *ranges;
static size_t used[8];

void fake_mem_init(void)
{
}

static size_t dev_total(void)
{
	return fake_mem;
}

static struct fake_range *range_find_locked(int kind, uintptr_t p, size_t len)
{
	struct fake_range *r;

	for (r = ranges; r; r = r->next)
		if (r->kind == kind && p >= r->start && len <= r->len &&
		    p - r->start <= r->len - len)
			return r;
	return NULL;
}

static bool range_overlaps_locked(int kind, uintptr_t p, size_t len)
{
	struct fake_range *r;

	for (r = ranges; r; r = r->next)
		if (r->kind == kind && p < r->start + r->len && r->start < p + len)
			return true;
	return false;
}

bool fake_host_pinned(const void *p, size_t len)
{
	bool pinned;

	pthread_mutex_lock(&mem_lock);
	pinned = range_find_locked(RANGE_HOSTREG, (uintptr_t)p, len) ||
		 range_find_locked(RANGE_HOSTALLOC, (uintptr_t)p, len);
	pthread_mutex_unlock(&mem_lock);
	return pinned;
}

static void range_add_locked(struct fake_range *r)
{
	r->next = ranges;
	ranges = r;
}

static struct fake_range *range_take_locked(int kind, uintptr_t start)
{
	struct fake_range **pp, *r;

	for (pp = &ranges; (r = *pp); pp = &r->next)
		if (r->kind == kind && r->start == start) {
			*pp = r->next;
			return r;
		}
	return NULL;
}

bool fake_dev_range(int dev, CUdeviceptr p, size_t len)
{
	struct fake_range *r;

	pthread_mutex_lock(&mem_lock);
	r = range_find_locked(RANGE_ALLOC, (uintptr_t)p, len);
	if (!r)
		r = range_find_locked(RANGE_RESERVE, (uintptr_t)p, len);
	pthread_mutex_unlock(&mem_lock);
	return r && r->dev == dev;
}

static CUresult charge(int dev, size_t len)
{
	CUresult res = 0;

	pthread_mutex_lock(&mem_lock);
	if (len > dev_total() - used[dev])
		res = CUDA_ERROR_OUT_OF_MEMORY;
	else
		used[dev] += len;
	pthread_mutex_unlock(&mem_lock);
	return res;
}

static void uncharge(int dev, size_t len)
{
	pthread_mutex_lock(&mem_lock);
	used[dev] -= len;
	pthread_mutex_unlock(&mem_lock);
}

FAKE_API CUresult cuMemGetInfo_v2(size_t *freeb, size_t *total)
{
	struct CUctx_st *ctx;
	CUresult res = fake_enter("cuMemGetInfo", NULL);

	if (res || (res = fake_ctx_check(&ctx)))
		return res;
	pthread_mutex_lock(&mem_lock);
	*total = dev_total();
	*freeb = *total - used[ctx->dev];
	pthread_mutex_unlock(&mem_lock);
	return 0;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t len)
{
	struct fake_range *r;
	struct CUctx_st *ctx;
	CUresult res = fake_enter("cuMemAlloc", NULL);
	void *p;

	if (res || (res = fake_ctx_check(&ctx)))
		return res;
	if (!dptr || !len)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = charge(ctx->dev, len)))
		return res;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	r = calloc(1, sizeof(*r));
	if (p == MAP_FAILED || !r) {
		if (p != MAP_FAILED)
			munmap(p, len);
		free(r);
		uncharge(ctx->dev, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*r = (struct fake_range){ RANGE_ALLOC, ctx->dev, (uintptr_t)p, len, NULL };
	pthread_mutex_lock(&mem_lock);
	range_add_locked(r);
	pthread_mutex_unlock(&mem_lock);
	*dptr = (uintptr_t)p;
	return 0;
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct fake_range *r;
	struct CUctx_st *ctx;
	CUresult res = fake_enter("cuMemFree", NULL);

	if (res || (res = fake_ctx_check(&ctx)))
		return res;
	pthread_mutex_lock(&mem_lock);
	r = range_take_locked(RANGE_ALLOC, (uintptr_t)dptr);
	pthread_mutex_unlock(&mem_lock);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)r->start, r->len);
	uncharge(r->dev, r->len);
	free(r);
	return 0;
}

/* ---- virtual backing ---- */

FAKE_API CUresult cuMemGetAllocationGranularity(size_t *g,
		const CUmemAllocationProp *prop, int option)
{
	CUresult res = fake_enter("cuMemGetAllocationGranularity", NULL);

	if (res)
		return res;
	if (!g || !prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= fake_ndev ||
	    option < 0 || option > 1)
		return CUDA_ERROR_INVALID_VALUE;
	*g = fake_granularity;
	return 0;
}

FAKE_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
				      size_t align, CUdeviceptr addr,
				      unsigned long long flags)
{
	struct fake_range *r;
	struct CUctx_st *ctx;
	CUresult res = fake_enter("cuMemAddressReserve", NULL);
	uintptr_t p, a;
	size_t extra;

	if (res || (res = fake_ctx_check(&ctx)))
		return res;
	if (!ptr || !size || size % fake_granularity || addr || flags ||
	    (align & (align - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < fake_granularity)
		align = fake_granularity;
	extra = size + align;
	p = (uintptr_t)mmap(NULL, extra, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((void *)p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = (p + align - 1) & ~(uintptr_t)(align - 1);
	if (a > p)
		munmap((void *)p, a - p);
	if (p + extra > a + size)
		munmap((void *)(a + size), p + extra - (a + size));
	r = calloc(1, sizeof(*r));
	if (!r) {
		munmap((void *)a, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*r = (struct fake_range){ RANGE_RESERVE, ctx->dev, a, size, NULL };
	pthread_mutex_lock(&mem_lock);
	range_add_locked(r);
	pthread_mutex_unlock(&mem_lock);
	*ptr = a;
	return 0;
}

FAKE_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct fake_range *r;
	CUresult res = fake_enter("cuMemAddressFree", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	pthread_mutex_lock(&mem_lock);
	r = range_take_locked(RANGE_RESERVE, (uintptr_t)ptr);
	if (r && r->len != size) {
		range_add_locked(r);
		r = NULL;
	}
	pthread_mutex_unlock(&mem_lock);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)r->start, r->len);
	free(r);
	return 0;
}

FAKE_API CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t size,
			      const CUmemAllocationProp *prop,
			      unsigned long long flags)
{
	struct fake_phys *ph;
	CUresult res = fake_enter("cuMemCreate", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!h || !prop || !size || size % fake_granularity || flags ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= fake_ndev)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = charge(prop->location.id, size)))
		return res;
	ph = calloc(1, sizeof(*ph));
	if (ph)
		ph->fd = memfd_create("fakecuda-phys", MFD_CLOEXEC);
	if (!ph || ph->fd < 0 || ftruncate(ph->fd, (off_t)size)) {
		if (ph && ph->fd >= 0)
			close(ph->fd);
		free(ph);
		uncharge(prop->location.id, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ph->dev = prop->location.id;
	ph->size = size;
	*h = (uintptr_t)ph;
	return 0;
}

FAKE_API CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	struct fake_phys *ph = (struct fake_phys *)(uintptr_t)h;
	CUresult res = fake_enter("cuMemRelease", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	/* A mapping keeps the pages, as the driver keeps them until unmap. */
	close(ph->fd);
	uncharge(ph->dev, ph->size);
	free(ph);
	return 0;
}

FAKE_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			   CUmemGenericAllocationHandle h,
			   unsigned long long flags)
{
	struct fake_phys *ph = (struct fake_phys *)(uintptr_t)h;
	CUresult res = fake_enter("cuMemMap", NULL);
	bool ok;

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	pthread_mutex_lock(&mem_lock);
	ok = range_find_locked(RANGE_RESERVE, (uintptr_t)ptr, size) != NULL;
	pthread_mutex_unlock(&mem_lock);
	if (!ok || !ph || flags || offset || size != ph->size ||
	    ptr % fake_granularity)
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED,
		 ph->fd, 0) == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return 0;
}

FAKE_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult res = fake_enter("cuMemUnmap", NULL);
	bool ok;

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	pthread_mutex_lock(&mem_lock);
	ok = range_find_locked(RANGE_RESERVE, (uintptr_t)ptr, size) != NULL;
	pthread_mutex_unlock(&mem_lock);
	if (!ok || ptr % fake_granularity || size % fake_granularity)
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
		 0) == MAP_FAILED)
		return CUDA_ERROR_UNKNOWN;
	return 0;
}

FAKE_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
				 const CUmemAccessDesc *desc, size_t count)
{
	CUresult res = fake_enter("cuMemSetAccess", NULL);
	bool ok;

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	pthread_mutex_lock(&mem_lock);
	ok = range_find_locked(RANGE_RESERVE, (uintptr_t)ptr, size) != NULL;
	pthread_mutex_unlock(&mem_lock);
	if (!ok || !desc || count != 1 ||
	    desc->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    (desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE &&
	     desc->flags != CU_MEM_ACCESS_FLAGS_PROT_READ))
		return CUDA_ERROR_INVALID_VALUE;
	/* Read-only access, as a kernel's store to it would fault. */
	if (mprotect((void *)(uintptr_t)ptr, size,
		     desc->flags == CU_MEM_ACCESS_FLAGS_PROT_READ ? PROT_READ :
		     PROT_READ | PROT_WRITE))
		return CUDA_ERROR_INVALID_VALUE;
	return 0;
}

/* ---- host memory ---- */

static CUresult host_add(int kind, void *p, size_t len)
{
	struct fake_range *r = calloc(1, sizeof(*r));
	CUresult res = 0;

	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*r = (struct fake_range){ kind, -1, (uintptr_t)p, len, NULL };
	pthread_mutex_lock(&mem_lock);
	if (range_overlaps_locked(RANGE_HOSTREG, (uintptr_t)p, len) ||
	    range_overlaps_locked(RANGE_HOSTALLOC, (uintptr_t)p, len))
		res = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	else
		range_add_locked(r);
	pthread_mutex_unlock(&mem_lock);
	if (res)
		free(r);
	return res;
}

FAKE_API CUresult cuMemHostRegister_v2(void *p, size_t len, unsigned int flags)
{
	CUresult res = fake_enter("cuMemHostRegister", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!p || !len || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	/* The driver pins the pages: they must be there. */
	if (msync((void *)((uintptr_t)p & ~4095ul),
		  len + ((uintptr_t)p & 4095), MS_ASYNC))
		return CUDA_ERROR_INVALID_VALUE;
	return host_add(RANGE_HOSTREG, p, len);
}

FAKE_API CUresult cuMemHostUnregister(void *p)
{
	struct fake_range *r;
	CUresult res = fake_enter("cuMemHostUnregister", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	pthread_mutex_lock(&mem_lock);
	r = range_take_locked(RANGE_HOSTREG, (uintptr_t)p);
	pthread_mutex_unlock(&mem_lock);
	if (!r)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	free(r);
	return 0;
}

FAKE_API CUresult cuMemHostAlloc(void **pp, size_t len, unsigned int flags)
{
	CUresult res = fake_enter("cuMemHostAlloc", NULL);
	void *p;

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!pp || !len || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	res = host_add(RANGE_HOSTALLOC, p, len);
	if (res) {
		munmap(p, len);
		return res;
	}
	*pp = p;
	return 0;
}

FAKE_API CUresult cuMemFreeHost(void *p)
{
	struct fake_range *r;
	CUresult res = fake_enter("cuMemFreeHost", NULL);

	if (res)
		return res;
	pthread_mutex_lock(&mem_lock);
	r = range_take_locked(RANGE_HOSTALLOC, (uintptr_t)p);
	pthread_mutex_unlock(&mem_lock);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)r->start, r->len);
	free(r);
	return 0;
}
