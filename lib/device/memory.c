// SPDX-License-Identifier: MIT
/*
 * Device memory: plain allocations (cuMemAlloc) and virtual backing, where
 * an address range is reserved first (cuMemAddressReserve) and physical
 * memory is created, mapped and given access granule by granule
 * (cuMemCreate, cuMemMap, cuMemSetAccess).  A virtual allocation grows, or
 * has part of its memory unmapped and mapped again, without a copy and
 * without its address changing, as PyTorch's expandable segments do.  The
 * handle's budget counts the bytes backed by memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "device_internal.h"

static int mem_charge_locked(struct ortmem_device *dev, uint64_t bytes)
{
	if (bytes > dev->budget || dev->used > dev->budget - bytes)
		return ortmem__err_tier_exhausted(ORTMEM_TIER_DEVICE, 0, bytes,
						  dev->used, dev->budget);
	dev->used += bytes;
	if (dev->used > dev->peak)
		dev->peak = dev->used;
	return 0;
}

static int mem_charge(struct ortmem_device *dev, uint64_t bytes)
{
	int ret;

	pthread_mutex_lock(&dev->lock);
	ret = mem_charge_locked(dev, bytes);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static void mem_uncharge(struct ortmem_device *dev, uint64_t bytes)
{
	pthread_mutex_lock(&dev->lock);
	dev->used -= bytes;
	pthread_mutex_unlock(&dev->lock);
}

int ortmem__mem_charge(struct ortmem_device *dev, uint64_t bytes)
{
	return mem_charge(dev, bytes);
}

void ortmem__mem_uncharge(struct ortmem_device *dev, uint64_t bytes)
{
	mem_uncharge(dev, bytes);
}

static int mem_reserve(struct ortmem_device *dev, struct dev_alloc *a)
{
	uint64_t g = dev->granularity;
	CUdeviceptr p = 0;
	CUresult res;

	if (!g)
		return ortmem__err_plain(-EOPNOTSUPP,
			"GPU %d (%s) has no virtual backing; allocate without ORTMEM_DEVICE_ALLOC_VIRTUAL",
			dev->ordinal, dev->name);
	if (a->size > UINT64_MAX - g)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, a->size,
					   "size %" PRIu64 " overflows", a->size);
	a->size = (a->size + g - 1) & ~(g - 1);
	if (a->size / g > SIZE_MAX / sizeof(*a->granules) ||
	    !(a->granules = calloc(a->size / g, sizeof(*a->granules))))
		return ortmem__err_plain(-ENOMEM,
			"cannot track %" PRIu64 " granules of a virtual allocation",
			a->size / g);
	res = dev->cu->cuMemAddressReserve(&p, a->size, g, 0, 0);
	if (res) {
		free(a->granules);
		return ortmem__cu_fail(dev, "cuMemAddressReserve", res, a->size);
	}
	a->dptr = p;
	return 0;
}

int ortmem__mem_alloc(struct ortmem_device *dev, uint64_t size, bool virt,
		      struct dev_alloc **ap)
{
	struct dev_alloc *a = calloc(1, sizeof(*a));
	CUdeviceptr p = 0;
	CUresult res;
	int ret;

	if (!a)
		return ortmem__err_plain(-ENOMEM, "cannot allocate a device allocation record");
	a->size = size;
	a->is_virtual = virt;
	if (virt) {
		ret = mem_reserve(dev, a);
		if (ret) {
			free(a);
			return ret;
		}
		*ap = a;
		return 0;
	}
	ret = mem_charge(dev, size);
	if (ret) {
		free(a);
		return ret;
	}
	res = dev->cu->cuMemAlloc(&p, size);
	if (res) {
		mem_uncharge(dev, size);
		free(a);
		return ortmem__cu_fail(dev, "cuMemAlloc", res, size);
	}
	a->dptr = p;
	a->mapped = size;
	*ap = a;
	return 0;
}

static int mem_unmap_granule(struct ortmem_device *dev, struct dev_alloc *a,
			     uint64_t i)
{
	uint64_t g = dev->granularity;
	CUresult res = 0;

	if (!a->granules[i])
		return 0;
	if (!atomic_load(&dev->lost)) {
		res = dev->cu->cuMemUnmap(a->dptr + i * g, g);
		if (res)
			return ortmem__cu_fail(dev, "cuMemUnmap", res, g);
		res = dev->cu->cuMemRelease(a->granules[i]);
	}
	a->granules[i] = 0;
	a->mapped -= g;
	mem_uncharge(dev, g);
	return res ? ortmem__cu_fail(dev, "cuMemRelease", res, g) : 0;
}

static int mem_map_granule(struct ortmem_device *dev, struct dev_alloc *a,
			   uint64_t i)
{
	uint64_t g = dev->granularity;
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { CU_MEM_LOCATION_TYPE_DEVICE, dev->cudev },
	};
	CUmemAccessDesc acc = {
		.location = { CU_MEM_LOCATION_TYPE_DEVICE, dev->cudev },
		.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUmemGenericAllocationHandle h = 0;
	const char *call = "cuMemCreate";
	CUresult res;
	int ret;

	if (a->granules[i])
		return 0;
	ret = mem_charge(dev, g);
	if (ret)
		return ret;
	res = dev->cu->cuMemCreate(&h, g, &prop, 0);
	if (res)
		goto fail;
	call = "cuMemMap";
	res = dev->cu->cuMemMap(a->dptr + i * g, g, 0, h, 0);
	if (res) {
		dev->cu->cuMemRelease(h);
		goto fail;
	}
	a->granules[i] = h;
	a->mapped += g;
	res = dev->cu->cuMemSetAccess(a->dptr + i * g, g, &acc, 1);
	if (!res)
		return 0;
	ret = ortmem__cu_fail(dev, "cuMemSetAccess", res, g);
	mem_unmap_granule(dev, a, i);
	return ret;
fail:
	mem_uncharge(dev, g);
	return ortmem__cu_fail(dev, call, res, g);
}

int ortmem__mem_release(struct ortmem_device *dev, struct dev_alloc *a)
{
	uint64_t i;
	CUresult res;
	int ret = 0;

	/* Our own copies that may still use it are waited for first (the
	 * record is off the list: no new copy can start on it). */
	ortmem__alloc_wait(dev, a, true);
	if (a->is_shared) {
		/* The prefix's mappings are its own (share.c): only the
		 * record that let copies reach them goes. */
		free(a->granules);
		free(a);
		return 0;
	}
	if (a->is_virtual) {
		for (i = 0; i < a->size / dev->granularity; i++)
			if (mem_unmap_granule(dev, a, i) && !ret)
				ret = ortmem_last_error()->code;
		/* A granule still mapped keeps the range: free it later. */
		if (ret)
			return ret;
		if (!atomic_load(&dev->lost) &&
		    (res = dev->cu->cuMemAddressFree(a->dptr, a->size))) {
			/* The memory is back; only address space stays. */
			ortmem__cu_fail(dev, "cuMemAddressFree", res, a->size);
			pr_err("GPU %d: the address range at %#" PRIx64 " stays reserved: %s",
			       dev->ordinal, a->dptr, ortmem_last_error_message());
		}
		free(a->granules);
	} else {
		if (!atomic_load(&dev->lost) && (res = dev->cu->cuMemFree(a->dptr))) {
			ret = ortmem__cu_fail(dev, "cuMemFree", res, a->size);
			/* Lost by this very call: the memory went with it. */
			if (!atomic_load(&dev->lost))
				return ret;
			ret = 0;
		}
		mem_uncharge(dev, a->mapped);
	}
	free(a);
	return ret;
}

