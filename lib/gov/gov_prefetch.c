// SPDX-License-Identifier: MIT
/*
 * Asynchronous promotion: ortmem_gov_prefetch() charges each demoted
 * allocation to its home tier, marks its slot MOVING with the prefetch as
 * owner (PF_INFLIGHT) and queues it; one worker thread per governor moves
 * the bytes (file-backed: the weights file's lanes, no governor lock held;
 * otherwise the backends' move) while the caller computes.  A pin that
 * finds the slot in flight waits on a condition variable until the worker
 * publishes it, and only then; a failed transfer is kept and returned by
 * the next pin of that allocation.  Tier-generic: the home tier is the
 * slot's, host today, device where a device backend is set.
 *
 * Locking: pf->lock is taken after gov->lock, never before it; the worker
 * holds no lock while it moves bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "gov_internal.h"

struct pf_job {
	uint32_t idx;
	uint32_t gen;
	int home;
	bool reuse;		/* reuse_bh: a buffer recycled on home */
	uint64_t reuse_bh;
	struct pf_job *next;
};

/* A failed prefetch, waiting for the pin that reports it. */
struct pf_fail {
	uint32_t idx;
	uint32_t gen;
	struct ortmem_error err;
	struct pf_fail *next;
};

struct gov_prefetch {
	pthread_mutex_t lock;
	pthread_cond_t work;	/* the worker: a job or stop */
	pthread_cond_t done;	/* waiters: a job finished */
	pthread_t thread;
	bool stop;
	struct pf_job *head, **tail;
	struct pf_fail *fails;
	struct gov_pf_counts *c;	/* &gov->pfc */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keep the thread's error for the pin of @j; false when it cannot. */
static bool pf_job_fail(struct gov_prefetch *pf, struct pf_job *j)
{
	struct pf_fail *f = calloc(1, sizeof(*f));
	const struct ortmem_error *e = ortmem_last_error();

	atomic_fetch_add(&pf->c->failed, 1);
	if (!f)
		return false;	/* the next pin promotes and meets it itself */
	f->idx = j->idx;
	f->gen = j->gen;
	if (e) {
		f->err = *e;
		if (e->cause)
			ortmem_error_format(e, f->err.reason, sizeof(f->err.reason));
	} else {
		f->err.code = -EIO;
	}
	f->err.cause = NULL;
	pthread_mutex_lock(&pf->lock);
	f->next = pf->fails;
	pf->fails = f;
	pthread_mutex_unlock(&pf->lock);
	return true;
}

/* Publish slot @idx's new state; waiters see word and pf change at once. */
static void pf_publish(struct gov_prefetch *pf, struct gov_slot *s,
		       uint8_t state, uint64_t word, bool job_done)
{
	pthread_mutex_lock(&pf->lock);
	atomic_store(&s->pf, state);
	atomic_store_explicit(&s->word, word, memory_order_release);
	if (job_done)
		atomic_fetch_sub(&pf->c->inflight, 1);
	pthread_cond_broadcast(&pf->done);
	pthread_mutex_unlock(&pf->lock);
}

/* The move in, into the buffer pf_start() recycled for it. */
static int pf_fill_recycled(struct ortmem_gov *gov, struct pf_job *j)
{
	struct gov_slot *s = &gov->slots[j->idx];
	uint64_t nbh = j->reuse_bh;
	int ret = ortmem__file_fill(gov, j->idx, j->home, true, &nbh);

	pthread_mutex_lock(&gov->lock);
	atomic_fetch_sub(&gov->tiers[j->home].moving, 1);	/* pf_queue's */
	if (ret) {
		pthread_mutex_unlock(&gov->lock);
		return ret;	/* file_fill freed the buffer */
	}
	atomic_fetch_add(&gov->tiers[j->home].promoted, atomic_load(&s->size));
	atomic_store(&s->tier, (uint8_t)j->home);
	atomic_store(&s->bh, nbh);
	pthread_mutex_unlock(&gov->lock);
	return 0;
}

static void pf_run_job(struct ortmem_gov *gov, struct gov_prefetch *pf,
		       struct pf_job *j)
{
	struct gov_slot *s = &gov->slots[j->idx];
	bool kept;
	int ret;

