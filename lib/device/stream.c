// SPDX-License-Identifier: MIT
/*
 * Disk -> device streaming.  Extents of a spill file are read (and their
 * checksums verified) by the spill engine into pinned, registered bounce
 * buffers, and copied on to the GPU asynchronously from there, so disk
 * reads and PCIe copies overlap.  Two readers take alternate extents, each
 * with two buffers: while one verifies a read and starts its copy, the
 * other's read keeps the disk busy (one reader alone left it idle for the
 * checksum of every extent).  A buffer is reused only after the event of
 * its previous copy.
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

	for (i = 0; i < DEV_BOUNCE_SLOTS; i++) {
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

	for (i = 0; i < DEV_BOUNCE_SLOTS; i++) {
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

/* One reader: extents first, first + step, ... while below fail_at. */
struct stream_reader {
	struct ortmem_device *dev;
	struct ortmem_spill *spill;
	const struct ortmem_device_extent *ext;
	unsigned int n, first, step;
	uint64_t dptr;
	_Atomic unsigned int *fail_at;	/* lowest failed extent; n: none */
	int ret;			/* its error, for the caller */
	bool in_read;			/* the disk's, else the copy's */
	unsigned int failed;		/* which extent */
	struct ortmem_error err;	/* the reader thread's, saved */
	uint64_t total;
};

static void reader_fail(struct stream_reader *r, unsigned int i, int ret,
			bool in_read)
{
	unsigned int cur = atomic_load(r->fail_at);

	r->ret = ret;
	r->in_read = in_read;
	r->failed = i;
	r->err = *ortmem_last_error();
	r->err.cause = NULL;
	while (i < cur && !atomic_compare_exchange_weak(r->fail_at, &cur, i))
		;
}

static void *stream_reader_run(void *arg)
{
	struct stream_reader *r = arg;
	struct ortmem_device *dev = r->dev;
	unsigned int i, k = 0;
	int ret;

	/* Extents below a failed one still go: their bytes are valid. */
	for (i = r->first; i < r->n && i < atomic_load(r->fail_at);
	     i += r->step, k++) {
		const struct ortmem_device_extent *e = &r->ext[i];
		int b = (int)(r->first * 2 + (k & 1));

		bounce_drop(dev, b);
		ret = ortmem_spill_read(r->spill, e->extent, dev->bounce[b],
					e->len);
		if (ret) {
			reader_fail(r, i, ret, true);
			break;
		}
		ret = ortmem__copy(dev, true, dev->bounce[b],
				   r->dptr + e->offset, e->len,
				   &dev->bounce_ev[b]);
		if (ret) {
			reader_fail(r, i, ret, false);
			break;
		}
		r->total += e->len;
	}
	return NULL;
}

/* Runs the readers; 0, or the error of the lowest failed extent. */
static int stream_readers(struct ortmem_device *dev, struct ortmem_spill *spill,
			  const struct ortmem_device_extent *ext, unsigned int n,
			  uint64_t dptr, uint64_t *totalp)
{
	struct stream_reader rd[DEV_STREAM_READERS];
	_Atomic unsigned int fail_at = n;
	unsigned int nr = n < DEV_STREAM_READERS ? n : DEV_STREAM_READERS, k;
	pthread_t tid[DEV_STREAM_READERS];
	bool started[DEV_STREAM_READERS] = { false };
	struct stream_reader *bad = NULL;

	for (k = 0; k < nr; k++)
		rd[k] = (struct stream_reader){
			.dev = dev, .spill = spill, .ext = ext, .n = n,
			.first = k, .step = nr, .dptr = dptr,
			.fail_at = &fail_at,
		};
	/* Without a thread the caller's runs every extent itself. */
	for (k = 1; k < nr; k++)
		started[k] = !pthread_create(&tid[k], NULL, stream_reader_run,
					     &rd[k]);
	if (nr > 1 && !started[1])
		rd[0].step = 1;
	stream_reader_run(&rd[0]);
	*totalp = 0;
	for (k = 0; k < nr; k++) {
		if (k && started[k])
			pthread_join(tid[k], NULL);
		if (k && !started[k])
			continue;
		*totalp += rd[k].total;
		if (rd[k].ret && (!bad || rd[k].failed < bad->failed))
			bad = &rd[k];
	}
	if (!bad)
		return 0;
	if (bad->in_read)
		return ortmem__err_io(bad->ret, ORTMEM_TIER_DEVICE,
			ext[bad->failed].len,
			"streaming extent %u (%" PRIu64 " bytes) from disk to GPU %d failed, the extent on disk is kept and the device bytes of this extent and those after it are not valid: %s",
			bad->failed, ext[bad->failed].len, dev->ordinal,
			bad->err.reason);
	/* The copy's own error (the driver call, a lost device), as the
	 * reader thread had it. */
	return ortmem__err_restore(&bad->err, bad->ret);
}

ORTMEM_API int ortmem_device_stream_in(struct ortmem_device *dev,
				       struct ortmem_spill *spill,
				       const struct ortmem_device_extent *ext,
				       unsigned int n, uint64_t dptr)
{
	uint64_t total = 0;
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
	if (!ret)
		ret = stream_readers(dev, spill, ext, n, dptr, &total);
	for (b = 0; b < DEV_BOUNCE_SLOTS; b++) {
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
