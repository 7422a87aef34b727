// SPDX-License-Identifier: MIT
/*
 * Demotion of host buffers to disk, keeping their address
 * (ortmem_host_demote/promote and the governor's host backend).  Runs on
 * both modes: on the build machine without the module (the mlock fallback:
 * written out and released, unusable until promoted) and in the VM with it
 * (the module's spill mapping: RAM given back, a touch faults back).  The
 * spill file goes to $ORTMEM_VM_SPILL_DIR (the VM's ext4 disk), else
 * $ORTMEM_SPILL_DIR, /var/tmp or /tmp.
 */
#include "demote_util.h"

#define BIG (256 * MIB)

static uint64_t live_extents(struct ortmem_spill *spill)
{
	ORTMEM_OPTS(ortmem_spill_stats, st);

	if (ortmem_spill_get_stats(spill, &st))
		return UINT64_MAX;
	return st.extents;
}

/*
 * The test: a 256 MiB host buffer through the governor, demoted
 * and promoted; the module's pinned bytes show the RAM given back, and the
 * pointer stays the same.
 */
TEST_F_TIMEOUT(dm, governor_demotes_256_mib_in_place, 300)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 512 * MIB, 0 });
	ORTMEM_OPTS(ortmem_host_stats, before);
	ORTMEM_OPTS(ortmem_host_stats, st);
	struct ortmem_gov_stats gs = { .sz = sizeof(gs) };
	struct ortmem_alloc_info info;
	struct ortmem_gov *gov;
	struct ortmem_handle h;
	void *p, *q;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST,
					    ortmem_backend_host(), self->host));
	EXPECT_EQ(self->mode == ORTMEM_HOST_SPILL_MAP,
		  !!(ortmem_gov_backend_caps(gov, ORTMEM_TIER_HOST) &
		     ORTMEM_BACKEND_CAP_FAULT_BACK));
	if (ortmem_gov_alloc(gov, ORTMEM_TIER_HOST, 0, BIG, ORTMEM_ALLOC_MOVABLE, &h)) {
		ortmem_gov_close(gov);
		SKIP("cannot pin 256 MiB: %s", ortmem_last_error_message());
	}
	ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &p));
	fill(p, BIG, self->page, 3);
	ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
	ASSERT_EQ(0, ortmem_host_stats(self->host, &before));

	OK(ortmem_gov_demote(gov, h));
	ASSERT_EQ(0, ortmem_gov_query(gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
	EXPECT_EQ(self->mode == ORTMEM_HOST_SPILL_MAP ?
		  ORTMEM_DEMOTE_IN_PLACE_MAPPED : ORTMEM_DEMOTE_IN_PLACE_RELEASED,
		  info.demote_mode);
	ASSERT_EQ(0, ortmem_host_stats(self->host, &st));
	EXPECT_EQ(BIG, st.demoted_bytes);
	EXPECT_EQ(1, live_extents(self->spill));
	ASSERT_EQ(0, ortmem_gov_stats(gov, &gs));
	EXPECT_EQ(0, gs.tier[ORTMEM_TIER_HOST].used);	/* budget given back */
	EXPECT_EQ(BIG, gs.tier[ORTMEM_TIER_HOST].demoted_bytes);
	if (self->mode == ORTMEM_HOST_SPILL_MAP) {
		/* The RAM went back to the kernel. */
		EXPECT_EQ(before.module_pinned_bytes - BIG, st.module_pinned_bytes);
		EXPECT_EQ(before.module_evicted_bytes + BIG, st.module_evicted_bytes);
		/* A touch without promotion gets the right bytes. */
		EXPECT_EQ(word(4097, 5, 3), ((volatile uint64_t *)p)[4097 * self->page / 8 + 5]);
		ASSERT_EQ(0, ortmem_host_stats(self->host, &st));
		EXPECT_EQ(before.module_fault_backs + 1, st.module_fault_backs);
		/* Pinning without promotion is allowed: the address works. */
		ASSERT_EQ(0, ortmem_gov_pin(gov, h, ORTMEM_PIN_NO_PROMOTE, &q));
		EXPECT_EQ((uintptr_t)p, (uintptr_t)q);
		ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
	} else {
		EXPECT_EQ(-EBUSY, ortmem_gov_pin(gov, h, ORTMEM_PIN_NO_PROMOTE, &q));
	}

	ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &q));	/* promotes */
	EXPECT_EQ((uintptr_t)p, (uintptr_t)q);
	EXPECT_EQ(-1, check(q, BIG, self->page, 3));
	ASSERT_EQ(0, ortmem_gov_query(gov, h, &info));
	EXPECT_EQ(0, info.demote_mode);
	ASSERT_EQ(0, ortmem_host_stats(self->host, &st));
	EXPECT_EQ(0, st.demoted_bytes);
	EXPECT_EQ(0, live_extents(self->spill));
	if (self->mode == ORTMEM_HOST_SPILL_MAP)
		EXPECT_EQ(before.module_pinned_bytes, st.module_pinned_bytes);
	ASSERT_EQ(0, ortmem_gov_stats(gov, &gs));
	EXPECT_EQ(BIG, gs.tier[ORTMEM_TIER_HOST].used);
	ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
	EXPECT_EQ(0, ortmem_gov_release(gov, h, 0));
	ortmem_gov_close(gov);
}

