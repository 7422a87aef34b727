// SPDX-License-Identifier: MIT
/*
 * Shared prefixes on the host tier (the built-in memfd mapping): sharers
 * see the owner's bytes through their own mappings, the bytes are charged
 * once, a sharer's write into a read-only prefix faults and a writable
 * view of it is refused, the prefix lives until its last sharer goes, and
 * the statistics show shared and private bytes apart.  Then sharers come
 * and go on several threads while the owner releases (run under TSan by
 * make check SAN=thread).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "../harness.h"

#include <ortmem/ortmem.h>

#define MIB (1024ull * 1024)

static uint64_t page;

FIXTURE(pfx) {
	struct ortmem_gov *gov;
};

FIXTURE_SETUP(pfx)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 64 * MIB, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);

	page = (uint64_t)sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
}

FIXTURE_TEARDOWN(pfx)
{
	ortmem_gov_close(self->gov);
}

static uint64_t host_used(struct ortmem_gov *gov)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };

	ortmem_gov_stats(gov, &st);
	return st.tier[ORTMEM_TIER_HOST].used;
}

static struct ortmem_mechanism host_mech(struct ortmem_gov *gov)
{
	struct ortmem_mechanism m[ORTMEM_TIER_COUNT];

	memset(m, 0, sizeof(m));
	ortmem_gov_mechanisms(gov, m, ORTMEM_TIER_COUNT);
	return m[ORTMEM_TIER_HOST];
}

/* Does a write of one byte at @p kill the writer with SIGSEGV? */
static bool write_faults(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);	/* a sanitizer's handler would exit */
		*p = 1;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

TEST_F(pfx, sequences_share_one_prefix_charged_once)
{
	uint64_t plen = 4 * page, tail = page + 100;
	struct ortmem_prefix_info info;
	struct ortmem_handle s[3];
	struct ortmem_prefix *p;
	struct ortmem_mechanism m;
	char *owner, *at[3];
	int i;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  plen, 0, NULL, NULL, &p, (void **)&owner));
	memset(owner, 0x11, plen);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_prefix_bind(p, tail, &s[i], (void **)&at[i]));
		EXPECT_NE(owner, at[i]);
		EXPECT_EQ(0x11, at[i][0]);
		EXPECT_EQ(0x11, at[i][plen - 1]);
		/* The tail is the sharer's own. */
		memset(at[i] + plen, 0x20 + i, tail);
	}
	/* One physical copy: the owner's write is seen through every mapping. */
	owner[plen / 2] = 0x77;
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0x77, at[i][plen / 2]);
		EXPECT_EQ(0x20 + i, at[i][plen + tail - 1]);
	}
	/* Charged once: the prefix, plus each tail. */
	EXPECT_EQ(plen + 3 * tail, host_used(self->gov));
	m = host_mech(self->gov);
	EXPECT_EQ(plen, m.shared_bytes);
	EXPECT_EQ(3 * tail, m.private_bytes);
	EXPECT_EQ(1, m.prefixes);
	EXPECT_EQ(3, m.sharers);
	ASSERT_EQ(0, ortmem_prefix_info(p, &info));
	EXPECT_EQ(3, info.sharers);
	EXPECT_EQ(plen, info.size);
	EXPECT_EQ((uint64_t)(uintptr_t)owner, info.owner_addr);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s[i]));
	EXPECT_EQ(plen, host_used(self->gov));
	EXPECT_EQ(0, ortmem_prefix_release(p));
	EXPECT_EQ(0, host_used(self->gov));
	EXPECT_EQ(0, host_mech(self->gov).shared_bytes);
}

TEST_F(pfx, a_sharer_cannot_write_a_read_only_prefix)
{
	struct ortmem_commit_range r[3];
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	struct ortmem_view v;
	char *owner, *at;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  page, 0, NULL, NULL, &p, (void **)&owner));
	ASSERT_EQ(0, ortmem_prefix_bind(p, page, &s, (void **)&at));
	ASSERT_EQ(2, ortmem_prefix_ranges(self->gov, s, r, 3));
	EXPECT_EQ(0, r[0].offset);
	EXPECT_EQ(page, r[0].len);
	EXPECT_EQ(1, r[0].shared);
	EXPECT_EQ(0, r[0].writable);
	EXPECT_EQ(page, r[1].offset);
	EXPECT_EQ(0, r[1].shared);
	EXPECT_EQ(1, r[1].writable);
	/* The kernel refuses the store; the library refuses the view. */
	EXPECT_TRUE(write_faults(at));
	EXPECT_FALSE(write_faults(at + page));
	EXPECT_FALSE(write_faults(owner));
	EXPECT_EQ(-EACCES, ortmem_view_make(self->gov, s, page - 8, 16, ORTMEM_VIEW_WRITE, &v));
	ASSERT_EQ(0, ortmem_view_make(self->gov, s, 0, 16, 0, &v));
	ASSERT_EQ(0, ortmem_view_make(self->gov, s, page, 16, ORTMEM_VIEW_WRITE, &v));
	EXPECT_EQ(-EINVAL, ortmem_view_make(self->gov, s, page, page + 1, 0, &v));
	/* Only the prefixes' authority releases a sharer or the owner's lease. */
	EXPECT_EQ(-EPERM, ortmem_gov_release(self->gov, s, 0));
	{
		struct ortmem_prefix_info info;

		ASSERT_EQ(0, ortmem_prefix_info(p, &info));
		EXPECT_EQ(-EPERM, ortmem_gov_release(self->gov, info.owner, 0));
		EXPECT_EQ(-EINVAL, ortmem_prefix_unbind(self->gov, info.owner));
	}
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_prefix_unbind(self->gov, s));
	EXPECT_EQ(0, ortmem_prefix_release(p));
}