	ortmem_error_clear();
	if (j->reuse)
		ret = pf_fill_recycled(gov, j);
	else
		ret = ortmem__move_in(gov, j->idx, j->home);
	if (!ret) {
		pf_publish(pf, s, PF_READY, slot_word(j->gen, 0, SLOT_LIVE), true);
		return;
	}
	ortmem__tier_uncharge(gov, j->home, atomic_load(&s->size));
	kept = pf_job_fail(pf, j);
	pf_publish(pf, s, kept ? PF_FAILED : PF_NONE,
		   slot_word(j->gen, 0, SLOT_DEMOTED), true);
	ortmem__publish(gov);	/* the failed count */
}

static void *pf_worker(void *arg)
{
	struct ortmem_gov *gov = arg;
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	struct pf_job *j;

	for (;;) {
		pthread_mutex_lock(&pf->lock);
		while (!pf->head && !pf->stop)
			pthread_cond_wait(&pf->work, &pf->lock);
		j = pf->head;
		if (j) {
			pf->head = j->next;
			if (!pf->head)
				pf->tail = &pf->head;
		}
		pthread_mutex_unlock(&pf->lock);
		if (!j)
			return NULL;	/* stopped, queue drained */
		pf_run_job(gov, pf, j);
		free(j);
	}
}

/* The governor's prefetch state, made and its worker started once. */
static int pf_get(struct ortmem_gov *gov, struct gov_prefetch **pfp)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	int ret;

	/* Made once, freed only by close: no lock once it is there. */
	if (pf) {
		*pfp = pf;
		return 0;
	}
	pthread_mutex_lock(&gov->lock);
	pf = atomic_load(&gov->pf);
	if (pf)
		goto out;
	pf = calloc(1, sizeof(*pf));
	if (!pf) {
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_plain(-ENOMEM, "out of memory for the prefetch worker");
	}
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->work, NULL);
	pthread_cond_init(&pf->done, NULL);
	pf->tail = &pf->head;
	pf->c = &gov->pfc;
	atomic_store(&gov->pf, pf);
	ret = pthread_create(&pf->thread, NULL, pf_worker, gov);
	if (ret) {
		atomic_store(&gov->pf, NULL);
		pthread_cond_destroy(&pf->done);
		pthread_cond_destroy(&pf->work);
		pthread_mutex_destroy(&pf->lock);
		free(pf);
		pthread_mutex_unlock(&gov->lock);
		return ortmem__err_plain(-ret,
			"cannot start the prefetch worker thread (%s)", strerror(ret));
	}
out:
	pthread_mutex_unlock(&gov->lock);
	*pfp = pf;
	return 0;
}

void ortmem__prefetch_fini(struct ortmem_gov *gov)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	struct pf_fail *f;

	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->stop = true;
	pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->lock);
	pthread_join(pf->thread, NULL);
	while ((f = pf->fails)) {
		pf->fails = f->next;
		free(f);
	}
	atomic_store(&gov->pf, NULL);
	pthread_cond_destroy(&pf->done);
	pthread_cond_destroy(&pf->work);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
}

/*
 * Charge @size of @home for a prefetch: what fits, or what reclaim gives
 * without evicting what earlier prefetches brought in (that would thrash).
 */
static int pf_charge(struct ortmem_gov *gov, int home, uint32_t role,
		     uint64_t size)
{
	int ret;

	if (ortmem__tier_try_charge(gov, home, size))
		return 0;
	ortmem__reclaim_spare_ready = true;
	ret = ortmem__gov_charge(gov, home, role, size);
	ortmem__reclaim_spare_ready = false;
	return ret;
}

/* Start the promotion of slot @idx seen at @w.  1 started or nothing to
 * do, 0 lost a race (look again), < 0 refused. */
