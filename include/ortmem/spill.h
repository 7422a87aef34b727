/* SPDX-License-Identifier: MIT */
/*
 * ortmem/spill.h - the disk tier: extents in spill files, moved with io_uring.
 *
 * A spill handle owns one anonymous spill file (O_TMPFILE, mode 0600) in a
 * directory, grown with fallocate() up to a byte budget, and a few io_uring
 * instances ("lanes") that move extents between host buffers and that file
 * with O_DIRECT.  Demoting a buffer writes it to a fresh extent together with
 * a checksum; promoting it reads the extent back and verifies the checksum,
 * so corrupted bytes are reported, never returned.  Nothing outlives the
 * process: the file has no name, so a crash leaves nothing behind.
 *
 * Buffers may have any address and any length from 1 byte up: what the
 * kernel cannot take directly goes through the lanes' bounce buffers.
 *
 * Thread safety: every function may be called concurrently on the same
 * handle from any number of threads.  ortmem_spill_close() waits for the
 * transfers running when it is called; no call may start after it returns.  Calls on different handles are
 * independent.  Up to `lanes` calls run their I/O at the same time; further
 * callers wait for a lane.  An extent being read cannot be freed (-EBUSY).
 */
#ifndef ORTMEM_SPILL_H
#define ORTMEM_SPILL_H

#include <ortmem/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================
 * Spill
 * =================================================================== */

struct ortmem_spill;

/* Open the file without O_DIRECT (the page cache is used). */
#define ORTMEM_SPILL_F_BUFFERED (1u << 0)
/* Do not use io_uring: synchronous pread/pwrite (as when io_uring is missing). */
#define ORTMEM_SPILL_F_NO_URING (1u << 1)
/* Do not register the bounce buffers with io_uring. */
#define ORTMEM_SPILL_F_NO_REGBUF (1u << 2)
/* Do not register the spill file with io_uring. */
#define ORTMEM_SPILL_F_NO_REGFILE (1u << 3)
/* Do not register host-tier buffers (ortmem_host_set_spill()) with
 * io_uring: their transfers use plain reads and writes. */
#define ORTMEM_SPILL_F_NO_FIXED_HOST (1u << 4)
#define ORTMEM_SPILL_F_ALL (ORTMEM_SPILL_F_BUFFERED | ORTMEM_SPILL_F_NO_URING | \
			    ORTMEM_SPILL_F_NO_REGBUF | ORTMEM_SPILL_F_NO_REGFILE | \
			    ORTMEM_SPILL_F_NO_FIXED_HOST)

/* Limits of the options below. */
#define ORTMEM_SPILL_QD_MAX 4096u
#define ORTMEM_SPILL_LANES_MAX 64u
#define ORTMEM_SPILL_CHUNK_MIN 4096u
#define ORTMEM_SPILL_CHUNK_MAX (64u << 20)
/* The longest extent: 1 TiB. */
#define ORTMEM_SPILL_EXTENT_MAX (1ull << 40)

/*
 * Options of ortmem_spill_open(); declare with ORTMEM_OPTS().  Zero means
 * the default in every field.
 */
struct ortmem_spill_opts {
	size_t sz;
	/* Directory of the spill file; default $ORTMEM_SPILL_DIR, else /var/tmp. */
	const char *dir;
	/* Most bytes the spill file may take on disk; 0: as much as the
	 * filesystem gives. */
	uint64_t budget_bytes;
	/* I/Os in flight per lane; default 32, at most ORTMEM_SPILL_QD_MAX. */
	uint32_t queue_depth;
	/* ORTMEM_SPILL_F_*. */
	uint32_t flags;
	/* Independent rings, i.e. calls doing I/O at once; default 2. */
	uint32_t lanes;
	/* Largest single I/O, a power of two; default 1 MiB. */
	uint32_t chunk_bytes;
	/* Step by which the file grows; default 64 MiB. */
	uint64_t grow_bytes;
};
/* Its last field: the library checks a caller's struct for fields it does
 * not know from the end of this one (update it with the struct). */
#define ortmem_spill_opts__last_field grow_bytes

/**
 * ortmem_spill_open() - Create a spill file and its I/O lanes.
 * @opts: options (NULL: all defaults).
 * @spillp: receives the handle.
 *
 * Probes the kernel: io_uring and the operations it supports, O_DIRECT and
 * its alignment (statx STATX_DIOALIGN, else the device's logical block
 * size), registered files and buffers.  What is missing is fallen back from
 * and reported in ortmem_spill_stats()'s features (and logged at info
 * level).
 *
 * Return: 0; -EINVAL for bad options (unknown flag, queue depth or lanes out
 * of range, chunk not a power of two, budget smaller than one chunk);
 * -ENOENT, -EACCES, -ENOTDIR and other errno values of open(O_TMPFILE) on
 * the directory; -EOPNOTSUPP when its filesystem has no O_TMPFILE; -ENOMEM.
 */
