/* SPDX-License-Identifier: MIT */
/*
 * lib/spill/spill_internal.h - the spill engine's parts, shared by lib/spill/
 * and the unit tests; never installed.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   spill_extent.c  extent allocator (sorted free list, coalescing)
 *   spill_file.c    the O_TMPFILE file: alignment probe, growth
 *   spill_csum.c    checksums and the extent trailer
 *   spill_ring.c    lanes: io_uring setup, probing, registration
 *   spill_fixed.c   host-tier buffers as fixed buffers of every lane
 *   spill_io.c      the transfer engine: segments, short I/O, retries
 *   spill.c         public calls, extent table, locking
 */
#ifndef ORTMEM_LIB_SPILL_INTERNAL_H
#define ORTMEM_LIB_SPILL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <liburing.h>

#include <ortmem/spill.h>
#include "internal.h"

/* ---- extent allocator (spill_extent.c) ---- */

struct ortmem__range {
	uint64_t off;
	uint64_t len;
};

/*
 * Free space of [0, size), as ranges sorted by offset, never adjacent (they
 * are merged on free).  Not thread-safe: the spill lock covers it.
 */
struct ortmem__ealloc {
	struct ortmem__range *free;
	size_t nfree;
	size_t cap;
	uint64_t size;
	uint64_t used;
};

void ortmem__ealloc_init(struct ortmem__ealloc *a);
void ortmem__ealloc_fini(struct ortmem__ealloc *a);
/* First fit; -ENOSPC when no free range holds @len, -ENOMEM. */
int ortmem__ealloc_get(struct ortmem__ealloc *a, uint64_t len, uint64_t *offp);
/* -EINVAL when [off, off+len) is not wholly allocated (double free). */
int ortmem__ealloc_put(struct ortmem__ealloc *a, uint64_t off, uint64_t len);
/* Add [size, new_size) as free space; -EINVAL when it would shrink. */
int ortmem__ealloc_grow(struct ortmem__ealloc *a, uint64_t new_size);
uint64_t ortmem__ealloc_largest(const struct ortmem__ealloc *a);
/* Free bytes at the end of the space (what growing can extend). */
uint64_t ortmem__ealloc_tail_free(const struct ortmem__ealloc *a);

/* ---- the spill file (spill_file.c) ---- */

struct ortmem__sfile {
	int fd;
	bool direct;
	bool dioalign;		/* alignment came from statx */
	bool tmpfile;		/* our O_TMPFILE, not a caller's file */
	uint32_t align;		/* file offset alignment and extent unit */
	uint32_t mem_align;	/* memory alignment for direct I/O */
	char dir[256];
};

int ortmem__sfile_open(struct ortmem__sfile *f, const char *dir, bool buffered);
void ortmem__sfile_discard(struct ortmem__sfile *f);
void ortmem__sfile_close(struct ortmem__sfile *f);
/* Reserve [from, to) with fallocate. */
int ortmem__sfile_reserve(struct ortmem__sfile *f, uint64_t from, uint64_t to);
/* Open an existing file read-only, O_DIRECT where it allows (wfile.c). */
int ortmem__sfile_open_ro(struct ortmem__sfile *f, const char *path,
			  bool buffered);

/* ---- checksums and trailer (spill_csum.c) ---- */

#define ORTMEM__TRAILER_SIZE 40u
#define ORTMEM__TRAILER_MAGIC 0x314c495053524f00ull /* "\0ORSPIL1" */

uint64_t ortmem__csum(const void *buf, size_t len);
/* The trailer ends the extent: magic, id, file offset, length, checksum. */
void ortmem__trailer_pack(void *dst, uint64_t id, uint64_t off, uint64_t len,
			  uint64_t csum);
/* 0 when the trailer matches all four, else a short reason in @why. */
int ortmem__trailer_check(const void *src, uint64_t id, uint64_t off,
			  uint64_t len, uint64_t csum, const char **why);

/* ---- lanes and transfers (spill_ring.c, spill_io.c) ---- */

struct ortmem__sreq;
struct ortmem__lbatch;

/* A caller's buffer registered as one fixed buffer of a ring. */
struct ortmem__ureg {
	const uint8_t *ptr;	/* NULL: the slot is empty */
	uint64_t len;
};

/* One I/O in flight. */
struct ortmem__seg {
	struct ortmem__sreq *req;
	uint8_t *mem;		/* where the bytes go or come from */
	uint64_t foff;		/* file offset of mem[0] */
	uint64_t body_off;	/* offset in the caller's buffer (bounce) */
	uint32_t len;		/* bytes left */
	uint32_t total;		/* bytes at submission */
	int32_t buf_index;	/* registered buffer, or -1 */
	int16_t bounce;		/* bounce slot, or -1 */
	bool is_tail;
	bool fixed_ok;
	uint16_t stalls;	/* completions that moved nothing */
	uint32_t retries;
	int fault;		/* injected result, 0 none */
	int res;		/* result, for the synchronous engine */
	uint32_t next_free;
};

