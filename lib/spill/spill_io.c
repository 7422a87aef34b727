// SPDX-License-Identifier: MIT
/*
 * The transfer engine of a lane.  An extent of len bytes is laid out as
 *
 *   [ body: len rounded down to the alignment ][ tail: rest, zeros, trailer ]
 *
 * The body moves in chunks straight between the caller's buffer and the file
 * when the buffer is aligned for O_DIRECT, else through bounce slots; the
 * tail always moves through a tail slot.  Up to queue_depth body chunks (and
 * the tails of the extents being moved) are in flight at once, over the
 * whole batch.  Every completion is checked: a short transfer continues from
 * where it stopped (rounded down to the alignment, so O_DIRECT accepts the
 * rest) under a forward-progress guard, -EAGAIN and -EINTR are resubmitted,
 * and any other result fails the extent, naming the offset it hit.
 */
#include <errno.h>
#include <unistd.h>

#include "spill_internal.h"

/* Completions in a row that move nothing before an extent fails. */
#define SEG_STALL_MAX 8
/* -EAGAIN/-EINTR resubmissions of one I/O before it fails. */
#define SEG_RETRY_MAX 10000

uint64_t ortmem__extent_disk_len(uint64_t len, uint32_t align)
{
	uint64_t body = len & ~(uint64_t)(align - 1);
	uint64_t tail = (len - body + ORTMEM__TRAILER_SIZE + align - 1) &
			~(uint64_t)(align - 1);

	return body + tail;
}

static uint32_t req_tail_len(const struct ortmem__sreq *r, uint32_t align)
{
	return (uint32_t)(ortmem__extent_disk_len(r->len, align) - r->body);
}

static uint8_t *lane_tail(struct ortmem__lane *l, struct ortmem__sengine *e,
			  uint32_t slot)
{
	return l->mem + (size_t)l->nbounce * e->chunk + (size_t)slot * l->tail_size;
}

static uint8_t *lane_bounce(struct ortmem__lane *l, struct ortmem__sengine *e,
			    int slot)
{
	return l->mem + (size_t)slot * e->chunk;
}

static int seg_draw_fault(struct ortmem__sengine *e)
{
	uint64_t seq = atomic_fetch_add(&e->fault.seq, 1) + 1;
	uint64_t nth = atomic_load(&e->fault.nth);
	int what;

	if (!nth || seq < nth)
		return 0;
	what = atomic_load(&e->fault.what);
	if (seq == nth || what == ORTMEM_SPILL_FAULT_STALL)
		return what;
	return 0;
}

static void seg_exec_sync(struct ortmem__lane *l, struct ortmem__sengine *e,
			  struct ortmem__seg *s)
{
	ssize_t ret;

	if (s->req->is_write)
		ret = pwrite(e->file->fd, s->mem, s->len, (off_t)s->foff);
	else
		ret = pread(e->file->fd, s->mem, s->len, (off_t)s->foff);
	s->res = ret < 0 ? -errno : (int)ret;
	l->done[l->ndone++] = (uint32_t)(s - l->segs);
}

/* Issue (or reissue) a segment's remaining bytes. */
static void seg_issue(struct ortmem__lane *l, struct ortmem__sengine *e,
		      struct ortmem__seg *s)
{
	struct io_uring_sqe *sqe;
	int fd = l->regfile ? 0 : e->file->fd;

	s->fault = seg_draw_fault(e);
	if (!l->have_ring) {
		seg_exec_sync(l, e, s);
		return;
	}
	sqe = io_uring_get_sqe(&l->ring);
	while (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	if (s->buf_index >= 0 && s->req->is_write)
		io_uring_prep_write_fixed(sqe, fd, s->mem, s->len, s->foff,
					  s->buf_index);
	else if (s->buf_index >= 0)
		io_uring_prep_read_fixed(sqe, fd, s->mem, s->len, s->foff,
					 s->buf_index);
	else if (s->req->is_write)
		io_uring_prep_write(sqe, fd, s->mem, s->len, s->foff);
	else
		io_uring_prep_read(sqe, fd, s->mem, s->len, s->foff);
	if (l->regfile)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, s);
}

static struct ortmem__seg *seg_get(struct ortmem__lane *l)
{
	struct ortmem__seg *s;
	uint32_t i = l->seg_free;

	if (i == UINT32_MAX)
		return NULL;
	s = &l->segs[i];
	l->seg_free = s->next_free;
	memset(s, 0, sizeof(*s));
	s->buf_index = -1;
	s->bounce = -1;
	return s;
}

