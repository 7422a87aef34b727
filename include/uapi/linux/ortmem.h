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
#define ORTMEM_FEAT_SPILL_MAP	(1ULL << 2)	/* BIND, UNBIND, EVICT, RESTORE, SPILL_STATS */
#define ORTMEM_FEAT_EVICT_DISCARD (1ULL << 3)	/* EVICT takes %ORTMEM_EVICT_DISCARD */

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

/*
 * Disk-spill mapping (Documentation/userspace-api/ortmem.rst, "Spill
 * mapping"): a page-aligned range of a region is bound to an extent of a
 * spill file, evicted once userspace has written it there, and brought back
 * on touch (fault-back) or by %ORTMEM_IOC_RESTORE.  Offsets and lengths are
 * bytes and must be multiples of the page size.
 */

/**
 * struct ortmem_bind_args - Argument of %ORTMEM_IOC_BIND.
 * @handle: in: a live handle on this file descriptor.
 * @flags: in: must be 0.
 * @offset: in: first byte of the range in the region (page-aligned).
 * @length: in: bytes (page-aligned, > 0, within the region).
 * @fd: in: the spill file: a regular file opened read-write (O_DIRECT or
 *	not; the module reads it the way it was opened).
 * @pad: must be 0.
 * @file_offset: in: where the range's first page lies in the file
 *	(page-aligned); page i of the range is at @file_offset + i * page size.
 *
 * The module takes its own reference to the file.  Every page of the range
 * must be unbound (-EBUSY otherwise).
 */
struct ortmem_bind_args {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 length;
	__s32 fd;
	__u32 pad;
	__u64 file_offset;
};

/**
 * struct ortmem_range_args - Argument of %ORTMEM_IOC_UNBIND and %ORTMEM_IOC_RESTORE.
 * @handle: in: a live handle on this file descriptor.
 * @flags: in: 0 for UNBIND; %ORTMEM_RESTORE_* bits for RESTORE.
 * @offset: in: first byte of the range in the region (page-aligned).
 * @length: in: bytes (page-aligned, > 0, within the region).
 */
struct ortmem_range_args {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 length;
};

/*
 * RESTORE without flags reads every evicted page of the range from its
 * extent and verifies it.  With ORTMEM_RESTORE_NOFILL the pages are only
 * allocated (zeroed) and charged; userspace fills them (an io_uring read
 * into the mapping) and the module checks nothing.  Either way the pages
 * are mapped in the caller's mappings of the range, so that a touch or a
 * read into them does not fault.
 */
#define ORTMEM_RESTORE_NOFILL	(1U << 0)
#define ORTMEM_RESTORE_FLAGS	(ORTMEM_RESTORE_NOFILL)

/**
 * struct ortmem_evict_args - Argument of %ORTMEM_IOC_EVICT.
 * @handle: in: a live handle on this file descriptor.
 * @flags: in: %ORTMEM_EVICT_* bits.
 * @offset: in: first byte of the range in the region (page-aligned).
 * @length: in: bytes (page-aligned, > 0, at most
 *	%ORTMEM_EVICT_MAX_PAGES pages, every page bound and resident).
 * @crcs: in: user pointer to one __u32 per page of the range: the CRC32C
 *	(Castagnoli, reflected, seed 0, no final inversion: the kernel's
 *	crc32c(0, page, page size) and ISA-L's crc32_iscsi(page, size, 0)) of
 *	the page as written to its extent.  Checked against the page before
 *	it is dropped (-EBADMSG) and against the extent at fault-back.  Must
 *	be 0 with %ORTMEM_EVICT_DISCARD.
 */
struct ortmem_evict_args {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 length;
	__u64 crcs;
};

#define ORTMEM_EVICT_MAX_PAGES	(1U << 20)