TEST_F(dm, demote_promote_free_and_refusals)
{
	uint64_t len = 3 * self->page;
	void *p, *r;

	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, self->page, 9);
	OK(ortmem_host_demote(self->host, p));
	EXPECT_EQ(-EALREADY, ortmem_host_demote(self->host, p));
	EXPECT_EQ(-EBUSY, ortmem_host_set_spill(self->host, NULL));
	EXPECT_EQ(-EINVAL, ortmem_host_demote(self->host, (char *)p + 1));
	EXPECT_EQ(-EINVAL, ortmem_host_promote(self->host, (char *)p + 1));
	EXPECT_EQ(-EINVAL, ortmem_host_demote(NULL, p));
	OK(ortmem_host_promote(self->host, p));
	EXPECT_EQ(-1, check(p, len, self->page, 9));
	EXPECT_EQ(0, ortmem_host_promote(self->host, p));	/* not demoted: no-op */
	EXPECT_EQ(0, live_extents(self->spill));
	/* Freed while demoted: the extent goes too. */
	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &r));
	OK(ortmem_host_demote(self->host, r));
	EXPECT_EQ(1, live_extents(self->spill));
	EXPECT_EQ(0, ortmem_host_free(self->host, r));
	EXPECT_EQ(0, live_extents(self->spill));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	/* Without a spill handle there is nothing to demote to. */
	ASSERT_EQ(0, ortmem_host_set_spill(self->host, NULL));
	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &p));
	EXPECT_EQ(-EOPNOTSUPP, ortmem_host_demote(self->host, p));
}

TEST_F(dm, a_demoted_buffer_in_each_mode)
{
	uint64_t len = 4 * self->page;
	struct sigaction sa = { .sa_handler = on_segv };
	volatile uint64_t *v;
	volatile int faulted = 0;
	void *p;

	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, self->page, 5);
	OK(ortmem_host_demote(self->host, p));
	v = p;
	if (self->mode == ORTMEM_HOST_SPILL_RELEASE) {
		/* Released: unusable until promoted, never silently zero. */
		sigaction(SIGSEGV, &sa, NULL);
		if (!sigsetjmp(segv_jmp, 1))
			(void)v[0];
		else
			faulted = 1;
		signal(SIGSEGV, SIG_DFL);
		EXPECT_TRUE(faulted);
	} else {
		/* Mapped: page 1 faults back and is written; promotion keeps
		 * that write and brings the rest back. */
		EXPECT_EQ(word(1, 0, 5), v[self->page / 8]);
		v[self->page / 8] = 42;
	}
	OK(ortmem_host_promote(self->host, p));
	if (self->mode == ORTMEM_HOST_SPILL_MAP) {
		EXPECT_EQ(42, v[self->page / 8]);
		v[self->page / 8] = word(1, 0, 5);
	}
	EXPECT_EQ(-1, check(p, len, self->page, 5));
}

/*
 * With the module, a promotion of more than one 4 MiB step that fails half
 * way (the module's cap, through the debug build's fault injection: its
 * 6th charge is in the second step, after one 1 MiB run of that step came
 * back without its bytes) leaves the buffer demoted and never zero: what
 * came back is dropped again keeping the demotion's CRCs (EVICT_DISCARD),
 * so a touch anywhere faults the right bytes back from disk; and the next
 * promotion, with part of the buffer faulted back, brings every byte back.
 */
TEST_F(dm, a_promotion_failing_half_way_leaves_no_zeroes)
{
	uint64_t len = 12 * MIB + 3 * self->page;
	void *p;

	if (self->mode != ORTMEM_HOST_SPILL_MAP)
		SKIP("needs the module's spill mapping");
	if (fail_knob("off"))
		SKIP("no /sys/kernel/debug/ortmem/fail (a production build of the module, or not root)");
	ASSERT_EQ(0, ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, self->page, 11);
	OK(ortmem_host_demote(self->host, p));
	ASSERT_EQ(0, fail_knob("charge_cap 6"));
	EXPECT_NE(0, ortmem_host_promote(self->host, p));
	TH_LOG("failed as armed: %s", ortmem_last_error_message());
	ASSERT_EQ(0, fail_knob("off"));
	/* In the first step (read, then dropped), in the part of the second
	 * that came back unread, and past the failure (never came back). */
	EXPECT_TRUE(reads_right(_metadata, p, MIB, self->page, 11));
	EXPECT_TRUE(reads_right(_metadata, p, 3 * MIB + 8 * self->page + 40,
				self->page, 11));
	EXPECT_TRUE(reads_right(_metadata, p, 4 * MIB + MIB / 2, self->page, 11));
	EXPECT_TRUE(reads_right(_metadata, p, 10 * MIB + 16, self->page, 11));
	EXPECT_TRUE(reads_right(_metadata, p, len - 8, self->page, 11));
	/* Partly resident now: the module's verified restore brings the rest. */
	OK(ortmem_host_promote(self->host, p));
	EXPECT_EQ(-1, check(p, len, self->page, 11));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
}

TEST_HARNESS_MAIN
