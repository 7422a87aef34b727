// SPDX-License-Identifier: MIT
/*
 * CUresult at the boundary: every driver failure becomes an -errno and a
 * detailed error carrying the call and the driver's own name and text of
 * the result, so no CUresult leaves the library.  A result that means the
 * context or the device is gone marks the handle lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"
#include "device_internal.h"

bool ortmem__cu_is_lost(CUresult res)
{
	switch (res) {
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_DEINITIALIZED:
		return true;
	default:
		/* 710..718: assert, traps and exceptions of a kernel, which
		 * leave the context unusable as an illegal address does. */
		return res >= 710 && res <= 718 && res != 712 && res != 713;
	}
}

static int cu_errno(CUresult res)
{
	if (ortmem__cu_is_lost(res))
		return -ENXIO;
	switch (res) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_INVALID_CONTEXT:
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		return -EINVAL;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return -EEXIST;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
	case CUDA_ERROR_STUB_LIBRARY:
		return -ENODEV;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	case CUDA_ERROR_NOT_READY:
		return -EBUSY;
	default:
		return -EIO;
	}
}

int ortmem__cu_fail(struct ortmem_device *dev, const char *call,
		    CUresult res, uint64_t bytes)
{
	char why[160], where[96] = "";
	int code = cu_errno(res);

	ortmem__cu_describe(res, why, sizeof(why));
	if (dev) {
		atomic_fetch_add(&dev->driver_errors, 1);
		snprintf(where, sizeof(where), " on GPU %d (%s)", dev->ordinal,
			 dev->name);
	}
	if (code == -ENXIO) {
		if (dev && !atomic_exchange(&dev->lost, true))
			pr_err("GPU %d (%s) lost: %s: %s", dev->ordinal,
			       dev->name, call, why);
		return ortmem__err_io(code, ORTMEM_TIER_DEVICE, bytes,
			"%s: %s%s: the GPU context is lost, its memory is gone; close this device handle (the host and disk tiers still work)",
			call, why, where);
	}
	if (code == -ENOMEM)
		return ortmem__err_alloc_failed(code, ORTMEM_TIER_DEVICE, bytes,
			"%s: %s%s", call, why, where);
	return ortmem__err_io(code, ORTMEM_TIER_DEVICE, bytes, "%s: %s%s",
			      call, why, where);
}
