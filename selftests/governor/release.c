// SPDX-License-Identifier: MIT
/*
 * Deferred release (order, busy backends, completion conditions) and
 * quarantine (partial frees, failed conditions, residual owner, retry).
 */
#include "../harness.h"
#include "testbackend.h"

#define KIB 1024ull

FIXTURE(rel) {
	struct ortmem_gov *gov;
	struct tb tb;
};

FIXTURE_SETUP(rel)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 64 * KIB });
	struct ortmem_backend_ops ops;

	tb_init(&self->tb);
	ops = tb_ops(&self->tb);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &self->tb));
}

FIXTURE_TEARDOWN(rel)
{
	ortmem_gov_close(self->gov);
	tb_fini(&self->tb);
}

static uint64_t used(struct ortmem_gov *gov, int tier)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };

	ortmem_gov_stats(gov, &st);
	return st.tier[tier].used;
}

static int flag_ready(void *arg)
{
	return *(int *)arg;
}

TEST_F(rel, deferred_releases_complete_in_queue_order)
{
	struct ortmem_handle h[3];
	int ready[3] = { 0, 0, 0 }, i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &h[i]));
	/* Queued youngest first in handle order 2, 0, 1. */
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, h[2], flag_ready, &ready[2]));
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, h[0], flag_ready, &ready[0]));
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, h[1], flag_ready, &ready[1]));
	EXPECT_EQ(3 * KIB, used(self->gov, 1));
	EXPECT_EQ(0, ortmem_gov_poll(self->gov));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h[0], 0, NULL));
	/* An entry that is not ready does not hold back younger ones. */
	ready[1] = 1;
	EXPECT_EQ(1, ortmem_gov_poll(self->gov));
	EXPECT_EQ(2 * KIB, used(self->gov, 1));
	ready[0] = ready[2] = 1;
	EXPECT_EQ(2, ortmem_gov_poll(self->gov));
	EXPECT_EQ(0, used(self->gov, 1));
	ASSERT_EQ(3, self->tb.nfreed);
	/* Backend handles are 1, 2, 3 for h[0..2]: 1 first, then 2 and 0 in
	 * the order they were queued. */
	EXPECT_EQ(2, self->tb.freed_order[0]);
	EXPECT_EQ(3, self->tb.freed_order[1]);
	EXPECT_EQ(1, self->tb.freed_order[2]);
	EXPECT_EQ(0, self->tb.live);
}

TEST_F(rel, busy_backend_defers_until_idle)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &h));
	self->tb.busy[1] = 1;	/* I/O in flight on it */
	EXPECT_EQ(1, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(1, st.tier[ORTMEM_TIER_HOST].deferred);
	EXPECT_EQ(0, ortmem_gov_poll(self->gov));
	EXPECT_EQ(1, self->tb.live);
	self->tb.busy[1] = 0;
	EXPECT_EQ(1, ortmem_gov_poll(self->gov));
	EXPECT_EQ(0, self->tb.live);
	EXPECT_EQ(0, used(self->gov, 1));
}

TEST_F(rel, deferred_release_completes_under_pressure)
{
	struct ortmem_handle h, big;
	int ready = 0;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 40 * KIB, 0, &h));
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, h, flag_ready, &ready));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 40 * KIB, &big));
	ready = 1;	/* the next charge that does not fit completes it */
	EXPECT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 40 * KIB, &big));
}

TEST_F(rel, partial_free_failure_quarantines_with_residual_owner)
{
	struct ortmem_quarantine_entry q[2];
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h, other;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_WEIGHTS,
				      16 * KIB, 0, &h));
	self->tb.fail_free_at = 1;
	self->tb.partial_free = 4 * KIB;
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_gov_release(self->gov, h, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(),
			      "12288 of its 16384 bytes are still owned by backend 'testmem'"));
	ASSERT_EQ(1, ortmem_gov_quarantine(self->gov, q, 2));
	EXPECT_EQ(h.id, q[0].handle.id);
	EXPECT_EQ(ORTMEM_OWNER_BACKEND, q[0].owner);
	EXPECT_EQ(1, q[0].tier);
	EXPECT_EQ(16 * KIB, q[0].size);
	EXPECT_EQ(12 * KIB, q[0].residual);
	EXPECT_EQ(-EIO, q[0].code);
	EXPECT_STREQ("testmem", q[0].backend);
	EXPECT_NONNULL(strstr(q[0].reason, "backend 'testmem' free returned -5"));
	/* The residual stays charged; the handle says quarantined. */
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(12 * KIB, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(12 * KIB, st.tier[ORTMEM_TIER_HOST].quarantined_bytes);
	EXPECT_EQ(1, st.quarantined);
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_gov_pin(self->gov, h, 0, NULL));
	/* Nothing reuses the slot meanwhile. */
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, &other));
	EXPECT_NE(h.id & 0xffffff, other.id & 0xffffff);
	/* A retry frees exactly the residual, once. */
	EXPECT_EQ(0, ortmem_gov_quarantine_retry(self->gov));
	EXPECT_EQ(0, ortmem_gov_quarantine(self->gov, NULL, 0));
	EXPECT_EQ(0, self->tb.live);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(KIB, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].quarantined_bytes);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
}

static int failing_condition(void *arg)
{
	return *(int *)arg;
}

TEST_F(rel, failed_condition_quarantines_as_inflight)
{
	struct ortmem_quarantine_entry q;
	struct ortmem_handle h;
	int cond = -EIO;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 8 * KIB, 0, &h));
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, h, failing_condition, &cond));
	EXPECT_EQ(1, ortmem_gov_poll(self->gov));
	ASSERT_EQ(1, ortmem_gov_quarantine(self->gov, &q, 1));
	EXPECT_EQ(ORTMEM_OWNER_INFLIGHT, q.owner);
	EXPECT_EQ(8 * KIB, q.residual);
	EXPECT_EQ(-EIO, q.code);
	EXPECT_EQ(1, self->tb.live);	/* never freed under a live operation */
	EXPECT_EQ(1, ortmem_gov_quarantine_retry(self->gov));
	cond = 1;	/* the operation is known finished now */
	EXPECT_EQ(0, ortmem_gov_quarantine_retry(self->gov));
	EXPECT_EQ(0, self->tb.live);
	EXPECT_EQ(0, used(self->gov, 1));
}

TEST_F(rel, busy_error_quarantines_as_inflight)
{
	struct ortmem_quarantine_entry q;
	struct ortmem_handle h;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &h));
	self->tb.busy_err = -ENXIO;
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(1, ortmem_gov_quarantine(self->gov, &q, 1));
	EXPECT_EQ(ORTMEM_OWNER_INFLIGHT, q.owner);
	self->tb.busy_err = 0;
	EXPECT_EQ(0, ortmem_gov_quarantine_retry(self->gov));
	EXPECT_EQ(0, self->tb.live);
}

TEST_F(rel, failed_alloc_then_release_frees_nothing_twice)
{
	struct ortmem_handle a, b;

	self->tb.fail_alloc_at = 2;
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &a));
	EXPECT_EQ(-ENOMEM, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &b));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, a, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, a, 0));
	EXPECT_EQ(1, self->tb.frees);
	EXPECT_EQ(0, self->tb.live);
}

TEST_HARNESS_MAIN