TEST_F(pfx, a_writable_prefix_is_written_through_any_sharer)
{
	struct ortmem_handle a, b;
	struct ortmem_prefix *p;
	struct ortmem_view v;
	char *owner, *pa, *pb;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  2 * page, ORTMEM_PREFIX_WRITABLE, NULL, NULL, &p,
					  (void **)&owner));
	ASSERT_EQ(0, ortmem_prefix_bind(p, 1, &a, (void **)&pa));
	ASSERT_EQ(0, ortmem_prefix_bind(p, 1, &b, (void **)&pb));
	pa[page + 3] = 42;
	EXPECT_EQ(42, pb[page + 3]);
	EXPECT_EQ(42, owner[page + 3]);
	EXPECT_EQ(0, ortmem_view_make(self->gov, a, 0, 16, ORTMEM_VIEW_WRITE, &v));
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, a));
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, b));
	EXPECT_EQ(0, ortmem_prefix_release(p));
}

TEST_F(pfx, the_prefix_lives_until_the_last_sharer_goes)
{
	struct ortmem_prefix_info info;
	struct ortmem_handle s[2], late;
	struct ortmem_prefix *p;
	struct ortmem_view v;
	char *owner, *at[2], *q;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  page, 0, NULL, NULL, &p, (void **)&owner));
	memset(owner, 0x3c, page);
	ASSERT_EQ(0, ortmem_prefix_bind(p, 64, &s[0], (void **)&at[0]));
	ASSERT_EQ(0, ortmem_prefix_bind(p, 64, &s[1], (void **)&at[1]));
	/* The owner lets go; the sharers keep the bytes and the charge. */
	EXPECT_EQ(1, ortmem_prefix_release(p));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_prefix_release(p));
	ASSERT_EQ(0, ortmem_prefix_info(p, &info));
	EXPECT_EQ(1, info.owner_released);
	EXPECT_EQ(0, info.owner_addr);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_prefix_bind(p, 64, &late, NULL));
	EXPECT_EQ(page + 128, host_used(self->gov));
	EXPECT_EQ(0x3c, at[1][page - 1]);
	/* An owned view pins its sharer: it cannot be unbound under it. */
	ASSERT_EQ(0, ortmem_view_make(self->gov, s[0], 0, page, ORTMEM_VIEW_OWNED, &v));
	EXPECT_EQ(-EBUSY, ortmem_prefix_unbind(self->gov, s[0]));
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s[1]));
	EXPECT_EQ(page + 64, host_used(self->gov));
	ASSERT_EQ(0, ortmem_view_check(self->gov, &v, (void **)&q));
	EXPECT_EQ(at[0], q);
	EXPECT_EQ(0x3c, q[10]);
	EXPECT_EQ(0, ortmem_view_drop(self->gov, &v));
	/* The last sharer takes the prefix with it. */
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s[0]));
	EXPECT_EQ(0, host_used(self->gov));
	EXPECT_EQ(0, host_mech(self->gov).prefixes);
}

TEST_F(pfx, bad_input_is_refused_and_loses_nothing)
{
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	char *owner;

	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, page + 1, 0,
						NULL, NULL, &p, NULL));
	EXPECT_TRUE(strstr(ortmem_last_error_message(), "page size") != NULL);
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_DISK, 0, page, 0,
						NULL, NULL, &p, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, 0, page, 0,
						NULL, NULL, &p, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, page, 0x10,
						NULL, NULL, &p, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, page, 0,
						NULL, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, 0, 0,
						NULL, NULL, &p, NULL));
	{
		struct ortmem_share_ops half = { .sz = sizeof(half), .name = "half" };

		EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, page, 0,
							&half, NULL, &p, NULL));
	}
	/* Over budget: refused with the figures, nothing charged. */
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, 128 * MIB, 0,
				       NULL, NULL, &p, NULL));
	EXPECT_EQ(0, host_used(self->gov));
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, page, 0, NULL,
					  NULL, &p, (void **)&owner));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind(p, 0, &s, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind(p, UINT64_MAX, &s, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind(p, 8, NULL, NULL));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_prefix_bind(p, 64 * MIB, &s, NULL));
	EXPECT_EQ(page, host_used(self->gov));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind(NULL, 8, &s, NULL));
	EXPECT_EQ(-EINVAL, ortmem_prefix_release(NULL));
	EXPECT_EQ(0, ortmem_prefix_release(p));
}