ORTMEM_API int ortmem_device_alloc(struct ortmem_device *dev, uint64_t size,
				   uint32_t flags, uint64_t *dptrp)
{
	struct dev_alloc *a;
	int ret;

	if (!dev || !dptrp)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, size, "%s is NULL",
					   dev ? "dptrp" : "dev");
	if (!size || size > (1ull << 48))
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, size,
			"size %" PRIu64 " is not between 1 byte and 256 TiB", size);
	if (flags & ~ORTMEM_DEVICE_ALLOC_VIRTUAL)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, size,
			"unknown flags %#x; known: ORTMEM_DEVICE_ALLOC_VIRTUAL",
			flags & ~ORTMEM_DEVICE_ALLOC_VIRTUAL);
	ret = ortmem__dev_enter(dev, "ortmem_device_alloc");
	if (ret)
		return ret;
	ret = ortmem__mem_alloc(dev, size, flags & ORTMEM_DEVICE_ALLOC_VIRTUAL, &a);
	if (ret)
		return ret;
	pthread_mutex_lock(&dev->lock);
	a->next = dev->allocs;
	dev->allocs = a;
	dev->nallocs++;
	pthread_mutex_unlock(&dev->lock);
	*dptrp = a->dptr;
	return 0;
}

/* Take allocation @dptr (its start) off the list; NULL when unknown. */
void ortmem__mem_track(struct ortmem_device *dev, struct dev_alloc *a)
{
	pthread_mutex_lock(&dev->lock);
	a->next = dev->allocs;
	dev->allocs = a;
	dev->nallocs++;
	pthread_mutex_unlock(&dev->lock);
}

