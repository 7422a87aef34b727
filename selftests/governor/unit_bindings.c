// SPDX-License-Identifier: MIT
/*
 * Refusals with their figures and messages, bindings (stale, forged,
 * foreign and wrapped handles), pins against release, budgets changed at
 * run time and the driver reserve.
 */
#include <stdio.h>
#include <string.h>

#include "gov/gov_internal.h"
#include "../harness.h"
#include "testbackend.h"

#define MIB (1024ull * 1024)

FIXTURE(gov) {
	struct ortmem_gov *gov;
};

FIXTURE_SETUP(gov)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_DEVICE] = 8 * MIB, [ORTMEM_TIER_HOST] = 16 * MIB, [ORTMEM_TIER_DISK] = 64 * MIB },
		    .driver_reserve = 1 * MIB, .max_handles = 64);

	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
}

FIXTURE_TEARDOWN(gov)
{
	ortmem_gov_close(self->gov);
}

TEST_F(gov, tier_exhausted_carries_every_figure)
{
	struct ortmem_handle a, b;
	const struct ortmem_error *e;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE,
					ORTMEM_ROLE_WEIGHTS, 5 * MIB, &a));
	ASSERT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE,
				     ORTMEM_ROLE_KV_CACHE, 3 * MIB, &b));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_EQ(ORTMEM_ERR_TIER_EXHAUSTED, e->kind);
	EXPECT_EQ(ORTMEM_TIER_DEVICE, e->tier);
	EXPECT_EQ(ORTMEM_ROLE_KV_CACHE, e->role);
	EXPECT_EQ(3 * MIB, e->requested);
	EXPECT_EQ(5 * MIB, e->used);
	EXPECT_EQ(7 * MIB, e->limit);	/* 8 MiB less the driver's 1 MiB */
	EXPECT_EQ(2 * MIB, e->available);
	EXPECT_NULL(e->cause);
	EXPECT_STREQ("cannot reserve 3145728 bytes of device memory for kv-cache: "
		     "5242880 of 7340032 bytes are already leased, leaving 2097152; "
		     "free memory by closing sessions, lower the demand, or raise the device limit",
		     ortmem_last_error_message());
	/* Exactly what is left still fits. */
	EXPECT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE,
					ORTMEM_ROLE_KV_CACHE, 2 * MIB, &b));
}

TEST_F(gov, invalid_requests_say_what_is_wrong)
{
	struct ortmem_handle h;
	const struct ortmem_error *e;

	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_COUNT, ORTMEM_ROLE_KV_CACHE, 1, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, -1, ORTMEM_ROLE_KV_CACHE, 1, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 0, &h));
	e = ortmem_last_error();
	EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, e->kind);
	EXPECT_STREQ("invalid request for 0 bytes of host memory: a reservation of 0 bytes is not allowed; "
		     "correct the request (retrying it unchanged will fail again)",
		     ortmem_last_error_message());
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, UINT64_MAX, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, 0x1ff, 1, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST,
					      ORTMEM_ROLE_WEIGHTS | ORTMEM_ROLE_STEP_SCOPED,
					      1, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(NULL, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, NULL));
	/* No backend on the tier: an allocation is refused, a lease is not. */
	EXPECT_EQ(-EINVAL, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, 0, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_release(self->gov, h, 0x10));
	EXPECT_EQ(-EINVAL, ortmem_gov_stats(self->gov, NULL));
}

TEST(open_refuses_bad_options)
{
	struct ortmem_gov *gov = NULL;
	struct {
		struct ortmem_gov_opts o;
		uint64_t future;
	} big = { .o = { .sz = sizeof(big) }, .future = 1 };
	ORTMEM_OPTS(ortmem_gov_opts, flags, .flags = 1u << 1);	/* bit 0: NO_PUBLISH */
	ORTMEM_OPTS(ortmem_gov_opts, rsv, .limit = { [ORTMEM_TIER_DEVICE] = 1 }, .driver_reserve = 2);
	ORTMEM_OPTS(ortmem_gov_opts, many, .max_handles = (1u << 24) + 1);

	EXPECT_EQ(-EINVAL, ortmem_gov_open(&big.o, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_open(&flags, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_open(&rsv, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_open(&many, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_open(NULL, NULL));
	EXPECT_NULL(gov);
	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));	/* all defaults */
	ortmem_gov_close(gov);
	ortmem_gov_close(NULL);
}

TEST_F(gov, allocation_failed_keeps_the_backend_reason)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_backend_ops ops;
	struct ortmem_handle h;
	struct tb tb;

	tb_init(&tb);
	tb.fail_alloc_at = 1;
	ops = tb_ops(&tb);
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &tb));
	ASSERT_EQ(-ENOMEM, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, MIB, 0, &h));
	EXPECT_EQ(ORTMEM_ERR_ALLOCATION_FAILED, ortmem_last_error()->kind);
	EXPECT_EQ(MIB, ortmem_last_error()->requested);
	EXPECT_STREQ("backend 'testmem' alloc returned -12",
		     ortmem_last_error()->reason);
	/* The charge was rolled back. */
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	ortmem_gov_close(self->gov);
	self->gov = NULL;
	tb_fini(&tb);
}