static int pf_start(struct ortmem_gov *gov, struct gov_prefetch *pf,
		    struct ortmem_handle h, uint32_t idx, uint64_t w)
{
	struct gov_slot *s = &gov->slots[idx];
	uint32_t gen = slot_gen(w);
	struct pf_job *j;
	int home, ret;

	if (gen != handle_gen(h.id))
		return ortmem__slot_refuse(gov, h, w, "prefetch");
	if (atomic_load(&s->kind) != SLOT_KIND_ALLOC)
		return ortmem__err_invalid(-1, atomic_load(&s->size),
			"handle %#" PRIx64 " is a bare lease; only allocations have bytes to prefetch",
			h.id);
	/* Home, in flight, pinned where it is, or being released: done. */
	if (slot_state(w) != SLOT_DEMOTED || slot_pins(w) || (w & SLOT_PENDING)) {
		if (slot_state(w) == SLOT_QUARANTINED || slot_state(w) == SLOT_FREE ||
		    slot_state(w) == SLOT_RETIRED)
			return ortmem__slot_refuse(gov, h, w, "prefetch");
		return 1;
	}
	if (atomic_load(&s->pf) == PF_FAILED)
		return 1;	/* the next pin reports it first */
	j = calloc(1, sizeof(*j));
	if (!j)
		return ortmem__err_plain(-ENOMEM, "out of memory for a prefetch job");
	if (!atomic_compare_exchange_strong(&s->word, &w,
					    slot_word(gen, 0, SLOT_MOVING))) {
		free(j);
		return 0;
	}
	/* Ours from here: a pin waits for us rather than refusing. */
	atomic_store(&s->pf, PF_INFLIGHT);
	home = atomic_load(&s->home);
	ret = 0;
	if (!ortmem__tier_try_charge(gov, home, atomic_load(&s->size))) {
		bool recycled = false;

		if (atomic_load(&s->src)) {
			pthread_mutex_lock(&gov->lock);
			recycled = ortmem__file_recycle_locked(gov, idx, home,
							       &j->reuse_bh);
			/* The buffer is the home backend's, in no slot until
			 * the fill commits: a move, so that backend stays. */
			if (recycled)
				atomic_fetch_add(&gov->tiers[home].moving, 1);
			pthread_mutex_unlock(&gov->lock);
		}
		j->reuse = recycled;
		if (recycled)
			ortmem__file_announce(gov, idx, home, j->reuse_bh);
		else
			ret = pf_charge(gov, home, atomic_load(&s->role),
					atomic_load(&s->size));
	}
	if (ret) {
		pf_publish(pf, s, PF_NONE, slot_word(gen, 0, SLOT_DEMOTED), false);
		free(j);
		return ret;
	}
	j->idx = idx;
	j->gen = gen;
	j->home = home;
	atomic_fetch_add(&pf->c->issued, 1);
	atomic_fetch_add(&pf->c->bytes, atomic_load(&s->size));
	ortmem__publish(gov);
	pthread_mutex_lock(&pf->lock);
	atomic_fetch_add(&pf->c->inflight, 1);
	*pf->tail = j;
	pf->tail = &j->next;
	pthread_cond_signal(&pf->work);
	pthread_mutex_unlock(&pf->lock);
	return 1;
}

