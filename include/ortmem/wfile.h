/* SPDX-License-Identifier: MIT */
/*
 * ortmem/wfile.h - weights files: read-only sources of file-backed
 * allocations (ortmem_gov_alloc_file(), <ortmem/governor.h>).
 *
 * A weights file is any regular file a runtime reads and never writes: the
 * model's tensors.  Beside it lies its checksum list (by default the same
 * path with ".csum" appended, written by ortmem_wfile_checksum() when the
 * model is created): a CRC32C of every block of the file.  Every read
 * verifies the blocks it covers, as the spill engine verifies its extents,
 * so a flipped bit on disk is reported, never computed with.
 *
 * Reads go through the spill engine's lanes (io_uring, O_DIRECT where the
 * filesystem allows it, queue_depth chunks in flight), so a large range
 * moves at the disk's sequential bandwidth and skips the page cache.
 *
 * Thread safety: every function may be called concurrently on the same
 * handle, except ortmem_wfile_close(), which must not overlap any other
 * call on it (nor any governor allocation still using it).
 */
#ifndef ORTMEM_WFILE_H
#define ORTMEM_WFILE_H

#include <ortmem/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ortmem_wfile;

/* Read through the page cache (no O_DIRECT). */
#define ORTMEM_WFILE_F_BUFFERED (1u << 0)
/* Synchronous pread instead of io_uring. */
#define ORTMEM_WFILE_F_NO_URING (1u << 1)
#define ORTMEM_WFILE_F_ALL (ORTMEM_WFILE_F_BUFFERED | ORTMEM_WFILE_F_NO_URING)

/* Checksum blocks: a power of two in this range; default 1 MiB. */
#define ORTMEM_WFILE_BLOCK_MIN 4096u
#define ORTMEM_WFILE_BLOCK_MAX (64u << 20)

/* Options of ortmem_wfile_open(); declare with ORTMEM_OPTS(). */
struct ortmem_wfile_opts {
	size_t sz;
	/* The checksum list; NULL: the weights file's path + ".csum". */
	const char *csum_path;
	uint32_t flags;		/* ORTMEM_WFILE_F_* */
	/* I/Os in flight per read; default 32, at most ORTMEM_SPILL_QD_MAX. */
	uint32_t queue_depth;
	/* Reads that run at once; default 2, at most ORTMEM_SPILL_LANES_MAX. */
	uint32_t lanes;
	/* Largest single I/O, a power of two; default 1 MiB. */
	uint32_t chunk_bytes;
};
#define ortmem_wfile_opts__last_field chunk_bytes

/**
 * ortmem_wfile_open() - Open a weights file and load its checksum list.
 * @path: the weights file.
 * @opts: options (NULL: all defaults).
 * @wfp: receives the handle.
 *
 * The list must describe exactly this file: same size, a known format, and
 * its own CRC intact.
 *
 * Return: 0; -EINVAL (NULL argument, unknown flag, option out of range);
 * -ENOENT, -EACCES and other errno values of open() on either file;
 * -ORTMEM_E_CHECKSUM when the checksum list is malformed, damaged or
 * describes a file of another size (the error names both files and the
 * figures); -ENOMEM.
 */
ORTMEM_API int ortmem_wfile_open(const char *path,
				 const struct ortmem_wfile_opts *opts,
				 struct ortmem_wfile **wfp);

/**
 * ortmem_wfile_close() - Close a weights file.
 * @wf: the handle; NULL is ignored.
 */
ORTMEM_API void ortmem_wfile_close(struct ortmem_wfile *wf);

/**
 * ortmem_wfile_size() - Size of the weights file.
 * @wf: the handle.
 *
 * Return: its size in bytes, 0 for NULL.
 */
ORTMEM_API uint64_t ortmem_wfile_size(const struct ortmem_wfile *wf);

/**
 * ortmem_wfile_read() - Read and verify a range of a weights file.
 * @wf: the handle.
 * @off: first byte.
 * @buf: destination, any alignment (aligned buffers skip a copy).
 * @len: bytes, at least 1; @off + @len must not pass the end of the file.
 *
 * Reads the checksum blocks the range covers and verifies each.  On any
 * failure @buf is zero-filled.
 *
 * Return: 0; -ORTMEM_E_CHECKSUM when a block does not match its checksum
 * (the error names the file, the block's byte range and both CRCs);
 * -EINVAL (NULL argument, empty range, range past the end); -EIO or
 * another errno of the read; -ENOMEM.
 */
ORTMEM_API int ortmem_wfile_read(struct ortmem_wfile *wf, uint64_t off,
				 void *buf, uint64_t len);

/**
 * ortmem_wfile_checksum() - Write the checksum list of a file.
 * @path: the weights file (read, buffered).
 * @csum_path: where the list goes; NULL: @path + ".csum".
 * @block_bytes: block size, a power of two from ORTMEM_WFILE_BLOCK_MIN to
 *               ORTMEM_WFILE_BLOCK_MAX; 0 means 1 MiB.
 *
 * The list is written to a temporary file beside @csum_path and renamed
 * over it, so a reader never sees half a list; on failure nothing is left.
 *
 * Return: 0; -EINVAL (NULL @path, bad @block_bytes, empty file); errno
 * values of open(), read(), write() and rename(); -ENOMEM.
 */
ORTMEM_API int ortmem_wfile_checksum(const char *path, const char *csum_path,
				     uint32_t block_bytes);

/* Figures of a handle; declare with ORTMEM_OPTS(). */
struct ortmem_wfile_stats {
	size_t sz;
	uint64_t size;		/* bytes of the file */
	uint32_t block_bytes;	/* checksum block */
	uint32_t align;		/* O_DIRECT offset alignment */
	int direct;		/* reads bypass the page cache */
	int uring;		/* reads run on io_uring */
	uint64_t reads;		/* ortmem_wfile_read() calls that succeeded */
	uint64_t bytes_read;	/* bytes verified and handed back */
	uint64_t io_errors;
	uint64_t checksum_errors;
	/* Of the reads, those a governor's prefetch had announced, so that
	 * they started behind the read before them (no queue drain). */
	uint64_t reads_ahead;
};

/**
 * ortmem_wfile_stats() - Read a handle's figures.
 * @wf: the handle.
 * @st: filled up to @st->sz (an older, smaller struct gets what it has).
 *
 * Return: 0, or -EINVAL when @wf or @st is NULL or @st->sz is too small.
 */
ORTMEM_API int ortmem_wfile_stats(struct ortmem_wfile *wf,
				      struct ortmem_wfile_stats *st);

/**
 * ortmem_wfile_inject_fault() - Make a chosen read I/O fail (for testing).
 * @wf: the handle.
 * @nth: the I/O to hit, counted from 1 over the handle's I/Os after this
 *       call; 0 removes any fault.
 * @fault: a negative errno, ORTMEM_SPILL_FAULT_SHORT or
 *         ORTMEM_SPILL_FAULT_STALL, as for ortmem_spill_inject_fault().
 *
 * Return: 0, or -EINVAL for NULL @wf or an unknown @fault.
 */
ORTMEM_API int ortmem_wfile_inject_fault(struct ortmem_wfile *wf,
					 uint64_t nth, int fault);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_WFILE_H */
