// SPDX-License-Identifier: MIT
/*
 * The placement's passes side by side (lib/plan/plan_pool.c,
 * plan_gap_pass.c, plan_gap_slack.c): a pool runs every job of every
 * batch exactly once, on its helpers as well as on the caller's thread,
 * and joins its helpers when stopped; a pool of one thread is none (the
 * caller runs the jobs, in order).  Solves under a device budget with 1,
 * 2 and 8 threads (8: a batch follows several slack sweeps' plans at
 * once) give plans the validator passes, within the budget, and leave no
 * thread behind.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#include "plan_threads.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"

#define MAX_JOBS 40

struct jobs {
	unsigned int runs[MAX_JOBS];	/* per job, in the current batch */
	pthread_t by[MAX_JOBS];		/* the thread that ran it */
	uint32_t order[MAX_JOBS];	/* jobs in the order they ran */
	unsigned int n_ran;
	useconds_t nap;			/* each job's length */
};

static void job_run(void *ctx, uint32_t job)
{
	struct jobs *j = ctx;
	unsigned int k = __atomic_fetch_add(&j->n_ran, 1, __ATOMIC_RELAXED);

	__atomic_fetch_add(&j->runs[job], 1, __ATOMIC_RELAXED);
	j->by[job] = pthread_self();
	j->order[k] = job;
	if (j->nap)
		usleep(j->nap);
}

/*
 * 60 batches of 0 to 39 jobs on four threads: each job of a batch runs
 * once, and the batch has ended when the call returns.  Jobs of half a
 * millisecond (a pass's length) leave the helpers time to wake, so some
 * job runs on a thread other than the caller's.
 */
TEST(every_job_of_every_batch_runs_once)
{
	int before = threads_at_rest();
	struct plan_pool *pool = ortmem__pool_start(4);
	static struct jobs j;
	bool helped = false;
	uint32_t b, k;

	ASSERT_NONNULL(pool);
	EXPECT_EQ(before + 3, threads_of_process());
	for (b = 0; b < 60; b++) {
		uint32_t n = b % MAX_JOBS;

		memset(&j, 0, sizeof(j));
		j.nap = b % 2 ? 500 : 0;
		ortmem__pool_run(pool, n, job_run, &j);
		EXPECT_EQ(n, __atomic_load_n(&j.n_ran, __ATOMIC_RELAXED));
		for (k = 0; k < MAX_JOBS; k++) {
			EXPECT_EQ(k < n ? 1u : 0u, j.runs[k]);
			if (k < n && !pthread_equal(j.by[k], pthread_self()))
				helped = true;
		}
	}
	EXPECT_TRUE(helped);
	ortmem__pool_stop(pool);
	/* every helper joined */
	EXPECT_EQ(before, threads_back_to(before));
}

/* One thread is no pool: the caller runs every job, in order. */
TEST(a_pool_of_one_thread_is_the_caller)
{
	static struct jobs j;
	uint32_t k;

	EXPECT_NULL(ortmem__pool_start(1));
	EXPECT_NULL(ortmem__pool_start(0));
	ortmem__pool_run(NULL, 25, job_run, &j);
	ASSERT_EQ(25u, j.n_ran);
	for (k = 0; k < 25; k++) {
		EXPECT_EQ(1u, j.runs[k]);
		EXPECT_EQ(k, j.order[k]);
		EXPECT_TRUE(pthread_equal(j.by[k], pthread_self()));
	}
	ortmem__pool_stop(NULL);
}

/*
 * 12 random graphs of 60-400 nodes at 40, 70 and 90 % of their all-on-
 * device bound, each solved with 1, 2 and 8 threads under the default
 * time budget: every plan passes the validator (ORTMEM_PLAN_F_VALIDATE),
 * fits the device budget, and the solve returns with no thread of its
 * own left.
 */
TEST_TIMEOUT(plans_made_side_by_side_are_valid, 300)
{
	static const uint32_t threads[] = { 1, 2, 8 };
	static const unsigned int pct[] = { 40, 70, 90 };
	int before = threads_at_rest();
	uint64_t seed = 0x9001;
	uint32_t g;

	for (g = 0; g < 12; g++) {
		uint32_t n = 60 + (uint32_t)(rnd(&seed) % 340);
		uint64_t gseed = rnd(&seed), lb;
		ORTMEM_OPTS(ortmem_plan_opts, o0, .align = { ALIGN, 64, 4096 });
		ORTMEM_OPTS(ortmem_plan_stats, st);
		struct ortmem_plan *p = NULL;
		uint64_t s2 = gseed;

		ASSERT_EQ(0, ortmem_plan_new(&o0, &p));
		random_graph(p, n, &s2);
		ASSERT_EQ(0, ortmem_plan_solve(p));
		ASSERT_EQ(0, ortmem_plan_stats(p, &st));
		lb = st.lower_bound;
		ortmem_plan_free(p);
		for (size_t d = 0; d < sizeof(pct) / sizeof(pct[0]); d++)
			for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
				uint64_t dev = lb / 100 * pct[d];
				ORTMEM_OPTS(ortmem_plan_opts, o, .align = { ALIGN, 64, 4096 },
					    .budget = { dev, 0, 0 }, .threads = threads[t],
					    .flags = ORTMEM_PLAN_F_VALIDATE);

				s2 = gseed;
				p = NULL;
				ASSERT_EQ(0, ortmem_plan_new(&o, &p));
				random_graph(p, n, &s2);
				EXPECT_EQ(0, ortmem_plan_solve(p));
				EXPECT_EQ(0, ortmem_plan_stats(p, &st));
				EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], dev);
				if (st.arena[ORTMEM_TIER_DEVICE] > dev)
					TH_LOG("graph %u (%u nodes), %u %%, %u threads: arena %" PRIu64
					       " over %" PRIu64, g, n, pct[d], threads[t],
					       st.arena[ORTMEM_TIER_DEVICE], dev);
				ortmem_plan_free(p);
				EXPECT_EQ(before, threads_back_to(before));
			}
	}
}

TEST_HARNESS_MAIN
