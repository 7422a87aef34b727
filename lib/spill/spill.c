// SPDX-License-Identifier: MIT
/*
 * The spill handle: options, the extent table behind the handles given out,
 * reservation of file space under the budget, and the public calls.
 *
 * Locking: s->lock covers the extent table, the allocator and the file's
 * growth; each lane has its own lock, held for a whole batch.  A lane's I/O
 * never runs under s->lock, so reservations and frees go on while other
 * threads move data.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "spill_internal.h"

#define SPILL_QD_DEFAULT 32u
#define SPILL_LANES_DEFAULT 2u
#define SPILL_CHUNK_DEFAULT (1u << 20)
#define SPILL_GROW_DEFAULT (64ull << 20)
#define SPILL_BATCH_MAX (1u << 20)
#define SPILL_DIR_DEFAULT "/var/tmp"
/* Extent records the table starts with. */
#define SPILL_RECS_FIRST 256u
/* Mixed into the handle's address bits for its extents' salt. */
#define SPILL_SALT_MIX 0x5a5au

enum rec_state { REC_FREE = 0, REC_WRITING, REC_LIVE };

struct spill_rec {
	uint64_t off;
	uint64_t len;
	uint64_t disk_len;
	uint64_t csum;
	uint32_t readers;
	uint16_t gen;
	uint8_t state;
	uint32_t next_free;
};

struct ortmem_spill {
	pthread_mutex_t lock;
	struct ortmem__sfile file;
	struct ortmem__ealloc ea;
	struct spill_rec *recs;
	uint32_t nrecs;
	size_t cap;
	uint32_t rec_free;	/* head of free records, UINT32_MAX none */
	uint16_t salt;		/* tells this handle's extents from others' */
	uint64_t budget;
	uint64_t grow;
	uint64_t live;
	uint32_t features;
	uint32_t nlanes;
	atomic_uint next_lane;
	struct ortmem__lane *lanes;
	struct ortmem__sengine eng;
	struct ortmem__fixed *fixed;	/* registered host-tier buffers */
	/* Calls inside spill_run(); close waits for them (under lock). */
	uint32_t users;
	bool closing;
	pthread_cond_t idle;
};

/*
 * A failure of the disk tier: a plain error whose figures say "disk" and the
 * bytes concerned, with the whole account in its reason.
 */
#define spill_err(code, bytes, ...) \
	ortmem__err_io(code, ORTMEM_TIER_DISK, bytes, __VA_ARGS__)

/* ---- handles ---- */

static uint64_t rec_handle(const struct ortmem_spill *s, uint32_t idx)
{
	return (uint64_t)s->salt << 48 | (uint64_t)s->recs[idx].gen << 32 |
	       (uint64_t)(idx + 1);
}

static struct spill_rec *rec_lookup(struct ortmem_spill *s, uint64_t h,
				    uint32_t *idxp)
{
	uint32_t idx = (uint32_t)h - 1;
	struct spill_rec *r;

	if ((uint32_t)h == 0 || idx >= s->nrecs || h >> 48 != s->salt)
		return NULL;
	r = &s->recs[idx];
	if (r->state != REC_LIVE || (uint16_t)(h >> 32) != r->gen)
		return NULL;
	*idxp = idx;
	return r;
}

static int rec_new(struct ortmem_spill *s, uint32_t *idxp)
{
	if (s->rec_free == UINT32_MAX && s->nrecs == s->cap) {
		/* Record indexes are 32-bit. */
		if (s->cap >= UINT32_MAX / 4)
			return -ENOMEM;
		if (ortmem__grow((void **)&s->recs, &s->cap, (size_t)s->nrecs + 1,
				 sizeof(*s->recs), SPILL_RECS_FIRST))
			return -ENOMEM;
	}
	if (s->rec_free != UINT32_MAX) {
		*idxp = s->rec_free;
		s->rec_free = s->recs[*idxp].next_free;
	} else {
		*idxp = s->nrecs++;
		s->recs[*idxp].gen = 0;
	}
	s->recs[*idxp].gen++;
	s->recs[*idxp].readers = 0;
	s->recs[*idxp].state = REC_WRITING;
	return 0;
}

