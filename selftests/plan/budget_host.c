// SPDX-License-Identifier: MIT
/*
 * The host tier under a budget: the buffers that leave the device go to
 * the host, and those the host cannot hold go down to disk (plan_fit.c).
 * On a dense graph that fitting keeps the time contract of budget.c (the
 * same five-times margin), and every plan it makes holds: each arena
 * within its budget, each buffer on an allowed tier, the validator happy;
 * with no disk to go to, a host budget that cannot be met is refused, the
 * error naming the step and the bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#include "plan_test.h"

enum shape { TREE_RANDOM, LOCAL_EDGES, SKIP_RANDOM };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * TREE_RANDOM: node i reads one random earlier value (a random recursive
 * tree: many long-lived buffers).  LOCAL_EDGES: node i reads value i - 1
 * and one of the 16 before it.  SKIP_RANDOM: value i - 1 and any earlier
 * one.  Sizes 1 to 512 KiB; the last value is the graph's output.
 */
static void build(struct ortmem_plan *p, int n, enum shape shape, uint64_t seed,
		  uint64_t *sizes)
{
	for (int i = 0; i < n; i++) {
		uint32_t in[2], out = (uint32_t)i, nin = 0;
		uint64_t sz = 1024 * (1 + rnd(&seed) % 512);

		if (sizes)
			sizes[i] = sz;
		ortmem_plan_add_value(p, sz, i == n - 1 ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (i && shape != TREE_RANDOM)
			in[nin++] = (uint32_t)(i - 1);
		if (i) {
			uint64_t below = shape == LOCAL_EDGES && i > 16 ? 16 : (uint64_t)i;

			in[nin] = (uint32_t)(i - 1 - rnd(&seed) % below);
			nin += !nin || in[nin] != in[0];
		}
		ortmem_plan_add_node(p, in, nin, &out, 1);
	}
}

/* A fresh plan of the graph under @o; NULL when it cannot be built. */
static struct ortmem_plan *plan_of(const struct ortmem_plan_opts *o, int n,
				   enum shape shape, uint64_t *sizes)
{
	struct ortmem_plan *p = NULL;

	if (ortmem_plan_new(o, &p))
		return NULL;
	build(p, n, shape, 4321 + (uint64_t)n, sizes);
	return p;
}

/* Solve under @o; the wall time in ms (-1: it failed) and the stats. */
static double solve_ms(const struct ortmem_plan_opts *o, int n, enum shape shape,
		       struct ortmem_plan_stats *st)
{
	struct ortmem_plan *p = plan_of(o, n, shape, NULL);
	double t0, t;

	if (!p)
		return -1;
	t0 = now_ms();
	if (ortmem_plan_solve(p)) {
		ortmem_plan_free(p);
		return -1;
	}
	t = now_ms() - t0;
	ortmem_plan_stats(p, st);
	ortmem_plan_free(p);
	return t;
}

static uint64_t lower_bound_of(int n, enum shape shape)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 1);
	ORTMEM_OPTS(ortmem_plan_stats, st);

	return solve_ms(&o, n, shape, &st) < 0 ? 0 : st.lower_bound;
}

/*
 * 10k values of a random tree, a device budget of 30 % of the lower bound
 * and a host budget of 30 %: about 60 % of the bytes live at the peak go
 * to disk.  Demoting one buffer per profile of the whole graph took 8.6 s
 * here, ten times the solve under the device budget alone.  The first
 * plan is what a solve under a 1 us time budget and the device budget
 * alone makes (the fastest of three: the device's placement is part of
 * any first plan here); the solve under both budgets and the default time
 * budget must end within five times (time budget + first plan) + 500 ms.
 */