struct ortmem__lane {
	pthread_mutex_t lock;
	struct io_uring ring;
	bool have_ring;
	bool regfile;
	bool regbuf;
	uint8_t *mem;		/* bounce slots then tail slots, one mapping */
	size_t mem_len;
	uint32_t nbounce;
	uint32_t tail_size;	/* two alignment units */
	uint32_t *bounce_free;	/* stack of free bounce slots */
	uint32_t nbounce_free;
	uint32_t *tail_free;	/* stack of free tail slots (queue_depth) */
	uint32_t ntail_free;
	struct ortmem__seg *segs;	/* 2 * queue_depth: bodies and tails */
	uint32_t seg_free;	/* head of the free list, UINT32_MAX none */
	uint32_t inflight;	/* segments issued */
	uint32_t body_inflight;	/* of which bodies, at most queue_depth */
	struct ortmem__sreq *verify;	/* reads done, awaiting their checksum */
	uint32_t *done;		/* completed segs (sync engine) */
	/* Batches started here behind another's (ortmem__lane_drive). */
	struct ortmem__lbatch *extra;
	uint32_t ndone;
	/* Host-tier buffers registered in this ring (spill_fixed.c): table
	 * slot ubase + i holds ureg[i]; nuser is 0 when the ring has none. */
	uint32_t ubase;
	uint32_t nuser;
	uint32_t uhigh;		/* ureg[uhigh..nuser) are all empty */
	struct ortmem__ureg *ureg;
};

/* One extent transfer being run by a lane. */
struct ortmem__sreq {
	struct ortmem_spill_io *io;
	bool is_write;
	uint8_t *buf;
	uint64_t len;
	uint64_t id;		/* extent handle, for the trailer and errors */
	uint64_t foff;		/* extent's file offset */
	uint64_t body;		/* bytes moved straight from/to buf or bounce */
	uint64_t sched;		/* body bytes scheduled so far */
	uint64_t csum;
	bool direct;		/* buf is aligned for O_DIRECT */
	bool tail_sched;
	bool tail_done;
	bool finished;
	bool unprepared;	/* failed before any I/O */
	bool verify_pending;	/* read done, checksum still to check */
	/* No tail, no trailer: len and foff are multiples of the alignment
	 * and the caller verifies the bytes (file-backed weights). */
	bool raw;
	int32_t uslot;		/* ring slot of a registered caller buffer, -1 */
	/* Raw reads: called when the bytes are in; 0 or -errno. */
	int (*verify_raw)(struct ortmem__sreq *r);
	void *verify_arg;
	struct ortmem__sreq *next_verify;
	/*
	 * Reads into a buffer whose memory comes back piece by piece (a host
	 * buffer the module evicted, being promoted): only buf[0, ready) may
	 * be read into.  With @fetch set, a body segment is issued only below
	 * @ready, and the lane calls @fetch, after submitting what it could,
	 * whenever fewer than @fetch_ahead bytes are ready but not yet read:
	 * the next piece comes back while the reads of the last are in
	 * flight.  @fetch moves @ready forward (to len at the end) and returns
	 * 0, or -errno (the request fails; only buf[0, ready) is zeroed).
	 */
	int (*fetch)(struct ortmem__sreq *r);
	void *fetch_arg;
	uint64_t ready;
	uint64_t fetch_ahead;
	uint32_t tail_slot;	/* UINT32_MAX none */
	uint32_t pending;
	int err;
	uint64_t err_off;	/* file offset of the failing I/O */
	uint64_t moved;		/* bytes transferred so far */
	const char *err_what;
};

struct ortmem__sfault {
	atomic_uint_fast64_t seq;	/* submissions so far */
	atomic_uint_fast64_t nth;	/* absolute submission to hit, 0 none */
	atomic_int what;
};

struct ortmem__scount {
	atomic_uint_fast64_t bytes_written;
	atomic_uint_fast64_t bytes_read;
	atomic_uint_fast64_t short_transfers;
	atomic_uint_fast64_t retries;
	atomic_uint_fast64_t io_errors;
	atomic_uint_fast64_t checksum_errors;
	atomic_uint_fast64_t fixed_bytes;	/* bodies moved with *_FIXED */
};

/* What the lanes need to know of their handle. */
struct ortmem__sengine {
	struct ortmem__sfile *file;
	uint32_t queue_depth;
	uint32_t chunk;
	uint32_t flags;
	struct ortmem__sfault fault;
	struct ortmem__scount count;
};

int ortmem__lane_init(struct ortmem__lane *l, struct ortmem__sengine *e,
		      uint32_t *features);
