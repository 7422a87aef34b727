// SPDX-License-Identifier: MIT
/*
 * Read-ahead of a weights file: a read announced before it is asked for,
 * started on the lane of the read in flight as soon as that one has
 * nothing left to issue (ortmem__lane_drive's feed), and finished by the
 * ortmem_wfile_read() of the same range into the same buffer.
 *
 * Why: a runtime streaming layer after layer reads each one as one lane
 * run of chunk-sized requests.  Run one after the other, each run's queue
 * drains before the next one's fills (a request's latency at full depth,
 * every layer), and the disk idles for part of it.  With the next read
 * announced, its requests take the places the last ones free, so the
 * queue stays full across the boundary, and the read being waited for
 * still has all its requests ahead of the next one's.
 *
 * An announced read covers whole checksum blocks: those inside the range
 * go straight into the caller's buffer; a block only partly inside it (at
 * the head or the tail) into a buffer of its slot, copied out when the
 * read is taken, since a block is verified whole.  Its requests verify
 * their blocks quietly (they may complete on another thread's lane run);
 * the taker reports a mismatch with its own thread's error.
 *
 * Locking: a slot's state is under set->lock; its batch under the lock of
 * the lane it runs on.  set->lock is taken under a lane's lock (the feed),
 * so a lane's lock is never taken while set->lock is held.
 */
#include <errno.h>
#include <stdlib.h>

#include "spill_internal.h"

#define AHEAD_SLOTS 4u

enum ahead_state {
	AHEAD_FREE,
	AHEAD_WAITING,		/* announced, no request issued */
	AHEAD_STARTED,		/* on a lane, behind another read */
	AHEAD_TAKEN,		/* its reader (or a cancel) drives it */
};

struct wf_ahead {
	enum ahead_state state;
	uint64_t seq;		/* announcement order: the oldest starts first */
	uint64_t off, len;
	uint8_t *dst;
	uint64_t lo, hi;	/* [lo, hi) goes straight to dst + (lo - off) */
	uint64_t head_foff;	/* block holding [off, lo), when off < lo */
	uint8_t *edge[2];	/* the partial head and tail blocks */
	struct ortmem__lane *lane;
	struct ortmem__lbatch batch;
	struct ortmem__sreq *reqs;
	uint64_t cap;
};

struct ortmem__wf_ahead_set {
	pthread_mutex_t lock;
	atomic_uint waiting;	/* slots AHEAD_WAITING: the feed's fast check */
	uint64_t seq;
	struct wf_ahead slot[AHEAD_SLOTS];
};

/* The blocks of a request, checked without touching any thread's error. */
static int ahead_verify(struct ortmem__sreq *r)
{
	struct ortmem_wfile *wf = r->verify_arg;
	uint64_t done = 0;

	while (done < r->len) {
		uint64_t pos = r->foff + done, b = pos / wf->block;
		uint64_t n = wf->size - pos < wf->block ? wf->size - pos : wf->block;

		if ((uint32_t)ortmem__csum(r->buf + done, n) != wf->crc[b])
			return -ORTMEM_E_CHECKSUM;
		done += n;
	}
	return 0;
}

int ortmem__wf_ahead_init(struct ortmem_wfile *wf)
{
	struct ortmem__wf_ahead_set *set = calloc(1, sizeof(*set));

	if (!set)
		return -ENOMEM;
	pthread_mutex_init(&set->lock, NULL);
	wf->ahead = set;
	return 0;
}

/* The lane asks for work behind its own: the oldest announced read. */
static struct ortmem__lbatch *ahead_feed(void *arg, struct ortmem__lane *l)
{
	struct ortmem_wfile *wf = arg;
	struct ortmem__wf_ahead_set *set = wf->ahead;
	struct wf_ahead *a = NULL;
	uint32_t i;

	if (!set || !atomic_load(&set->waiting))
		return NULL;
	pthread_mutex_lock(&set->lock);
	for (i = 0; i < AHEAD_SLOTS; i++)
		if (set->slot[i].state == AHEAD_WAITING &&
		    (!a || set->slot[i].seq < a->seq))
			a = &set->slot[i];
	if (a) {
		a->state = AHEAD_STARTED;
		a->lane = l;
		atomic_fetch_sub(&set->waiting, 1);
	}
	pthread_mutex_unlock(&set->lock);
	return a ? &a->batch : NULL;
}