ORTMEM_API int ortmem_spill_open(const struct ortmem_spill_opts *opts,
				 struct ortmem_spill **spillp);

/**
 * ortmem_spill_close() - Release the spill file and everything it holds.
 * @spill: the handle; NULL is ignored.
 *
 * Every extent is gone, and its space back in the filesystem, when it
 * returns, also when the kernel's io_uring teardown still holds the file.
 * Transfers that other threads are running when it is called are waited
 * for (those that start meanwhile fail with -ESHUTDOWN); no call may be
 * made on the handle after it returns.
 */
ORTMEM_API void ortmem_spill_close(struct ortmem_spill *spill);

/**
 * ortmem_spill_write() - Demote: write a buffer to a new extent.
 * @spill: the handle.
 * @buf: the bytes, any alignment; not changed.
 * @len: their number, 1 to ORTMEM_SPILL_EXTENT_MAX.
 * @extentp: receives the extent's handle.
 *
 * Reserves an extent, writes @len bytes and their checksum to it and waits
 * for the writes to complete.  On any failure nothing is kept on disk, @buf
 * is untouched (the data stays in its source tier), and the detailed error
 * names the disk tier, the bytes and the cause.
 *
 * Return: 0; -EINVAL (NULL pointer, zero or too large @len);
 * -ORTMEM_E_TIER_EXHAUSTED when the budget has no room for the extent;
 * -ENOSPC when the filesystem is full; -EIO or another errno of the write.
 */
ORTMEM_API int ortmem_spill_write(struct ortmem_spill *spill, const void *buf,
				  uint64_t len, uint64_t *extentp);

/**
 * ortmem_spill_read() - Promote: read an extent back, verifying it.
 * @spill: the handle.
 * @extent: an extent from ortmem_spill_write().
 * @buf: destination, any alignment.
 * @len: must equal the extent's length.
 *
 * The extent stays allocated; free it with ortmem_spill_free().  On any
 * failure @buf is zero-filled: bytes that were not verified are never
 * handed back.
 *
 * Return: 0; -ORTMEM_E_CHECKSUM when the data read does not match its
 * checksum (the error names the extent); -ORTMEM_E_STALE_HANDLE when
 * @extent is not a live extent; -EINVAL (NULL @buf, @len differs from the
 * extent's); -EIO or another errno of the read.
 */
ORTMEM_API int ortmem_spill_read(struct ortmem_spill *spill, uint64_t extent,
				 void *buf, uint64_t len);

/**
 * ortmem_spill_free() - Give an extent's space back.
 * @spill: the handle.
 * @extent: the extent.
 *
 * Return: 0; -ORTMEM_E_STALE_HANDLE when @extent is not live (already
 * freed, never made, or from another handle); -EBUSY while it is being read.
 */
ORTMEM_API int ortmem_spill_free(struct ortmem_spill *spill, uint64_t extent);

/* Operations of a batch. */
enum ortmem_spill_op {
	ORTMEM_SPILL_OP_WRITE = 1,
	ORTMEM_SPILL_OP_READ = 2,
};

/* One transfer of a batch; see ortmem_spill_submit(). */
struct ortmem_spill_io {
	uint32_t op;		/* enum ortmem_spill_op */
	int32_t res;		/* out: 0 or a negative code */
	uint64_t extent;	/* WRITE: out; READ: in */
	void *buf;
	uint64_t len;
};

/**
 * ortmem_spill_submit() - Run a batch of demotions and promotions.
 * @spill: the handle.
 * @ios: the transfers; each has ortmem_spill_write()'s or
 *       ortmem_spill_read()'s contract.
 * @n: their number, at most 1048576.
 *
 * Keeps up to queue_depth I/Os in flight on one lane over the whole batch
 * (so a batch reaches the disk's throughput where one call at a time
 * cannot), and returns when all are done.  Each io's @res says how it went;
 * a failed one does not stop the others.
 *
 * Return: 0 when every transfer succeeded; else the code of the first that
 * failed (its detailed error is the thread's); -EINVAL when @ios is NULL,
 * @n is 0 or too large, or an @op is unknown (then nothing ran).
 */
ORTMEM_API int ortmem_spill_submit(struct ortmem_spill *spill,
				   struct ortmem_spill_io *ios, unsigned int n);

/* Features found at open (ortmem_spill_stats.features). */
#define ORTMEM_SPILL_HAVE_URING (1u << 0)	/* io_uring, else pread/pwrite */
#define ORTMEM_SPILL_HAVE_DIRECT (1u << 1)	/* O_DIRECT */
#define ORTMEM_SPILL_HAVE_DIOALIGN (1u << 2)	/* alignment from statx */
#define ORTMEM_SPILL_HAVE_REGFILE (1u << 3)	/* registered file */
#define ORTMEM_SPILL_HAVE_REGBUF (1u << 4)	/* registered bounce buffers */