/* Lock one of @n lanes: the first free one from a rotating start (@next),
 * so callers spread; when all are busy, wait for the start one. */
struct ortmem__lane *ortmem__lane_lock_any(struct ortmem__lane *lanes,
					   uint32_t n, atomic_uint *next);
void ortmem__lane_fini(struct ortmem__lane *l, struct ortmem__sengine *e);
/* Bytes on disk of an extent of @len bytes: body, tail data and trailer. */
uint64_t ortmem__extent_disk_len(uint64_t len, uint32_t align);
/* Run @n prepared requests to completion; each gets err 0 or -errno. */
void ortmem__lane_run(struct ortmem__lane *l, struct ortmem__sengine *e,
		      struct ortmem__sreq *reqs, unsigned int n);

/*
 * A batch of requests a lane runs: reqs[0, lo) are finished, reqs[lo,
 * next) activated.  Its state lives with its owner, so that a batch one
 * call started can be finished by a later one (the weights file's
 * read-ahead).
 */
struct ortmem__lbatch {
	struct ortmem__sreq *reqs;
	unsigned int n, lo, next;
	bool on_lane;		/* on the lane's extra list */
	struct ortmem__lbatch *next_extra;
};

/*
 * Asked, under the lane's lock, whenever the batch being driven has
 * nothing left to issue and the queue has room: a batch to start on this
 * lane behind it, or NULL.  Only a lane with a ring asks (synchronous
 * I/O would make the caller wait for the next read too).
 */
typedef struct ortmem__lbatch *(*ortmem__lane_feed_fn)(void *arg,
						       struct ortmem__lane *l);

/*
 * Drive @b until all its requests are finished.  Batches that @feed
 * started (now or in an earlier call) are issued and reaped along with
 * it and stay on the lane, in flight, when @b is done; whoever drives the
 * lane next carries them on, and their owner finishes one by driving it
 * as @b.  The lane's lock is held throughout.
 */
void ortmem__lane_drive(struct ortmem__lane *l, struct ortmem__sengine *e,
			struct ortmem__lbatch *b, ortmem__lane_feed_fn feed,
			void *arg);

/* ---- host-tier buffers as fixed buffers (spill_fixed.c) ---- */

/* Slots each ring keeps for them, after its bounce and tail buffers. */
#define ORTMEM__FIXED_SLOTS 1024u
/* io_uring takes at most 1 GiB in one registered buffer. */
#define ORTMEM__FIXED_LEN_MAX (1ull << 30)

/*
 * The registry of a spill handle's registered host buffers.  Refcounted:
 * the spill handle holds one reference and every host tier attached to it
 * another, so a host tier closed after its spill handle finds the registry
 * detached (its buffers already unregistered) rather than freed memory.
 */
struct ortmem__fixed;

struct ortmem__fixed *ortmem__fixed_new(struct ortmem__lane *lanes,
					uint32_t nlanes,
					struct ortmem__sengine *e);
void ortmem__fixed_get(struct ortmem__fixed *fx);
void ortmem__fixed_put(struct ortmem__fixed *fx);
/* Spill close: unregister everything while the rings live, then forget them. */
void ortmem__fixed_detach(struct ortmem__fixed *fx);
/* Whether the rings have slots for host buffers at all. */
bool ortmem__fixed_usable(struct ortmem__fixed *fx);
/*
 * Register [ptr, ptr+len) in every lane: 0, or the kernel's -errno
 * (nothing left registered); -ENOSPC when the slots are full, -E2BIG over
 * ORTMEM__FIXED_LEN_MAX, -ESHUTDOWN when detached.  Sets no thread error.
 */
int ortmem__fixed_add(struct ortmem__fixed *fx, struct ortmem__fixed_user *user,
		      const void *ptr, uint64_t len);
/* Unregister the buffer at @ptr from every lane, before it is unmapped,
 * released or evicted; nothing when it is not registered. */
void ortmem__fixed_del(struct ortmem__fixed *fx, const void *ptr);
/*
 * Each host tier attached to the registry joins it with its verdict (ON,
 * or OFF and why) and leaves it when it detaches; its registered buffers
 * are counted on it.  ortmem_spill_stats() sums them up over the tiers
 * attached now (ortmem__fixed_stats()), ortmem_host_stats() reads one.
 * struct ortmem__fixed_user is in internal.h: the host tier embeds it.
 */
void ortmem__fixed_join(struct ortmem__fixed *fx, struct ortmem__fixed_user *user,
			uint32_t state, int err);
void ortmem__fixed_leave(struct ortmem__fixed *fx, struct ortmem__fixed_user *user);
void ortmem__fixed_user_stats(struct ortmem__fixed *fx,
			      const struct ortmem__fixed_user *user,
			      uint32_t *state, int32_t *err, uint64_t *buffers);
