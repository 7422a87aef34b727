// SPDX-License-Identifier: MIT
/*
 * Shared prefixes on the device: one physical handle (cuMemCreate) mapped
 * at several device addresses (cuMemMap), so sequences that share a prompt
 * read its KV blocks from the same memory without a copy.  A sharer's
 * range is reserved whole (cuMemAddressReserve); the prefix is mapped at
 * its start, with read-only access unless the owner made it writable
 * (cuMemSetAccess), and a private handle after it, released at once after
 * mapping (the mapping keeps it, and the unmap frees it).  Each handle's
 * budget counts the prefix once and each tail once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <ortmem/binding.h>

#include "internal.h"
#include "device_internal.h"

static uint64_t share_round(struct ortmem_device *dev, uint64_t n)
{
	uint64_t g = dev->granularity;

	return (n + g - 1) / g * g;
}

static int share_enter(struct ortmem_device *dev, uint64_t size)
{
	int ret = ortmem__dev_enter(dev, "map a shared prefix");

	if (ret)
		return ret;
	if (!dev->granularity)
		return ortmem__err_plain(-EOPNOTSUPP,
			"GPU %d (%s) has no virtual backing, which shared prefixes need (one physical handle at several addresses)",
			dev->ordinal, dev->name);
	if (size > UINT64_MAX / 2)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, size,
					   "size %" PRIu64 " overflows", size);
	return 0;
}

/* Let copies reach [@p, +@span), all of it mapped (copy.c checks). */
static int share_track(struct ortmem_device *dev, uint64_t p, uint64_t span)
{
	struct dev_alloc *a = calloc(1, sizeof(*a));
	uint64_t i, n = span / dev->granularity;

	if (a)
		a->granules = calloc(n, sizeof(*a->granules));
	if (!a || !a->granules) {
		free(a);
		return ortmem__err_plain(-ENOMEM,
			"cannot track a shared prefix's mapping of %" PRIu64 " bytes",
			span);
	}
	for (i = 0; i < n; i++)
		a->granules[i] = 1;	/* mapped; the handles are share.c's */
	a->dptr = p;
	a->size = span;
	a->mapped = span;
	a->is_virtual = true;
	a->is_shared = true;
	ortmem__mem_track(dev, a);
	return 0;
}

/* Copies of ours that use [@p, ...) are waited for, then it is forgotten. */
static void share_untrack(struct ortmem_device *dev, uint64_t p)
{
	struct dev_alloc *a = ortmem__mem_untrack(dev, p);

	if (a)
		ortmem__mem_release(dev, a);
}

/* Map @len bytes of @h at @at with @flags access. */
static int share_map_at(struct ortmem_device *dev, uint64_t at, uint64_t len,
			CUmemGenericAllocationHandle h, int flags)
{
	CUmemAccessDesc acc = {
		.location = { CU_MEM_LOCATION_TYPE_DEVICE, dev->cudev },
		.flags = flags,
	};
	CUresult res = dev->cu->cuMemMap(at, len, 0, h, 0);

	if (res)
		return ortmem__cu_fail(dev, "cuMemMap", res, len);
	res = dev->cu->cuMemSetAccess(at, len, &acc, 1);
	if (res) {
		dev->cu->cuMemUnmap(at, len);
		return ortmem__cu_fail(dev, "cuMemSetAccess", res, len);
	}
	return 0;
}

static int share_create_handle(struct ortmem_device *dev, uint64_t len,
			       CUmemGenericAllocationHandle *hp)
{
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { CU_MEM_LOCATION_TYPE_DEVICE, dev->cudev },
	};
	CUresult res;
	int ret = ortmem__mem_charge(dev, len);

	if (ret)
		return ret;
	res = dev->cu->cuMemCreate(hp, len, &prop, 0);
	if (!res)
		return 0;
	ortmem__mem_uncharge(dev, len);
	return ortmem__cu_fail(dev, "cuMemCreate", res, len);
}

static int share_create(void *ctx, uint64_t size, uint64_t *physp,
			uint64_t *addrp)
{
	struct ortmem_device *dev = ctx;
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr p = 0;
	CUresult res;
	int ret = share_enter(dev, size);

	if (ret)
		return ret;
	if (size % dev->granularity)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, size,
			"a device prefix of %" PRIu64 " bytes: it must be a multiple of GPU %d's granularity (%" PRIu64 "); round it up",
			size, dev->ordinal, dev->granularity);
	ret = share_create_handle(dev, size, &h);
	if (ret)
		return ret;
	res = dev->cu->cuMemAddressReserve(&p, size, dev->granularity, 0, 0);
	if (res) {
		ret = ortmem__cu_fail(dev, "cuMemAddressReserve", res, size);
		goto err_handle;
	}
	ret = share_map_at(dev, p, size, h, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	if (ret) {
		dev->cu->cuMemAddressFree(p, size);
		goto err_handle;
	}
	ret = share_track(dev, p, size);
	if (ret) {
		dev->cu->cuMemUnmap(p, size);
		dev->cu->cuMemAddressFree(p, size);
		goto err_handle;
	}
	*physp = h;
	*addrp = p;
	return 0;
err_handle:
	dev->cu->cuMemRelease(h);
	ortmem__mem_uncharge(dev, size);
	return ret;
}