static void rec_release(struct ortmem_spill *s, uint32_t idx)
{
	struct spill_rec *r = &s->recs[idx];

	if (ortmem__ealloc_put(&s->ea, r->off, r->disk_len))
		pr_err("spill: extent %u at %" PRIu64 " (+%" PRIu64 ") was not allocated; the allocator is inconsistent",
		       idx, r->off, r->disk_len);
	if (r->state == REC_LIVE)
		s->live--;
	r->state = REC_FREE;
	r->next_free = s->rec_free;
	s->rec_free = idx;
}

/* ---- space ---- */

/* Grow the file so a free range of @disk_len exists; under s->lock. */
static int spill_grow(struct ortmem_spill *s, uint64_t len, uint64_t disk_len)
{
	uint64_t size = s->ea.size, need = disk_len - ortmem__ealloc_tail_free(&s->ea);
	uint64_t want = need > s->grow ? need : s->grow;
	int ret;

	if (s->budget && (need > s->budget || size > s->budget - need))
		return spill_err(-ORTMEM_E_TIER_EXHAUSTED, len,
			"disk tier: no room for a %" PRIu64 "-byte extent (%" PRIu64 " bytes on disk): the spill budget of %" PRIu64 " bytes has %" PRIu64 " in extents and its largest free range is %" PRIu64 " bytes; free extents or raise budget_bytes",
			len, disk_len, s->budget, s->ea.used,
			ortmem__ealloc_largest(&s->ea));
	if (s->budget && want > s->budget - size)
		want = s->budget - size;
	want = (want + s->file.align - 1) & ~(uint64_t)(s->file.align - 1);
	ret = ortmem__sfile_reserve(&s->file, size, size + want);
	if (ret && want > need) {
		want = need;
		ret = ortmem__sfile_reserve(&s->file, size, size + want);
	}
	if (ret)
		return spill_err(ret, len,
			"disk tier: cannot grow the spill file in %s from %" PRIu64 " to %" PRIu64 " bytes for a %" PRIu64 "-byte extent (fallocate); free space on that filesystem, or lower the demand",
			s->file.dir, size, size + want, len);
	ret = ortmem__ealloc_grow(&s->ea, size + want);
	return ret ? spill_err(ret, len, "disk tier: out of memory for the free list") : 0;
}

/* Reserve a new extent for @len bytes; fills @r's extent fields. */
static int spill_reserve(struct ortmem_spill *s, struct ortmem__sreq *r)
{
	uint64_t disk_len = ortmem__extent_disk_len(r->len, s->file.align);
	uint32_t idx;
	uint64_t off;
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = ortmem__ealloc_get(&s->ea, disk_len, &off);
	if (ret == -ENOSPC) {
		ret = spill_grow(s, r->len, disk_len);
		if (!ret)
			ret = ortmem__ealloc_get(&s->ea, disk_len, &off);
	}
	if (!ret) {
		ret = rec_new(s, &idx);
		if (ret)
			ortmem__ealloc_put(&s->ea, off, disk_len);
	}
	if (!ret) {
		s->recs[idx].off = off;
		s->recs[idx].len = r->len;
		s->recs[idx].disk_len = disk_len;
		r->id = rec_handle(s, idx);
		r->foff = off;
	} else if (ret == -ENOMEM) {
		ret = spill_err(ret, r->len, "disk tier: out of memory for the extent table");
	} else if (ret == -ENOSPC) {
		ret = spill_err(ret, r->len, "disk tier: the spill file has no free range of %" PRIu64 " bytes", disk_len);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* ---- open and close ---- */

static int spill_opts_check(const struct ortmem_spill_opts *o)
{
	uint32_t flags = ORTMEM_OPTS_GET(o, flags, 0);
	uint32_t qd = ORTMEM_OPTS_GET(o, queue_depth, 0);
	uint32_t lanes = ORTMEM_OPTS_GET(o, lanes, 0);
	uint32_t chunk = ORTMEM_OPTS_GET(o, chunk_bytes, 0);

	if (flags & ~ORTMEM_SPILL_F_ALL)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"unknown spill flags %#x", flags & ~ORTMEM_SPILL_F_ALL);
	if (qd > ORTMEM_SPILL_QD_MAX)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"queue depth %u is above %u", qd, ORTMEM_SPILL_QD_MAX);
	if (lanes > ORTMEM_SPILL_LANES_MAX)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"%u lanes is above %u", lanes, ORTMEM_SPILL_LANES_MAX);
	if (chunk && (chunk & (chunk - 1) || chunk < ORTMEM_SPILL_CHUNK_MIN ||
		      chunk > ORTMEM_SPILL_CHUNK_MAX))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"chunk of %u bytes is not a power of two in [%u, %u]",
			chunk, ORTMEM_SPILL_CHUNK_MIN, ORTMEM_SPILL_CHUNK_MAX);
	return 0;
}