static struct dev_alloc *mem_unlink(struct ortmem_device *dev, uint64_t dptr)
{
	struct dev_alloc **pp, *a;

	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->allocs; (a = *pp); pp = &a->next)
		if (a->dptr == dptr) {
			*pp = a->next;
			dev->nallocs--;
			break;
		}
	pthread_mutex_unlock(&dev->lock);
	return a;
}

struct dev_alloc *ortmem__mem_untrack(struct ortmem_device *dev, uint64_t dptr)
{
	return mem_unlink(dev, dptr);
}

ORTMEM_API int ortmem_device_free(struct ortmem_device *dev, uint64_t dptr)
{
	struct dev_alloc *a;
	int ret;

	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "dev is NULL");
	a = mem_unlink(dev, dptr);
	if (!a)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"%#" PRIx64 " is not the start of a live allocation of GPU %d",
			dptr, dev->ordinal);
	if (a->is_shared) {
		ortmem__mem_track(dev, a);
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"%#" PRIx64 " on GPU %d is a shared prefix's mapping; release it with ortmem_prefix_release() or ortmem_prefix_unbind()",
			dptr, dev->ordinal);
	}
	if (!atomic_load(&dev->lost))
		ortmem__dev_enter(dev, "ortmem_device_free");
	ret = ortmem__mem_release(dev, a);
	if (ret) {
		/* Still ours: a later free may succeed. */
		pthread_mutex_lock(&dev->lock);
		a->next = dev->allocs;
		dev->allocs = a;
		dev->nallocs++;
		pthread_mutex_unlock(&dev->lock);
	}
	return ret;
}

/* The virtual allocation starting at @dptr and granules [*first, *end). */
static int mem_range(struct ortmem_device *dev, uint64_t dptr, uint64_t off,
		     uint64_t len, const char *what, struct dev_alloc **ap,
		     uint64_t *first, uint64_t *end)
{
	uint64_t g = dev->granularity;
	struct dev_alloc *a;

	pthread_mutex_lock(&dev->lock);
	for (a = dev->allocs; a && a->dptr != dptr; a = a->next)
		;
	pthread_mutex_unlock(&dev->lock);
	if (!a || !a->is_virtual || a->is_shared)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
			"%s: %#" PRIx64 " is not the start of a virtual allocation of GPU %d",
			what, dptr, dev->ordinal);
	if (!len || (off | len) & (g - 1) || off > a->size ||
	    len > a->size - off)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
			"%s: offset %" PRIu64 " and length %" PRIu64 " must be non-zero multiples of the granularity %" PRIu64 " within the %" PRIu64 " bytes reserved",
			what, off, len, g, a->size);
	*ap = a;
	*first = off / g;
	*end = (off + len) / g;
	return ortmem__dev_enter(dev, what);
}

/* Map granules [first, end) that are not mapped yet: all or nothing. */
static int mem_map_range(struct ortmem_device *dev, struct dev_alloc *a,
			 uint64_t first, uint64_t end)
{
	uint64_t i, j;
	bool *fresh;
	int ret = 0;

	fresh = calloc(end - first, sizeof(*fresh));
	if (!fresh)
		return ortmem__err_plain(-ENOMEM, "cannot track %" PRIu64 " granules",
					 end - first);
	for (i = first; i < end; i++) {
		if (a->granules[i])
			continue;
		ret = mem_map_granule(dev, a, i);
		if (ret)
			break;
		fresh[i - first] = true;
	}
	for (j = first; ret && j < i; j++)
		if (fresh[j - first])
			mem_unmap_granule(dev, a, j);
	free(fresh);
	return ret;
}

ORTMEM_API int ortmem_device_map(struct ortmem_device *dev, uint64_t dptr,
				 uint64_t offset, uint64_t len)
{
	uint64_t first, end;
	struct dev_alloc *a;
	int ret;

	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "dev is NULL");
	pthread_mutex_lock(&dev->vm_lock);
	ret = mem_range(dev, dptr, offset, len, "ortmem_device_map", &a,
			&first, &end);
	if (!ret)
		ret = mem_map_range(dev, a, first, end);
	pthread_mutex_unlock(&dev->vm_lock);
	return ret;
}

ORTMEM_API int ortmem_device_unmap(struct ortmem_device *dev, uint64_t dptr,
				   uint64_t offset, uint64_t len)
{
	uint64_t i, first, end;
	struct dev_alloc *a;
	int ret;

	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "dev is NULL");
	pthread_mutex_lock(&dev->vm_lock);
	ret = mem_range(dev, dptr, offset, len, "ortmem_device_unmap", &a,
			&first, &end);
	/* A copy of ours still reading or writing the range finishes first. */
	if (!ret)
		ret = ortmem__alloc_wait(dev, a, false);
	for (i = first; !ret && i < end; i++)
		ret = mem_unmap_granule(dev, a, i);
	pthread_mutex_unlock(&dev->vm_lock);
	return ret;
}
