// SPDX-License-Identifier: MIT
/*
 * Device handles: one per GPU, holding its primary context retained while
 * open, two non-blocking streams (host->device and device->host copies, so
 * the two directions overlap), a budget and figures.  Every call that
 * reaches the driver first makes the handle's context current on the
 * calling thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "device_internal.h"

static int dev_opts_check(const struct ortmem_device_opts *opts, int ordinal,
			  struct ortmem_device **devp)
{
	int ret = ortmem__opts_valid(opts, sizeof(*opts), "ortmem_device_opts") ?:
		  ORTMEM_OPTS_WHOLE(opts, ortmem_device_opts,
			ORTMEM_OPTS_SPAN(ortmem_device_opts, flags),
			ORTMEM_OPTS_SPAN(ortmem_device_opts, pad),
			ORTMEM_OPTS_SPAN(ortmem_device_opts, budget),
			ORTMEM_OPTS_SPAN(ortmem_device_opts, bounce_bytes));

	if (ret)
		return ret;
	if (!devp)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "devp is NULL");
	if (ordinal < 0)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"GPU ordinal %d is negative; GPUs are numbered from 0",
			ordinal);
	if (ORTMEM_OPTS_GET(opts, flags, 0) & ~ORTMEM_DEVICE_FLAGS)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"unknown flags %#x in ortmem_device_opts; known: %#x",
			ORTMEM_OPTS_GET(opts, flags, 0) & ~ORTMEM_DEVICE_FLAGS,
			ORTMEM_DEVICE_FLAGS);
	if (ORTMEM_OPTS_GET(opts, pad, 0))
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"ortmem_device_opts.pad must be 0");
	if (ORTMEM_OPTS_GET(opts, bounce_bytes, 0) > (1ull << 30))
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"bounce_bytes %" PRIu64 " is over 1 GiB; pinned bounce buffers of a few MiB keep the pipeline full",
			(uint64_t)ORTMEM_OPTS_GET(opts, bounce_bytes, 0));
	return 0;
}

/* Granularity of virtual backing, or 0 where the GPU has none. */
static uint64_t dev_granularity(struct ortmem_device *dev)
{
	const struct cu_api *cu = dev->cu;
	CUmemAllocationProp prop = {
		.type = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = { CU_MEM_LOCATION_TYPE_DEVICE, dev->cudev },
	};
	size_t gran = 0;
	int vmm = 0;

	if (!cu->have_vmm || (dev->flags & ORTMEM_DEVICE_NO_VIRTUAL))
		return 0;
	if (cu->cuDeviceGetAttribute(&vmm,
			CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED,
			dev->cudev) || !vmm)
		return 0;
	if (cu->cuMemGetAllocationGranularity(&gran, &prop,
					      CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
	    !gran || (gran & (gran - 1)))
		return 0;
	return gran;
}

static int dev_setup(struct ortmem_device *dev)
{
	const struct cu_api *cu = dev->cu;
	size_t total = 0;
	CUresult res;
	int i;

	res = cu->cuDeviceGet(&dev->cudev, dev->ordinal);
	if (res)
		return ortmem__cu_fail(dev, "cuDeviceGet", res, 0);
	if (cu->cuDeviceGetName(dev->name, sizeof(dev->name), dev->cudev))
		snprintf(dev->name, sizeof(dev->name), "GPU %d", dev->ordinal);
	dev->name[sizeof(dev->name) - 1] = '\0';
	res = cu->cuDeviceTotalMem(&total, dev->cudev);
	if (res)
		return ortmem__cu_fail(dev, "cuDeviceTotalMem", res, 0);
	dev->total = total;
	res = cu->cuDevicePrimaryCtxRetain(&dev->ctx, dev->cudev);
	if (res)
		return ortmem__cu_fail(dev, "cuDevicePrimaryCtxRetain", res, 0);
	res = cu->cuCtxSetCurrent(dev->ctx);
	if (res)
		return ortmem__cu_fail(dev, "cuCtxSetCurrent", res, 0);
	for (i = 0; i < DEV_NSTREAMS; i++) {
		res = cu->cuStreamCreate(&dev->streams[i], CU_STREAM_NON_BLOCKING);
		if (res)
			return ortmem__cu_fail(dev, "cuStreamCreate", res, 0);
	}
	dev->granularity = dev_granularity(dev);
	return 0;
}

/* Undo dev_setup() and everything made since; safe on a lost device. */
static void dev_teardown(struct ortmem_device *dev)
{
	const struct cu_api *cu = dev->cu;
	bool alive = dev->ctx && !atomic_load(&dev->lost) &&
		     cu->cuCtxSetCurrent(dev->ctx) == CUDA_SUCCESS;
	int i;

	for (i = 0; alive && i < DEV_NSTREAMS; i++)
		if (dev->streams[i])
			cu->cuStreamSynchronize(dev->streams[i]);
	ortmem__stream_fini(dev);
	while (dev->allocs) {
		struct dev_alloc *a = dev->allocs;

		dev->allocs = a->next;
		if (ortmem__mem_release(dev, a)) {
			pr_err("GPU %d: closing with %#" PRIx64 " (%" PRIu64 " bytes) not freed: %s; it goes with the context",
			       dev->ordinal, a->dptr, a->size,
			       ortmem_last_error_message());
			free(a->granules);
			free(a);
		}
	}
	ortmem__regs_fini(dev);
	ortmem__events_fini(dev);
	for (i = 0; i < DEV_NSTREAMS; i++)
		if (dev->streams[i] && !atomic_load(&dev->lost))
			cu->cuStreamDestroy(dev->streams[i]);
	if (dev->ctx)
		cu->cuDevicePrimaryCtxRelease(dev->cudev);
}

ORTMEM_API int ortmem_device_open(int ordinal,
				  const struct ortmem_device_opts *opts,
				  struct ortmem_device **devp)
{
	const struct cu_api *cu;
	struct ortmem_device *dev;
	uint64_t budget;
	int ret;

	ret = dev_opts_check(opts, ordinal, devp);
	if (ret)
		return ret;
	cu = ortmem__cuda();
	if (!cu)
		return ortmem_last_error()->code;
	if (ordinal >= cu->ndevices)
		return ortmem__err_plain(-ENODEV,
			"there is no GPU %d: the driver sees %d (ordinals 0 to %d)",
			ordinal, cu->ndevices, cu->ndevices - 1);
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return ortmem__err_plain(-ENOMEM, "cannot allocate a device handle");
	dev->cu = cu;
	dev->ordinal = ordinal;
	dev->flags = ORTMEM_OPTS_GET(opts, flags, 0);
	dev->bounce_bytes = ORTMEM_OPTS_GET(opts, bounce_bytes, 0) ?: 4ull << 20;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->vm_lock, NULL);
	pthread_mutex_init(&dev->stream_lock, NULL);
	atomic_init(&dev->refs, 1);
	atomic_init(&dev->prefix_refs, 0);
	ret = dev_setup(dev);
	budget = ORTMEM_OPTS_GET(opts, budget, 0) ?: dev->total;
	if (!ret && budget > dev->total)
		ret = ortmem__err_invalid(ORTMEM_TIER_DEVICE, budget,
			"budget %" PRIu64 " is more than GPU %d's %" PRIu64 " bytes",
			budget, ordinal, dev->total);
	if (ret) {
		dev_teardown(dev);
		pthread_mutex_destroy(&dev->lock);
		pthread_mutex_destroy(&dev->vm_lock);
		pthread_mutex_destroy(&dev->stream_lock);
		free(dev);
		return ret;
	}
	dev->budget = budget;
	pr_info("GPU %d: %s, %" PRIu64 " MiB, budget %" PRIu64 " MiB, virtual backing %s",
		ordinal, dev->name, dev->total >> 20, budget >> 20,
		dev->granularity ? "on" : "off");
	*devp = dev;
	return 0;
}

