// SPDX-License-Identifier: MIT
/*
 * The floor of a device handle: its context made current on the calling
 * thread (or the refusal of a lost handle), and finding the allocation an
 * address belongs to.  Everything that reaches the driver for a handle
 * enters through here.
 */
#include <errno.h>

#include "internal.h"
#include "device_internal.h"

int ortmem__dev_enter(struct ortmem_device *dev, const char *what)
{
	CUcontext cur = NULL;
	CUresult res;

	if (atomic_load(&dev->lost))
		return ortmem__err_io(-ENXIO, ORTMEM_TIER_DEVICE, 0,
			"%s: GPU %d (%s) was lost earlier; close this device handle and open a new one once the GPU is back",
			what, dev->ordinal, dev->name);
	if (dev->cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == dev->ctx)
		return 0;
	res = dev->cu->cuCtxSetCurrent(dev->ctx);
	return res ? ortmem__cu_fail(dev, "cuCtxSetCurrent", res, 0) : 0;
}

struct dev_alloc *ortmem__dev_find_locked(struct ortmem_device *dev,
					  uint64_t dptr)
{
	struct dev_alloc *a;

	for (a = dev->allocs; a; a = a->next)
		if (dptr >= a->dptr && dptr - a->dptr < a->size)
			return a;
	return NULL;
}
