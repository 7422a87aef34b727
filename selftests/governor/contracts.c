// SPDX-License-Identifier: MIT
/*
 * The contracts around a binding: authorities (who may release it),
 * provider contexts (what it keeps alive), validated views (stale after a
 * release, a reuse or a move; owned views pin; quarantine is never missed)
 * and the registry of mechanisms (lifecycle, coherence, snapshots, the
 * ordered drain).
 */
#include "../harness.h"
#include "testbackend.h"

#define KIB 1024ull

FIXTURE(ct) {
	struct ortmem_gov *gov;
	struct tb tb;	/* the disk tier: no CPU pointer */
};

FIXTURE_SETUP(ct)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 64 * KIB, 64 * KIB, 64 * KIB },
		    .flags = ORTMEM_GOV_NO_PUBLISH);
	struct ortmem_backend_ops ops;

	tb_init(&self->tb);
	self->tb.with_store = 1;
	ops = tb_ops(&self->tb);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DISK, &ops, &self->tb));
}

FIXTURE_TEARDOWN(ct)
{
	ortmem_gov_close(self->gov);
	tb_fini(&self->tb);
}

static struct ortmem_handle alloc_host(struct ortmem_gov *gov, uint64_t size)
{
	struct ortmem_handle h = { 0 };

	ortmem_gov_alloc(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, size,
			 ORTMEM_ALLOC_MOVABLE, &h);
	return h;
}

static int never_ready(void *arg)
{
	(void)arg;
	return 0;
}

static bool last_says(const char *what)
{
	return strstr(ortmem_last_error_message(), what) != NULL;
}