TEST_TIMEOUT(dense_10k_under_device_and_host_budgets_keeps_the_time_budget, 300)
{
	enum { N = 10000 };
	uint64_t lb = lower_bound_of(N, TREE_RANDOM);
	ORTMEM_OPTS(ortmem_plan_opts, first_o, .time_budget_us = 1,
		    .budget = { lb / 10 * 3, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { lb / 10 * 3, lb / 10 * 3, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	double first = 1e30, t, limit;

	ASSERT_LT(0, lb);
	for (int r = 0; r < 3; r++) {
		t = solve_ms(&first_o, N, TREE_RANDOM, &st);
		ASSERT_LE(0, t);
		if (t < first)
			first = t;
	}
	t = solve_ms(&o, N, TREE_RANDOM, &st);
	ASSERT_LE(0, t);
	limit = 5 * (ORTMEM_PLAN_DEFAULT_BUDGET_US / 1e3 + first) + 500;
	TH_LOG("%d values, budgets device %llu host %llu: %.1f ms (first plan %.1f ms, limit %.1f ms); arenas %llu %llu %llu",
	       N, (unsigned long long)o.budget[0], (unsigned long long)o.budget[1], t, first, limit,
	       (unsigned long long)st.arena[0], (unsigned long long)st.arena[1],
	       (unsigned long long)st.arena[2]);
	EXPECT_LE(t, limit);
	EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], o.budget[ORTMEM_TIER_DEVICE]);
	EXPECT_LE(st.arena[ORTMEM_TIER_HOST], o.budget[ORTMEM_TIER_HOST]);
	/* the host is full enough that disk takes the rest */
	EXPECT_LT(o.budget[ORTMEM_TIER_HOST] / 2, st.arena[ORTMEM_TIER_HOST]);
	EXPECT_LT(0, st.arena[ORTMEM_TIER_DISK]);
}

/*
 * Under each pair of budgets every value's buffer is on an allowed tier,
 * each arena within its budget and covering the buffers placed on it, the
 * validator passes, and where the host's peak with no host budget passes
 * the budget, disk holds the rest.
 */
static void check_plan(struct __test_metadata *_metadata, int n, enum shape shape,
		       uint32_t dev_pct, uint32_t host_pml)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t lb = lower_bound_of(n, shape), *sizes = calloc(n, sizeof(*sizes));
	uint64_t bytes[ORTMEM_TIER_COUNT] = { 0 }, off, host_peak;
	struct ortmem_plan *p;

	ASSERT_LT(0, lb);
	ASSERT_NONNULL(sizes);
	/* first plans only: the same device placement in both solves */
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 1, .time_budget_us = 1,
		    .budget = { lb / 100 * dev_pct, 0, 0 });
	/* what the host holds at its peak with no budget of its own */
	ASSERT_LE(0, solve_ms(&o, n, shape, &st));
	host_peak = st.tier_lower_bound[ORTMEM_TIER_HOST];
	o.budget[ORTMEM_TIER_HOST] = lb / 1000 * host_pml;
	p = plan_of(&o, n, shape, sizes);
	ASSERT_NONNULL(p);
	if (ortmem_plan_solve(p))
		TH_LOG("%s", ortmem_last_error_message());
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_validate(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	for (int v = 0; v < n; v++) {
		int t = ortmem_plan_offset(p, (uint32_t)v, &off);

		ASSERT_LE(0, t);
		ASSERT_GT(ORTMEM_TIER_COUNT, t);
		bytes[t] += sizes[v];
		/* inside its tier's arena */
		EXPECT_LE(off + sizes[v], st.arena[t]);
	}
	TH_LOG("shape %d, %d values, device %u %%, host %u per mille of LB %llu: arenas %llu %llu %llu, bytes %llu %llu %llu",
	       shape, n, dev_pct, host_pml, (unsigned long long)lb,
	       (unsigned long long)st.arena[0], (unsigned long long)st.arena[1],
	       (unsigned long long)st.arena[2], (unsigned long long)bytes[0],
	       (unsigned long long)bytes[1], (unsigned long long)bytes[2]);
	EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], o.budget[ORTMEM_TIER_DEVICE]);
	EXPECT_LE(st.arena[ORTMEM_TIER_HOST], o.budget[ORTMEM_TIER_HOST]);
	EXPECT_LE(st.tier_lower_bound[ORTMEM_TIER_HOST], st.arena[ORTMEM_TIER_HOST]);
	/* the budget binds: disk takes what the host cannot hold */
	if (host_peak > o.budget[ORTMEM_TIER_HOST])
		EXPECT_LT(0, st.arena[ORTMEM_TIER_DISK]);
	/* and the host holds something unless nothing of it fits */
	if (host_peak && o.budget[ORTMEM_TIER_HOST] >= 512 * 1024)
		EXPECT_LT(0, st.arena[ORTMEM_TIER_HOST]);
	ortmem_plan_free(p);
	free(sizes);
}

TEST_TIMEOUT(every_plan_keeps_each_tier_within_its_budget, 300)
{
	static const uint32_t host_pml[] = { 1, 50, 300, 600 };
	static const enum shape shapes[] = { TREE_RANDOM, LOCAL_EDGES, SKIP_RANDOM };

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (size_t h = 0; h < sizeof(host_pml) / sizeof(host_pml[0]); h++) {
			/* local edges live few at a time: a step alone needs more than 30 % */
			check_plan(_metadata, 2000, shapes[s], shapes[s] == LOCAL_EDGES ? 70 : 30,
				   host_pml[h]);
			check_plan(_metadata, 2000, shapes[s], 100, host_pml[h]);
		}
}

/*
 * With only the device and the host allowed, a host budget below what the
 * host must hold at once is refused: the error names the tier, the step
 * and its bytes.  A budget at the host's own peak is met.
 */
TEST(host_budget_with_no_disk_is_refused_naming_the_step)
{
	enum { N = 1000 };
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t lb = lower_bound_of(N, TREE_RANDOM);
	uint32_t tiers = (1u << ORTMEM_TIER_DEVICE) | (1u << ORTMEM_TIER_HOST);
	const char *msg;
	struct ortmem_plan *p;

	TSAN_SKIP_ONE_THREAD();
	ASSERT_LT(0, lb);
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 1, .tiers = tiers,
		    .time_budget_us = GENEROUS_BUDGET_US,
		    .budget = { lb / 10 * 3, lb / 100, 0 });
	p = plan_of(&o, N, TREE_RANDOM, NULL);
	ASSERT_NONNULL(p);
	ASSERT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_solve(p));
	msg = ortmem_last_error_message();
	TH_LOG("%s", msg);
	EXPECT_NONNULL(strstr(msg, "the host arena needs"));
	EXPECT_NONNULL(strstr(msg, "at step "));
	EXPECT_NONNULL(strstr(msg, "no slower tier is allowed"));
	ortmem_plan_free(p);

	/* the same device budget with no host budget: the host's peak ... */
	o.budget[ORTMEM_TIER_HOST] = 0;
	ASSERT_LE(0, solve_ms(&o, N, TREE_RANDOM, &st));
	ASSERT_LT(0, st.arena[ORTMEM_TIER_HOST]);
	/* ... is a budget it meets, and one byte less is refused */
	o.budget[ORTMEM_TIER_HOST] = st.arena[ORTMEM_TIER_HOST];
	EXPECT_LE(0, solve_ms(&o, N, TREE_RANDOM, &st));
	o.budget[ORTMEM_TIER_HOST] = st.tier_lower_bound[ORTMEM_TIER_HOST] - 1;
	EXPECT_GT(0, solve_ms(&o, N, TREE_RANDOM, &st));
}

TEST_HARNESS_MAIN