/* A failed copy is an I/O error, not an allocation failure: no advice to
 * free memory, and the bytes stay where they were. */
TEST_F(gov, failed_copy_is_not_an_allocation_failure)
{
	struct ortmem_backend_ops ops;
	struct ortmem_alloc_info info;
	struct ortmem_handle h;
	struct tb tb;
	void *p;

	tb_init(&tb);
	tb.fail_write_at = 1;
	ops = tb_ops(&tb);
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DISK, &ops, &tb));
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 4096, ORTMEM_ALLOC_MOVABLE, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	memset(p, 0x5a, 4096);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(-EIO, ortmem_gov_demote(self->gov, h));
	ASSERT_NONNULL(ortmem_last_error());
	EXPECT_NE(ORTMEM_ERR_ALLOCATION_FAILED, ortmem_last_error()->kind);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "backend 'testmem' write returned -5"));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "nothing was moved"));
	EXPECT_NULL(strstr(ortmem_last_error_message(), "held outside ortmem"));
	/* Still on the host, bytes intact, nothing left on the disk. */
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	EXPECT_EQ(0x5a, ((unsigned char *)p)[4095]);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(0, tb.live);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	ortmem_gov_close(self->gov);
	self->gov = NULL;
	tb_fini(&tb);
}

TEST_F(gov, stale_handle_after_release_is_refused)
{
	struct ortmem_handle h, h2;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &h));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "generation"));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, NULL));
	/* The slot is reused with a new generation; the old handle stays dead. */
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 200, &h2));
	EXPECT_EQ(handle_idx(h.id), handle_idx(h2.id));
	EXPECT_EQ(handle_tag(h.id), handle_tag(h2.id));
	EXPECT_NE(h.id, h2.id);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h2, 0));
}

TEST_F(gov, forged_and_foreign_handles_are_refused)
{
	struct ortmem_gov *other;
	struct ortmem_handle h, zero = { 0 }, forged;
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = MIB });

	ASSERT_EQ(0, ortmem_gov_open(&o, &other));
	ASSERT_EQ(0, ortmem_gov_reserve(other, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &h));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "not issued by this governor"));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, zero, 0));
	/* slot far beyond the table */
	forged.id = handle_make(handle_gen(h.id), handle_tag(h.id), HANDLE_IDX_MASK);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(other, forged, 0));
	/* a generation never issued */
	forged.id = handle_make(handle_gen(h.id) + 5, handle_tag(h.id), handle_idx(h.id));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(other, forged, 0));
	EXPECT_EQ(0, ortmem_gov_release(other, h, 0));
	ortmem_gov_close(other);
}

TEST_F(gov, generation_wrap_retires_the_slot)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h, h2;
	uint32_t idx;
	int i;

	/* Every free slot is one release away from running out. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, ortmem__binding_set_gen(self->gov, i, SLOT_GEN_MAX));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &h));
	EXPECT_EQ(SLOT_GEN_MAX, handle_gen(h.id));
	idx = handle_idx(h.id);
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "retired"));
	/* The handle with the wrapped generation (0 and 1) never resolves. */
	h2.id = handle_make(0, handle_tag(h.id), handle_idx(h.id));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h2, 0));
	h2.id = handle_make(1, handle_tag(h.id), handle_idx(h.id));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h2, 0));
	for (i = 0; i < 63; i++) {
		ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, &h2));
		EXPECT_NE(idx, handle_idx(h2.id));
	}
	/* Only the 63 slots left: one more has no slot at all. */
	EXPECT_EQ(-ENOSPC, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, &h2));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(1, st.handles_retired);
	EXPECT_EQ(63, st.handles_live);
}

TEST_F(gov, pins_block_release)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h;
	void *p = (void *)1;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, MIB, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	EXPECT_NULL(p);		/* a bare lease has no bytes */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(-EBUSY, ortmem_gov_release(self->gov, h, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "it holds 2 pins"));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(-EBUSY, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(-EINVAL, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
}

TEST_F(gov, deferred_release_happens_at_last_unpin)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, MIB, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, NULL));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(1, ortmem_gov_release(self->gov, h, ORTMEM_RELEASE_DEFER));
	/* Released as far as new users go, still charged. */
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, NULL));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(MIB, st.tier[ORTMEM_TIER_HOST].used);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(MIB, st.tier[ORTMEM_TIER_HOST].used);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_unpin(self->gov, h));
}

