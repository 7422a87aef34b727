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
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#include "spill_dir.h"

#define MIB (1024ull * 1024)

/* Assert success, saying the library's detailed error when there is none. */
#define OK(call)							\
	do {								\
		int ok_ret_ = (call);					\
		if (ok_ret_)						\
			TH_LOG("%s: %s", #call, ortmem_last_error_message()); \
		ASSERT_EQ(0, ok_ret_);					\
	} while (0)
#define BIG (256 * MIB)

FIXTURE(dm) {
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	char dir[256];
	uint64_t page;
	int mode;
};

FIXTURE_SETUP(dm)
{
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 16 * MIB);
	ORTMEM_OPTS(ortmem_host_stats, st);

	self->dir[0] = '\0';
	self->page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (ortmem_host_open(NULL, &self->host))
		SKIP("no host allocator: %s", ortmem_last_error_message());
	ASSERT_TRUE(make_spill_dir(self->dir, sizeof(self->dir), "ortmem-demote"));
	so.dir = self->dir;
	if (ortmem_spill_open(&so, &self->spill))
		SKIP("spill engine unavailable in %s: %s", self->dir,
		     ortmem_last_error_message());
	ASSERT_EQ(0, ortmem_host_stats(self->host, &st));
	EXPECT_EQ(ORTMEM_HOST_SPILL_NONE, st.spill_mode);
	ASSERT_EQ(0, ortmem_host_set_spill(self->host, self->spill));
	ASSERT_EQ(0, ortmem_host_stats(self->host, &st));
	self->mode = st.spill_mode;
	EXPECT_EQ(ortmem_host_backend(self->host) == ORTMEM_HOST_BACKEND_MODULE ?
		  ORTMEM_HOST_SPILL_MAP : ORTMEM_HOST_SPILL_RELEASE, self->mode);
}

FIXTURE_TEARDOWN(dm)
{
	ortmem_host_close(self->host);
	ortmem_spill_close(self->spill);
	if (self->dir[0])
		rmdir(self->dir);
}

static uint64_t word(uint64_t page, uint64_t w, unsigned int seed)
{
	return (page * 0x9E3779B97F4A7C15ull) ^ (w + seed * 0x100000001b3ull);
}

static void fill(void *p, uint64_t len, uint64_t page, unsigned int seed)
{
	uint64_t *q = p, n = len / 8, i, per = page / 8;

	for (i = 0; i < n; i++)
		q[i] = word(i / per, i % per, seed);
}

/* Index of the first wrong word, or -1. */
static int64_t check(const void *p, uint64_t len, uint64_t page, unsigned int seed)
{
	const uint64_t *q = p;
	uint64_t n = len / 8, i, per = page / 8;

	for (i = 0; i < n; i++)
		if (q[i] != word(i / per, i % per, seed))
			return (int64_t)i;
	return -1;
}

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

static sigjmp_buf segv_jmp;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jmp, 1);
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

/* Whether reading *@v raises SIGBUS (the value read otherwise in *@got). */
static bool read_gets_sigbus(volatile uint64_t *v, uint64_t *got)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	volatile bool bus = false;

	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(segv_jmp, 1))
		*got = *v;
	else
		bus = true;
	sigaction(SIGBUS, &old, NULL);
	return bus;
}

static int fail_knob(const char *what)
{
	int fd = open("/sys/kernel/debug/ortmem/fail", O_WRONLY | O_CLOEXEC);
	ssize_t n = -1;

	if (fd >= 0) {
		n = write(fd, what, strlen(what));
		close(fd);
	}
	return n == (ssize_t)strlen(what) ? 0 : -1;
}

/* The word at byte @off of a buffer filled by fill(@seed). */
static uint64_t word_at(uint64_t off, uint64_t page, unsigned int seed)
{
	uint64_t i = off / 8, per = page / 8;

	return word(i / per, i % per, seed);
}

/*
 * Whether reading the word at byte @off of @p gets its right value (not
 * SIGBUS, not zero), saying what it got otherwise.
 */
static bool reads_right(struct __test_metadata *_metadata, void *p,
			uint64_t off, uint64_t page, unsigned int seed)
{
	uint64_t got = 0;

	if (read_gets_sigbus((volatile uint64_t *)p + off / 8, &got)) {
		TH_LOG("byte %" PRIu64 ": SIGBUS", off);
		return false;
	}
	if (got != word_at(off, page, seed)) {
		TH_LOG("byte %" PRIu64 ": 0x%" PRIx64 ", not 0x%" PRIx64, off,
		       got, word_at(off, page, seed));
		return false;
	}
	return true;
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
