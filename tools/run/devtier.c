// SPDX-License-Identifier: MIT
/*
 * ortmem-run's device tier (see devtier.h): the GPU handle and the pinned
 * host buffers the CPU arithmetic works in.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "devtier.h"
#include "refuse.h"
#include "xfer.h"

/* @what's range [off, off + len) does not lie within @size bytes: the
 * schedule's ranges were checked against the arena before the run, so
 * this is ortmem-run's bug, said as such. */
static int range_refused(const char *what, uint64_t off, uint64_t len,
			 const char *within, uint64_t size)
{
	return run_refuse(ORTMEM_TIER_DEVICE, len, size, "%s [%" PRIu64 ", +%" PRIu64 ") does not lie within the %s of %" PRIu64 " bytes (an ortmem-run bug)",
		      what, off, len, within, size);
}

/* Whether [off, off + len) lies within @size bytes, without overflow. */
static int range_within(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Page-aligned and registered with the driver, so copies are DMA. */
static int stage_alloc(struct devtier *d, uint64_t len, uint8_t **pp)
{
	uint64_t n = (len + 4095) / 4096 * 4096;
	void *p = aligned_alloc(4096, n);
	int ret;

	if (!p)
		return -ENOMEM;
	ret = ortmem_device_register(d->dev, p, n);
	if (ret) {
		free(p);
		return ret;
	}
	*pp = p;
	return 0;
}

static void stage_free(struct devtier *d, uint8_t *p)
{
	if (!p)
		return;
	ortmem_device_unregister(d->dev, p);
	free(p);
}

int devtier_open(struct devtier *d, int ordinal, uint64_t budget,
		 uint64_t wbytes, uint64_t abytes, const char **why)
{
	ORTMEM_OPTS(ortmem_device_opts, o, .budget = budget);
	ORTMEM_OPTS(ortmem_device_stats, st);
	int n, ret;

	memset(d, 0, sizeof(*d));
	n = ortmem_device_count();
	if (n <= 0 || ordinal >= n) {
		*why = n <= 0 ? ortmem_device_absent_reason() : "no GPU of that ordinal";
		return 1;
	}
	ret = ortmem_device_open(ordinal, &o, &d->dev);
	if (ret)
		return ret;
	d->ordinal = ordinal;
	d->budget = budget;
	d->wbytes = wbytes;
	d->abytes = abytes;
	if (!ortmem_device_stats(d->dev, &st))
		memcpy(d->name, st.name, sizeof(d->name));
	d->name[sizeof(d->name) - 1] = 0;
	ret = stage_alloc(d, wbytes, &d->wstage);
	if (!ret)
		ret = stage_alloc(d, abytes, &d->astage);
	if (ret)
		devtier_close(d);
	return ret;
}

void devtier_close(struct devtier *d)
{
	if (!d->dev)
		return;
	stage_free(d, d->wstage);
	stage_free(d, d->astage);
	ortmem_device_close(d->dev);
	d->dev = NULL;
	d->wstage = d->astage = NULL;
}

int devtier_weights(struct devtier *d, uint64_t dptr, uint64_t len,
		    const uint8_t **wp)
{
	if (len > d->wbytes)
		return range_refused("the layer's weights", 0, len,
				     "weights stage", d->wbytes);
	*wp = d->wstage;
	return ortmem_device_copy_from(d->dev, d->wstage, dptr, len, NULL);
}

int devtier_push(struct devtier *d, uint64_t off, uint64_t len)
{
	if (!range_within(off, len, d->abytes))
		return range_refused("pushing", off, len, "activation arena", d->abytes);
	return ortmem_device_copy_to(d->dev, d->arena + off, d->astage + off,
				     len, NULL);
}

int devtier_pull(struct devtier *d, uint64_t off, uint64_t len)
{
	if (!range_within(off, len, d->abytes))
		return range_refused("pulling", off, len, "activation arena", d->abytes);
	return ortmem_device_copy_from(d->dev, d->astage + off, d->arena + off,
				       len, NULL);
}

static int gpu_in(void *ctx, uint64_t off, const void *src, uint64_t len)
{
	struct devtier *d = ctx;

	return ortmem_device_copy_to(d->dev, d->arena + off, src, len, NULL);
}

static int gpu_out(void *ctx, void *dst, uint64_t off, uint64_t len)
{
	struct devtier *d = ctx;

	return ortmem_device_copy_from(d->dev, dst, d->arena + off, len, NULL);
}

static int gpu_poison(void *ctx, uint64_t off, uint64_t len)
{
	struct devtier *d = ctx;

	if (!d->poison)
		return run_refuse(ORTMEM_TIER_DEVICE, len, 0, "no poison pattern to write over the arena's [%" PRIu64 ", +%" PRIu64 ") (an ortmem-run bug: --poison-evicted gives one)",
			      off, len);
	return ortmem_device_copy_to(d->dev, d->arena + off, d->poison, len, NULL);
}

/*
 * A copy within the arena whose ranges may overlap (a slide moves a value
 * by less than its size; the plan keeps the shift at 1/16 of it at
 * least, ortmem_plan_transfers(3)): the driver copies only disjoint
 * ranges, so in pieces no longer than the shift, the end that moves
 * first copied first, on one stream (in order).
 */
static int gpu_copy_within(struct devtier *d, uint64_t dst, uint64_t src, uint64_t len)
{
	uint64_t shift = dst > src ? dst - src : src - dst, done, piece, at;
	int ret = 0;

	if (!shift)
		return 0;
	if (shift >= len)
		return ortmem_device_copy_within(d->dev, d->arena + dst, d->arena + src, len, NULL);
	for (done = 0; !ret && done < len; done += piece) {
		piece = len - done < shift ? len - done : shift;
		at = dst < src ? done : len - done - piece;
		ret = ortmem_device_copy_within(d->dev, d->arena + dst + at, d->arena + src + at,
						piece, NULL);
	}
	return ret;
}

/*
 * A move within the arena: device to device, at the GPU's own speed, and
 * the same on the host mirror, which holds the value at @src as the device
 * does (its last step pulled or computed it there), so no byte crosses
 * PCIe.  The step that reads the value next pulls it from the device: a
 * move the device did not make still shows.
 */
static int gpu_move(void *ctx, uint64_t dst, uint64_t src, uint64_t len)
{
	struct devtier *d = ctx;
	int ret;

	if (!range_within(src, len, d->abytes))
		return range_refused("moving from", src, len, "activation arena", d->abytes);
	if (!range_within(dst, len, d->abytes))
		return range_refused("moving to", dst, len, "activation arena", d->abytes);
	ret = gpu_copy_within(d, dst, src, len);
	if (!ret)
		memmove(d->astage + dst, d->astage + src, len);
	return ret;
}

struct xfer_ops devtier_xfer_ops(struct devtier *d)
{
	return (struct xfer_ops){ gpu_in, gpu_out, gpu_poison, gpu_move, d };
}
