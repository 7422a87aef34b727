// SPDX-License-Identifier: MIT
/*
 * Several threads on one governor: reserve, release, pin and unpin, heap
 * allocations demoted and promoted under pressure, and races on the same
 * handle (two releases, pin against release).  Run under TSan by
 * `make check SAN=thread`.  At the end every byte is back.
 */
#include <pthread.h>
#include <stdatomic.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define THREADS 4
#define ITERS 20000
#define SHARED 32

static struct ortmem_gov *gov;
static _Atomic uint64_t shared[SHARED];	/* handle ids, 0 = empty */
static _Atomic int release_wins, errors;

static unsigned int next_rand(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static void note_error(const char *what, int ret)
{
	fprintf(stderr, "# %s: %d %s\n", what, ret, ortmem_last_error_message());
	atomic_fetch_add(&errors, 1);
}

static bool benign(int ret)
{
	return ret == -ORTMEM_E_TIER_EXHAUSTED || ret == -ORTMEM_E_CAPACITY_UNAVAILABLE ||
	       ret == -ORTMEM_E_STALE_HANDLE || ret == -EBUSY;
}

static void own_work(unsigned int *seed)
{
	struct ortmem_handle h;
	void *p;
	int ret, tier = next_rand(seed) % 2;
	uint64_t size = 1 + next_rand(seed) % 8192;

	if (next_rand(seed) % 4 == 0) {
		ret = ortmem_gov_alloc(gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE, size, ORTMEM_ALLOC_MOVABLE, &h);
		if (ret) {
			if (!benign(ret))
				note_error("alloc", ret);
			return;
		}
		ret = ortmem_gov_pin(gov, h, 0, &p);
		if (!ret) {
			memset(p, 0x5a, size);
			/* We hold a pin: nobody can release it under us. */
			ret = ortmem_gov_unpin(gov, h);
			if (ret)
				note_error("unpin", ret);
		} else if (!benign(ret)) {
			note_error("pin", ret);
		}
	} else {
		ret = ortmem_gov_reserve(gov, tier, ORTMEM_ROLE_KV_CACHE, size, &h);
		if (ret) {
			if (!benign(ret))
				note_error("reserve", ret);
			return;
		}
	}
	/* Publish it, and release whatever it displaced. */
	h.id = atomic_exchange(&shared[next_rand(seed) % SHARED], h.id);
	if (h.id) {
		ret = ortmem_gov_release(gov, h, ORTMEM_RELEASE_DEFER);
		if (ret < 0 && !benign(ret))
			note_error("release", ret);
	}
}

static void race_work(unsigned int *seed)
{
	unsigned int k = next_rand(seed) % SHARED;
	struct ortmem_handle h = { atomic_load(&shared[k]) };
	uint64_t seen = h.id;
	int ret;

	if (!h.id)
		return;
	if (next_rand(seed) % 2) {
		ret = ortmem_gov_pin(gov, h, 0, NULL);
		if (!ret) {
			/* Our pin keeps it ours until this unpin, even when
			 * another thread released it meanwhile (deferred). */
			ret = ortmem_gov_unpin(gov, h);
			if (ret < 0)
				note_error("race unpin", ret);
		} else if (!benign(ret)) {
			note_error("race pin", ret);
		}
		return;
	}
	/* Release a handle someone else may release too: one wins. */
	if (!atomic_compare_exchange_strong(&shared[k], &seen, 0) &&
	    next_rand(seed) % 2)
		return;
	ret = ortmem_gov_release(gov, h, ORTMEM_RELEASE_DEFER);
	if (ret >= 0)
		atomic_fetch_add(&release_wins, 1);
	else if (!benign(ret))
		note_error("race release", ret);
}

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	int i;

	for (i = 0; i < ITERS; i++) {
		if (next_rand(&seed) % 3)
			own_work(&seed);
		else
			race_work(&seed);
	}
	return NULL;
}

TEST_TIMEOUT(threads_keep_budgets_exact, 120)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_DEVICE] = 256 * 1024, [ORTMEM_TIER_HOST] = 512 * 1024, [ORTMEM_TIER_DISK] = 64 << 20 },
		    .max_handles = 4096);
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	pthread_t th[THREADS];
	int i, t;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DISK, ortmem_backend_heap(), NULL));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker,
					    (void *)(uintptr_t)(i + 1)));
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, atomic_load(&errors));
	for (i = 0; i < SHARED; i++) {
		struct ortmem_handle h = { atomic_load(&shared[i]) };

		if (h.id)
			ortmem_gov_release(gov, h, 0);
	}
	ASSERT_EQ(0, ortmem_gov_stats(gov, &st));
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		EXPECT_EQ(0, st.tier[t].used);
		EXPECT_EQ(0, st.tier[t].leases);
		EXPECT_GE(st.tier[t].usable, st.tier[t].peak);
	}
	EXPECT_EQ(0, st.handles_live);
	EXPECT_EQ(0, st.pins);
	EXPECT_EQ(0, st.quarantined);
	EXPECT_LT(0, atomic_load(&release_wins));
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