/* Figures of a handle; declare with ORTMEM_OPTS(). */
struct ortmem_spill_stats {
	size_t sz;
	uint32_t features;	/* ORTMEM_SPILL_HAVE_* */
	uint32_t align;		/* file offset alignment, bytes */
	uint32_t mem_align;	/* memory alignment of direct I/O, bytes */
	uint32_t queue_depth;
	uint32_t lanes;
	uint32_t chunk_bytes;
	uint64_t budget_bytes;	/* 0: none */
	uint64_t file_bytes;	/* reserved with fallocate */
	uint64_t used_bytes;	/* in extents, on disk (with padding) */
	uint64_t largest_free;	/* largest free range of the file */
	uint64_t extents;	/* live extents */
	uint64_t bytes_written;	/* payload demoted */
	uint64_t bytes_read;	/* payload promoted and verified */
	uint64_t short_transfers;	/* continued after a short I/O */
	uint64_t retries;	/* -EAGAIN/-EINTR resubmitted */
	uint64_t io_errors;
	uint64_t checksum_errors;
	/* Transfer calls (write, read, submit) running now; close waits for
	 * them.  Added in 0.2: an older, smaller struct does not get it. */
	uint64_t calls_running;
	/* Host-tier buffers as io_uring fixed buffers (added in 0.2): which
	 * path the transfers of the host tiers attached now take,
	 * ORTMEM_SPILL_FIXED_* (MIXED: some tiers' buffers are registered,
	 * others' are not; ortmem_host_stats() has each tier's own); when
	 * OFF or MIXED, why, as a positive errno, that of the earliest
	 * attached tier that is off (EOPNOTSUPP: the kernel refuses that
	 * memory, as 6.1 does the module's mapping; ENXIO: this handle's
	 * rings have no slots for them; EPERM: io_uring would charge them to
	 * RLIMIT_MEMLOCK a second time; another: the probe's error). */
	uint32_t fixed_host;
	int32_t fixed_error;
	uint64_t fixed_buffers;	/* host buffers registered now, all tiers */
	uint64_t fixed_bytes;	/* payload moved with READ_FIXED/WRITE_FIXED */
};

/* ortmem_spill_stats.fixed_host */
#define ORTMEM_SPILL_FIXED_NONE 0	/* no host tier attached (not probed) */
#define ORTMEM_SPILL_FIXED_ON 1		/* registered: READ_FIXED/WRITE_FIXED */
#define ORTMEM_SPILL_FIXED_OFF 2	/* plain reads and writes */
#define ORTMEM_SPILL_FIXED_MIXED 3	/* some tiers ON, some OFF */

/**
 * ortmem_spill_stats() - Read a handle's figures.
 * @spill: the handle.
 * @st: filled up to @st->sz (an older, smaller struct gets what it has).
 *
 * Named like ortmem_gov_stats(), ortmem_host_stats() and
 * ortmem_plan_stats(); ortmem_spill_get_stats() is its old name, kept as an
 * alias of the same function.
 *
 * Return: 0, or -EINVAL when @spill or @st is NULL or @st->sz is too small.
 */
ORTMEM_API int ortmem_spill_stats(struct ortmem_spill *spill,
				  struct ortmem_spill_stats *st);
ORTMEM_API int ortmem_spill_get_stats(struct ortmem_spill *spill,
				      struct ortmem_spill_stats *st);

/* Faults for ortmem_spill_inject_fault(), besides a negative errno. */
#define ORTMEM_SPILL_FAULT_SHORT 1	/* transfer half, rounded to the alignment */
#define ORTMEM_SPILL_FAULT_STALL 2	/* transfer nothing, from then on */

/**
 * ortmem_spill_inject_fault() - Make a chosen I/O fail (for testing).
 * @spill: the handle.
 * @nth: the submission to hit, counted from 1 over the handle's I/Os
 *       after this call; 0 removes any fault.
 * @fault: a negative errno the I/O completes with, ORTMEM_SPILL_FAULT_SHORT
 *         or ORTMEM_SPILL_FAULT_STALL (that I/O and every later one
 *         transfers nothing, until the fault is removed).
 *
 * The I/O is issued; its completion is then replaced.  This exercises the
 * same paths as a real failure, so the data must survive it.
 *
 * Return: 0, or -EINVAL for an unknown @fault.
 */
ORTMEM_API int ortmem_spill_inject_fault(struct ortmem_spill *spill,
					 uint64_t nth, int fault);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_SPILL_H */