/*
 * ORTMEM_EVICT_DISCARD (module feature %ORTMEM_FEAT_EVICT_DISCARD) drops
 * the resident pages of the range without looking at them: each page keeps
 * the CRC32C recorded at its last EVICT since the range was bound, and its
 * extent is trusted to still hold those bytes (the undo of a promotion that
 * failed half way, whose pages hold zeroes or part of a read).  A page with
 * no such CRC (not evicted since its bind) makes the whole call fail with
 * -ENODATA, nothing evicted.  @crcs must be 0.
 */
#define ORTMEM_EVICT_DISCARD	(1U << 0)
#define ORTMEM_EVICT_FLAGS	(ORTMEM_EVICT_DISCARD)

/* Causes of a failed fault-back or restore, the index of failed[]. */
#define ORTMEM_SPILL_FAIL_CHARGE	0	/* over RLIMIT_MEMLOCK or the module cap */
#define ORTMEM_SPILL_FAIL_READ		1	/* read error or short read (truncated file) */
#define ORTMEM_SPILL_FAIL_CHECKSUM	2	/* the extent's CRC32C does not match */
#define ORTMEM_SPILL_FAIL_NOMEM		3	/* no page to read into */
#define ORTMEM_SPILL_FAIL_NR		4

/**
 * struct ortmem_spill_stats_args - Argument of %ORTMEM_IOC_SPILL_STATS.
 * @handle: in: 0 for every live handle of this file, or one live handle.
 * @flags: in: must be 0.
 * @resident_bytes: out: bytes of the handle(s) in RAM.
 * @evicted_bytes: out: bytes of the handle(s) evicted to their extent.
 * @bound_bytes: out: bytes of the handle(s) bound to an extent.
 * @fault_backs: out: pages brought back by a touch, on this file.
 * @restored: out: pages brought back by %ORTMEM_IOC_RESTORE, on this file.
 * @readahead: out: pages brought back with a fault-back, after the touched
 *	page (read in the same request), on this file.
 * @failed: out: failed fault-backs and restores on this file, by cause
 *	(%ORTMEM_SPILL_FAIL_*).
 *
 * The counters (@fault_backs, @restored, @readahead, @failed) are of the open file
 * description, whichever @handle asks; the byte figures are of @handle.
 */
struct ortmem_spill_stats_args {
	__u32 handle;
	__u32 flags;
	__u64 resident_bytes;
	__u64 evicted_bytes;
	__u64 bound_bytes;
	__u64 fault_backs;
	__u64 restored;
	__u64 readahead;
	__u64 failed[ORTMEM_SPILL_FAIL_NR];
};

#define ORTMEM_IOC_GET_VERSION	_IOWR(ORTMEM_IOC_MAGIC, 0x00, struct ortmem_version_args)
#define ORTMEM_IOC_ALLOC	_IOWR(ORTMEM_IOC_MAGIC, 0x01, struct ortmem_alloc_args)
#define ORTMEM_IOC_FREE		_IOWR(ORTMEM_IOC_MAGIC, 0x02, struct ortmem_free_args)
#define ORTMEM_IOC_QUERY	_IOWR(ORTMEM_IOC_MAGIC, 0x03, struct ortmem_query_args)
#define ORTMEM_IOC_BIND		_IOWR(ORTMEM_IOC_MAGIC, 0x04, struct ortmem_bind_args)
#define ORTMEM_IOC_UNBIND	_IOWR(ORTMEM_IOC_MAGIC, 0x05, struct ortmem_range_args)
#define ORTMEM_IOC_EVICT	_IOWR(ORTMEM_IOC_MAGIC, 0x06, struct ortmem_evict_args)
#define ORTMEM_IOC_RESTORE	_IOWR(ORTMEM_IOC_MAGIC, 0x07, struct ortmem_range_args)
#define ORTMEM_IOC_SPILL_STATS	_IOWR(ORTMEM_IOC_MAGIC, 0x08, struct ortmem_spill_stats_args)

#endif /* _UAPI_LINUX_ORTMEM_H */
