// SPDX-License-Identifier: MIT
/*
 * Disk -> device streaming.  Extents of a spill file are read (and their
 * checksums verified) by the spill engine into one of two pinned, registered
 * bounce buffers, and copied on to the GPU asynchronously from there: while
 * the GPU copies extent i out of one buffer, the disk reads extent i + 1
 * into the other, so disk reads and PCIe copies overlap.  A buffer is reused
 * only after the event of its previous copy.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"
#include "device_internal.h"

static void bounce_drop(struct ortmem_device *dev, int i)
{
	if (dev->bounce_ev[i]) {
		if (!atomic_load(&dev->lost))
			ortmem_device_event_wait(dev->bounce_ev[i]);
		ortmem_device_event_put(dev->bounce_ev[i]);
		dev->bounce_ev[i] = NULL;
	}
}

void ortmem__stream_fini(struct ortmem_device *dev)
{
	int i;

	for (i = 0; i < 2; i++) {
		bounce_drop(dev, i);
		if (!dev->bounce[i])
			continue;
		if (!atomic_load(&dev->lost))
			dev->cu->cuMemHostUnregister(dev->bounce[i]);
		munmap(dev->bounce[i], dev->bounce_bytes);
		dev->bounce[i] = NULL;
	}
}

/* Page-aligned (O_DIRECT can read into them), registered (DMA). */
static int bounce_setup(struct ortmem_device *dev)
{
	CUresult res;
	int i;

	for (i = 0; i < 2; i++) {
		if (dev->bounce[i])
			continue;
		dev->bounce[i] = mmap(NULL, dev->bounce_bytes,
				      PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (dev->bounce[i] == MAP_FAILED) {
			dev->bounce[i] = NULL;
			return ortmem__err_plain(-ENOMEM,
				"cannot map a %" PRIu64 "-byte bounce buffer for disk->device streaming",
				dev->bounce_bytes);
		}
		res = dev->cu->cuMemHostRegister(dev->bounce[i],
						 dev->bounce_bytes,
						 CU_MEMHOSTREGISTER_PORTABLE);
		if (res) {
			munmap(dev->bounce[i], dev->bounce_bytes);
			dev->bounce[i] = NULL;
			return ortmem__cu_fail(dev, "cuMemHostRegister", res,
					       dev->bounce_bytes);
		}
	}
	return 0;
}

static int stream_check(struct ortmem_device *dev,
			const struct ortmem_device_extent *ext, unsigned int n,
			uint64_t dptr)
{
	struct dev_alloc *a;
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&dev->lock);
	a = ortmem__dev_find_locked(dev, dptr);
	for (i = 0; !ret && i < n; i++) {
		if (!ext[i].len || ext[i].len > dev->bounce_bytes)
			ret = ortmem__err_invalid(ORTMEM_TIER_DEVICE, ext[i].len,
				"extent %u has %" PRIu64 " bytes; each must have 1 to bounce_bytes (%" PRIu64 ") bytes",
				i, ext[i].len, dev->bounce_bytes);
		else if (!a || ext[i].offset > a->size - (dptr - a->dptr) ||
			 ext[i].len > a->size - (dptr - a->dptr) - ext[i].offset)
			ret = ortmem__err_invalid(ORTMEM_TIER_DEVICE, ext[i].len,
				"extent %u goes to [%#" PRIx64 " + %" PRIu64 ", +%" PRIu64 "), outside any live allocation of GPU %d",
				i, dptr, ext[i].offset, ext[i].len, dev->ordinal);
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static int stream_one(struct ortmem_device *dev, struct ortmem_spill *spill,
		      const struct ortmem_device_extent *e, unsigned int i,
		      uint64_t dptr)
{
	int b = i & 1, ret;

	bounce_drop(dev, b);
	ret = ortmem_spill_read(spill, e->extent, dev->bounce[b], e->len);
	if (ret) {
		char why[ORTMEM_ERROR_REASON_MAX];

		snprintf(why, sizeof(why), "%s", ortmem_last_error_message());
		return ortmem__err_io(ret, ORTMEM_TIER_DEVICE, e->len,
			"streaming extent %u (%" PRIu64 " bytes) from disk to GPU %d failed, the extent on disk is kept and the device bytes of this extent are not valid: %s",
			i, e->len, dev->ordinal, why);
	}
	return ortmem__copy(dev, true, dev->bounce[b], dptr + e->offset, e->len,
			    &dev->bounce_ev[b]);
}

ORTMEM_API int ortmem_device_stream_in(struct ortmem_device *dev,
				       struct ortmem_spill *spill,
				       const struct ortmem_device_extent *ext,
				       unsigned int n, uint64_t dptr)
{
	uint64_t total = 0;
	unsigned int i;
	int ret, b;

	if (!dev || !spill || !ext || !n)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "%s",
			!dev ? "dev is NULL" : !spill ? "spill is NULL" :
			!ext ? "ext is NULL" : "n is 0");
	ret = stream_check(dev, ext, n, dptr);
	if (!ret)
		ret = ortmem__dev_enter(dev, "ortmem_device_stream_in");
	if (ret)
		return ret;
	pthread_mutex_lock(&dev->stream_lock);
	ret = bounce_setup(dev);
	for (i = 0; !ret && i < n; i++) {
		ret = stream_one(dev, spill, &ext[i], i, dptr);
		total += ret ? 0 : ext[i].len;
	}
	for (b = 0; b < 2; b++) {
		int r = dev->bounce_ev[b] ? ortmem_device_event_wait(dev->bounce_ev[b]) : 0;

		if (r && !ret)
			ret = r;
		bounce_drop(dev, b);
	}
	pthread_mutex_unlock(&dev->stream_lock);
	if (!ret) {
		pthread_mutex_lock(&dev->lock);
		dev->streamed += total;
		pthread_mutex_unlock(&dev->lock);
	}
	return ret;
}