static const char *spill_dir(const struct ortmem_spill_opts *o)
{
	const char *dir = ORTMEM_OPTS_GET(o, dir, NULL);

	if (!dir || !*dir)
		dir = secure_getenv("ORTMEM_SPILL_DIR");
	return dir && *dir ? dir : SPILL_DIR_DEFAULT;
}

static int spill_start_lanes(struct ortmem_spill *s)
{
	uint32_t i;
	int ret;

	s->lanes = calloc(s->nlanes, sizeof(*s->lanes));
	if (!s->lanes)
		return -ENOMEM;
	for (i = 0; i < s->nlanes; i++) {
		ret = ortmem__lane_init(&s->lanes[i], &s->eng, &s->features);
		if (ret) {
			while (i--)
				ortmem__lane_fini(&s->lanes[i], &s->eng);
			free(s->lanes);
			s->lanes = NULL;
			return ret;
		}
	}
	return 0;
}

static void spill_log_features(const struct ortmem_spill *s)
{
	pr_info("spill: file in %s, %s I/O, alignment %u (%s), memory alignment %u, %s, %s file, %s buffers, %u lanes of depth %u",
		s->file.dir, s->file.direct ? "direct" : "buffered", s->file.align,
		s->file.dioalign ? "statx" : "block size", s->file.mem_align,
		s->features & ORTMEM_SPILL_HAVE_URING ? "io_uring" : "pread/pwrite",
		s->features & ORTMEM_SPILL_HAVE_REGFILE ? "registered" : "plain",
		s->features & ORTMEM_SPILL_HAVE_REGBUF ? "registered" : "plain",
		s->nlanes, s->eng.queue_depth);
}

ORTMEM_API int ortmem_spill_open(const struct ortmem_spill_opts *opts,
				 struct ortmem_spill **spillp)
{
	struct ortmem_spill *s;
	uint32_t i;
	int ret;

	if (!spillp)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0, "spillp is NULL");
	*spillp = NULL;
	ret = ORTMEM_OPTS_VALID(opts, ortmem_spill_opts) ?:
	      ORTMEM_OPTS_WHOLE(opts, ortmem_spill_opts,
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, dir),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, budget_bytes),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, queue_depth),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, flags),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, lanes),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, chunk_bytes),
			ORTMEM_OPTS_SPAN(ortmem_spill_opts, grow_bytes));
	if (!ret)
		ret = spill_opts_check(opts);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return spill_err(-ENOMEM, 0, "disk tier: out of memory for a spill handle");
	s->budget = ORTMEM_OPTS_GET(opts, budget_bytes, 0);
	s->grow = ORTMEM_OPTS_GET(opts, grow_bytes, 0) ?: SPILL_GROW_DEFAULT;
	s->nlanes = ORTMEM_OPTS_GET(opts, lanes, 0) ?: SPILL_LANES_DEFAULT;
	s->eng.queue_depth = ORTMEM_OPTS_GET(opts, queue_depth, 0) ?: SPILL_QD_DEFAULT;
	s->eng.chunk = ORTMEM_OPTS_GET(opts, chunk_bytes, 0) ?: SPILL_CHUNK_DEFAULT;
	s->eng.flags = ORTMEM_OPTS_GET(opts, flags, 0);
	s->eng.file = &s->file;
	s->rec_free = UINT32_MAX;
	s->salt = (uint16_t)(((uintptr_t)s >> 4) ^ (uintptr_t)s >> 20 ^ SPILL_SALT_MIX);
	ortmem__ealloc_init(&s->ea);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	ret = ortmem__sfile_open(&s->file, spill_dir(opts),
				 s->eng.flags & ORTMEM_SPILL_F_BUFFERED);
	if (ret)
		goto err_free;
	if (s->eng.chunk < s->file.align) {
		ret = ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"chunk of %u bytes is below the file's alignment of %u",
			s->eng.chunk, s->file.align);
		goto err_close_file;
	}
	s->features = ORTMEM_SPILL_HAVE_URING | ORTMEM_SPILL_HAVE_REGFILE |
		      ORTMEM_SPILL_HAVE_REGBUF;
	if (s->file.direct)
		s->features |= ORTMEM_SPILL_HAVE_DIRECT;
	if (s->file.dioalign)
		s->features |= ORTMEM_SPILL_HAVE_DIOALIGN;
	ret = spill_start_lanes(s);
	if (ret) {
		ret = spill_err(ret, 0, "disk tier: cannot set up %u I/O lanes", s->nlanes);
		goto err_close_file;
	}
	s->fixed = ortmem__fixed_new(s->lanes, s->nlanes, &s->eng);
	if (!s->fixed) {
		ret = spill_err(-ENOMEM, 0, "disk tier: out of memory for a spill handle");
		goto err_stop_lanes;
	}
	spill_log_features(s);
	*spillp = s;
	return 0;