/*
 * The lost race of a thread that looked up @old (seeing @w) just before
 * another thread released it and a reserve reused its slot as @cur: its
 * compare-and-swap fails, it re-reads the word, and must then refuse
 * instead of acting on @cur, the slot's new binding.
 */
static void reuse_slot(struct ortmem_gov *gov, struct ortmem_handle *old,
		       uint64_t *wp, struct ortmem_handle *cur,
		       struct __test_metadata *_metadata)
{
	uint32_t idx = handle_idx(old->id);

	*wp = atomic_load(&gov->slots[idx].word);
	ASSERT_EQ(0, ortmem_gov_release(gov, *old, 0));
	ASSERT_EQ(0, ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 300, cur));
	ASSERT_EQ(idx, handle_idx(cur->id));	/* the per-thread cache is LIFO */
	ASSERT_NE(old->id, cur->id);
}

static uint32_t pins_of(struct ortmem_gov *gov, struct ortmem_handle h)
{
	struct ortmem_alloc_info info;

	if (ortmem_gov_query(gov, h, &info))
		return UINT32_MAX;
	return info.pins;
}

TEST_F(gov, stale_pin_never_pins_the_reused_slot)
{
	struct ortmem_handle old, cur;
	uint64_t w;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &old));
	reuse_slot(self->gov, &old, &w, &cur, _metadata);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE,
		  ortmem__pin_at(self->gov, old, handle_idx(old.id), w, 0, NULL));
	EXPECT_EQ(0, pins_of(self->gov, cur));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, cur, 0));
}

TEST_F(gov, stale_unpin_never_unpins_the_reused_slot)
{
	struct ortmem_handle old, cur;
	uint64_t w;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &old));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, old, 0, NULL));
	/* Seen pinned; the pin is dropped and the binding released. */
	w = atomic_load(&self->gov->slots[handle_idx(old.id)].word);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, old));
	reuse_slot(self->gov, &old, &(uint64_t){ 0 }, &cur, _metadata);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, cur, 0, NULL));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE,
		  ortmem__unpin_at(self->gov, old, handle_idx(old.id), w));
	EXPECT_EQ(1, pins_of(self->gov, cur));
	EXPECT_EQ(0, ortmem_gov_unpin(self->gov, cur));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, cur, 0));
}

TEST_F(gov, stale_deferred_release_never_releases_the_reused_slot)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle old, cur;
	uint64_t w;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &old));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, old, 0, NULL));
	w = atomic_load(&self->gov->slots[handle_idx(old.id)].word);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, old));
	reuse_slot(self->gov, &old, &(uint64_t){ 0 }, &cur, _metadata);
	/* Seen pinned: a deferred release would mark it pending... */
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE,
		  ortmem__release_at(self->gov, old, handle_idx(old.id), w,
				     ORTMEM_RELEASE_DEFER));
	/* ...of the new binding, or release it outright, unpinned. */
	EXPECT_EQ(0, pins_of(self->gov, cur));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, cur, 0, NULL));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE,
		  ortmem__release_at(self->gov, old, handle_idx(old.id), w,
				     ORTMEM_RELEASE_DEFER));
	EXPECT_EQ(1, pins_of(self->gov, cur));
	EXPECT_EQ(0, ortmem_gov_unpin(self->gov, cur));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(1, st.handles_live);
	EXPECT_EQ(300, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, cur, 0));
}

TEST_F(gov, stale_query_and_demote_are_refused)
{
	struct ortmem_handle old, cur;
	struct ortmem_alloc_info info;
	uint64_t w;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100, &old));
	reuse_slot(self->gov, &old, &w, &cur, _metadata);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_query(self->gov, old, &info));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_demote(self->gov, old));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE,
		  ortmem__demote(self->gov, handle_idx(old.id),
				 handle_gen(old.id)));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, cur, 0));
}

struct holder {
	struct ortmem_gov *gov;
	pthread_barrier_t ready, done;
	struct ortmem_handle h;
	int ret;
};

/* Reserve 1 MiB (taking a batch of credit with it), then wait, alive. */
static void *holder_main(void *arg)
{
	struct holder *hd = arg;

	hd->ret = ortmem_gov_reserve(hd->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, MIB, &hd->h);
	pthread_barrier_wait(&hd->ready);
	pthread_barrier_wait(&hd->done);
	return NULL;
}

