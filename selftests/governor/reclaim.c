// SPDX-License-Identifier: MIT
/*
 * Reclaim callbacks (order, enough, not enough, their own refusal as the
 * cause), and demotion/promotion through the backends keeping data
 * bit-exact: device(heap) -> host(heap) -> disk(test store/read backend).
 */
#include "../harness.h"
#include "testbackend.h"

#define KIB 1024ull

FIXTURE(rc) {
	struct ortmem_gov *gov;
	struct tb disk;
};

FIXTURE_SETUP(rc)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_DEVICE] = 64 * KIB, [ORTMEM_TIER_HOST] = 64 * KIB, [ORTMEM_TIER_DISK] = 1024 * KIB });
	struct ortmem_backend_ops ops;

	tb_init(&self->disk);
	self->disk.with_store = 1;	/* a spill engine: store + read */
	ops = tb_ops(&self->disk);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DEVICE, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DISK, &ops, &self->disk));
}

FIXTURE_TEARDOWN(rc)
{
	ortmem_gov_close(self->gov);
	tb_fini(&self->disk);
}

struct holder {
	struct ortmem_handle h[8];
	int n;
	int order[8];
	int *calls;
	int id;
	int refuse;
};

static int calls_log[16], ncalls;

static int holder_reclaim(struct ortmem_gov *gov, int tier, uint64_t want,
			  void *arg)
{
	struct holder *ho = arg;

	(void)tier;
	(void)want;
	calls_log[ncalls++] = ho->id;
	if (ho->refuse) {
		struct ortmem_handle tmp;

		/* Its own refusal: the disk tier cannot take its cache. */
		return ortmem_gov_reserve(gov, ORTMEM_TIER_DISK, ORTMEM_ROLE_KV_CACHE,
					  1ull << 40, &tmp);
	}
	while (ho->n)
		ortmem_gov_release(gov, ho->h[--ho->n], 0);
	return 0;
}

TEST_F(rc, callbacks_run_by_priority_and_stop_when_enough)
{
	struct holder a = { .id = 1 }, b = { .id = 2 }, c = { .id = 3 };
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle big;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 30 * KIB, &a.h[a.n++]));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 30 * KIB, &b.h[b.n++]));
	ASSERT_LE(0, ortmem_gov_add_reclaim(self->gov, ORTMEM_TIER_HOST, 10, "b", holder_reclaim, &b));
	ASSERT_LE(0, ortmem_gov_add_reclaim(self->gov, ORTMEM_TIER_HOST, 5, "a", holder_reclaim, &a));
	ASSERT_LE(0, ortmem_gov_add_reclaim(self->gov, ORTMEM_TIER_HOST, 10, "c", holder_reclaim, &c));
	ncalls = 0;
	/* 4 KiB free, 20 wanted: a (priority 5) frees 30 KiB; enough. */
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 20 * KIB, &big));
	ASSERT_EQ(1, ncalls);
	EXPECT_EQ(1, calls_log[0]);
	/* 14 KiB free, 40 wanted: b frees 30; enough, c not called. */
	ASSERT_EQ(0, ortmem_gov_release(self->gov, big, 0));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 30 * KIB, &a.h[a.n++]));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 40 * KIB, &big));
	ASSERT_EQ(3, ncalls);
	EXPECT_EQ(1, calls_log[1]);
	EXPECT_EQ(2, calls_log[2]);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(3, st.tier[ORTMEM_TIER_HOST].reclaim_calls);
	EXPECT_EQ(40 * KIB, st.tier[ORTMEM_TIER_HOST].used);
}