err_stop_lanes:
	for (i = 0; i < s->nlanes; i++)
		ortmem__lane_fini(&s->lanes[i], &s->eng);
	free(s->lanes);
err_close_file:
	ortmem__sfile_close(&s->file);
err_free:
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return ret;
}

ORTMEM_API void ortmem_spill_close(struct ortmem_spill *spill)
{
	uint32_t i;

	if (!spill)
		return;
	/* A runtime's error path may close while another thread's transfers
	 * run: let them finish, and refuse those that start meanwhile. */
	pthread_mutex_lock(&spill->lock);
	spill->closing = true;
	while (spill->users)
		pthread_cond_wait(&spill->idle, &spill->lock);
	pthread_mutex_unlock(&spill->lock);
	/* A host tier still attached keeps the registry, detached: its
	 * buffers are unregistered now, while the rings live. */
	ortmem__fixed_detach(spill->fixed);
	for (i = 0; i < spill->nlanes; i++)
		ortmem__lane_fini(&spill->lanes[i], &spill->eng);
	free(spill->lanes);
	/* Frees every block now, though a ring's teardown (the kernel's,
	 * asynchronous) may still hold the file open for a while. */
	ortmem__sfile_discard(&spill->file);
	ortmem__sfile_close(&spill->file);
	ortmem__ealloc_fini(&spill->ea);
	free(spill->recs);
	pthread_cond_destroy(&spill->idle);
	pthread_mutex_destroy(&spill->lock);
	free(spill);
}

/* ---- transfers ---- */

static int spill_check_io(const struct ortmem_spill_io *io, unsigned int i)
{
	if (io->op != ORTMEM_SPILL_OP_WRITE && io->op != ORTMEM_SPILL_OP_READ)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, io->len,
			"transfer %u has unknown op %u", i, io->op);
	if (!io->buf)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, io->len,
			"transfer %u has a NULL buffer", i);
	if (!io->len || io->len > ORTMEM_SPILL_EXTENT_MAX)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, io->len,
			"transfer %u has length %" PRIu64 ", not in [1, %llu]",
			i, io->len, ORTMEM_SPILL_EXTENT_MAX);
	return 0;
}