TEST_F(gov, another_threads_credit_never_causes_a_refusal)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct holder hd = { .gov = self->gov };
	struct ortmem_handle a, b;
	pthread_t th;

	ASSERT_EQ(0, pthread_barrier_init(&hd.ready, NULL, 2));
	ASSERT_EQ(0, pthread_barrier_init(&hd.done, NULL, 2));
	ASSERT_EQ(0, pthread_create(&th, NULL, holder_main, &hd));
	pthread_barrier_wait(&hd.ready);
	ASSERT_EQ(0, hd.ret);
	/* The holder's thread took more than its 1 MiB from the tier... */
	EXPECT_LT(MIB, atomic_load(&self->gov->tiers[1].used));
	/* ...but every byte it does not lease is ours: exactly 15 MiB fit. */
	EXPECT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 15 * MIB, &a));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, &b));
	EXPECT_EQ(16 * MIB, ortmem_last_error()->used);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(16 * MIB, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, a, 0));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, hd.h, 0));
	pthread_barrier_wait(&hd.done);
	pthread_join(th, NULL);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	pthread_barrier_destroy(&hd.ready);
	pthread_barrier_destroy(&hd.done);
}

TEST_F(gov, peak_counts_leases_not_credit)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle a, b, c;

	/* Host: 16 MiB usable, so credit comes in batches of 256 KiB. */
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100 * 1024, &a));
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 100 * 1024, &b));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, a, 0));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, b, 0));
	/* Taken from the batch and the bytes just released. */
	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 300 * 1024, &c));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(300 * 1024, st.tier[ORTMEM_TIER_HOST].peak);
	EXPECT_EQ(300 * 1024, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, c, 0));
}

TEST_F(gov, limits_change_at_run_time)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle a, b;

	ASSERT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 10 * MIB, &a));
	ASSERT_EQ(0, ortmem_gov_set_limit(self->gov, ORTMEM_TIER_HOST, 4 * MIB));
	/* Live leases stay; new ones are refused until used falls. */
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 1, &b));
	EXPECT_EQ(10 * MIB, ortmem_last_error()->used);
	EXPECT_EQ(4 * MIB, ortmem_last_error()->limit);
	EXPECT_EQ(0, ortmem_last_error()->available);
	ASSERT_EQ(0, ortmem_gov_release(self->gov, a, 0));
	EXPECT_EQ(0, ortmem_gov_reserve(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 4 * MIB, &b));
	/* Device: the driver reserve comes off the limit. */
	ASSERT_EQ(0, ortmem_gov_set_driver_reserve(self->gov, 6 * MIB));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_reserve(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE, 3 * MIB, &a));
	EXPECT_EQ(2 * MIB, ortmem_last_error()->limit);
	EXPECT_EQ(-EINVAL, ortmem_gov_set_driver_reserve(self->gov, 9 * MIB));
	EXPECT_EQ(-EINVAL, ortmem_gov_set_limit(self->gov, ORTMEM_TIER_DEVICE, 5 * MIB));
	EXPECT_EQ(-EINVAL, ortmem_gov_set_limit(self->gov, ORTMEM_TIER_COUNT, MIB));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(8 * MIB, st.tier[ORTMEM_TIER_DEVICE].limit);
	EXPECT_EQ(2 * MIB, st.tier[ORTMEM_TIER_DEVICE].usable);
	EXPECT_EQ(6 * MIB, st.tier[ORTMEM_TIER_DEVICE].driver_reserve);
	EXPECT_EQ(10 * MIB, st.tier[ORTMEM_TIER_HOST].peak);
	EXPECT_EQ(1, st.tier[ORTMEM_TIER_HOST].leases);
	EXPECT_EQ(4 * MIB, st.tier[ORTMEM_TIER_HOST].role_bytes[0]);
	EXPECT_EQ(1, st.tier[ORTMEM_TIER_HOST].refusals);
	EXPECT_EQ(1, st.tier[ORTMEM_TIER_DEVICE].refusals);
}

TEST_F(gov, older_stats_struct_gets_its_part)
{
	struct ortmem_gov_stats st;

	memset(&st, 0xaa, sizeof(st));
	st.sz = offsetof(struct ortmem_gov_stats, tier[ORTMEM_TIER_HOST]);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(8 * MIB, st.tier[ORTMEM_TIER_DEVICE].limit);
	EXPECT_EQ(0xaaaaaaaaaaaaaaaaull, st.tier[ORTMEM_TIER_HOST].limit);
	st.sz = 1;
	EXPECT_EQ(-EINVAL, ortmem_gov_stats(self->gov, &st));
}

TEST_HARNESS_MAIN
