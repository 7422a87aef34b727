// SPDX-License-Identifier: MIT
/*
 * Host registration, asynchronous copies and events.
 *
 * Host buffers are registered with cuMemHostRegister once, so copies from
 * and to them are DMA without staging, and unregistered before their
 * memory goes (ortmem_device_host_free() does both in that order).
 * Copies run on the handle's streams (one per direction, so both overlap)
 * and record an event each.  An allocation remembers the last copy on each
 * stream that touched it: a copy in the other direction waits for it on
 * the GPU (cuStreamWaitEvent), and freeing, unmapping or a governor
 * release (busy) waits for it too, so nothing is freed under a copy.
 * Copies within the GPU (ortmem_device_copy_within) share the
 * host->device stream.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "device_internal.h"

/* ---- events ---- */

int ortmem__event_new(struct ortmem_device *dev, int stream,
		      struct ortmem_device_event **evp)
{
	struct ortmem_device_event *ev = calloc(1, sizeof(*ev));
	CUresult res;

	if (!ev)
		return ortmem__err_plain(-ENOMEM, "cannot allocate an event");
	res = dev->cu->cuEventCreate(&ev->ev, CU_EVENT_DISABLE_TIMING);
	if (res) {
		free(ev);
		return ortmem__cu_fail(dev, "cuEventCreate", res, 0);
	}
	res = dev->cu->cuEventRecord(ev->ev, dev->streams[stream]);
	if (res) {
		dev->cu->cuEventDestroy(ev->ev);
		free(ev);
		return ortmem__cu_fail(dev, "cuEventRecord", res, 0);
	}
	ev->dev = dev;
	atomic_init(&ev->refs, 1);
	pthread_mutex_lock(&dev->lock);
	ev->next = dev->events;
	dev->events = ev;
	pthread_mutex_unlock(&dev->lock);
	*evp = ev;
	return 0;
}

static void event_get(struct ortmem_device_event *ev)
{
	atomic_fetch_add(&ev->refs, 1);
}

static void event_destroy(struct ortmem_device *dev,
			  struct ortmem_device_event *ev)
{
	if (!atomic_load(&dev->lost))
		dev->cu->cuEventDestroy(ev->ev);
	free(ev);
}

ORTMEM_API void ortmem_device_event_put(struct ortmem_device_event *ev)
{
	struct ortmem_device *dev;
	struct ortmem_device_event **pp;

	if (!ev || atomic_fetch_sub(&ev->refs, 1) != 1)
		return;
	dev = ev->dev;
	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->events; *pp && *pp != ev; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ev->next;
	pthread_mutex_unlock(&dev->lock);
	event_destroy(dev, ev);
}

void ortmem__events_fini(struct ortmem_device *dev)
{
	struct ortmem_device_event *ev;

	while ((ev = dev->events)) {
		dev->events = ev->next;
		event_destroy(dev, ev);
	}
}

/* 1 done, 0 pending, -errno failed (kept: a failed copy stays failed). */
static int event_result(struct ortmem_device_event *ev, CUresult res,
			const char *call)
{
	int ret;

	if (res == CUDA_SUCCESS) {
		atomic_store(&ev->done, 1);
		return 1;
	}
	if (res == CUDA_ERROR_NOT_READY)
		return 0;
	ret = ortmem__cu_fail(ev->dev, call, res, 0);
	atomic_store(&ev->done, ret);
	return ret;
}

static int event_settled(struct ortmem_device_event *ev)
{
	int done = atomic_load(&ev->done);

	if (done < 0)
		return ortmem__err_io(done, ORTMEM_TIER_DEVICE, 0,
			"the copy this event marks failed earlier (%s)",
			ortmem_strerror(done));
	if (!done && atomic_load(&ev->dev->lost))
		return ortmem__err_io(-ENXIO, ORTMEM_TIER_DEVICE, 0,
			"GPU %d was lost before this copy completed",
			ev->dev->ordinal);
	return done;
}