ORTMEM_API int ortmem_gov_prefetch(struct ortmem_gov *gov,
				   const struct ortmem_handle *hs,
				   unsigned int n, uint32_t flags)
{
	struct gov_prefetch *pf = NULL;
	unsigned int i;
	uint32_t idx;
	uint64_t w;
	int ret;

	if (!gov || !hs)
		return ortmem__err_invalid(-1, 0, "%s is NULL", gov ? "hs" : "gov");
	if (!n || n > gov->nslots || flags)
		return ortmem__err_invalid(-1, 0,
			"ortmem_gov_prefetch takes 1 to %u handles and flags 0 (got %u handles, flags %#x)",
			gov->nslots, n, flags);
	ret = pf_get(gov, &pf);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = ortmem__slot_lookup(gov, hs[i], &idx, &w);
		while (!ret) {
			ret = pf_start(gov, pf, hs[i], idx, w);
			if (ret)
				break;
			w = atomic_load(&gov->slots[idx].word);
		}
		if (ret < 0)
			break;
	}
	if (i == n)
		return (int)n;
	/* Out of budget after at least one: how far it got.  Anything
	 * else (a bad handle) is the caller's to hear about. */
	if (i && (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE ||
		  ret == -ORTMEM_E_TIER_EXHAUSTED)) {
		ortmem_error_clear();
		return (int)i;
	}
	if (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE ||
	    ret == -ORTMEM_E_TIER_EXHAUSTED) {
		atomic_fetch_add(&pf->c->refused, 1);
		ortmem__publish(gov);
	}
	return ret;
}

bool ortmem__prefetch_wait(struct ortmem_gov *gov, uint32_t idx, uint64_t w)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	struct gov_slot *s = &gov->slots[idx];
	uint64_t t0;

	if (!pf)
		return false;
	t0 = now_ns();
	pthread_mutex_lock(&pf->lock);
	if (atomic_load(&s->pf) != PF_INFLIGHT) {
		pthread_mutex_unlock(&pf->lock);
		/* Done meanwhile (no wait to count): look again, unless
		 * another mover has it. */
		return atomic_load(&s->word) != w;
	}
	while (atomic_load(&s->word) == w)
		pthread_cond_wait(&pf->done, &pf->lock);
	pthread_mutex_unlock(&pf->lock);
	atomic_fetch_add(&pf->c->waits, 1);
	atomic_fetch_add(&pf->c->wait_ns, now_ns() - t0);
	ortmem__publish(gov);
	return true;
}

int ortmem__prefetch_failed(struct ortmem_gov *gov, uint32_t idx, uint32_t gen)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	struct gov_slot *s = &gov->slots[idx];
	struct pf_fail *f = NULL, **pp;
	int code;

	if (!pf || atomic_load(&s->pf) != PF_FAILED)
		return 0;
	pthread_mutex_lock(&pf->lock);
	for (pp = &pf->fails; *pp; pp = &(*pp)->next)
		if ((*pp)->idx == idx) {
			f = *pp;
			*pp = f->next;
			break;
		}
	pthread_mutex_unlock(&pf->lock);
	atomic_store(&s->pf, PF_NONE);
	if (!f)
		return 0;
	if (f->gen != gen) {
		free(f);
		return 0;
	}
	code = ortmem__err_restore(&f->err, f->err.code ? f->err.code : -EIO);
	free(f);
	return code;
}

void ortmem__prefetch_note_pin(struct ortmem_gov *gov, struct gov_slot *s,
			       bool waited, bool promoted)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);
	uint8_t ready = PF_READY;

	if (!pf)
		return;
	if (atomic_compare_exchange_strong(&s->pf, &ready, PF_NONE) && !waited)
		atomic_fetch_add(&pf->c->hits, 1);
	else if (promoted)
		atomic_fetch_add(&pf->c->misses, 1);
	else
		return;
	ortmem__publish(gov);
}

void ortmem__prefetch_stats(struct ortmem_gov *gov,
			    struct ortmem_prefetch_stats *ps)
{
	struct gov_prefetch *pf = atomic_load(&gov->pf);

	memset(ps, 0, sizeof(*ps));
	if (!pf)
		return;
	ps->issued = atomic_load(&pf->c->issued);
	ps->bytes = atomic_load(&pf->c->bytes);
	ps->hits = atomic_load(&pf->c->hits);
	ps->waits = atomic_load(&pf->c->waits);
	ps->wait_ns = atomic_load(&pf->c->wait_ns);
	ps->misses = atomic_load(&pf->c->misses);
	ps->refused = atomic_load(&pf->c->refused);
	ps->failed = atomic_load(&pf->c->failed);
	ps->inflight = atomic_load(&pf->c->inflight);
}