static int spill_prepare_read(struct ortmem_spill *s, struct ortmem__sreq *r)
{
	struct spill_rec *rec;
	uint32_t idx;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	rec = rec_lookup(s, r->id, &idx);
	if (!rec) {
		ret = spill_err(-ORTMEM_E_STALE_HANDLE, r->len,
			"disk tier: extent %#" PRIx64 " is not live in this spill handle (freed, never written, or from another handle)",
			r->id);
	} else if (rec->len != r->len) {
		ret = ortmem__err_invalid(ORTMEM_TIER_DISK, r->len,
			"extent %#" PRIx64 " holds %" PRIu64 " bytes; read it with exactly that length",
			r->id, rec->len);
	} else {
		rec->readers++;
		r->foff = rec->off;
		r->csum = rec->csum;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static int spill_prepare(struct ortmem_spill *s, struct ortmem_spill_io *io,
			 struct ortmem__sreq *r)
{
	r->io = io;
	r->buf = io->buf;
	r->len = io->len;
	r->tail_slot = UINT32_MAX;
	r->is_write = io->op == ORTMEM_SPILL_OP_WRITE;
	if (r->is_write)
		return spill_reserve(s, r);
	r->id = io->extent;
	return spill_prepare_read(s, r);
}

static void spill_settle(struct ortmem_spill *s, struct ortmem__sreq *r)
{
	uint32_t idx = (uint32_t)r->id - 1;

	pthread_mutex_lock(&s->lock);
	if (!r->is_write) {
		s->recs[idx].readers--;
	} else if (r->err) {
		rec_release(s, idx);
	} else {
		s->recs[idx].csum = r->csum;
		s->recs[idx].state = REC_LIVE;
		s->live++;
		r->io->extent = r->id;
	}
	pthread_mutex_unlock(&s->lock);
}

static int spill_report(const struct ortmem__sreq *r)
{
	const char *what = r->err_what ? r->err_what : "failed";

	if (r->err == -ORTMEM_E_CHECKSUM)
		return spill_err(r->err, r->len,
			"disk tier: extent %#" PRIx64 " (%" PRIu64 " bytes at file offset %" PRIu64 ") is corrupt: %s; the buffer was zero-filled and the extent kept",
			r->id, r->len, r->foff, what);
	if (r->is_write)
		return spill_err(r->err, r->len,
			"disk tier: demoting %" PRIu64 " bytes to extent %#" PRIx64 " failed at file offset %" PRIu64 " after %" PRIu64 " bytes: %s; the data is still in its source buffer and the extent was released",
			r->len, r->id, r->err_off, r->moved, what);
	return spill_err(r->err, r->len,
		"disk tier: promoting extent %#" PRIx64 " (%" PRIu64 " bytes) failed at file offset %" PRIu64 " after %" PRIu64 " bytes: %s; the buffer was zero-filled",
		r->id, r->len, r->err_off, r->moved, what);
}

static struct ortmem__lane *spill_lane_lock(struct ortmem_spill *s)
{
	return ortmem__lane_lock_any(s->lanes, s->nlanes, &s->next_lane);
}

static int spill_run_batch(struct ortmem_spill *s, struct ortmem_spill_io *ios,
			   struct ortmem__sreq *reqs, unsigned int n,
			   struct ortmem_error *first_prep, unsigned int *firstp);

/*
 * Run a batch of transfers; the first failure is the thread's error.  The
 * call counts as a user of @s, which ortmem_spill_close() waits for.
 */
static int spill_run(struct ortmem_spill *s, struct ortmem_spill_io *ios,
		     struct ortmem__sreq *reqs, unsigned int n)
{
	struct ortmem_error first_prep = { 0 };
	unsigned int first = n;
	int ret;

	pthread_mutex_lock(&s->lock);
	if (s->closing) {
		pthread_mutex_unlock(&s->lock);
		return spill_err(-ESHUTDOWN, 0,
			"disk tier: the spill handle is being closed; no transfer can start on it");
	}
	s->users++;
	pthread_mutex_unlock(&s->lock);
	ret = spill_run_batch(s, ios, reqs, n, &first_prep, &first);
	pthread_mutex_lock(&s->lock);
	if (!--s->users && s->closing)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
	if (ret || first == n)
		return ret;
	if (reqs[first].unprepared)
		return ortmem__err_restore(&first_prep, first_prep.code);
	return spill_report(&reqs[first]);
}

/* Run a batch; *@firstp: the first transfer that failed, n if none. */
static int spill_run_batch(struct ortmem_spill *s, struct ortmem_spill_io *ios,
			   struct ortmem__sreq *reqs, unsigned int n,
			   struct ortmem_error *first_prep, unsigned int *firstp)
{
	struct ortmem__lane *l;
	unsigned int i, first = n;

	for (i = 0; i < n; i++) {
		reqs[i].err = spill_prepare(s, &ios[i], &reqs[i]);
		if (!reqs[i].err)
			continue;
		reqs[i].unprepared = true;
		reqs[i].finished = true;
		if (first == n) {
			first = i;
			*first_prep = *ortmem_last_error();
		}
	}
	l = spill_lane_lock(s);
	ortmem__lane_run(l, &s->eng, reqs, n);
	pthread_mutex_unlock(&l->lock);
	for (i = 0; i < n; i++) {
		ios[i].res = reqs[i].err;
		if (reqs[i].unprepared)
			continue;
		spill_settle(s, &reqs[i]);
		if (reqs[i].err && i < first)
			first = i;
	}
	*firstp = first;
	return 0;
}

ORTMEM_API int ortmem_spill_submit(struct ortmem_spill *spill,
				   struct ortmem_spill_io *ios, unsigned int n)
{
	struct ortmem__sreq *reqs;
	unsigned int i;
	int ret;

	if (!spill || !ios || !n || n > SPILL_BATCH_MAX)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_spill_submit needs a handle and 1 to %u transfers (got %s, %s, %u)",
			SPILL_BATCH_MAX, spill ? "a handle" : "NULL",
			ios ? "an array" : "NULL", n);
	for (i = 0; i < n; i++) {
		ret = spill_check_io(&ios[i], i);
		if (ret)
			return ret;
	}
	reqs = calloc(n, sizeof(*reqs));
	if (!reqs)
		return spill_err(-ENOMEM, 0, "disk tier: out of memory for %u transfers", n);
	ret = spill_run(spill, ios, reqs, n);
	free(reqs);
	return ret;
}

ORTMEM_API int ortmem_spill_write(struct ortmem_spill *spill, const void *buf,
				  uint64_t len, uint64_t *extentp)
{
	struct ortmem_spill_io io = {
		.op = ORTMEM_SPILL_OP_WRITE, .buf = (void *)buf, .len = len,
	};
	struct ortmem__sreq req = { 0 };
	int ret;

	if (!spill || !extentp)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, len,
			"ortmem_spill_write needs a handle and extentp");
	ret = spill_check_io(&io, 0);
	if (!ret)
		ret = spill_run(spill, &io, &req, 1);
	if (!ret)
		*extentp = io.extent;
	return ret;
}

