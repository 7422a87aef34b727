/* SPDX-License-Identifier: MIT */
/*
 * lib/device/device_internal.h - the device tier's interface inside
 * libortmem, and the few CUDA driver API declarations it needs.
 *
 * Files of lib/device/, lowest floor first (a file calls only those above):
 *   loader.c   dlopen of libcuda.so.1 once, the entry point table (through
 *              cuGetProcAddress or dlsym), cuInit, why the tier is absent,
 *              the driver's names of its results
 *   cuerr.c    CUresult -> -errno and detailed error, at the boundary
 *   ctx.c      a handle's context made current; address -> allocation
 *   copy.c     events, asynchronous copies, host registration
 *   memory.c   cuMemAlloc, virtual backing (reserve/create/map/access)
 *   share.c    shared prefixes: one physical handle mapped at several
 *              addresses (ortmem_device_share_ops())
 *   stream.c   disk -> device through pinned bounce buffers, pipelined
 *   device.c   open/close, primary context, streams, statistics
 *   backend.c  ortmem_backend_device(), the governor's device tier
 *
 * The declarations below follow the CUDA driver API documentation (types,
 * constants, function signatures); no CUDA header or library is needed at
 * build time.  The fake driver of selftests/device/ includes them too.
 */
#ifndef ORTMEM_LIB_DEVICE_INTERNAL_H
#define ORTMEM_LIB_DEVICE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <ortmem/device.h>

/* ===================================================================
 * CUDA driver API: types and constants
 * =================================================================== */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_DEINITIALIZED 4
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_DEVICE_UNAVAILABLE 46
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_ECC_UNCORRECTABLE 214
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_ILLEGAL_ADDRESS 700
#define CUDA_ERROR_CONTEXT_IS_DESTROYED 709
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define CUDA_ERROR_LAUNCH_FAILED 719
#define CUDA_ERROR_NOT_PERMITTED 800
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_UNKNOWN 999

#define CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED 102
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_GET_PROC_ADDRESS_DEFAULT 0

#define CU_MEM_ALLOCATION_TYPE_PINNED 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_HANDLE_TYPE_NONE 0
#define CU_MEM_ACCESS_FLAGS_PROT_READ 1
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM 0

typedef struct CUmemLocation_st {
	int type;
	int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
	int type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	int flags;
} CUmemAccessDesc;

/*
 * The entry points, as X(name for cuGetProcAddress, symbol for dlsym,
 * required, return/arguments).  dlsym names carry the _v2 suffix where
 * the ABI of that name changed; cuGetProcAddress takes the base name and
 * the CUDA version whose ABI we want (ORTMEM_CUDA_ABI).
 */
#define ORTMEM_CUDA_ABI 11030