void ortmem__device_get(struct ortmem_device *dev)
{
	atomic_fetch_add(&dev->refs, 1);
}

void ortmem__device_put(struct ortmem_device *dev)
{
	if (atomic_fetch_sub(&dev->refs, 1) != 1)
		return;
	dev_teardown(dev);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->vm_lock);
	pthread_mutex_destroy(&dev->stream_lock);
	free(dev);
}

/*
 * The handle's CUDA context, streams and memory are what a governor's
 * device tier and a shared prefix (ortmem_device_share_ops()) allocate
 * under: freeing them under a holder that still has memory there (or only
 * still points at the handle) is the "free after context destroy" crash.
 * So a close while tiers or prefixes hold the handle tears nothing down:
 * it says what still holds it, and the last holder to let go
 * (ortmem_gov_close(), another backend set, or the prefix's free) ends it.
 */
ORTMEM_API void ortmem_device_close(struct ortmem_device *dev)
{
	unsigned int holders, prefixes, tiers;
	uint64_t n, bytes;

	if (!dev)
		return;
	holders = atomic_load(&dev->refs) - 1;
	prefixes = atomic_load(&dev->prefix_refs);
	tiers = holders - prefixes;
	if (holders) {
		pthread_mutex_lock(&dev->lock);
		n = dev->nallocs;
		bytes = dev->used;
		pthread_mutex_unlock(&dev->lock);
		pr_warn("ortmem_device_close: GPU %d (%s) is still the device tier of %u governor%s and holds %u shared prefix%s, with %" PRIu64 " allocation%s (%" PRIu64 " bytes) on it; its context, streams and memory stay until the last of them lets go (ortmem_gov_close() or ortmem_gov_set_backend() with another backend for a tier; ortmem_prefix_release() and the last ortmem_prefix_unbind(), or its governor's close, for a prefix). Release the prefixes and close the governors first",
			dev->ordinal, dev->name, tiers, tiers == 1 ? "" : "s",
			prefixes, prefixes == 1 ? "" : "es",
			n, n == 1 ? "" : "s", bytes);
	}
	ortmem__device_put(dev);
}

