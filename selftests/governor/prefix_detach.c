// SPDX-License-Identifier: MIT
/*
 * A prefix's detach hook runs without the governor's lock: it is the pair
 * of create's attach and may end its ctx (the device's ops drop a handle
 * reference there, and the last one closes the device), so it may call
 * into the device layer or back into the governor.  Here the hook asks
 * the governor for its statistics from another thread and waits for the
 * answer (bounded: GATE_WAIT_S is a deadlock check, not a timing); with
 * the lock held across the hook the answer never comes in time and the
 * test fails.  Each way a prefix ends is covered: its release with no
 * sharer, the last unbind after the release, and a drain of its tier.
 * Then the hook calls the governor on its own thread, which would
 * deadlock under the lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "../harness.h"

#include <ortmem/ortmem.h>

#define MIB (1024ull * 1024)
#define GATE_WAIT_S 30

struct probe {
	struct ortmem_gov *gov;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t t;
	bool started, answered, same_thread;
	int attaches, detaches, in_time, stats_ret;
};

/* Memory from the heap stands in for shared physical memory: what is
 * tested is when the hooks run, not the mapping. */
static int heap_create(void *ctx, uint64_t size, uint64_t *physp, uint64_t *addrp)
{
	void *p = calloc(1, size);

	(void)ctx;
	if (!p)
		return -ENOMEM;
	*physp = *addrp = (uint64_t)(uintptr_t)p;
	return 0;
}

static int heap_map(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
		    int writable, uint64_t *addrp)
{
	void *p = calloc(1, total);

	(void)ctx, (void)phys, (void)plen, (void)writable;
	if (!p)
		return -ENOMEM;
	*addrp = (uint64_t)(uintptr_t)p;
	return 0;
}

static int heap_unmap(void *ctx, uint64_t addr, uint64_t plen, uint64_t total)
{
	(void)ctx, (void)plen, (void)total;
	free((void *)(uintptr_t)addr);
	return 0;
}

static void heap_destroy(void *ctx, uint64_t phys, uint64_t addr, uint64_t size)
{
	(void)ctx, (void)addr, (void)size;
	free((void *)(uintptr_t)phys);
}

static void probe_attach(void *ctx)
{
	((struct probe *)ctx)->attaches++;
}

static void *ask_stats(void *arg)
{
	struct probe *pr = arg;
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	int ret = ortmem_gov_stats(pr->gov, &st);

	pthread_mutex_lock(&pr->mu);
	pr->stats_ret = ret;
	pr->answered = true;
	pthread_cond_broadcast(&pr->cv);
	pthread_mutex_unlock(&pr->mu);
	return NULL;
}

/* A governor call from another thread must finish while the hook runs. */
static void probe_detach(void *ctx)
{
	struct probe *pr = ctx;
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct timespec dl;
	int ret = 0;

	pr->detaches++;
	if (pr->same_thread) {
		/* Under the lock this would never return. */
		pr->in_time += !ortmem_gov_stats(pr->gov, &st);
		return;
	}
	pr->answered = false;
	if (pthread_create(&pr->t, NULL, ask_stats, pr))
		return;
	pr->started = true;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += GATE_WAIT_S;
	pthread_mutex_lock(&pr->mu);
	while (!pr->answered && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&pr->cv, &pr->mu, &dl);
	pr->in_time += pr->answered;
	pthread_mutex_unlock(&pr->mu);
}

static const struct ortmem_share_ops probe_ops = {
	.sz = sizeof(probe_ops),
	.name = "heap-probe",
	.create = heap_create,
	.map = heap_map,
	.unmap = heap_unmap,
	.destroy = heap_destroy,
	.attach = probe_attach,
	.detach = probe_detach,
};

FIXTURE(det) {
	struct ortmem_gov *gov;
	struct probe pr;
	struct ortmem_prefix *p;
};

FIXTURE_SETUP(det)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 64 * MIB, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);

	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
	memset(&self->pr, 0, sizeof(self->pr));
	self->pr.gov = self->gov;
	pthread_mutex_init(&self->pr.mu, NULL);
	pthread_cond_init(&self->pr.cv, NULL);
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, 4096, 0,
					  &probe_ops, &self->pr, &self->p, NULL));
	ASSERT_EQ(1, self->pr.attaches);
	ASSERT_EQ(0, self->pr.detaches);
}

FIXTURE_TEARDOWN(det)
{
	ortmem_gov_close(self->gov);
	pthread_mutex_destroy(&self->pr.mu);
	pthread_cond_destroy(&self->pr.cv);
}

/* The hook ran once, and the governor answered while it ran. */
static void detached_unlocked(struct __test_metadata *_metadata, struct probe *pr)
{
	if (pr->started)
		pthread_join(pr->t, NULL);
	ASSERT_EQ(1, pr->detaches);
	if (!pr->same_thread) {
		ASSERT_TRUE(pr->answered);
		ASSERT_EQ(0, pr->stats_ret);
	}
	ASSERT_EQ(1, pr->in_time);
}

TEST_F_TIMEOUT(det, release_detaches_outside_the_lock, 120)
{
	ASSERT_EQ(0, ortmem_prefix_release(self->p));
	detached_unlocked(_metadata, &self->pr);
}

TEST_F_TIMEOUT(det, last_unbind_detaches_outside_the_lock, 120)
{
	struct ortmem_handle s;

	ASSERT_EQ(0, ortmem_prefix_bind(self->p, 100, &s, NULL));
	ASSERT_EQ(1, ortmem_prefix_release(self->p));
	ASSERT_EQ(0, self->pr.detaches);
	ASSERT_EQ(0, ortmem_prefix_unbind(self->gov, s));
	detached_unlocked(_metadata, &self->pr);
}

TEST_F_TIMEOUT(det, drain_detaches_outside_the_lock, 120)
{
	struct ortmem_handle s;

	ASSERT_EQ(0, ortmem_prefix_bind(self->p, 100, &s, NULL));
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_drain(self->gov, NULL, 0));
	detached_unlocked(_metadata, &self->pr);
}

TEST_F_TIMEOUT(det, a_detach_may_call_the_governor_on_its_own_thread, 120)
{
	self->pr.same_thread = true;
	ASSERT_EQ(0, ortmem_prefix_release(self->p));
	detached_unlocked(_metadata, &self->pr);
}
TEST_HARNESS_MAIN