static void seg_put(struct ortmem__lane *l, struct ortmem__seg *s)
{
	if (s->bounce >= 0)
		l->bounce_free[l->nbounce_free++] = (uint32_t)s->bounce;
	if (!s->is_tail)
		l->body_inflight--;
	l->inflight--;
	s->next_free = l->seg_free;
	l->seg_free = (uint32_t)(s - l->segs);
}

static void req_fail(struct ortmem__sreq *r, int err, const struct ortmem__seg *s,
		     const char *what)
{
	if (r->err)
		return;
	r->err = err;
	r->err_off = s ? s->foff : r->foff;
	r->err_what = what;
}

/* The ring slot of a registered host buffer holding [p, p+len), or -1. */
static int32_t lane_find_ureg(const struct ortmem__lane *l, const uint8_t *p,
			      uint64_t len)
{
	uint32_t i;

	for (i = 0; i < l->uhigh; i++) {
		const struct ortmem__ureg *u = &l->ureg[i];

		if (u->ptr && p >= u->ptr && len <= u->len &&
		    (uint64_t)(p - u->ptr) <= u->len - len)
			return (int32_t)(l->ubase + i);
	}
	return -1;
}

static void req_activate(struct ortmem__lane *l, struct ortmem__sengine *e,
			 struct ortmem__sreq *r)
{
	uint32_t align = e->file->align;
	uint8_t *tail;
	uint32_t tlen;
	uint64_t rest;

	r->direct = !((uintptr_t)r->buf & (e->file->mem_align - 1));
	if (r->raw) {
		/* A plain aligned range of someone else's file: body only. */
		r->body = r->len;
		r->tail_slot = UINT32_MAX;
		r->tail_sched = true;
		r->uslot = r->direct ? lane_find_ureg(l, r->buf, r->body) : -1;
		return;
	}
	r->body = r->len & ~(uint64_t)(align - 1);
	r->uslot = r->direct && r->body ? lane_find_ureg(l, r->buf, r->body) : -1;
	r->tail_slot = l->tail_free[--l->ntail_free];
	if (!r->is_write)
		return;
	tail = lane_tail(l, e, r->tail_slot);
	tlen = req_tail_len(r, align);
	rest = r->len - r->body;
	r->csum = ortmem__csum(r->buf, r->len);
	memcpy(tail, r->buf + r->body, rest);
	memset(tail + rest, 0, tlen - rest - ORTMEM__TRAILER_SIZE);
	ortmem__trailer_pack(tail + tlen - ORTMEM__TRAILER_SIZE, r->id, r->foff,
			     r->len, r->csum);
}

/* The tail's checks, at completion: they need the tail slot. */
static void req_check_tail(struct ortmem__lane *l, struct ortmem__sengine *e,
			   struct ortmem__sreq *r)
{
	uint8_t *tail = lane_tail(l, e, r->tail_slot);
	uint32_t tlen = req_tail_len(r, e->file->align);
	uint64_t rest = r->len - r->body, i;
	const char *why = NULL;

	memcpy(r->buf + r->body, tail, rest);
	for (i = rest; i < tlen - ORTMEM__TRAILER_SIZE; i++) {
		if (tail[i]) {
			req_fail(r, -ORTMEM_E_CHECKSUM, NULL,
				 "the padding after its data is not zero");
			return;
		}
	}
	if (ortmem__trailer_check(tail + tlen - ORTMEM__TRAILER_SIZE, r->id,
				  r->foff, r->len, r->csum, &why))
		req_fail(r, -ORTMEM_E_CHECKSUM, NULL, why);
}

static void req_account(struct ortmem__sengine *e, struct ortmem__sreq *r)
{
	r->finished = true;
	/* A buffer coming back piece by piece is zeroed as far as it is back:
	 * the rest is not there to write to. */
	if (!r->is_write && r->err)
		memset(r->buf, 0, r->fetch && r->ready < r->len ? r->ready : r->len);
	if (r->err == -ORTMEM_E_CHECKSUM) {
		atomic_fetch_add(&e->count.checksum_errors, 1);
		return;
	}
	if (r->err) {
		atomic_fetch_add(&e->count.io_errors, 1);
		return;
	}
	if (r->uslot >= 0)
		atomic_fetch_add(&e->count.fixed_bytes, r->body);
	if (r->is_write)
		atomic_fetch_add(&e->count.bytes_written, r->len);
	else
		atomic_fetch_add(&e->count.bytes_read, r->len);
}