/* Drive a slot's batch to its end (its state AHEAD_TAKEN, ours). */
static void ahead_drive(struct ortmem_wfile *wf, struct wf_ahead *a,
			struct ortmem__lane *l, bool feed)
{
	if (l)
		pthread_mutex_lock(&l->lock);
	else
		l = ortmem__wf_lane_lock(wf);
	ortmem__lane_drive(l, &wf->eng, &a->batch, feed ? ahead_feed : NULL, wf);
	pthread_mutex_unlock(&l->lock);
}

static void ahead_free(struct ortmem__wf_ahead_set *set, struct wf_ahead *a)
{
	pthread_mutex_lock(&set->lock);
	a->state = AHEAD_FREE;
	a->dst = NULL;
	pthread_mutex_unlock(&set->lock);
}

/* Room for @n requests and the edge blocks @edges says (bit 0 head, 1 tail). */
static int ahead_reserve(struct ortmem_wfile *wf, struct wf_ahead *a, uint64_t n,
			 unsigned int edges)
{
	size_t align = wf->file.mem_align > 4096 ? wf->file.mem_align : 4096;
	struct ortmem__sreq *r;
	int i;

	if (n > a->cap) {
		r = realloc(a->reqs, n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		a->reqs = r;
		a->cap = n;
	}
	for (i = 0; i < 2; i++)
		if ((edges & (1u << i)) && !a->edge[i] &&
		    posix_memalign((void **)&a->edge[i], align, wf->block))
			return -ENOMEM;
	return 0;
}

/* Requests for the head block, the whole blocks, the tail block. */
static void ahead_fill(struct ortmem_wfile *wf, struct wf_ahead *a)
{
	uint64_t end = a->off + a->len, n = 0;

	if (a->off < a->lo) {
		ortmem__wf_reqs_fill(wf, a->reqs, a->head_foff, a->edge[0],
				     a->lo - a->head_foff, ahead_verify);
		n++;
	}
	if (a->lo < a->hi) {
		ortmem__wf_reqs_fill(wf, a->reqs + n, a->lo,
				     a->dst + (a->lo - a->off), a->hi - a->lo,
				     ahead_verify);
		n += ortmem__wf_reqs_count(wf, a->hi - a->lo);
	}
	if (a->hi < end) {
		uint64_t tail_end = a->hi + wf->block < wf->size ?
				    a->hi + wf->block : wf->size;

		ortmem__wf_reqs_fill(wf, a->reqs + n, a->hi, a->edge[1],
				     tail_end - a->hi, ahead_verify);
		n++;
	}
	memset(&a->batch, 0, sizeof(a->batch));
	a->batch.reqs = a->reqs;
	a->batch.n = (unsigned int)n;
}

/* Whether a ring can read [off, off + len) as whole aligned blocks. */
static int ahead_shape(const struct ortmem_wfile *wf, uint64_t off, uint64_t len,
		       uint64_t *lop, uint64_t *hip)
{
	uint64_t B = wf->block, A = wf->file.align, end = off + len, lo, hi;

	if (!len || off > wf->size || len > wf->size - off)
		return -EINVAL;
	if (!(wf->features & ORTMEM_SPILL_HAVE_URING) || B % A)
		return -EOPNOTSUPP;
	lo = (off + B - 1) / B * B;
	hi = end == wf->size ? wf->size : end / B * B;
	/* Inside one block, or an end of the file O_DIRECT cannot read. */
	if (lo > hi || (wf->size % A &&
			(hi == wf->size || (hi < end && hi + B > wf->size))))
		return -EOPNOTSUPP;
	*lop = lo;
	*hip = hi;
	return 0;
}

int ortmem__wf_ahead(struct ortmem_wfile *wf, uint64_t off, void *dst,
		     uint64_t len)
{
	struct ortmem__wf_ahead_set *set;
	struct wf_ahead *a = NULL;
	uint64_t lo, hi, n;
	uint32_t i;
	int ret;

	if (!wf || !dst)
		return -EINVAL;
	ret = ahead_shape(wf, off, len, &lo, &hi);
	if (ret)
		return ret;
	n = ortmem__wf_reqs_count(wf, hi - lo) + 2;
	set = wf->ahead;
	if (!set)
		return -ENOMEM;
	pthread_mutex_lock(&set->lock);
	for (i = 0; i < AHEAD_SLOTS && !a; i++)
		if (set->slot[i].state == AHEAD_FREE)
			a = &set->slot[i];
	ret = a ? ahead_reserve(wf, a, n, (off < lo ? 1u : 0u) |
				     (hi < off + len ? 2u : 0u)) : -EBUSY;
	if (!ret) {
		a->off = off;
		a->len = len;
		a->dst = dst;
		a->lo = lo;
		a->hi = hi;
		a->head_foff = lo - wf->block;	/* used only when off < lo */
		a->lane = NULL;
		ahead_fill(wf, a);
		a->seq = ++set->seq;
		a->state = AHEAD_WAITING;
		atomic_fetch_add(&set->waiting, 1);
	}
	pthread_mutex_unlock(&set->lock);
	return ret;
}

/* Find and claim the slot reading into @dst (and, when @len, exactly
 * [off, off + len)): its lane (NULL: not started), or false. */
static bool ahead_claim(struct ortmem__wf_ahead_set *set, uint64_t off,
			const void *dst, uint64_t len, struct wf_ahead **ap,
			struct ortmem__lane **lp)
{
	struct wf_ahead *a = NULL;
	uint32_t i;

	pthread_mutex_lock(&set->lock);
	for (i = 0; i < AHEAD_SLOTS && !a; i++) {
		struct wf_ahead *s = &set->slot[i];

		if ((s->state == AHEAD_WAITING || s->state == AHEAD_STARTED) &&
		    s->dst == dst && (!len || (s->off == off && s->len == len)))
			a = s;
	}
	if (a) {
		if (a->state == AHEAD_WAITING)
			atomic_fetch_sub(&set->waiting, 1);
		*lp = a->state == AHEAD_STARTED ? a->lane : NULL;
		a->state = AHEAD_TAKEN;
	}
	pthread_mutex_unlock(&set->lock);
	*ap = a;
	return a != NULL;
}

bool ortmem__wf_ahead_take(struct ortmem_wfile *wf, uint64_t off, void *dst,
			   uint64_t len, int *retp)
{
	struct ortmem__wf_ahead_set *set = wf->ahead;
	struct ortmem__lane *l;
	struct wf_ahead *a;
	uint8_t *d = dst;
	int ret;

	if (!set || !ahead_claim(set, off, dst, len, &a, &l))
		return false;
	/* What is still in flight, and the next announced read behind it. */
	ahead_drive(wf, a, l, true);
	ret = ortmem__wf_reqs_result(wf, a->reqs, a->batch.n, off, len);
	if (!ret && off < a->lo)
		memcpy(d, a->edge[0] + (off - a->head_foff), a->lo - off);
	if (!ret && a->hi < off + len)
		memcpy(d + (a->hi - off), a->edge[1], off + len - a->hi);
	ahead_free(set, a);
	*retp = ret;
	return true;
}

void ortmem__wf_ahead_cancel(struct ortmem_wfile *wf, const void *dst)
{
	struct ortmem__wf_ahead_set *set = wf ? wf->ahead : NULL;
	struct ortmem__lane *l;
	struct wf_ahead *a;

	if (!set || !ahead_claim(set, 0, dst, 0, &a, &l))
		return;
	/* Requests in flight write into @dst: wait for them. */
	if (l)
		ahead_drive(wf, a, l, false);
	ahead_free(set, a);
}

void ortmem__wf_ahead_fini(struct ortmem_wfile *wf)
{
	struct ortmem__wf_ahead_set *set = wf->ahead;
	uint32_t i;

	if (!set)
		return;
	for (i = 0; i < AHEAD_SLOTS; i++) {
		struct wf_ahead *a = &set->slot[i];

		if (a->state != AHEAD_FREE)
			ortmem__wf_ahead_cancel(wf, a->dst);
		free(a->reqs);
		free(a->edge[0]);
		free(a->edge[1]);
	}
	pthread_mutex_destroy(&set->lock);
	free(set);
	wf->ahead = NULL;
}

void ortmem__wf_lane_drive(struct ortmem_wfile *wf, struct ortmem__lane *l,
			   struct ortmem__sreq *reqs, unsigned int n)
{
	struct ortmem__lbatch b = { .reqs = reqs, .n = n };

	ortmem__lane_drive(l, &wf->eng, &b, ahead_feed, wf);
}
