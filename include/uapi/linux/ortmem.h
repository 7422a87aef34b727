/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * ortmem.h - ioctl ABI of the /dev/ortmem misc device.
 *
 * Shared by the kernel module (kmod/) and libortmem (lib/).  Every struct has
 * a fixed size, a multiple of 8 bytes, explicit padding and __u64 for sizes
 * and offsets, so 32-bit processes use the same layout (compat_ptr_ioctl).
 * The module rejects unknown flag bits and non-zero padding with -EINVAL and
 * unknown commands with -ENOTTY.  A change of behaviour gets a new command
 * number; the meaning of an existing struct never changes.
 */
#ifndef _UAPI_LINUX_ORTMEM_H
#define _UAPI_LINUX_ORTMEM_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* ioctl type letter; 0xB7 is unused in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define ORTMEM_IOC_MAGIC 0xB7

/* ABI version this header describes, and the oldest the module accepts. */
#define ORTMEM_ABI_VERSION 1
#define ORTMEM_ABI_MIN_VERSION 1

/*
 * A region is at most 1 TiB (ORTMEM_MMAP_SHIFT is kept as its log2).  ALLOC
 * gives each region a range of its file's own mmap offset space and returns
 * its start in mmap_offset; every range lies below ORTMEM_MMAP_OFFSET_LIMIT
 * (16 TiB), which the 32-bit page offset of mmap2() can express, so a
 * 32-bit process maps every region as a 64-bit one does.  Offset 0 never
 * names a region.
 */
#define ORTMEM_MMAP_SHIFT 40
#define ORTMEM_REGION_MAX_SIZE (1ULL << ORTMEM_MMAP_SHIFT)
#define ORTMEM_MMAP_OFFSET_LIMIT (1ULL << 44)
#define ORTMEM_HANDLE_MAX 65535

/* Feature bits reported by ORTMEM_IOC_GET_VERSION. */
#define ORTMEM_FEAT_REGIONS	(1ULL << 0)	/* ALLOC, FREE, QUERY, mmap */
#define ORTMEM_FEAT_NUMA	(1ULL << 1)	/* numa_node is honoured */

/**
 * struct ortmem_version_args - Argument of %ORTMEM_IOC_GET_VERSION.
 * @abi_version: out: ABI version the module implements (%ORTMEM_ABI_VERSION).
 * @min_abi_version: out: oldest library ABI version the module accepts.
 * @features: out: %ORTMEM_FEAT_* bits.
 * @lib_abi_version: in: ABI version the caller was built against; 0 when it
 *	does not say.  A version below @min_abi_version gets -EPROTO.
 * @flags: in: must be 0.
 * @max_pinned_bytes: out: module-wide cap on pinned bytes right now.
 * @page_size: out: region sizes are rounded up to a multiple of this.
 * @pad: must be 0.
 */
struct ortmem_version_args {
	__u32 abi_version;
	__u32 min_abi_version;
	__u64 features;
	__u32 lib_abi_version;
	__u32 flags;
	__u64 max_pinned_bytes;
	__u32 page_size;
	__u32 pad;
};

/* Fail instead of taking pages from another node than @numa_node. */
#define ORTMEM_ALLOC_NODE_STRICT	(1U << 0)
#define ORTMEM_ALLOC_FLAGS		(ORTMEM_ALLOC_NODE_STRICT)

/* Value of numa_node meaning "any node" (the caller's policy). */
#define ORTMEM_NUMA_ANY (-1)

/**
 * struct ortmem_alloc_args - Argument of %ORTMEM_IOC_ALLOC.
 * @size: in: bytes, > 0 and <= %ORTMEM_REGION_MAX_SIZE; rounded up to pages.
 * @numa_node: in: node to take the pages from, or %ORTMEM_NUMA_ANY.
 * @flags: in: %ORTMEM_ALLOC_* bits.
 * @handle: out: the region's handle on this file descriptor (>= 1).
 * @pad: must be 0.
 * @mmap_offset: out: offset to pass to mmap() to map the region.
 *
 * The pages are zeroed, pinned (never swapped or migrated) and charged to
 * the caller's RLIMIT_MEMLOCK (unless it has CAP_IPC_LOCK) and to the
 * module's max_pinned_mb cap before they are allocated.
 */
struct ortmem_alloc_args {
	__u64 size;
	__s32 numa_node;
	__u32 flags;
	__u32 handle;
	__u32 pad;
	__u64 mmap_offset;
};

/**
 * struct ortmem_free_args - Argument of %ORTMEM_IOC_FREE.
 * @handle: in: a handle from %ORTMEM_IOC_ALLOC on this file descriptor.
 * @flags: in: must be 0.
 *
 * The handle is gone at once; the pages stay until the last mapping of the
 * region is unmapped.
 */
struct ortmem_free_args {
	__u32 handle;
	__u32 flags;
};

/**
 * struct ortmem_query_args - Argument of %ORTMEM_IOC_QUERY.
 * @handle: in: a live handle on this file descriptor.
 * @flags: in: must be 0.
 * @size: out: size in bytes (a multiple of the page size).
 * @mmap_offset: out: offset to pass to mmap().
 * @numa_node: out: node asked for at allocation, or %ORTMEM_NUMA_ANY.
 * @map_count: out: number of mappings (VMAs) of the region now.
 */
struct ortmem_query_args {
	__u32 handle;
	__u32 flags;
	__u64 size;
	__u64 mmap_offset;
	__s32 numa_node;
	__u32 map_count;
};

#define ORTMEM_IOC_GET_VERSION	_IOWR(ORTMEM_IOC_MAGIC, 0x00, struct ortmem_version_args)
#define ORTMEM_IOC_ALLOC	_IOWR(ORTMEM_IOC_MAGIC, 0x01, struct ortmem_alloc_args)
#define ORTMEM_IOC_FREE		_IOWR(ORTMEM_IOC_MAGIC, 0x02, struct ortmem_free_args)
#define ORTMEM_IOC_QUERY	_IOWR(ORTMEM_IOC_MAGIC, 0x03, struct ortmem_query_args)

#endif /* _UAPI_LINUX_ORTMEM_H */