ORTMEM_API int ortmem_device_event_query(struct ortmem_device_event *ev)
{
	int ret;

	if (!ev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "ev is NULL");
	ret = event_settled(ev);
	if (ret)
		return ret;
	ret = ortmem__dev_enter(ev->dev, "ortmem_device_event_query");
	if (ret)
		return ret;
	return event_result(ev, ev->dev->cu->cuEventQuery(ev->ev),
			    "cuEventQuery");
}

ORTMEM_API int ortmem_device_event_wait(struct ortmem_device_event *ev)
{
	int ret;

	if (!ev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "ev is NULL");
	ret = event_settled(ev);
	if (ret)
		return ret < 0 ? ret : 0;
	ret = ortmem__dev_enter(ev->dev, "ortmem_device_event_wait");
	if (ret)
		return ret;
	ret = event_result(ev, ev->dev->cu->cuEventSynchronize(ev->ev),
			   "cuEventSynchronize");
	return ret < 0 ? ret : 0;
}

ORTMEM_API int ortmem_device_sync(struct ortmem_device *dev)
{
	CUresult res;
	int i, ret;

	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "dev is NULL");
	ret = ortmem__dev_enter(dev, "ortmem_device_sync");
	for (i = 0; !ret && i < DEV_NSTREAMS; i++) {
		res = dev->cu->cuStreamSynchronize(dev->streams[i]);
		if (res)
			ret = ortmem__cu_fail(dev, "cuStreamSynchronize", res, 0);
	}
	return ret;
}

/* ---- what an allocation is waiting for ---- */

int ortmem__alloc_wait(struct ortmem_device *dev, struct dev_alloc *a,
		       bool drop)
{
	struct ortmem_device_event *last[DEV_NSTREAMS];
	int i, ret = 0, r;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < DEV_NSTREAMS; i++) {
		last[i] = a->last[i];
		if (drop)
			a->last[i] = NULL;
		else if (last[i])
			event_get(last[i]);
	}
	pthread_mutex_unlock(&dev->lock);
	for (i = 0; i < DEV_NSTREAMS; i++) {
		if (!last[i])
			continue;
		r = atomic_load(&dev->lost) ? 0 : ortmem_device_event_wait(last[i]);
		if (r && !ret)
			ret = r;
		ortmem_device_event_put(last[i]);
	}
	return ret;
}

int ortmem__alloc_busy(struct ortmem_device *dev, struct dev_alloc *a)
{
	struct ortmem_device_event *last[DEV_NSTREAMS];
	int i, busy = 0, r;

	/* Nothing runs on a lost context any more. */
	if (atomic_load(&dev->lost))
		return 0;
	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < DEV_NSTREAMS; i++)
		if ((last[i] = a->last[i]))
			event_get(last[i]);
	pthread_mutex_unlock(&dev->lock);
	for (i = 0; i < DEV_NSTREAMS; i++) {
		if (!last[i])
			continue;
		r = ortmem_device_event_query(last[i]);
		/* A failed copy is over: it no longer uses the memory. */
		if (r == 0)
			busy = 1;
		ortmem_device_event_put(last[i]);
	}
	return busy;
}

/* ---- copies ---- */

/* The allocation holding [dptr, dptr + len), all of it backed. */
static int copy_target(struct ortmem_device *dev, uint64_t dptr, uint64_t len,
		       struct dev_alloc **ap)
{
	struct dev_alloc *a;
	uint64_t i, g = dev->granularity;
	int ret = 0;