#define ORTMEM_CUDA_CALLS(X)						\
	X(cuInit, cuInit, 1, (unsigned int))				\
	X(cuDriverGetVersion, cuDriverGetVersion, 1, (int *))	\
	X(cuGetErrorName, cuGetErrorName, 0, (CUresult, const char **)) \
	X(cuGetErrorString, cuGetErrorString, 0, (CUresult, const char **)) \
	X(cuDeviceGetCount, cuDeviceGetCount, 1, (int *))		\
	X(cuDeviceGet, cuDeviceGet, 1, (CUdevice *, int))		\
	X(cuDeviceGetName, cuDeviceGetName, 1, (char *, int, CUdevice)) \
	X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 1, (size_t *, CUdevice)) \
	X(cuDeviceGetAttribute, cuDeviceGetAttribute, 1, (int *, int, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 1, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 1, (CUdevice)) \
	X(cuCtxSetCurrent, cuCtxSetCurrent, 1, (CUcontext))		\
	X(cuCtxGetCurrent, cuCtxGetCurrent, 1, (CUcontext *))	\
	X(cuMemGetInfo, cuMemGetInfo_v2, 1, (size_t *, size_t *))	\
	X(cuMemAlloc, cuMemAlloc_v2, 1, (CUdeviceptr *, size_t))	\
	X(cuMemFree, cuMemFree_v2, 1, (CUdeviceptr))			\
	X(cuMemHostRegister, cuMemHostRegister_v2, 1, (void *, size_t, unsigned int)) \
	X(cuMemHostUnregister, cuMemHostUnregister, 1, (void *))	\
	X(cuMemHostAlloc, cuMemHostAlloc, 0, (void **, size_t, unsigned int)) \
	X(cuMemFreeHost, cuMemFreeHost, 0, (void *))			\
	X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 1, (CUdeviceptr, const void *, size_t)) \
	X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 1, (void *, CUdeviceptr, size_t)) \
	X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 1, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 1, (void *, CUdeviceptr, size_t, CUstream)) \
	X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 1, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
	X(cuStreamCreate, cuStreamCreate, 1, (CUstream *, unsigned int)) \
	X(cuStreamDestroy, cuStreamDestroy_v2, 1, (CUstream))	\
	X(cuStreamSynchronize, cuStreamSynchronize, 1, (CUstream))	\
	X(cuStreamWaitEvent, cuStreamWaitEvent, 1, (CUstream, CUevent, unsigned int)) \
	X(cuEventCreate, cuEventCreate, 1, (CUevent *, unsigned int)) \
	X(cuEventRecord, cuEventRecord, 1, (CUevent, CUstream))	\
	X(cuEventQuery, cuEventQuery, 1, (CUevent))			\
	X(cuEventSynchronize, cuEventSynchronize, 1, (CUevent))	\
	X(cuEventDestroy, cuEventDestroy_v2, 1, (CUevent))		\
	X(cuMemAddressReserve, cuMemAddressReserve, 0, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)) \
	X(cuMemAddressFree, cuMemAddressFree, 0, (CUdeviceptr, size_t)) \
	X(cuMemCreate, cuMemCreate, 0, (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long)) \
	X(cuMemRelease, cuMemRelease, 0, (CUmemGenericAllocationHandle)) \
	X(cuMemMap, cuMemMap, 0, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
	X(cuMemUnmap, cuMemUnmap, 0, (CUdeviceptr, size_t))		\
	X(cuMemSetAccess, cuMemSetAccess, 0, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t)) \
	X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 0, (size_t *, const CUmemAllocationProp *, int))

/* The virtual-backing calls: all present or the capability is off. */
#define ORTMEM_CUDA_VMM_FIRST cuMemAddressReserve

/* cuGetProcAddress before CUDA 12 and its _v2 (12.0 on) with a status. */
typedef CUresult (*cu_getproc_v1_fn)(const char *, void **, int,
				     unsigned long long);
typedef CUresult (*cu_getproc_v2_fn)(const char *, void **, int,
				     unsigned long long, int *);

/* ===================================================================
 * Loader (loader.c)
 * =================================================================== */

struct cu_api {
#define ORTMEM_CU_FIELD(name, sym, req, args) CUresult (*name) args;
	ORTMEM_CUDA_CALLS(ORTMEM_CU_FIELD)
#undef ORTMEM_CU_FIELD
	bool have_vmm;		/* every virtual-backing call resolved */
	int driver_version;
	int ndevices;
};

/* The driver, loaded once; NULL (with a detailed error) when absent. */
const struct cu_api *ortmem__cuda(void);
/* The table as it stands, without loading or error (for describing). */
const struct cu_api *ortmem__cuda_loaded(void);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for @res. */
void ortmem__cu_describe(CUresult res, char *buf, size_t len);

/* ===================================================================
 * Errors (cuerr.c)
 * =================================================================== */

struct ortmem_device;

/* A lost context or device: the context can do no more work. */
bool ortmem__cu_is_lost(CUresult res);
/*
 * @call failed with @res on @dev (may be NULL): map it to -errno, leave a
 * detailed error naming the call and the driver's words, mark @dev lost
 * when @res says so.  @bytes: the bytes concerned, 0 when none.
 */
int ortmem__cu_fail(struct ortmem_device *dev, const char *call,
		    CUresult res, uint64_t bytes);

/* ===================================================================
 * Device handle (ctx.c; open and close in device.c)
 * =================================================================== */

enum { DEV_STREAM_H2D, DEV_STREAM_D2H, DEV_NSTREAMS };

/*
 * Disk->device streaming runs two readers, each with two bounce buffers:
 * one reader's disk read is in flight while the other verifies what it
 * read and starts its copy, so the disk never waits for the CPU.
 */
#define DEV_STREAM_READERS 2
#define DEV_BOUNCE_SLOTS (2 * DEV_STREAM_READERS)

