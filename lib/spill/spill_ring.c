// SPDX-License-Identifier: MIT
/*
 * Lanes: one io_uring each (liburing 2.3 API), with the spill file and the
 * lane's bounce and tail buffers registered where the kernel accepts it.
 * Every optional feature is probed at run time and fallen back from:
 * setup flags the kernel refuses with -EINVAL are dropped, a kernel without
 * io_uring (or one that forbids it) gets the synchronous engine, and a
 * refused registration leaves plain reads and writes.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "spill_internal.h"

/* Bounce memory per lane is kept near this, whatever the chunk size. */
#define LANE_BOUNCE_BYTES (8u << 20)
/* Lane buffers start on a page at least (registration, O_DIRECT). */
#define LANE_BUF_ALIGN 4096u
#define LANE_BOUNCE_MIN 2u
#define LANE_BOUNCE_MAX 8u

static int lane_alloc(struct ortmem__lane *l, struct ortmem__sengine *e)
{
	uint32_t qd = e->queue_depth, i;
	size_t align = e->file->mem_align > LANE_BUF_ALIGN ? e->file->mem_align :
		       LANE_BUF_ALIGN;
	void *mem;

	l->nbounce = LANE_BOUNCE_BYTES / e->chunk;
	if (l->nbounce < LANE_BOUNCE_MIN)
		l->nbounce = LANE_BOUNCE_MIN;
	if (l->nbounce > LANE_BOUNCE_MAX)
		l->nbounce = LANE_BOUNCE_MAX;
	if (l->nbounce > qd)
		l->nbounce = qd;
	l->tail_size = 2 * e->file->align;
	l->mem_len = (size_t)l->nbounce * e->chunk + (size_t)qd * l->tail_size;
	if (posix_memalign(&mem, align, l->mem_len))
		return -ENOMEM;
	l->mem = mem;
	l->bounce_free = calloc(l->nbounce, sizeof(uint32_t));
	l->tail_free = calloc(qd, sizeof(uint32_t));
	l->segs = calloc(2 * (size_t)qd, sizeof(*l->segs));
	l->done = calloc(2 * (size_t)qd, sizeof(uint32_t));
	if (!l->bounce_free || !l->tail_free || !l->segs || !l->done)
		return -ENOMEM;
	for (i = 0; i < l->nbounce; i++)
		l->bounce_free[l->nbounce_free++] = i;
	for (i = 0; i < qd; i++)
		l->tail_free[l->ntail_free++] = i;
	for (i = 0; i < 2 * qd; i++)
		l->segs[i].next_free = i + 1 < 2 * qd ? i + 1 : UINT32_MAX;
	l->seg_free = 0;
	return 0;
}

static int lane_ring_setup(struct ortmem__lane *l, uint32_t entries)
{
	static const uint32_t tries[] = {
		IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
		IORING_SETUP_SUBMIT_ALL,
		0,
	};
	struct io_uring_params p;
	size_t i;
	int ret = -EINVAL;

	for (i = 0; i < ORTMEM_ARRAY_SIZE(tries); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = tries[i];
		ret = io_uring_queue_init_params(entries, &l->ring, &p);
		if (ret != -EINVAL)
			break;
	}
	return ret;
}

static bool lane_probe_ops(struct ortmem__lane *l, bool *fixed)
{
	struct io_uring_probe *probe = io_uring_get_probe_ring(&l->ring);
	bool ok;

	if (!probe)
		return false;
	ok = io_uring_opcode_supported(probe, IORING_OP_READ) &&
	     io_uring_opcode_supported(probe, IORING_OP_WRITE);
	*fixed = io_uring_opcode_supported(probe, IORING_OP_READ_FIXED) &&
		 io_uring_opcode_supported(probe, IORING_OP_WRITE_FIXED);
	io_uring_free_probe(probe);
	return ok;
}

/*
 * The bounce slots, the tail slots, then (unless ORTMEM_SPILL_F_NO_FIXED_HOST)
 * ORTMEM__FIXED_SLOTS empty slots for host-tier buffers (spill_fixed.c);
 * a kernel that refuses the empty ones gets the table without them.
 */