/*
 * All I/O of @r is done.  A read's payload checksum is deferred until the
 * lane has refilled its queue, so hashing overlaps the disk's work.
 */
static void req_finish(struct ortmem__lane *l, struct ortmem__sengine *e,
		       struct ortmem__sreq *r)
{
	if (r->raw) {
		/* The caller checks raw reads against its own checksums, once
		 * the lane has refilled its queue (lane_verify), so the disk
		 * never idles while a completed chunk is hashed. */
		if (!r->err && r->verify_raw) {
			r->verify_pending = true;
			r->next_verify = l->verify;
			l->verify = r;
			return;
		}
		req_account(e, r);
		return;
	}
	if (!r->is_write && !r->err)
		req_check_tail(l, e, r);
	l->tail_free[l->ntail_free++] = r->tail_slot;
	r->tail_slot = UINT32_MAX;
	if (!r->is_write && !r->err) {
		r->verify_pending = true;
		r->next_verify = l->verify;
		l->verify = r;
		return;
	}
	req_account(e, r);
}

static void lane_verify(struct ortmem__lane *l, struct ortmem__sengine *e)
{
	struct ortmem__sreq *r;

	while ((r = l->verify)) {
		l->verify = r->next_verify;
		r->verify_pending = false;
		if (r->raw)
			r->err = r->verify_raw(r);
		else if (ortmem__csum(r->buf, r->len) != r->csum)
			req_fail(r, -ORTMEM_E_CHECKSUM, NULL,
				 "its data does not match the checksum written with it");
		req_account(e, r);
	}
}

static bool req_all_issued(const struct ortmem__sreq *r)
{
	return r->err || (r->sched == r->body && r->tail_sched);
}

/*
 * Bytes of @r's next body segment: a chunk, less at the end of the body or
 * of what is ready of a buffer coming back piece by piece (down to the file
 * alignment); 0 when none is ready.
 */
static uint64_t req_next_len(const struct ortmem__sengine *e,
			     const struct ortmem__sreq *r)
{
	uint64_t n = r->body - r->sched < e->chunk ? r->body - r->sched : e->chunk;
	uint64_t avail;

	if (!r->fetch || r->sched + n <= r->ready)
		return n;
	avail = r->ready > r->sched ? r->ready - r->sched : 0;
	return avail & ~(uint64_t)(e->file->align - 1);
}

/* Schedule the next segment of @r; false when it has none or none can go. */
static bool req_produce(struct ortmem__lane *l, struct ortmem__sengine *e,
			struct ortmem__sreq *r)
{
	struct ortmem__seg *s;
	bool tail = r->sched == r->body;
	uint64_t n = 0;

	if (req_all_issued(r))
		return false;
	if (!tail && (l->body_inflight >= e->queue_depth ||
		      (!r->direct && !l->nbounce_free)))
		return false;
	/* The tail is copied into buf[body, len) at completion. */
	if (tail ? r->fetch && r->ready < r->len : !(n = req_next_len(e, r)))
		return false;
	s = seg_get(l);
	if (!s)
		return false;
	s->req = r;
	if (tail) {
		s->is_tail = true;
		s->mem = lane_tail(l, e, r->tail_slot);
		s->len = req_tail_len(r, e->file->align);
		s->foff = r->foff + r->body;
		s->buf_index = l->regbuf ? (int32_t)l->nbounce : -1;
		r->tail_sched = true;
	} else {
		s->body_off = r->sched;
		s->foff = r->foff + r->sched;
		s->len = (uint32_t)n;
		if (r->direct) {
			s->mem = r->buf + r->sched;
			s->buf_index = r->uslot;
		} else {
			s->bounce = (int16_t)l->bounce_free[--l->nbounce_free];
			s->mem = lane_bounce(l, e, s->bounce);
			s->buf_index = l->regbuf ? s->bounce : -1;
			if (r->is_write)
				memcpy(s->mem, r->buf + r->sched, n);
		}
		r->sched += n;
		l->body_inflight++;
	}
	s->total = s->len;
	r->pending++;
	l->inflight++;
	seg_issue(l, e, s);
	return true;
}

/* What an injected fault turns a result into. */
static int seg_apply_fault(const struct ortmem__seg *s, uint32_t align, int res)
{
	if (s->fault < 0)
		return s->fault;
	if (s->fault == ORTMEM_SPILL_FAULT_STALL)
		return 0;
	if (s->fault == ORTMEM_SPILL_FAULT_SHORT && res > 0)
		return (int)((uint32_t)(res / 2) & ~(align - 1));
	return res;
}