TEST_F(rc, not_enough_reclaimed_is_capacity_unavailable)
{
	struct holder a = { .id = 1 };
	struct ortmem_handle keep, big;
	const struct ortmem_error *e;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 40 * KIB, &keep));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 10 * KIB, &a.h[a.n++]));
	ASSERT_LE(0, ortmem_gov_add_reclaim(self->gov, ORTMEM_TIER_HOST, 0, "a", holder_reclaim, &a));
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE,
		  ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_ACTIVATION, 30 * KIB, &big));
	e = ortmem_last_error();
	EXPECT_EQ(ORTMEM_ERR_CAPACITY_UNAVAILABLE, e->kind);
	EXPECT_EQ(30 * KIB, e->requested);
	EXPECT_EQ(24 * KIB, e->available);
	EXPECT_EQ(ORTMEM_ROLE_ACTIVATION, e->role);
	EXPECT_NULL(e->cause);	/* decided here: the target was not reached */
	EXPECT_NONNULL(strstr(ortmem_last_error_message(),
			      "cannot make 30720 bytes of host capacity available for activation: only 24576 bytes became available; reclaim called 1 callbacks"));
}

TEST_F(rc, callback_refusal_becomes_the_cause)
{
	struct holder a = { .id = 1, .refuse = 1 };
	struct ortmem_handle keep, big;
	const struct ortmem_error *e;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 60 * KIB, &keep));
	ASSERT_LE(0, ortmem_gov_add_reclaim(self->gov, ORTMEM_TIER_HOST, 0, "kv", holder_reclaim, &a));
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE,
		  ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 8 * KIB, &big));
	e = ortmem_last_error();
	ASSERT_NONNULL(e->cause);
	EXPECT_EQ(ORTMEM_ERR_TIER_EXHAUSTED, e->cause->kind);
	EXPECT_EQ(ORTMEM_TIER_DISK, e->cause->tier);
	EXPECT_EQ(1ull << 40, e->cause->requested);
	EXPECT_EQ(ORTMEM_ROLE_KV_CACHE, e->cause->role);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(),
			      "; caused by: cannot reserve 1099511627776 bytes of disk memory for kv-cache"));
	EXPECT_EQ(0, ortmem_gov_remove_reclaim(self->gov, 1));
	EXPECT_EQ(-ENOENT, ortmem_gov_remove_reclaim(self->gov, 1));
	/* Nothing left to try: a plain tier-exhausted refusal. */
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 8 * KIB, &big));
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

TEST_F(rc, demotion_and_promotion_keep_data_bit_exact)
{
	unsigned char want[20000];
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_alloc_info info;
	struct ortmem_handle h;
	void *p;

	fill(want, sizeof(want), 7);
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WEIGHTS,
				      sizeof(want), ORTMEM_ALLOC_MOVABLE, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	ASSERT_NONNULL(p);
	memcpy(p, want, sizeof(want));
	EXPECT_EQ(-EBUSY, ortmem_gov_demote(self->gov, h));	/* pinned */
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	/* device -> host -> disk: the disk has no CPU pointer, data goes
	 * through store and read. */
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
	EXPECT_EQ(0, info.home_tier);
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	EXPECT_EQ(1, self->disk.live);
	EXPECT_EQ(0, memcmp(self->disk.buf[1], want, sizeof(want)));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_DEVICE].used);
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(sizeof(want), st.tier[ORTMEM_TIER_DISK].used);
	/* Pinned in place on disk: no CPU pointer. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, ORTMEM_PIN_NO_PROMOTE, &p));
	EXPECT_NULL(p);
	EXPECT_EQ(-EBUSY, ortmem_gov_pin(self->gov, h, 0, &p));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	/* Promotion on pin: back home, same bytes. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	ASSERT_NONNULL(p);
	EXPECT_EQ(0, memcmp(p, want, sizeof(want)));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_DEVICE, info.tier);
	EXPECT_EQ(1, info.pins);
	EXPECT_EQ(0, self->disk.live);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(sizeof(want), st.tier[ORTMEM_TIER_DEVICE].used);
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_DISK].used);
	EXPECT_EQ(sizeof(want), st.tier[ORTMEM_TIER_DEVICE].demoted_bytes);
	EXPECT_EQ(sizeof(want), st.tier[ORTMEM_TIER_HOST].demoted_bytes);
	EXPECT_EQ(sizeof(want), st.tier[ORTMEM_TIER_DEVICE].promoted_bytes);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
}

TEST_F(rc, pressure_demotes_the_least_recently_used)
{
	unsigned char want[3][30 * 1024];
	struct ortmem_alloc_info info;
	struct ortmem_handle h[3], pinned;
	void *p;
	int i;

	for (i = 0; i < 2; i++) {
		fill(want[i], sizeof(want[i]), i + 1);
		ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, sizeof(want[i]),
					      ORTMEM_ALLOC_MOVABLE, &h[i]));
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, &p));
		memcpy(p, want[i], sizeof(want[i]));
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
	}
	/* Touch h[0] so h[1] is the least recently used. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], 0, NULL));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[0]));
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 30 * KIB, 0, &h[2]));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[1], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[0], &info));
	EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
	/* Pinning h[1] promotes it, which demotes h[0] in turn. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[1], 0, &p));
	EXPECT_EQ(0, memcmp(p, want[1], sizeof(want[1])));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[0], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	/* With every movable allocation pinned, nothing can make room. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], ORTMEM_PIN_NO_PROMOTE, NULL));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 30 * KIB, 0, &pinned));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[0]));
	/* h[1] is pinned and h[2] not movable: h[0] cannot come home, and
	 * the refusal says why; it stays on disk, intact. */
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_pin(self->gov, h[0], 0, &p));
	EXPECT_EQ(ORTMEM_TIER_HOST, ortmem_last_error()->tier);
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[0], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[1]));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], 0, &p));
	EXPECT_EQ(0, memcmp(p, want[0], sizeof(want[0])));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[1], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
}

