/* SPDX-License-Identifier: MIT */
/*
 * ortmem/device.h - the device tier: GPU memory through the CUDA driver API.
 *
 * The library loads the driver at run time (dlopen("libcuda.so.1"); the
 * environment variable ORTMEM_CUDA_LIBRARY names another file, for tests)
 * and links against nothing of CUDA.  Without a driver or a GPU the device
 * tier is absent: ortmem_device_count() says why, and the host and disk
 * tiers work as before.  ORTMEM_LOG_LEVEL=info logs what was found.
 *
 * One struct ortmem_device per GPU.  It retains the GPU's primary context
 * while it is open (so it shares memory and streams with a runtime that uses
 * the runtime API on the same GPU), owns two streams (host->device and
 * device->host copies) and has its own budget.  Several GPUs per node: open
 * one handle per ordinal and give each its own governor, whose device tier
 * is that handle (ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
 * ortmem_backend_device(), dev)); the host and disk backends may be shared
 * by those governors.
 *
 * Thread contract: every call may come from any thread, at the same time
 * as others on the same handle, except ortmem_device_close(), which must
 * not overlap any other call on that handle (nor may an allocation be
 * freed while another call copies to, from or maps it).  Calls that reach
 * the driver make the handle's context current on the calling thread first
 * (and leave it current), so a caller need not manage contexts.  Events
 * and allocations of a handle are invalid after its close; close the
 * governors that use a handle before it (a governor's device tier holds a
 * reference to the handle: closed first, the handle lives on, with a
 * warning, until the last such tier lets go).  Device addresses are CUdeviceptr
 * values, as uint64_t.
 *
 * Errors: no CUresult leaves the library.  A driver failure becomes an
 * -errno and a detailed error whose reason carries the driver's own name
 * and text of the result (e.g. "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out
 * of memory)").  Out of memory is -ENOMEM of kind allocation-failed; a lost
 * context or device (an illegal address, an uncorrectable ECC error, the
 * device falling off the bus) makes the handle "lost": every later call on
 * it fails with -ENXIO, its memory counts as gone, and the governor's other
 * tiers stay usable.
 */
#ifndef ORTMEM_DEVICE_H
#define ORTMEM_DEVICE_H

#include <ortmem/core.h>
#include <ortmem/governor.h>
#include <ortmem/host.h>
#include <ortmem/spill.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ortmem_device;
struct ortmem_device_event;

/**
 * ortmem_device_count() - Load the driver once and count the GPUs.
 *
 * Return: the number of devices (> 0), or a negative code with a detailed
 * error saying why the device tier is absent: -ENOENT (no libcuda.so.1),
 * -ENOSYS (it lacks an entry point the library needs), -ENODEV (cuInit
 * failed, or no device).
 */
ORTMEM_API int ortmem_device_count(void);

/**
 * ortmem_device_absent_reason() - Why the device tier is absent.
 *
 * Return: a static string, or NULL when at least one device is present.
 */
ORTMEM_API const char *ortmem_device_absent_reason(void);

/* ortmem_device_opts.flags */
/* Never use virtual backing, even where the GPU supports it. */
#define ORTMEM_DEVICE_NO_VIRTUAL (1u << 0)
#define ORTMEM_DEVICE_FLAGS ORTMEM_DEVICE_NO_VIRTUAL

/* Options of ortmem_device_open(); declare with ORTMEM_OPTS(). */
struct ortmem_device_opts {
	size_t sz;
	uint32_t flags;		/* ORTMEM_DEVICE_* */
	uint32_t pad;		/* must be 0 */
	/* Most bytes this handle allocates at once; 0: the GPU's total. */
	uint64_t budget;
	/* Bytes of each of the 4 pinned bounce buffers of disk->device
	 * streaming; 0: 4 MiB.  Extents larger than this are refused. */
	uint64_t bounce_bytes;
};

ORTMEM_API int ortmem_device_open(int ordinal,
				  const struct ortmem_device_opts *opts,
				  struct ortmem_device **devp);
ORTMEM_API void ortmem_device_close(struct ortmem_device *dev);

/* ortmem_device_alloc() flags */
/* Virtual backing: reserve @size bytes of address space and map only what
 * ortmem_device_map() maps (none at first). */
#define ORTMEM_DEVICE_ALLOC_VIRTUAL (1u << 0)

ORTMEM_API int ortmem_device_alloc(struct ortmem_device *dev, uint64_t size,
				   uint32_t flags, uint64_t *dptrp);
ORTMEM_API int ortmem_device_free(struct ortmem_device *dev, uint64_t dptr);
ORTMEM_API int ortmem_device_map(struct ortmem_device *dev, uint64_t dptr,
				 uint64_t offset, uint64_t len);
ORTMEM_API int ortmem_device_unmap(struct ortmem_device *dev, uint64_t dptr,
				   uint64_t offset, uint64_t len);