TEST_F(ct, only_the_claiming_authority_releases)
{
	struct ortmem_handle h = alloc_host(self->gov, KIB);
	uint32_t sched, other;

	ASSERT_NE(0, h.id);
	ASSERT_EQ(0, ortmem_gov_authority_register(self->gov, "scheduler", &sched));
	ASSERT_EQ(0, ortmem_gov_authority_register(self->gov, "io", &other));
	EXPECT_EQ(-EEXIST, ortmem_gov_authority_register(self->gov, "io", &other));
	ASSERT_EQ(0, ortmem_gov_claim(self->gov, h, sched, 0));
	EXPECT_EQ(-EEXIST, ortmem_gov_claim(self->gov, h, other, 0));
	/* The application, and another authority, are refused by name. */
	EXPECT_EQ(-EPERM, ortmem_gov_release(self->gov, h, 0));
	EXPECT_TRUE(last_says("'scheduler'"));
	EXPECT_EQ(-EPERM, ortmem_gov_release_as(self->gov, h, other, 0));
	EXPECT_TRUE(last_says("'io'"));
	EXPECT_EQ(-EPERM, ortmem_gov_release_after(self->gov, h, never_ready, NULL));
	/* Nothing was lost: the binding is whole. */
	EXPECT_EQ(0, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(-EBUSY, ortmem_gov_authority_unregister(self->gov, sched));
	EXPECT_EQ(0, ortmem_gov_release_as(self->gov, h, sched, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(0, ortmem_gov_authority_unregister(self->gov, sched));
	/* A stale id, even after its entry is reused, is refused. */
	h = alloc_host(self->gov, KIB);
	EXPECT_EQ(-ENOENT, ortmem_gov_claim(self->gov, h, sched, 0));
	ASSERT_EQ(0, ortmem_gov_authority_register(self->gov, "scheduler2", &other));
	EXPECT_EQ(-ENOENT, ortmem_gov_claim(self->gov, h, sched, 0));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
}

TEST_F(ct, claim_refuses_bad_input)
{
	struct ortmem_handle h = alloc_host(self->gov, KIB), bad = { h.id ^ (1ull << 40) };
	char longname[64];
	uint32_t a;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	EXPECT_EQ(-EINVAL, ortmem_gov_authority_register(self->gov, longname, &a));
	EXPECT_EQ(-EINVAL, ortmem_gov_authority_register(self->gov, "", &a));
	EXPECT_EQ(-EINVAL, ortmem_gov_context_register(self->gov, "x", NULL));
	EXPECT_EQ(-EINVAL, ortmem_gov_claim(self->gov, h, 0, 0));
	ASSERT_EQ(0, ortmem_gov_authority_register(self->gov, "a", &a));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_claim(self->gov, bad, a, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release_as(self->gov, bad, a, 0));
	EXPECT_EQ(-EINVAL, ortmem_gov_release_as(self->gov, h, 0, 0x80));
	EXPECT_EQ(-ENOENT, ortmem_gov_authority_unregister(self->gov, 0x12345));
	EXPECT_EQ(0, ortmem_gov_release_as(self->gov, h, 0, 0));
}

TEST_F(ct, registry_fills_then_refuses)
{
	uint32_t id[ORTMEM_REGISTRY_MAX + 1];
	char name[16];
	int i;

	for (i = 0; i < ORTMEM_REGISTRY_MAX; i++) {
		snprintf(name, sizeof(name), "ctx%d", i);
		ASSERT_EQ(0, ortmem_gov_context_register(self->gov, name, &id[i]));
	}
	EXPECT_EQ(-ENOSPC, ortmem_gov_context_register(self->gov, "one-more", &id[i]));
	ASSERT_EQ(0, ortmem_gov_context_unregister(self->gov, id[3]));
	EXPECT_EQ(0, ortmem_gov_context_register(self->gov, "one-more", &id[i]));
	EXPECT_NE(id[3], id[i]);
	EXPECT_EQ(-ENOENT, ortmem_gov_context_unregister(self->gov, id[3]));
}

TEST_F(ct, a_context_outlives_everything_that_depends_on_it)
{
	struct ortmem_handle a = alloc_host(self->gov, KIB), b = alloc_host(self->gov, KIB);
	struct ortmem_context_holds holds;
	struct ortmem_view v;
	uint32_t ctx;

	ASSERT_EQ(0, ortmem_gov_context_register(self->gov, "cuda-ctx-0", &ctx));
	ASSERT_EQ(0, ortmem_gov_claim(self->gov, a, 0, ctx));
	ASSERT_EQ(0, ortmem_gov_claim(self->gov, b, 0, ctx));
	EXPECT_EQ(-EEXIST, ortmem_gov_claim(self->gov, b, 0, ctx));
	ASSERT_EQ(0, ortmem_view_make(self->gov, a, 0, 16, ORTMEM_VIEW_OWNED, &v));
	EXPECT_EQ(ctx, v.ctx);
	ASSERT_EQ(0, ortmem_gov_context_holds(self->gov, ctx, &holds));
	EXPECT_EQ(2, holds.bindings);
	EXPECT_EQ(1, holds.views);
	/* Tearing it down is refused, naming what holds it. */
	EXPECT_EQ(-EBUSY, ortmem_gov_context_unregister(self->gov, ctx));
	EXPECT_TRUE(last_says("'cuda-ctx-0'"));
	EXPECT_TRUE(last_says("2 bindings"));
	EXPECT_TRUE(last_says("1 owned views"));
	/* Released under the view's pin: deferred, still holding it. */
	EXPECT_EQ(1, ortmem_gov_release(self->gov, a, ORTMEM_RELEASE_DEFER));
	/* Released after a condition not met yet: deferred too. */
	EXPECT_EQ(1, ortmem_gov_release_after(self->gov, b, never_ready, NULL));
	ASSERT_EQ(0, ortmem_gov_context_holds(self->gov, ctx, &holds));
	EXPECT_EQ(0, holds.bindings);
	EXPECT_EQ(2, holds.deferred);
	EXPECT_EQ(-EBUSY, ortmem_gov_context_unregister(self->gov, ctx));
	EXPECT_TRUE(last_says("2 deferred releases"));
	/* The view is still good: it keeps the bytes alive. */
	EXPECT_EQ(0, ortmem_view_check(self->gov, &v, NULL));
	EXPECT_EQ(0, ortmem_view_drop(self->gov, &v));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, a, 0, NULL));
	ASSERT_EQ(0, ortmem_gov_context_holds(self->gov, ctx, &holds));
	EXPECT_EQ(0, holds.views);
	EXPECT_EQ(1, holds.deferred);
	EXPECT_EQ(-EBUSY, ortmem_gov_context_unregister(self->gov, ctx));
	ortmem_gov_close(self->gov);	/* completes nothing: never ready */
	self->gov = NULL;
	{
		ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 64 * KIB, 0 },
			    .flags = ORTMEM_GOV_NO_PUBLISH);
		ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	}
}

