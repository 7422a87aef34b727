// SPDX-License-Identifier: MIT
/*
 * Helper threads that run a batch of the planner's jobs with the caller
 * (the gap placement's passes, plan_gap_pass.c).  The helpers start once
 * per solve and wait between batches: a pass takes 0.05-1 ms, so a thread
 * started per batch would cost a tenth of what it runs.  A job is taken
 * under the lock, run without it; the caller takes jobs too and returns
 * when every job of its batch has ended.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "plan_internal.h"

struct plan_pool {
	pthread_mutex_t mu;
	pthread_cond_t go;	/* a batch posted, or quit */
	pthread_cond_t done;	/* the batch's last job ended */
	pthread_t *tid;
	uint32_t n_helpers;
	uint64_t batch;		/* batches posted so far */
	bool quit;
	void (*fn)(void *ctx, uint32_t job);
	void *ctx;
	uint32_t n_jobs, next, left;	/* jobs; the next to hand out; not ended */
};

/* Take and run the batch's jobs until none is left to hand out; called
 * and returns with the lock held. */
static void pool_take(struct plan_pool *p)
{
	while (p->next < p->n_jobs) {
		uint32_t job = p->next++;

		pthread_mutex_unlock(&p->mu);
		p->fn(p->ctx, job);
		pthread_mutex_lock(&p->mu);
		if (!--p->left)
			pthread_cond_signal(&p->done);
	}
}

static void *pool_helper(void *arg)
{
	struct plan_pool *p = arg;
	uint64_t seen = 0;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->batch == seen)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->batch;
		pool_take(p);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct plan_pool *ortmem__pool_start(uint32_t threads)
{
	struct plan_pool *p;
	uint32_t t;

	if (threads < 2)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tid = calloc(threads - 1, sizeof(*p->tid));
	if (!p->tid || pthread_mutex_init(&p->mu, NULL)) {
		free(p->tid);
		free(p);
		return NULL;
	}
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	/* a helper that fails to start is one fewer: the caller runs what
	 * the others do not */
	for (t = 0; t < threads - 1; t++)
		if (!pthread_create(&p->tid[p->n_helpers], NULL, pool_helper, p))
			p->n_helpers++;
	return p;
}

void ortmem__pool_run(struct plan_pool *p, uint32_t n_jobs,
		      void (*fn)(void *ctx, uint32_t job), void *ctx)
{
	uint32_t j;

	if (!p || !p->n_helpers || n_jobs < 2) {
		for (j = 0; j < n_jobs; j++)
			fn(ctx, j);
		return;
	}
	pthread_mutex_lock(&p->mu);
	p->fn = fn;
	p->ctx = ctx;
	p->n_jobs = n_jobs;
	p->next = 0;
	p->left = n_jobs;
	p->batch++;
	pthread_cond_broadcast(&p->go);
	pool_take(p);
	while (p->left)
		pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

void ortmem__pool_stop(struct plan_pool *p)
{
	uint32_t t;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (t = 0; t < p->n_helpers; t++)
		pthread_join(p->tid[t], NULL);
	pthread_cond_destroy(&p->go);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->mu);
	free(p->tid);
	free(p);
}