	pthread_mutex_lock(&dev->lock);
	a = ortmem__dev_find_locked(dev, dptr);
	if (!a || len > a->size - (dptr - a->dptr)) {
		ret = ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
			"[%#" PRIx64 ", +%" PRIu64 ") is not inside one live allocation of GPU %d",
			dptr, len, dev->ordinal);
	} else if (a->is_virtual) {
		for (i = (dptr - a->dptr) / g;
		     !ret && i <= (dptr - a->dptr + len - 1) / g; i++)
			if (!a->granules[i])
				ret = ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
					"[%#" PRIx64 ", +%" PRIu64 ") of GPU %d includes unmapped bytes at offset %" PRIu64 "; map them with ortmem_device_map() first",
					dptr, len, dev->ordinal, i * g);
	}
	pthread_mutex_unlock(&dev->lock);
	*ap = a;
	return ret;
}

/* Order this copy after the other stream's last copy of @a. */
static int copy_order(struct ortmem_device *dev, struct dev_alloc *a, int s)
{
	struct ortmem_device_event *other;
	CUresult res = 0;

	pthread_mutex_lock(&dev->lock);
	other = a->last[!s];
	if (other)
		event_get(other);
	pthread_mutex_unlock(&dev->lock);
	if (!other)
		return 0;
	if (atomic_load(&other->done) == 0)
		res = dev->cu->cuStreamWaitEvent(dev->streams[s], other->ev, 0);
	ortmem_device_event_put(other);
	return res ? ortmem__cu_fail(dev, "cuStreamWaitEvent", res, 0) : 0;
}

/*
 * The copy just issued on stream @s touches @a and @b (the same, or NULL):
 * record its event as their last on @s, count @len bytes in @counter, and
 * hand the event over (@evp) or wait for it.
 */
static int copy_issued(struct ortmem_device *dev, int s, struct dev_alloc *a,
		       struct dev_alloc *b, uint64_t len, uint64_t *counter,
		       struct ortmem_device_event **evp)
{
	struct ortmem_device_event *ev, *old[2] = { NULL, NULL };
	int ret = ortmem__event_new(dev, s, &ev);

	if (ret) {
		/* Without an event nobody could wait for it: wait now. */
		dev->cu->cuStreamSynchronize(dev->streams[s]);
		return ret;
	}
	event_get(ev);
	pthread_mutex_lock(&dev->lock);
	old[0] = a->last[s];
	a->last[s] = ev;
	if (b && b != a) {
		event_get(ev);
		old[1] = b->last[s];
		b->last[s] = ev;
	}
	dev->copies++;
	*counter += len;
	pthread_mutex_unlock(&dev->lock);
	ortmem_device_event_put(old[0]);
	ortmem_device_event_put(old[1]);
	if (evp) {
		*evp = ev;
		return 0;
	}
	ret = ortmem_device_event_wait(ev);
	ortmem_device_event_put(ev);
	return ret;
}

int ortmem__copy(struct ortmem_device *dev, bool to_device, void *host,
		 uint64_t dptr, uint64_t len, struct ortmem_device_event **evp)
{
	int s = to_device ? DEV_STREAM_H2D : DEV_STREAM_D2H, ret;
	struct dev_alloc *a;
	CUresult res;

	if (!len || !host)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
					   "%s", host ? "len is 0" : "the host buffer is NULL");
	ret = copy_target(dev, dptr, len, &a);
	if (!ret)
		ret = ortmem__dev_enter(dev, to_device ? "ortmem_device_copy_to" :
					"ortmem_device_copy_from");
	if (!ret)
		ret = copy_order(dev, a, s);
	if (ret)
		return ret;
	if (to_device)
		res = dev->cu->cuMemcpyHtoDAsync(dptr, host, len, dev->streams[s]);
	else
		res = dev->cu->cuMemcpyDtoHAsync(host, dptr, len, dev->streams[s]);
	if (res)
		return ortmem__cu_fail(dev, to_device ? "cuMemcpyHtoDAsync" :
				       "cuMemcpyDtoHAsync", res, len);
	return copy_issued(dev, s, a, NULL, len,
			   to_device ? &dev->h2d : &dev->d2h, evp);
}