TEST_F(rc, demotion_with_no_room_below_keeps_the_data)
{
	unsigned char want[4096];
	struct ortmem_alloc_info info;
	struct ortmem_handle h;
	void *p;

	ASSERT_EQ(0, ortmem_gov_set_limit(self->gov, ORTMEM_TIER_HOST, 0));
	ASSERT_EQ(0, ortmem_gov_set_limit(self->gov, ORTMEM_TIER_DISK, 1024));
	fill(want, sizeof(want), 3);
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE, sizeof(want), 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	memcpy(p, want, sizeof(want));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_demote(self->gov, h));
	EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_DEVICE, info.tier);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	EXPECT_EQ(0, memcmp(p, want, sizeof(want)));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
}

TEST(backends_are_checked_and_capabilities_discovered)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 4096, [ORTMEM_TIER_DISK] = 4096 });
	struct ortmem_backend_ops bad = { .sz = sizeof(bad), .name = "nofree" };
	struct ortmem_gov *gov;
	struct ortmem_handle h;
	struct tb tb;
	struct ortmem_backend_ops ops;

	tb_init(&tb);
	ops = tb_ops(&tb);
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &bad, NULL));
	EXPECT_EQ(-ENOENT, ortmem_gov_backend_caps(gov, ORTMEM_TIER_HOST));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, ortmem_backend_heap(), NULL));
	EXPECT_EQ(ORTMEM_BACKEND_CAP_HOST_POINTER, ortmem_gov_backend_caps(gov, ORTMEM_TIER_HOST));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DISK, &ops, &tb));
	EXPECT_EQ(0, ortmem_gov_backend_caps(gov, ORTMEM_TIER_DISK));
	tb.host_pointer = 1;	/* discovered at run time, not assumed */
	EXPECT_EQ(0, ortmem_gov_backend_caps(gov, ORTMEM_TIER_DISK));	/* no ptr hook given */
	ASSERT_EQ(0, ortmem_gov_alloc(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, 0, &h));
	EXPECT_EQ(-EBUSY, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, NULL, NULL));
	ASSERT_EQ(0, ortmem_gov_release(gov, h, 0));
	EXPECT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, NULL, NULL));
	ortmem_gov_close(gov);
	tb_fini(&tb);
}

TEST_HARNESS_MAIN