ORTMEM_API int ortmem_spill_read(struct ortmem_spill *spill, uint64_t extent,
				 void *buf, uint64_t len)
{
	struct ortmem_spill_io io = {
		.op = ORTMEM_SPILL_OP_READ, .extent = extent, .buf = buf, .len = len,
	};
	struct ortmem__sreq req = { 0 };
	int ret;

	if (!spill)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, len,
			"ortmem_spill_read needs a handle");
	ret = spill_check_io(&io, 0);
	if (!ret)
		ret = spill_run(spill, &io, &req, 1);
	return ret;
}

int ortmem__spill_read_fetch(struct ortmem_spill *spill, uint64_t extent,
			     void *buf, uint64_t len,
			     int (*fetch)(struct ortmem__sreq *r), void *arg,
			     uint64_t ahead, uint64_t *readyp)
{
	struct ortmem_spill_io io = {
		.op = ORTMEM_SPILL_OP_READ, .extent = extent, .buf = buf, .len = len,
	};
	struct ortmem__sreq req = {
		.fetch = fetch, .fetch_arg = arg, .fetch_ahead = ahead,
	};
	int ret = spill_check_io(&io, 0);

	if (!ret)
		ret = spill_run(spill, &io, &req, 1);
	*readyp = req.ready;
	return ret;
}

ORTMEM_API int ortmem_spill_free(struct ortmem_spill *spill, uint64_t extent)
{
	struct spill_rec *rec;
	uint32_t idx;
	int ret = 0;

	if (!spill)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_spill_free needs a handle");
	pthread_mutex_lock(&spill->lock);
	rec = rec_lookup(spill, extent, &idx);
	if (!rec)
		ret = spill_err(-ORTMEM_E_STALE_HANDLE, 0,
			"disk tier: extent %#" PRIx64 " is not live in this spill handle (freed, never written, or from another handle)",
			extent);
	else if (rec->readers)
		ret = spill_err(-EBUSY, rec->len,
			"disk tier: extent %#" PRIx64 " is being read by %u callers; free it when they are done",
			extent, rec->readers);
	else
		rec_release(spill, idx);
	pthread_mutex_unlock(&spill->lock);
	return ret;
}