ORTMEM_API int ortmem_device_granularity(struct ortmem_device *dev,
					 uint64_t *bytesp);

/* Host buffers for DMA. */
ORTMEM_API int ortmem_device_register(struct ortmem_device *dev, void *ptr,
				      uint64_t len);
ORTMEM_API int ortmem_device_unregister(struct ortmem_device *dev, void *ptr);
ORTMEM_API int ortmem_device_host_alloc(struct ortmem_device *dev,
					struct ortmem_host *host,
					uint64_t size, void **ptrp);
ORTMEM_API int ortmem_device_host_free(struct ortmem_device *dev,
				       struct ortmem_host *host, void *ptr);

/* Asynchronous copies and their events. */
ORTMEM_API int ortmem_device_copy_to(struct ortmem_device *dev, uint64_t dptr,
				     const void *src, uint64_t len,
				     struct ortmem_device_event **evp);
ORTMEM_API int ortmem_device_copy_from(struct ortmem_device *dev, void *dst,
				       uint64_t dptr, uint64_t len,
				       struct ortmem_device_event **evp);
/* Within the GPU's memory, at its own speed; the ranges must not overlap. */
ORTMEM_API int ortmem_device_copy_within(struct ortmem_device *dev,
					 uint64_t dst_dptr, uint64_t src_dptr,
					 uint64_t len,
					 struct ortmem_device_event **evp);
ORTMEM_API int ortmem_device_event_query(struct ortmem_device_event *ev);
ORTMEM_API int ortmem_device_event_wait(struct ortmem_device_event *ev);
ORTMEM_API void ortmem_device_event_put(struct ortmem_device_event *ev);
ORTMEM_API int ortmem_device_sync(struct ortmem_device *dev);

/* Releases gated on device work. */
ORTMEM_API int ortmem_device_release_after(struct ortmem_gov *gov,
					   struct ortmem_handle h,
					   struct ortmem_device_event *ev);

/* One piece of a disk->device stream: an extent of @spill, and where its
 * bytes go, as an offset from the destination address. */
struct ortmem_device_extent {
	uint64_t extent;	/* from ortmem_spill_write() */
	uint64_t len;		/* its length */
	uint64_t offset;	/* destination offset */
};

ORTMEM_API int ortmem_device_stream_in(struct ortmem_device *dev,
				       struct ortmem_spill *spill,
				       const struct ortmem_device_extent *ext,
				       unsigned int n, uint64_t dptr);

/*
 * The device tier of a governor: pass a struct ortmem_device * as the ctx
 * of ortmem_gov_set_backend().  Capabilities: VIRTUAL where the GPU has it.
 * Data moves with read/write (copies through the handle's streams); a
 * release while a copy of the handle still uses the memory waits (busy).
 */
ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_device(void);

struct ortmem_share_ops;

/*
 * Shared prefixes on the device tier (<ortmem/binding.h>): pass these ops
 * and a struct ortmem_device * as ctx to ortmem_prefix_create().  The
 * prefix is one cuMemCreate handle; every sharer reserves its range with
 * cuMemAddressReserve and maps that same handle at its start (cuMemMap),
 * read-only unless the prefix is writable, and private memory after it.
 * Needs virtual backing; sizes are multiples of the granularity.
 */
ORTMEM_API const struct ortmem_share_ops *ortmem_device_share_ops(void);

/* Figures of a handle; declare with ORTMEM_OPTS(). */
struct ortmem_device_stats {
	size_t sz;
	int ordinal;
	int lost;		/* the context or device was lost */
	uint32_t caps;		/* ORTMEM_BACKEND_CAP_* */
	uint32_t pad;
	char name[64];		/* the GPU's name */
	uint64_t total_bytes;	/* the GPU's memory */
	uint64_t free_bytes;	/* free on the GPU now (driver's figure) */
	uint64_t budget;
	uint64_t used_bytes;	/* this handle's allocations (mapped) */
	uint64_t peak_bytes;
	uint64_t allocations;
	uint64_t granularity;	/* of virtual backing; 0 without it */
	uint64_t registered_bytes;	/* host memory registered */
	uint64_t copies;	/* asynchronous copies issued */
	uint64_t h2d_bytes;
	uint64_t d2h_bytes;
	uint64_t streamed_bytes;	/* disk->device */
	uint64_t driver_errors;	/* failed driver calls */
	/* Governor tiers this handle is the backend of (added in 0.2): while
	 * any is, ortmem_device_close() leaves the handle to them. */
	uint64_t tiers;
	/* Bytes of ortmem_device_copy_within() (added in 0.2). */
	uint64_t d2d_bytes;
	/* Shared prefixes made with ortmem_device_share_ops() on this
	 * handle and not yet freed (added in 0.2): each holds the handle
	 * as a tier does. */
	uint64_t prefixes;
};

ORTMEM_API int ortmem_device_stats(struct ortmem_device *dev,
				   struct ortmem_device_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_DEVICE_H */