static int lane_register_bufs(struct ortmem__lane *l, struct ortmem__sengine *e)
{
	uint32_t nbase = l->nbounce + 1, i;
	uint32_t nuser = (e->flags & ORTMEM_SPILL_F_NO_FIXED_HOST) ? 0 :
			 ORTMEM__FIXED_SLOTS;
	struct iovec *iov = calloc(nbase + nuser, sizeof(*iov));
	int ret;

	if (!iov)
		return -ENOMEM;
	for (i = 0; i < l->nbounce; i++) {
		iov[i].iov_base = l->mem + (size_t)i * e->chunk;
		iov[i].iov_len = e->chunk;
	}
	iov[i].iov_base = l->mem + (size_t)l->nbounce * e->chunk;
	iov[i].iov_len = (size_t)e->queue_depth * l->tail_size;
	ret = nuser ? io_uring_register_buffers(&l->ring, iov, nbase + nuser) : -EINVAL;
	if (!ret) {
		l->ureg = calloc(nuser, sizeof(*l->ureg));
		if (l->ureg) {
			l->ubase = nbase;
			l->nuser = nuser;
		}
	} else {
		ret = io_uring_register_buffers(&l->ring, iov, nbase);
	}
	free(iov);
	return ret;
}

static void lane_register(struct ortmem__lane *l, struct ortmem__sengine *e,
			  bool fixed_ops)
{
	int ret;

	if (!(e->flags & ORTMEM_SPILL_F_NO_REGFILE)) {
		ret = io_uring_register_files(&l->ring, &e->file->fd, 1);
		if (!ret)
			l->regfile = true;
		else
			pr_info("spill: the kernel refused to register the spill file (%s); using its descriptor",
				ortmem_strerror(ret));
	}
	if ((e->flags & ORTMEM_SPILL_F_NO_REGBUF) || !fixed_ops)
		return;
	ret = lane_register_bufs(l, e);
	if (!ret)
		l->regbuf = true;
	else
		pr_info("spill: the kernel refused to register %zu bytes of bounce buffers (%s; RLIMIT_MEMLOCK?); using plain reads and writes",
			l->mem_len, ortmem_strerror(ret));
}

struct ortmem__lane *ortmem__lane_lock_any(struct ortmem__lane *lanes,
					   uint32_t n, atomic_uint *next)
{
	uint32_t start = atomic_fetch_add(next, 1) % n, i;

	for (i = 0; i < n; i++) {
		struct ortmem__lane *l = &lanes[(start + i) % n];

		if (!pthread_mutex_trylock(&l->lock))
			return l;
	}
	pthread_mutex_lock(&lanes[start].lock);
	return &lanes[start];
}

int ortmem__lane_init(struct ortmem__lane *l, struct ortmem__sengine *e,
		      uint32_t *features)
{
	bool fixed_ops = false;
	int ret;

	memset(l, 0, sizeof(*l));
	ret = pthread_mutex_init(&l->lock, NULL);
	if (ret)
		return -ret;
	ret = lane_alloc(l, e);
	if (ret) {
		ortmem__lane_fini(l, e);
		return ret;
	}
	if (e->flags & ORTMEM_SPILL_F_NO_URING)
		goto sync;
	ret = lane_ring_setup(l, 2 * e->queue_depth);
	if (ret) {
		pr_info("spill: io_uring is unavailable (%s); using synchronous pread/pwrite",
			ortmem_strerror(ret));
		goto sync;
	}
	l->have_ring = true;
	if (!lane_probe_ops(l, &fixed_ops)) {
		pr_info("spill: this kernel's io_uring has no READ/WRITE; using synchronous pread/pwrite");
		io_uring_queue_exit(&l->ring);
		l->have_ring = false;
		goto sync;
	}
	lane_register(l, e, fixed_ops);
sync:
	if (!l->have_ring)
		*features &= ~(ORTMEM_SPILL_HAVE_URING | ORTMEM_SPILL_HAVE_REGFILE |
			       ORTMEM_SPILL_HAVE_REGBUF);
	if (!l->regfile)
		*features &= ~ORTMEM_SPILL_HAVE_REGFILE;
	if (!l->regbuf)
		*features &= ~ORTMEM_SPILL_HAVE_REGBUF;
	return 0;
}

void ortmem__lane_fini(struct ortmem__lane *l, struct ortmem__sengine *e)
{
	(void)e;
	/* Unregistering waits for the ring's users of the file; the exit
	 * alone leaves it to the kernel's deferred teardown. */
	if (l->have_ring && l->regfile)
		io_uring_unregister_files(&l->ring);
	/* And drops the pins of the buffers at once, host-tier ones too,
	 * where the ring's own teardown is deferred. */
	if (l->have_ring && l->regbuf)
		io_uring_unregister_buffers(&l->ring);
	if (l->have_ring)
		io_uring_queue_exit(&l->ring);
	l->have_ring = false;
	free(l->mem);
	free(l->bounce_free);
	free(l->tail_free);
	free(l->segs);
	free(l->done);
	free(l->ureg);
	l->ureg = NULL;
	l->nuser = l->uhigh = 0;
	l->mem = NULL;
	l->bounce_free = l->tail_free = l->done = NULL;
	l->segs = NULL;
	pthread_mutex_destroy(&l->lock);
}