static int share_map(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
		     int writable, uint64_t *addrp)
{
	struct ortmem_device *dev = ctx;
	CUmemGenericAllocationHandle tail = 0;
	uint64_t span, tlen;
	CUdeviceptr p = 0;
	CUresult res;
	int ret = share_enter(dev, total);

	if (ret)
		return ret;
	span = share_round(dev, total);
	tlen = span - plen;
	res = dev->cu->cuMemAddressReserve(&p, span, dev->granularity, 0, 0);
	if (res)
		return ortmem__cu_fail(dev, "cuMemAddressReserve", res, span);
	ret = share_map_at(dev, p, plen, phys, writable ?
			   CU_MEM_ACCESS_FLAGS_PROT_READWRITE :
			   CU_MEM_ACCESS_FLAGS_PROT_READ);
	if (ret)
		goto err_range;
	ret = share_create_handle(dev, tlen, &tail);
	if (ret)
		goto err_prefix;
	ret = share_map_at(dev, p + plen, tlen, tail,
			   CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	/* Mapped or not, the range holds it from here. */
	dev->cu->cuMemRelease(tail);
	if (ret) {
		ortmem__mem_uncharge(dev, tlen);
		goto err_prefix;
	}
	ret = share_track(dev, p, span);
	if (ret) {
		ortmem__mem_uncharge(dev, tlen);
		dev->cu->cuMemUnmap(p + plen, tlen);
		goto err_prefix;
	}
	*addrp = p;
	return 0;
err_prefix:
	dev->cu->cuMemUnmap(p, plen);
err_range:
	dev->cu->cuMemAddressFree(p, span);
	return ret;
}

static int share_unmap(void *ctx, uint64_t addr, uint64_t plen,
		       uint64_t total)
{
	struct ortmem_device *dev = ctx;
	uint64_t span = share_round(dev, total);
	CUresult res;
	int ret = ortmem__dev_enter(dev, "unmap a shared prefix");

	if (ret)
		return ret;
	share_untrack(dev, addr);
	ortmem__mem_uncharge(dev, span - plen);
	/* Each mapping is unmapped whole, as the driver asks. */
	res = dev->cu->cuMemUnmap(addr, plen);
	if (!res)
		res = dev->cu->cuMemUnmap(addr + plen, span - plen);
	if (!res)
		res = dev->cu->cuMemAddressFree(addr, span);
	return res ? ortmem__cu_fail(dev, "cuMemUnmap", res, span) : 0;
}

static void share_destroy(void *ctx, uint64_t phys, uint64_t addr,
			  uint64_t size)
{
	struct ortmem_device *dev = ctx;

	share_untrack(dev, addr);
	ortmem__mem_uncharge(dev, size);
	if (ortmem__dev_enter(dev, "free a shared prefix"))
		return;
	dev->cu->cuMemUnmap(addr, size);
	dev->cu->cuMemAddressFree(addr, size);
	dev->cu->cuMemRelease(phys);
}

/* A prefix holds the handle: its context and memory outlive the prefix
 * and its sharers, even when ortmem_device_close() comes first. */
static void share_attach(void *ctx)
{
	struct ortmem_device *dev = ctx;

	if (!dev)
		return;
	atomic_fetch_add(&dev->prefix_refs, 1);
	ortmem__device_get(dev);
}

static void share_detach(void *ctx)
{
	struct ortmem_device *dev = ctx;

	if (!dev)
		return;
	atomic_fetch_sub(&dev->prefix_refs, 1);
	ortmem__device_put(dev);
}

static const struct ortmem_share_ops device_share_ops = {
	.sz = sizeof(struct ortmem_share_ops),
	.name = "cuMemMap",
	.create = share_create,
	.map = share_map,
	.unmap = share_unmap,
	.destroy = share_destroy,
	.attach = share_attach,
	.detach = share_detach,
};

ORTMEM_API const struct ortmem_share_ops *ortmem_device_share_ops(void)
{
	return &device_share_ops;
}