ORTMEM_API int ortmem_device_granularity(struct ortmem_device *dev,
					 uint64_t *bytesp)
{
	if (!dev || !bytesp)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "%s is NULL",
					   dev ? "bytesp" : "dev");
	if (!dev->granularity)
		return ortmem__err_plain(-EOPNOTSUPP,
			"GPU %d (%s) has no virtual backing (the driver or GPU lacks cuMemCreate/cuMemMap, or ORTMEM_DEVICE_NO_VIRTUAL was given)",
			dev->ordinal, dev->name);
	*bytesp = dev->granularity;
	return 0;
}

ORTMEM_API int ortmem_device_stats(struct ortmem_device *dev,
				   struct ortmem_device_stats *st)
{
	struct ortmem_device_stats s = { .sz = sizeof(s) };
	size_t freeb = 0, total = 0;

	if (!dev || !st)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "%s is NULL",
					   dev ? "st" : "dev");
	if (st->sz < offsetof(struct ortmem_device_stats, name))
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0,
			"ortmem_device_stats.sz %zu is too small; declare it with ORTMEM_OPTS()",
			st->sz);
	s.ordinal = dev->ordinal;
	s.lost = atomic_load(&dev->lost);
	s.caps = dev->granularity && !s.lost ? ORTMEM_BACKEND_CAP_VIRTUAL : 0;
	memcpy(s.name, dev->name, sizeof(s.name));
	s.total_bytes = dev->total;
	if (!s.lost && !ortmem__dev_enter(dev, "ortmem_device_stats") &&
	    dev->cu->cuMemGetInfo(&freeb, &total) == CUDA_SUCCESS)
		s.free_bytes = freeb;
	s.budget = dev->budget;
	s.granularity = dev->granularity;
	s.driver_errors = atomic_load(&dev->driver_errors);
	s.prefixes = atomic_load(&dev->prefix_refs);
	s.tiers = atomic_load(&dev->refs) - 1 - s.prefixes;
	pthread_mutex_lock(&dev->lock);
	s.used_bytes = dev->used;
	s.peak_bytes = dev->peak;
	s.allocations = dev->nallocs;
	s.registered_bytes = dev->registered;
	s.copies = dev->copies;
	s.h2d_bytes = dev->h2d;
	s.d2h_bytes = dev->d2h;
	s.d2d_bytes = dev->d2d;
	s.streamed_bytes = dev->streamed;
	pthread_mutex_unlock(&dev->lock);
	memcpy(st, &s, st->sz < sizeof(s) ? st->sz : sizeof(s));
	st->sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	return 0;
}