/* One allocation of a handle. */
struct dev_alloc {
	uint64_t dptr;
	uint64_t size;			/* address range */
	uint64_t mapped;		/* bytes backed by memory */
	bool is_virtual;
	/* A shared prefix's mapping (share.c): copies reach it, but only
	 * the prefix maps, unmaps and frees it. */
	bool is_shared;
	/* Virtual backing: one physical handle per granule (0: unmapped). */
	CUmemGenericAllocationHandle *granules;
	/* The last copy of this handle on each stream that touches it. */
	struct ortmem_device_event *last[DEV_NSTREAMS];
	struct dev_alloc *next;
};

struct dev_registration {
	void *ptr;
	uint64_t len;
	struct dev_registration *next;
};

struct ortmem_device_event {
	struct ortmem_device *dev;
	CUevent ev;
	atomic_int refs;
	atomic_int done;		/* 1 completed, < 0 failed */
	struct ortmem_device_event *next;	/* dev->events */
};

struct ortmem_device {
	const struct cu_api *cu;
	int ordinal;
	CUdevice cudev;
	CUcontext ctx;
	CUstream streams[DEV_NSTREAMS];
	uint32_t flags;
	atomic_bool lost;
	char name[64];
	uint64_t total;
	uint64_t budget;
	uint64_t granularity;		/* 0: no virtual backing */
	pthread_mutex_t vm_lock;	/* serialises map and unmap */
	pthread_mutex_t lock;		/* everything below */
	struct dev_alloc *allocs;
	struct dev_registration *regs;
	struct ortmem_device_event *events;
	uint64_t used, peak, nallocs, registered;
	uint64_t copies, h2d, d2h, d2d, streamed;
	atomic_uint_fast64_t driver_errors;
	/* Disk->device bounce buffers (stream.c), made on first use. */
	pthread_mutex_t stream_lock;
	void *bounce[DEV_BOUNCE_SLOTS];
	struct ortmem_device_event *bounce_ev[DEV_BOUNCE_SLOTS];
	uint64_t bounce_bytes;
	/* The open handle's reference and one per governor tier attached
	 * (backend.c): the last one tears the handle down. */
	atomic_uint refs;
	/* Of refs, those of live shared prefixes (share.c); the rest past
	 * the open handle's are governor tiers. */
	atomic_uint prefix_refs;
};

/* backend.c: a reference to @dev; its put ends the handle at zero. */
void ortmem__device_get(struct ortmem_device *dev);
void ortmem__device_put(struct ortmem_device *dev);

/* Make @dev's context current on this thread; -ENXIO when lost. */
int ortmem__dev_enter(struct ortmem_device *dev, const char *what);
struct dev_alloc *ortmem__dev_find_locked(struct ortmem_device *dev,
					  uint64_t dptr);

/* memory.c */
int ortmem__mem_alloc(struct ortmem_device *dev, uint64_t size, bool virt,
		      struct dev_alloc **ap);
/* Free @a (off the list) and its record; on failure it is kept whole. */
int ortmem__mem_release(struct ortmem_device *dev, struct dev_alloc *a);
/* The handle's budget, for memory mapped outside its allocations. */
int ortmem__mem_charge(struct ortmem_device *dev, uint64_t bytes);
void ortmem__mem_uncharge(struct ortmem_device *dev, uint64_t bytes);
/* Put @a on the handle's list, take the record at @dptr off it. */
void ortmem__mem_track(struct ortmem_device *dev, struct dev_alloc *a);
struct dev_alloc *ortmem__mem_untrack(struct ortmem_device *dev,
				      uint64_t dptr);

/* copy.c */
int ortmem__copy(struct ortmem_device *dev, bool to_device, void *host,
		 uint64_t dptr, uint64_t len, struct ortmem_device_event **evp);
/* Wait for the copies of ours that use @a; with @drop, forget them. */
int ortmem__alloc_wait(struct ortmem_device *dev, struct dev_alloc *a,
		       bool drop);
/* > 0 while a copy of ours uses @a, 0 when none does, -errno. */
int ortmem__alloc_busy(struct ortmem_device *dev, struct dev_alloc *a);
int ortmem__event_new(struct ortmem_device *dev, int stream,
		      struct ortmem_device_event **evp);
void ortmem__events_fini(struct ortmem_device *dev);
void ortmem__regs_fini(struct ortmem_device *dev);

/* stream.c */
void ortmem__stream_fini(struct ortmem_device *dev);

#endif /* ORTMEM_LIB_DEVICE_INTERNAL_H */