ORTMEM_API int ortmem_spill_stats(struct ortmem_spill *spill,
				  struct ortmem_spill_stats *st)
{
	struct ortmem_spill_stats v = { .sz = sizeof(v) };
	struct ortmem__scount *c;

	if (!spill || !st || st->sz < sizeof(st->sz) + sizeof(st->features))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_spill_stats needs a handle and a stats struct declared with ORTMEM_OPTS()");
	c = &spill->eng.count;
	v.features = spill->features;
	v.align = spill->file.align;
	v.mem_align = spill->file.mem_align;
	v.queue_depth = spill->eng.queue_depth;
	v.lanes = spill->nlanes;
	v.chunk_bytes = spill->eng.chunk;
	v.budget_bytes = spill->budget;
	pthread_mutex_lock(&spill->lock);
	v.file_bytes = spill->ea.size;
	v.used_bytes = spill->ea.used;
	v.largest_free = ortmem__ealloc_largest(&spill->ea);
	v.extents = spill->live;
	v.calls_running = spill->users;
	pthread_mutex_unlock(&spill->lock);
	v.bytes_written = atomic_load(&c->bytes_written);
	v.bytes_read = atomic_load(&c->bytes_read);
	v.short_transfers = atomic_load(&c->short_transfers);
	v.retries = atomic_load(&c->retries);
	v.io_errors = atomic_load(&c->io_errors);
	v.checksum_errors = atomic_load(&c->checksum_errors);
	v.fixed_bytes = atomic_load(&c->fixed_bytes);
	ortmem__fixed_stats(spill->fixed, &v.fixed_host, &v.fixed_error,
			    &v.fixed_buffers);
	memcpy((char *)st + sizeof(st->sz), (char *)&v + sizeof(v.sz),
	       (st->sz < sizeof(v) ? st->sz : sizeof(v)) - sizeof(v.sz));
	return 0;
}

/* The name before 0.2, like no other stats call; kept for callers built
 * against it (libortmem.map keeps it in ORTMEM_0.1). */
ORTMEM_API int ortmem_spill_get_stats(struct ortmem_spill *spill,
				      struct ortmem_spill_stats *st)
	__attribute__((alias("ortmem_spill_stats")));

ORTMEM_API int ortmem_spill_inject_fault(struct ortmem_spill *spill,
					 uint64_t nth, int fault)
{
	struct ortmem__sfault *f;

	if (!spill)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_spill_inject_fault needs a handle");
	if (nth && fault >= 0 && fault != ORTMEM_SPILL_FAULT_SHORT &&
	    fault != ORTMEM_SPILL_FAULT_STALL)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"unknown fault %d: use a negative errno, ORTMEM_SPILL_FAULT_SHORT or ORTMEM_SPILL_FAULT_STALL",
			fault);
	f = &spill->eng.fault;
	atomic_store(&f->nth, 0);
	atomic_store(&f->what, fault);
	if (nth)
		atomic_store(&f->nth, atomic_load(&f->seq) + nth);
	return 0;
}

int ortmem__spill_extent_where(struct ortmem_spill *s, uint64_t extent,
			       int *fdp, uint64_t *offp, uint64_t *disk_lenp)
{
	struct spill_rec *rec;
	uint32_t idx;
	int ret = -ORTMEM_E_STALE_HANDLE;

	pthread_mutex_lock(&s->lock);
	rec = rec_lookup(s, extent, &idx);
	if (rec) {
		*fdp = s->file.fd;
		*offp = rec->off;
		*disk_lenp = rec->disk_len;
		ret = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

struct ortmem__fixed *ortmem__spill_fixed(struct ortmem_spill *s)
{
	ortmem__fixed_get(s->fixed);
	return s->fixed;
}