ORTMEM_API int ortmem_device_copy_to(struct ortmem_device *dev, uint64_t dptr,
				     const void *src, uint64_t len,
				     struct ortmem_device_event **evp)
{
	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len, "dev is NULL");
	return ortmem__copy(dev, true, (void *)src, dptr, len, evp);
}

ORTMEM_API int ortmem_device_copy_from(struct ortmem_device *dev, void *dst,
				       uint64_t dptr, uint64_t len,
				       struct ortmem_device_event **evp)
{
	if (!dev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len, "dev is NULL");
	return ortmem__copy(dev, false, dst, dptr, len, evp);
}

/*
 * Within the GPU: on the host->device stream, since it writes device
 * memory as those copies do, so it runs after their writes to either range
 * and before later ones.  It waits for the device->host stream's last copy
 * of the destination, which may still be reading the bytes it overwrites,
 * and becomes the last copy of both allocations, so that neither is freed
 * under it.  The driver leaves overlapping ranges undefined: refused.
 */
ORTMEM_API int ortmem_device_copy_within(struct ortmem_device *dev,
					 uint64_t dst_dptr, uint64_t src_dptr,
					 uint64_t len,
					 struct ortmem_device_event **evp)
{
	struct dev_alloc *da, *sa;
	CUresult res;
	int ret;

	if (!dev || !len)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len, "%s",
					   dev ? "len is 0" : "dev is NULL");
	if (dst_dptr > UINT64_MAX - len || src_dptr > UINT64_MAX - len)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
			"%s %#" PRIx64 " + len %" PRIu64 " wraps around",
			dst_dptr > UINT64_MAX - len ? "dst_dptr" : "src_dptr",
			dst_dptr > UINT64_MAX - len ? dst_dptr : src_dptr, len);
	if (dst_dptr < src_dptr + len && src_dptr < dst_dptr + len)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, len,
			"[%#" PRIx64 ", +%" PRIu64 ") and [%#" PRIx64 ", +%" PRIu64 ") overlap, and the driver does not define an overlapping copy; copy through a range that overlaps neither",
			src_dptr, len, dst_dptr, len);
	ret = copy_target(dev, src_dptr, len, &sa);
	if (!ret)
		ret = copy_target(dev, dst_dptr, len, &da);
	if (!ret)
		ret = ortmem__dev_enter(dev, "ortmem_device_copy_within");
	if (!ret)
		ret = copy_order(dev, da, DEV_STREAM_H2D);
	if (ret)
		return ret;
	res = dev->cu->cuMemcpyDtoDAsync(dst_dptr, src_dptr, len,
					 dev->streams[DEV_STREAM_H2D]);
	if (res)
		return ortmem__cu_fail(dev, "cuMemcpyDtoDAsync", res, len);
	return copy_issued(dev, DEV_STREAM_H2D, da, sa, len, &dev->d2d, evp);
}

/* ---- releases gated on an event ---- */

/* The governor's completion condition; drops its reference when met. */
static int release_ready(void *arg)
{
	struct ortmem_device_event *ev = arg;
	int r = atomic_load(&ev->dev->lost) ? 1 : ortmem_device_event_query(ev);

	if (r > 0)
		ortmem_device_event_put(ev);
	return r;
}

ORTMEM_API int ortmem_device_release_after(struct ortmem_gov *gov,
					   struct ortmem_handle h,
					   struct ortmem_device_event *ev)
{
	int ret;

	if (!gov || !ev)
		return ortmem__err_invalid(ORTMEM_TIER_DEVICE, 0, "%s is NULL",
					   gov ? "ev" : "gov");
	event_get(ev);
	ret = ortmem_gov_release_after(gov, h, release_ready, ev);
	if (ret < 0)
		ortmem_device_event_put(ev);
	return ret;
}

/* ---- host registration ---- */