/* Handle a short transfer; true when the segment was reissued. */
static bool seg_continue(struct ortmem__lane *l, struct ortmem__sengine *e,
			 struct ortmem__seg *s, uint32_t res)
{
	struct ortmem__sreq *r = s->req;
	uint32_t adv = res;

	atomic_fetch_add(&e->count.short_transfers, 1);
	if (e->file->direct)
		adv &= ~(e->file->align - 1);
	if (!adv) {
		if (++s->stalls > SEG_STALL_MAX) {
			req_fail(r, -EIO, s, "no forward progress (the I/O moved nothing, again and again)");
			return false;
		}
	} else {
		s->stalls = 0;
	}
	s->mem += adv;
	s->foff += adv;
	s->len -= adv;
	r->moved += adv;
	seg_issue(l, e, s);
	return true;
}

static void seg_complete(struct ortmem__lane *l, struct ortmem__sengine *e,
			 struct ortmem__seg *s, int res)
{
	struct ortmem__sreq *r = s->req;

	res = seg_apply_fault(s, e->file->align, res);
	if ((res == -EAGAIN || res == -EINTR) && ++s->retries <= SEG_RETRY_MAX) {
		atomic_fetch_add(&e->count.retries, 1);
		seg_issue(l, e, s);
		return;
	}
	if (res < 0) {
		req_fail(r, res, s, r->is_write ? "the write failed" : "the read failed");
	} else if ((uint32_t)res > s->len) {
		req_fail(r, -EIO, s, "the kernel reported more bytes than asked");
	} else if ((uint32_t)res < s->len) {
		if (!r->err && seg_continue(l, e, s, (uint32_t)res))
			return;
	} else {
		r->moved += (uint32_t)res;
		if (!r->is_write && s->bounce >= 0 && !r->err)
			memcpy(r->buf + s->body_off, lane_bounce(l, e, s->bounce),
			       s->total);
	}
	seg_put(l, s);
	if (!--r->pending && req_all_issued(r))
		req_finish(l, e, r);
}

/*
 * With a deep queue, sleep until a quarter of it is back rather than
 * waking per completion: the rest keeps the disk busy, and a thread that
 * wakes a thousand times a second costs the caller's compute its CPU share
 * on a loaded machine (its group's weight follows its runnable time, not
 * its CPU time).  But never wait for more than @b still has in flight:
 * once others' batches share the queue, their completions would hold
 * back the end of ours, and its reader waits for that.
 */
static unsigned int lane_reap_want(const struct ortmem__lane *l,
				   const struct ortmem__lbatch *b)
{
	unsigned int want = l->inflight >= 8 ? l->inflight / 4 : 1, own = 0, i;

	if (!l->extra)
		return want;
	for (i = b->lo; i < b->next && own < want; i++)
		own += b->reqs[i].pending;
	return own && own < want ? own : want;
}

static void lane_reap_ring(struct ortmem__lane *l, struct ortmem__sengine *e,
			   unsigned int want)
{
	struct io_uring_cqe *cqe;
	unsigned int head, seen = 0;
	int ret;

	ret = io_uring_submit_and_wait(&l->ring, want);
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
		pr_warn("spill: io_uring_submit_and_wait failed (%s); waiting for completions",
			ortmem_strerror(ret));
	if (ret < 0) {
		/* Something is in flight: a completion will come. */
		ret = io_uring_wait_cqe(&l->ring, &cqe);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
			pr_warn("spill: io_uring_wait_cqe failed (%s)",
				ortmem_strerror(ret));
	}
	io_uring_for_each_cqe(&l->ring, head, cqe) {
		struct ortmem__seg *s = io_uring_cqe_get_data(cqe);

		seen++;
		seg_complete(l, e, s, cqe->res);
	}
	io_uring_cq_advance(&l->ring, seen);
}

static void lane_reap_sync(struct ortmem__lane *l, struct ortmem__sengine *e)
{
	while (l->ndone) {
		struct ortmem__seg *s = &l->segs[l->done[--l->ndone]];

		seg_complete(l, e, s, s->res);
	}
}

/*
 * Bring back the next piece of each buffer that is running short of ready
 * bytes (ortmem__sreq.fetch), while the reads just submitted are in flight.
 * True when some piece came back (there may be more to issue now).
 */