void ortmem__fixed_stats(struct ortmem__fixed *fx, uint32_t *state, int32_t *err,
			 uint64_t *regions);

/* The registry of @s, with a reference for the caller. */
struct ortmem__fixed *ortmem__spill_fixed(struct ortmem_spill *s);

/*
 * ortmem_spill_read() into a buffer whose memory comes back piece by piece
 * (ortmem__sreq.fetch): @fetch makes buf[0, ready) grow, at least @ahead
 * bytes ahead of the reads when it can, and is called while they are in
 * flight.  On failure only the part that is back is zeroed; *@readyp says
 * how far that is, success or not.
 */
int ortmem__spill_read_fetch(struct ortmem_spill *spill, uint64_t extent,
			     void *buf, uint64_t len,
			     int (*fetch)(struct ortmem__sreq *r), void *arg,
			     uint64_t ahead, uint64_t *readyp);

/* For tests: where an extent lies in which file descriptor. */
int ortmem__spill_extent_where(struct ortmem_spill *s, uint64_t extent,
			       int *fdp, uint64_t *offp, uint64_t *disk_lenp);

/* ---- weights files (spill_wfile.c, spill_wahead.c, spill_wread.c) ---- */

struct ortmem__wf_ahead_set;

struct ortmem_wfile {
	struct ortmem__sfile file;
	int plain_fd;		/* buffered descriptor for the unaligned end */
	uint64_t size;
	uint32_t block;
	uint64_t nblocks;
	uint32_t *crc;
	uint32_t nlanes;
	atomic_uint next_lane;
	struct ortmem__lane *lanes;
	struct ortmem__sengine eng;
	uint32_t features;
	atomic_uint_fast64_t reads;
	atomic_uint_fast64_t reads_ahead;	/* of them, announced ones taken */
	atomic_uint_fast64_t bytes;	/* verified and handed back */
	char path[256];
	char csum_path[256];
	struct ortmem__wf_ahead_set *ahead;	/* spill_wahead.c */
};

struct ortmem__lane *ortmem__wf_lane_lock(struct ortmem_wfile *wf);
int ortmem__wf_verify(struct ortmem_wfile *wf, uint64_t foff, const uint8_t *buf,
		      uint64_t len, bool count);
uint64_t ortmem__wf_reqs_count(const struct ortmem_wfile *wf, uint64_t body);
void ortmem__wf_reqs_fill(struct ortmem_wfile *wf, struct ortmem__sreq *reqs,
			  uint64_t foff, uint8_t *dst, uint64_t body,
			  int (*verify)(struct ortmem__sreq *r));
int ortmem__wf_reqs_result(struct ortmem_wfile *wf, struct ortmem__sreq *reqs,
			   uint64_t n, uint64_t foff, uint64_t len);

/*
 * Read-ahead (spill_wahead.c).  A caller that knows its next read, and
 * the buffer it will read into, announces it; the lane running the read
 * before it starts it as soon as it has nothing left of its own to issue,
 * so the disk's queue stays full from one read to the next.  The
 * announced read is finished by ortmem_wfile_read() of exactly that
 * range into exactly that buffer, which waits only for what is still in
 * flight and reports its errors as a read of its own would.  Until then
 * the buffer belongs to the read-ahead: whoever frees it without reading
 * it must cancel first.
 *
 * ortmem__wf_ahead(): 0 announced, -EBUSY all slots taken, -EOPNOTSUPP
 * nothing a ring could start (no ring, no whole block, unaligned buffer),
 * -ENOMEM; -EINVAL a range outside the file.  Sets no thread error: the
 * caller's read simply runs as it would have.
 */
int ortmem__wf_ahead(struct ortmem_wfile *wf, uint64_t off, void *dst,
		     uint64_t len);
/* Finish an announced read of [off, off + len) into @dst: true when there
 * was one, its outcome in *@retp (0, or -errno with the thread's error). */
bool ortmem__wf_ahead_take(struct ortmem_wfile *wf, uint64_t off, void *dst,
			   uint64_t len, int *retp);
/* Forget what was announced for @dst, waiting for what is in flight. */
void ortmem__wf_ahead_cancel(struct ortmem_wfile *wf, const void *dst);
/* Run @n requests of a read on @l (locked), starting announced reads
 * behind them when their queue has room. */
void ortmem__wf_lane_drive(struct ortmem_wfile *wf, struct ortmem__lane *l,
			   struct ortmem__sreq *reqs, unsigned int n);
/* Open: the slots (-ENOMEM).  Close: cancel everything, free them. */
int ortmem__wf_ahead_init(struct ortmem_wfile *wf);
void ortmem__wf_ahead_fini(struct ortmem_wfile *wf);

#endif /* ORTMEM_LIB_SPILL_INTERNAL_H */