TEST_F(pfx, drain_takes_prefixes_and_sharers)
{
	struct ortmem_mechanism m[ORTMEM_TIER_COUNT];
	struct ortmem_handle s;
	struct ortmem_prefix *p;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, 0, 2 * page, 0, NULL,
					  NULL, &p, NULL));
	ASSERT_EQ(0, ortmem_prefix_bind(p, 10, &s, NULL));
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_drain(self->gov, m, ORTMEM_TIER_COUNT));
	EXPECT_EQ(2 * page + 10, m[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(2 * page, m[ORTMEM_TIER_HOST].shared_bytes);
	EXPECT_EQ(1, m[ORTMEM_TIER_HOST].prefixes);
	EXPECT_EQ(1, m[ORTMEM_TIER_HOST].sharers);
	EXPECT_EQ(0, host_used(self->gov));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_prefix_unbind(self->gov, s));
}

/* ---- sharers coming and going while the owner releases ---- */

#define STRESS_THREADS 4

/*
 * A bound sharer keeps the prefix (and so the pointer) alive: each thread
 * binds its next sharer while it holds one, as a sequence forks from one
 * that shares the prompt, and stops when the owner's release refuses new
 * ones.  The owner releases only after every thread holds a sharer.
 */
struct stress {
	struct ortmem_gov *gov;
	struct ortmem_prefix *p;
	uint64_t plen;
	_Atomic int binds, views, started;
};

static const char *stress_use(struct stress *st, struct ortmem_handle h,
			      unsigned char *at, int i)
{
	struct ortmem_view v;
	unsigned char *q;

	if (at[0] != 0xab || at[st->plen - 1] != 0xab)
		return "a sharer saw other bytes";
	at[st->plen] = (unsigned char)i;
	if (ortmem_view_make(st->gov, h, 0, st->plen, ORTMEM_VIEW_OWNED, &v))
		return "an owned view of a bound sharer was refused";
	atomic_fetch_add(&st->views, 1);
	if (ortmem_view_check(st->gov, &v, (void **)&q) || q[1] != 0xab)
		return "an owned view failed its check";
	if (ortmem_prefix_unbind(st->gov, h) != -EBUSY)
		return "a sharer was unbound under an owned view";
	return ortmem_view_drop(st->gov, &v) ? "dropping the view failed" : NULL;
}

static void *stress_sharer(void *arg)
{
	struct stress *st = arg;
	struct ortmem_handle h, next;
	unsigned char *at, *nat;
	const char *why;
	int i, ret;

	if (ortmem_prefix_bind(st->p, 128, &h, (void **)&at))
		return (void *)"the first bind failed";
	atomic_fetch_add(&st->started, 1);
	for (i = 0; i < 100000; i++) {
		why = stress_use(st, h, at, i);
		if (why)
			return (void *)why;
		ret = ortmem_prefix_bind(st->p, 128, &next, (void **)&nat);
		if (ret == -ORTMEM_E_STALE_HANDLE)
			break;	/* the owner let go: no new sharer */
		if (ret)
			return (void *)"bind failed";
		atomic_fetch_add(&st->binds, 1);
		if (ortmem_prefix_unbind(st->gov, h))
			return (void *)"unbind failed";
		h = next;
		at = nat;
	}
	return ortmem_prefix_unbind(st->gov, h) ? (void *)"the last unbind failed" : NULL;
}

TEST_F_TIMEOUT(pfx, sharers_come_and_go_while_the_owner_releases, 120)
{
	pthread_t t[STRESS_THREADS];
	struct stress st = { .gov = self->gov, .plen = 2 * page };
	int want;
	struct ortmem_mechanism m;
	unsigned char *owner;
	void *why;
	int i, round;

	for (round = 0; round < 5; round++) {
		ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST,
						  ORTMEM_ROLE_KV_CACHE, st.plen, 0, NULL,
						  NULL, &st.p, (void **)&owner));
		memset(owner, 0xab, st.plen);
		atomic_store(&st.started, 0);
		want = atomic_load(&st.binds) + 50 * (round + 1);
		for (i = 0; i < STRESS_THREADS; i++)
			ASSERT_EQ(0, pthread_create(&t[i], NULL, stress_sharer, &st));
		/* Let sharers in, then let go while they come and go. */
		while (atomic_load(&st.started) < STRESS_THREADS ||
		       atomic_load(&st.binds) < want)
			sched_yield();
		ASSERT_LE(0, ortmem_prefix_release(st.p));
		for (i = 0; i < STRESS_THREADS; i++) {
			ASSERT_EQ(0, pthread_join(t[i], &why));
			if (why)
				TH_LOG("%s", (char *)why);
			EXPECT_NULL(why);
		}
		/* The last sharer freed it, and every charge came back. */
		EXPECT_EQ(0, host_used(self->gov));
		m = host_mech(self->gov);
		EXPECT_EQ(0, m.prefixes);
		EXPECT_EQ(0, m.sharers);
		EXPECT_EQ(0, m.shared_bytes);
	}
	TH_LOG("%d binds, %d owned views", atomic_load(&st.binds), atomic_load(&st.views));
}

TEST_HARNESS_MAIN