TEST_F(ct, a_quarantined_release_still_holds_its_context)
{
	struct ortmem_handle h;
	struct ortmem_context_holds holds;
	struct ortmem_view v;
	uint32_t ctx;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_DISK, ORTMEM_ROLE_KV_CACHE,
				      KIB, 0, &h));
	ASSERT_EQ(0, ortmem_gov_context_register(self->gov, "ep", &ctx));
	ASSERT_EQ(0, ortmem_gov_claim(self->gov, h, 0, ctx));
	ASSERT_EQ(0, ortmem_view_make(self->gov, h, 0, KIB, 0, &v));
	self->tb.fail_free_at = self->tb.frees + 1;
	self->tb.partial_free = 0;
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_gov_release(self->gov, h, 0));
	/* The view notices the quarantine. */
	EXPECT_EQ(-ORTMEM_E_QUARANTINED, ortmem_view_check(self->gov, &v, NULL));
	ASSERT_EQ(0, ortmem_gov_context_holds(self->gov, ctx, &holds));
	EXPECT_EQ(1, holds.quarantined);
	EXPECT_EQ(-EBUSY, ortmem_gov_context_unregister(self->gov, ctx));
	EXPECT_TRUE(last_says("1 quarantined"));
	EXPECT_EQ(0, ortmem_gov_quarantine_retry(self->gov));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_check(self->gov, &v, NULL));
	EXPECT_EQ(0, ortmem_gov_context_unregister(self->gov, ctx));
}

TEST_F(ct, views_are_checked_when_made_and_when_used)
{
	struct ortmem_handle h = alloc_host(self->gov, 4 * KIB), h2;
	struct ortmem_view v, w;
	void *base, *p;

	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &base));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	/* Bounds. */
	EXPECT_EQ(-EINVAL, ortmem_view_make(self->gov, h, 4 * KIB - 8, 9, 0, &v));
	EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, ortmem_last_error()->kind);
	EXPECT_EQ(0, v.handle.id);
	EXPECT_EQ(-EINVAL, ortmem_view_make(self->gov, h, 0, 0, 0, &v));
	EXPECT_EQ(-EINVAL, ortmem_view_make(self->gov, h, UINT64_MAX, 2, 0, &v));
	EXPECT_EQ(-EINVAL, ortmem_view_make(self->gov, h, 0, 8, 0x100, &v));
	EXPECT_EQ(-EINVAL, ortmem_view_check(self->gov, &v, &p));
	ASSERT_EQ(0, ortmem_view_make(self->gov, h, 4 * KIB - 8, 8, ORTMEM_VIEW_WRITE, &v));
	ASSERT_EQ(0, ortmem_view_check(self->gov, &v, &p));
	EXPECT_EQ((char *)base + 4 * KIB - 8, p);
	/* Released: stale, and still stale once the slot is reused. */
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_check(self->gov, &v, &p));
	h2 = alloc_host(self->gov, 4 * KIB);
	ASSERT_NE(0, h2.id);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_check(self->gov, &v, &p));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_make(self->gov, h, 0, 8, 0, &w));
	EXPECT_EQ(0, ortmem_view_drop(self->gov, &v));
	EXPECT_EQ(-EINVAL, ortmem_view_drop(self->gov, &v));
	/* Moved (demoted to disk and back): the old address is stale. */
	ASSERT_EQ(0, ortmem_view_make(self->gov, h2, 0, 8, 0, &v));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h2));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_check(self->gov, &v, &p));
	EXPECT_TRUE(last_says("moved"));
	ASSERT_EQ(0, ortmem_view_make(self->gov, h2, 0, 8, 0, &w));
	EXPECT_EQ(ORTMEM_TIER_DISK, w.tier);
	EXPECT_EQ(0, ortmem_view_check(self->gov, &w, &p));
	EXPECT_NULL(p);	/* the test disk has no CPU address */
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h2, 0));
}

TEST_F(ct, an_owned_view_keeps_its_binding_alive_and_in_place)
{
	struct ortmem_handle h = alloc_host(self->gov, 4 * KIB);
	struct ortmem_view v, w;
	void *p;

	ASSERT_EQ(0, ortmem_view_make(self->gov, h, 64, 64, ORTMEM_VIEW_OWNED, &v));
	ASSERT_EQ(0, ortmem_view_make(self->gov, h, 64, 64, 0, &w));
	EXPECT_EQ(-EBUSY, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(-EBUSY, ortmem_gov_demote(self->gov, h));
	EXPECT_EQ(1, ortmem_gov_release(self->gov, h, ORTMEM_RELEASE_DEFER));
	/* The owner's view still reaches the bytes; a borrowed one does not. */
	EXPECT_EQ(0, ortmem_view_check(self->gov, &v, &p));
	memset(p, 0x5a, 64);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_check(self->gov, &w, &p));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_view_make(self->gov, h, 0, 8, 0, &w));
	EXPECT_EQ(0, ortmem_view_drop(self->gov, &v));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, NULL));
}