ORTMEM_API int ortmem_device_register(struct ortmem_device *dev, void *ptr,
				      uint64_t len)
{
	struct dev_registration *r, *it;
	CUresult res;
	int ret;

	if (!dev || !ptr || !len)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, len, "%s",
			!dev ? "dev is NULL" : !ptr ? "ptr is NULL" : "len is 0");
	if ((uintptr_t)ptr > UINTPTR_MAX - len)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, len,
					   "%p + %" PRIu64 " wraps around", ptr, len);
	ret = ortmem__dev_enter(dev, "ortmem_device_register");
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return ortmem__err_plain(-ENOMEM, "cannot record a registration");
	pthread_mutex_lock(&dev->lock);
	for (it = dev->regs; it; it = it->next)
		if ((char *)ptr < (char *)it->ptr + it->len &&
		    (char *)it->ptr < (char *)ptr + len)
			break;
	pthread_mutex_unlock(&dev->lock);
	if (it) {
		free(r);
		return ortmem__err_plain(-EEXIST,
			"[%p, +%" PRIu64 ") overlaps [%p, +%" PRIu64 "), already registered with GPU %d",
			ptr, len, it->ptr, it->len, dev->ordinal);
	}
	res = dev->cu->cuMemHostRegister(ptr, len, CU_MEMHOSTREGISTER_PORTABLE);
	if (res) {
		free(r);
		return ortmem__cu_fail(dev, "cuMemHostRegister", res, len);
	}
	r->ptr = ptr;
	r->len = len;
	pthread_mutex_lock(&dev->lock);
	r->next = dev->regs;
	dev->regs = r;
	dev->registered += len;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

ORTMEM_API int ortmem_device_unregister(struct ortmem_device *dev, void *ptr)
{
	struct dev_registration **pp, *r;
	CUresult res = 0;

	if (!dev || !ptr)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "%s is NULL",
					   dev ? "ptr" : "dev");
	pthread_mutex_lock(&dev->lock);
	for (pp = &dev->regs; (r = *pp) && r->ptr != ptr; pp = &r->next)
		;
	if (r) {
		*pp = r->next;
		dev->registered -= r->len;
	}
	pthread_mutex_unlock(&dev->lock);
	if (!r)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"%p is not the start of a buffer registered with GPU %d",
			ptr, dev->ordinal);
	/* Copies from or to it may still run: DMA must end first. */
	if (!ortmem_device_sync(dev))
		res = dev->cu->cuMemHostUnregister(ptr);
	free(r);
	return res ? ortmem__cu_fail(dev, "cuMemHostUnregister", res, 0) : 0;
}

void ortmem__regs_fini(struct ortmem_device *dev)
{
	struct dev_registration *r;

	while ((r = dev->regs)) {
		dev->regs = r->next;
		if (!atomic_load(&dev->lost))
			dev->cu->cuMemHostUnregister(r->ptr);
		free(r);
	}
}

ORTMEM_API int ortmem_device_host_alloc(struct ortmem_device *dev,
					struct ortmem_host *host,
					uint64_t size, void **ptrp)
{
	void *p;
	int ret;

	if (!dev || !host || !ptrp)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size, "%s is NULL",
			!dev ? "dev" : !host ? "host" : "ptrp");
	ret = ortmem_host_alloc(host, size, -1, &p);
	if (ret)
		return ret;
	ret = ortmem_device_register(dev, p, size);
	if (ret) {
		ortmem_host_free(host, p);
		return ret;
	}
	*ptrp = p;
	return 0;
}

ORTMEM_API int ortmem_device_host_free(struct ortmem_device *dev,
				       struct ortmem_host *host, void *ptr)
{
	int ret;

	if (!dev || !host || !ptr)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "%s is NULL",
			!dev ? "dev" : !host ? "host" : "ptr");
	ret = ortmem_device_unregister(dev, ptr);
	/* A lost GPU cannot use the memory any more: free it anyway. */
	if (ret && ret != -ENXIO)
		return ret;
	return ortmem_host_free(host, ptr);
}