static bool lane_fetch(struct ortmem__lane *l, struct ortmem__sengine *e,
		       struct ortmem__sreq *reqs, unsigned int lo,
		       unsigned int next)
{
	bool more = false;
	unsigned int i;
	int err;

	for (i = lo; i < next; i++) {
		struct ortmem__sreq *r = &reqs[i];
		uint64_t ahead = r->fetch_ahead ? r->fetch_ahead : e->chunk;

		if (!r->fetch || r->finished || r->err || r->ready >= r->len ||
		    r->ready - r->sched >= ahead)
			continue;
		err = r->fetch(r);
		if (!err) {
			more = true;
			continue;
		}
		req_fail(r, err, NULL, "the buffer's memory could not be brought back past there");
		r->err_off = r->foff + r->ready;
		if (!r->pending)
			req_finish(l, e, r);
	}
	return more;
}

/* Activate what tail slots allow of @b and issue what the queue takes. */
static void batch_produce(struct ortmem__lane *l, struct ortmem__sengine *e,
			  struct ortmem__lbatch *b)
{
	struct ortmem__sreq *reqs = b->reqs;
	unsigned int i;

	while (b->next < b->n && l->ntail_free) {
		if (!reqs[b->next].finished) {
			req_activate(l, e, &reqs[b->next]);
			while (req_produce(l, e, &reqs[b->next]))
				;
			if (l->have_ring && reqs[b->next].is_write)
				io_uring_submit(&l->ring);
		}
		b->next++;
	}
	for (i = b->lo; i < b->next; i++)
		while (!reqs[i].finished && req_produce(l, e, &reqs[i]))
			;
}

static bool batch_advance(struct ortmem__lbatch *b)
{
	while (b->lo < b->next && b->reqs[b->lo].finished)
		b->lo++;
	return b->lo == b->n;
}

/* Issue the lane's other batches (ortmem__lane.extra) and forget the
 * ones that are done; a consumer finds them done by their lo == n. */
static void lane_extras(struct ortmem__lane *l, struct ortmem__sengine *e,
			bool produce)
{
	struct ortmem__lbatch **pp = &l->extra, *x;

	while ((x = *pp)) {
		if (produce)
			batch_produce(l, e, x);
		if (batch_advance(x)) {
			*pp = x->next_extra;
			x->next_extra = NULL;
			x->on_lane = false;
			continue;
		}
		pp = &x->next_extra;
	}
}

void ortmem__lane_drive(struct ortmem__lane *l, struct ortmem__sengine *e,
			struct ortmem__lbatch *b, ortmem__lane_feed_fn feed,
			void *arg)
{
	struct ortmem__lbatch *x, **pp;

	/* A batch started behind another's, now its owner's to finish. */
	for (pp = &l->extra; b->on_lane && *pp; pp = &(*pp)->next_extra) {
		if (*pp == b) {
			*pp = b->next_extra;
			b->next_extra = NULL;
			b->on_lane = false;
			break;
		}
	}
	for (;;) {
		batch_produce(l, e, b);
		lane_extras(l, e, true);
		/*
		 * Nothing of ours is left to issue and the queue has room:
		 * the next read a caller announced starts now, behind ours,
		 * so the disk's queue never drains between two reads.
		 */
		if (feed && l->have_ring && b->next == b->n &&
		    l->body_inflight < e->queue_depth && (x = feed(arg, l))) {
			for (pp = &l->extra; *pp; pp = &(*pp)->next_extra)
				;
			x->next_extra = NULL;
			x->on_lane = true;
			*pp = x;
			continue;
		}
		if (l->have_ring && l->inflight)
			io_uring_submit(&l->ring);
		if (lane_fetch(l, e, b->reqs, b->lo, b->next))
			continue;
		lane_verify(l, e);
		lane_extras(l, e, false);
		/* Done: what others' batches still have in flight stays on
		 * the lane for whoever drives it next. */
		if (batch_advance(b))
			break;
		if (!l->inflight)
			continue;
		if (l->have_ring)
			lane_reap_ring(l, e, lane_reap_want(l, b));
		else
			lane_reap_sync(l, e);
	}
}

void ortmem__lane_run(struct ortmem__lane *l, struct ortmem__sengine *e,
		      struct ortmem__sreq *reqs, unsigned int n)
{
	struct ortmem__lbatch b = { .reqs = reqs, .n = n };

	ortmem__lane_drive(l, e, &b, NULL, NULL);
}