TEST_F(ct, mechanisms_have_identity_lifecycle_coherence_and_a_snapshot)
{
	struct ortmem_mechanism m[ORTMEM_TIER_COUNT];
	struct ortmem_handle h;

	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_mechanisms(self->gov, m, ORTMEM_TIER_COUNT));
	EXPECT_EQ(ORTMEM_MECH_ABSENT, m[ORTMEM_TIER_DEVICE].lifecycle);
	EXPECT_EQ(ORTMEM_MECH_REGISTERED, m[ORTMEM_TIER_HOST].lifecycle);
	EXPECT_EQ(ORTMEM_COHERENCE_HOST, m[ORTMEM_TIER_HOST].coherence);
	EXPECT_EQ(ORTMEM_COHERENCE_DEVICE_ONLY, m[ORTMEM_TIER_DISK].coherence);
	EXPECT_STREQ("heap", m[ORTMEM_TIER_HOST].name);
	EXPECT_NE(m[ORTMEM_TIER_HOST].id, m[ORTMEM_TIER_DISK].id);
	h = alloc_host(self->gov, 3 * KIB);
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_mechanisms(self->gov, m, ORTMEM_TIER_COUNT));
	EXPECT_EQ(ORTMEM_MECH_ACTIVE, m[ORTMEM_TIER_HOST].lifecycle);
	EXPECT_EQ(3 * KIB, m[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(3 * KIB, m[ORTMEM_TIER_HOST].private_bytes);
	EXPECT_EQ(0, m[ORTMEM_TIER_HOST].shared_bytes);
	EXPECT_EQ(1, m[ORTMEM_TIER_HOST].bindings);
	EXPECT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_mechanisms(self->gov, NULL, 0));
	EXPECT_EQ(-EINVAL, ortmem_gov_mechanisms(self->gov, NULL, 1));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
}

static char drain_log[8][256];
static int drain_n;

static void drain_logger(enum ortmem_log_level level, const char *msg, void *user)
{
	(void)level;
	(void)user;
	if (strstr(msg, "draining") && drain_n < 8)
		snprintf(drain_log[drain_n++], sizeof(drain_log[0]), "%s", msg);
}

TEST_F(ct, close_drains_fastest_first_and_reports_what_each_held)
{
	struct ortmem_mechanism m[ORTMEM_TIER_COUNT];
	struct ortmem_handle d, h, k, pinned;
	int i;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WEIGHTS, 5 * KIB, &d));
	h = alloc_host(self->gov, 2 * KIB);
	pinned = alloc_host(self->gov, KIB);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, pinned, 0, NULL));
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_DISK, ORTMEM_ROLE_KV_CACHE, 7 * KIB, 0, &k));
	ASSERT_EQ(0, ortmem_set_log_fn(drain_logger, NULL, ORTMEM_LOG_INFO));
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_drain(self->gov, m, ORTMEM_TIER_COUNT));
	ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_ERROR);
	for (i = 0; i < ORTMEM_TIER_COUNT; i++)
		EXPECT_EQ(ORTMEM_MECH_RETIRED, m[i].lifecycle);
	EXPECT_EQ(5 * KIB, m[ORTMEM_TIER_DEVICE].used);
	EXPECT_EQ(3 * KIB, m[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(2, m[ORTMEM_TIER_HOST].bindings);
	EXPECT_EQ(7 * KIB, m[ORTMEM_TIER_DISK].used);
	EXPECT_EQ(0, self->tb.live);
	/* In order, each saying what it held (the pinned one warned). */
	ASSERT_GE(drain_n, 4);
	EXPECT_TRUE(strstr(drain_log[0], "device tier") && strstr(drain_log[0], "5120 bytes"));
	EXPECT_TRUE(strstr(drain_log[1], "host tier") && strstr(drain_log[1], "3072 bytes"));
	EXPECT_TRUE(strstr(drain_log[2], "still holds 1 pins"));
	EXPECT_TRUE(strstr(drain_log[3], "disk tier") && strstr(drain_log[3], "7168 bytes"));
	/* Retired: the bindings are gone, and nothing new is taken. */
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, d, 0));
	EXPECT_EQ(-EINVAL, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, KIB, 0, &h));
	EXPECT_TRUE(last_says("retired"));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE, KIB, &h));
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_mechanisms(self->gov, m, ORTMEM_TIER_COUNT));
	EXPECT_EQ(0, m[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(ORTMEM_MECH_RETIRED, m[ORTMEM_TIER_HOST].lifecycle);
	/* A second drain finds them retired; close after it is clean. */
	EXPECT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_drain(self->gov, NULL, 0));
}

TEST_HARNESS_MAIN
