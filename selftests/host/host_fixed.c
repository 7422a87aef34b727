// SPDX-License-Identifier: MIT
/*
 * Host buffers as io_uring fixed buffers of the spill engine, where the
 * running kernel takes them, and plain reads and writes where it does not,
 * with the same bytes either way.  On the build machine this is the mlock
 * fallback (anonymous memory: every kernel takes it); in the VM it is the
 * module's mapping, which 6.1 refuses and 6.12 accepts.  The VM passes
 * which path the kernel it boots must take in ORTMEM_VM_EXPECT_FIXED
 * ("yes" or "no", measured in Documentation/kmod/page-design.rst); each
 * test logs the path it saw.
 */
#include <inttypes.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <ortmem/ortmem.h>

#include "host/host_internal.h"	/* ORTMEM__PROMOTE_STEP */
#include "../harness.h"
#include "spill_dir.h"
#include "host_test.h"

FIXTURE(fx) {
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	char dir[256];
	uint64_t page;
};

static int open_spill(const char *dir, uint32_t flags, struct ortmem_spill **sp)
{
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 16 * MIB, .flags = flags);

	so.dir = dir;
	return ortmem_spill_open(&so, sp);
}

FIXTURE_SETUP(fx)
{
	self->dir[0] = '\0';
	self->spill = NULL;
	self->page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (ortmem_host_open(NULL, &self->host))
		SKIP("no host allocator: %s", ortmem_last_error_message());
	ASSERT_TRUE(make_spill_dir(self->dir, sizeof(self->dir), "ortmem-fixed"));
	if (open_spill(self->dir, 0, &self->spill))
		SKIP("spill engine unavailable in %s: %s", self->dir,
		     ortmem_last_error_message());
	OK(ortmem_host_set_spill(self->host, self->spill));
}

FIXTURE_TEARDOWN(fx)
{
	ortmem_host_close(self->host);
	ortmem_spill_close(self->spill);
	if (self->dir[0])
		rmdir(self->dir);
}

static uint64_t word(uint64_t i, unsigned int seed)
{
	return (i * 0x9E3779B97F4A7C15ull) ^ (seed * 0x100000001b3ull);
}

static void fill(void *p, uint64_t len, unsigned int seed)
{
	uint64_t *q = p, i;

	for (i = 0; i < len / 8; i++)
		q[i] = word(i, seed);
}

/* Index of the first wrong word, or -1. */
static int64_t check(const void *p, uint64_t len, unsigned int seed)
{
	const uint64_t *q = p;
	uint64_t i;

	for (i = 0; i < len / 8; i++)
		if (q[i] != word(i, seed))
			return (int64_t)i;
	return -1;
}

static struct ortmem_spill_stats stats_of(struct ortmem_spill *s)
{
	ORTMEM_OPTS(ortmem_spill_stats, st);

	if (ortmem_spill_stats(s, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

/*
 * What the kernel must do here: the VM says; on the build machine (the
 * fallback's anonymous memory) every kernel registers it unless the
 * library declines to double-charge RLIMIT_MEMLOCK.
 */
static int expected_path(struct ortmem_host *host)
{
	const char *want = getenv("ORTMEM_VM_EXPECT_FIXED");
	struct rlimit rl;

	if (want && !strcmp(want, "yes"))
		return ORTMEM_SPILL_FIXED_ON;
	if (want && !strcmp(want, "no"))
		return ORTMEM_SPILL_FIXED_OFF;
	if (ortmem_host_backend(host) != ORTMEM_HOST_BACKEND_MLOCK)
		return -1;	/* a module on an unlisted kernel: either */
	if (geteuid() == 0 ||
	    (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur == RLIM_INFINITY))
		return ORTMEM_SPILL_FIXED_ON;
	return ORTMEM_SPILL_FIXED_OFF;
}

static const char *path_name(uint32_t p)
{
	return p == ORTMEM_SPILL_FIXED_ON ? "fixed (READ_FIXED/WRITE_FIXED)" :
	       p == ORTMEM_SPILL_FIXED_OFF ? "plain reads and writes" : "none";
}

/*
 * The test: the probe picks the path the kernel allows, and
 * buffers of several sizes survive demotion and promotion on it, three
 * times over (the fallback releases the pages each time: a ring still
 * holding the old ones would hand back stale bytes).
 */
TEST_F_TIMEOUT(fx, path_follows_the_kernel_and_data_survives, 120)
{
	static const uint64_t sizes[] = { 1, 4096, 5000, 3 * MIB + 17, 8 * MIB };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct ortmem_spill_stats st = stats_of(self->spill), st2;
	int want = expected_path(self->host);
	bool piecewise = ortmem_host_spill_mode(self->host) == ORTMEM_HOST_SPILL_MAP;
	uint64_t moved = 0, len;
	void *p[N];
	int i, round;

	printf("# %s backend: host buffers move to disk by %s (error %d: %s)\n",
	       ortmem_host_backend_name(ortmem_host_backend(self->host)),
	       path_name(st.fixed_host), st.fixed_error,
	       st.fixed_error ? strerror(st.fixed_error) : "none");
	ASSERT_NE(ORTMEM_SPILL_FIXED_NONE, st.fixed_host);
	if (want >= 0)
		EXPECT_EQ(want, st.fixed_host);
	if (st.fixed_host == ORTMEM_SPILL_FIXED_OFF)
		EXPECT_NE(0, st.fixed_error);
	else
		EXPECT_EQ(0, st.fixed_error);
	EXPECT_EQ(0, st.fixed_buffers);	/* the probe left nothing behind */

	for (i = 0; i < N; i++) {
		OK(ortmem_host_alloc(self->host, sizes[i], -1, &p[i]));
		fill(p[i], sizes[i], (unsigned int)i + 1);
	}
	st = stats_of(self->spill);
	EXPECT_EQ(st.fixed_host == ORTMEM_SPILL_FIXED_ON ? N : 0, st.fixed_buffers);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < N; i++)
			OK(ortmem_host_demote(self->host, p[i]));
		st2 = stats_of(self->spill);
		EXPECT_EQ(0, st2.fixed_buffers);	/* all let go before eviction */
		for (i = 0; i < N; i++) {
			OK(ortmem_host_promote(self->host, p[i]));
			EXPECT_EQ(-1, check(p[i], sizes[i], (unsigned int)i + 1));
			/* The whole page-rounded buffer moves, its whole
			 * alignment units by the fixed path, both ways; but
			 * the module brings a buffer of more than one promotion
			 * step back piece by piece under its read, which then
			 * cannot be a fixed buffer (registering would pin, so
			 * fault back, every page). */
			len = (sizes[i] + self->page - 1) & ~(self->page - 1);
			moved += (piecewise && len > ORTMEM__PROMOTE_STEP ? 1 : 2) *
				 (len & ~(uint64_t)(st.align - 1));
		}
	}
	st2 = stats_of(self->spill);
	EXPECT_EQ(st.fixed_host == ORTMEM_SPILL_FIXED_ON ? N : 0, st2.fixed_buffers);
	if (st.fixed_host == ORTMEM_SPILL_FIXED_ON && st.features & ORTMEM_SPILL_HAVE_DIRECT)
		EXPECT_EQ(st.fixed_bytes + moved, st2.fixed_bytes);
	else if (st.fixed_host != ORTMEM_SPILL_FIXED_ON)
		EXPECT_EQ(0, st2.fixed_bytes);
	printf("# %" PRIu64 " bytes moved with READ_FIXED/WRITE_FIXED\n", st2.fixed_bytes);
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, ortmem_host_free(self->host, p[i]));
	EXPECT_EQ(0, stats_of(self->spill).fixed_buffers);
}

/*
 * The same bytes cross between the paths: written from a registered host
 * buffer, read into ordinary memory, and back; and a handle opened with
 * ORTMEM_SPILL_F_NO_FIXED_HOST says it uses the plain path.
 */
TEST_F(fx, both_paths_write_the_same_bytes)
{
	ORTMEM_OPTS(ortmem_spill_stats, plain);
	uint64_t len = 2 * MIB + 4096 + 100, ext;
	struct ortmem_spill *other;
	void *p;
	uint8_t *m = malloc(len);

	ASSERT_NE(NULL, m);
	OK(ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, 7);
	OK(ortmem_spill_write(self->spill, p, len, &ext));
	memset(m, 0, len);
	OK(ortmem_spill_read(self->spill, ext, m, len));
	EXPECT_EQ(0, memcmp(p, m, len));
	OK(ortmem_spill_free(self->spill, ext));
	fill(m, len, 8);
	OK(ortmem_spill_write(self->spill, m, len, &ext));
	memset(p, 0, len);
	OK(ortmem_spill_read(self->spill, ext, p, len));
	EXPECT_EQ(-1, check(p, len, 8));
	OK(ortmem_spill_free(self->spill, ext));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	free(m);

	/* Opting out is a path of its own, reported with its reason. */
	ASSERT_EQ(0, open_spill(self->dir, ORTMEM_SPILL_F_NO_FIXED_HOST, &other));
	OK(ortmem_host_set_spill(self->host, other));
	ASSERT_EQ(0, ortmem_spill_stats(other, &plain));
	EXPECT_EQ(ORTMEM_SPILL_FIXED_OFF, plain.fixed_host);
	EXPECT_EQ(ENXIO, plain.fixed_error);
	OK(ortmem_host_alloc(self->host, len, -1, &p));
	fill(p, len, 9);
	OK(ortmem_host_demote(self->host, p));
	OK(ortmem_host_promote(self->host, p));
	EXPECT_EQ(-1, check(p, len, 9));
	ASSERT_EQ(0, ortmem_spill_stats(other, &plain));
	EXPECT_EQ(0, plain.fixed_bytes);
	EXPECT_EQ(0, plain.fixed_buffers);
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	OK(ortmem_host_set_spill(self->host, NULL));
	ortmem_spill_close(other);
}

/*
 * Slots come and go with buffers: freed ones are reused, and past the
 * rings' slots a buffer simply takes the plain path with the same bytes.
 */
TEST_F_TIMEOUT(fx, slots_come_and_go, 120)
{
	enum { N = 1030 };
	struct ortmem_spill_stats st = stats_of(self->spill);
	bool on = st.fixed_host == ORTMEM_SPILL_FIXED_ON;
	void **p = calloc(N, sizeof(*p));
	uint64_t before;
	int i, n = 0, m;

	ASSERT_NE(NULL, p);
	for (i = 0; i < N; i++, n++)
		if (ortmem_host_alloc(self->host, self->page, -1, &p[i]))
			break;
	if (n < N)
		TH_LOG("only %d one-page buffers (%s); testing with those", n,
		       ortmem_last_error_message());
	ASSERT_GT(n, 16);
	m = n < 1024 ? n : 1024;	/* the first m took the slots */
	st = stats_of(self->spill);
	EXPECT_EQ(on ? m : 0, st.fixed_buffers);
	/* Free every other one; their slots take new buffers. */
	for (i = 0; i < n; i += 2)
		EXPECT_EQ(0, ortmem_host_free(self->host, p[i]));
	st = stats_of(self->spill);
	EXPECT_EQ(on ? m / 2 : 0, st.fixed_buffers);
	for (i = 0; i < n; i += 2)
		OK(ortmem_host_alloc(self->host, self->page, -1, &p[i]));
	st = stats_of(self->spill);
	EXPECT_EQ(on ? m : 0, st.fixed_buffers);
	/* The last buffers (past the slots when all 1030 came) still work. */
	before = st.fixed_bytes;
	for (i = n - 4; i < n; i++) {
		fill(p[i], self->page, (unsigned int)i);
		OK(ortmem_host_demote(self->host, p[i]));
		OK(ortmem_host_promote(self->host, p[i]));
		EXPECT_EQ(-1, check(p[i], self->page, (unsigned int)i));
	}
	st = stats_of(self->spill);
	if (!on)
		EXPECT_EQ(before, st.fixed_bytes);
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ortmem_host_free(self->host, p[i]));
	EXPECT_EQ(0, stats_of(self->spill).fixed_buffers);
	free(p);
}

/*
 * A spill handle closed before the host tier (as the governor's users
 * do): its rings let go of the buffers, and the host tier's later frees
 * and close touch no freed memory (the sanitizer builds check).
 */
TEST_F(fx, spill_closed_first)
{
	void *p, *q;

	OK(ortmem_host_alloc(self->host, 64 * 1024, -1, &p));
	OK(ortmem_host_alloc(self->host, 64 * 1024, -1, &q));
	fill(p, 64 * 1024, 3);
	ortmem_spill_close(self->spill);
	self->spill = NULL;
	EXPECT_EQ(-1, check(p, 64 * 1024, 3));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	/* q goes with the host tier's close, in the teardown. */
	(void)q;
}

/* Detaching and attaching again unregisters and registers every buffer. */
TEST_F(fx, set_spill_moves_the_registrations)
{
	bool on = stats_of(self->spill).fixed_host == ORTMEM_SPILL_FIXED_ON;
	void *p, *q;

	OK(ortmem_host_alloc(self->host, 3 * self->page, -1, &p));
	OK(ortmem_host_alloc(self->host, 5 * self->page, -1, &q));
	EXPECT_EQ(on ? 2 : 0, stats_of(self->spill).fixed_buffers);
	OK(ortmem_host_set_spill(self->host, NULL));
	EXPECT_EQ(0, stats_of(self->spill).fixed_buffers);
	OK(ortmem_host_set_spill(self->host, self->spill));
	EXPECT_EQ(on ? 2 : 0, stats_of(self->spill).fixed_buffers);
	fill(q, 5 * self->page, 4);
	OK(ortmem_host_demote(self->host, q));
	EXPECT_EQ(on ? 1 : 0, stats_of(self->spill).fixed_buffers);
	OK(ortmem_host_promote(self->host, q));
	EXPECT_EQ(on ? 2 : 0, stats_of(self->spill).fixed_buffers);
	EXPECT_EQ(-1, check(q, 5 * self->page, 4));
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	EXPECT_EQ(0, ortmem_host_free(self->host, q));
}

static struct ortmem_host_stats host_stats_of(struct ortmem_host *h)
{
	ORTMEM_OPTS(ortmem_host_stats, st);

	if (ortmem_host_stats(h, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

/*
 * What the spill handle must say over two tiers' figures, in attach order
 * (a tier with NONE is not attached): their common verdict or MIXED, the
 * error of the first that is OFF, the sum of their registered buffers.
 */
static void expect_summary(struct __test_metadata *_metadata,
			   struct ortmem_spill *spill,
			   const struct ortmem_host_stats *a,
			   const struct ortmem_host_stats *b)
{
	struct ortmem_spill_stats st = stats_of(spill);
	uint32_t want = a->fixed_host == ORTMEM_SPILL_FIXED_NONE ? b->fixed_host :
			b->fixed_host == ORTMEM_SPILL_FIXED_NONE ? a->fixed_host :
			a->fixed_host == b->fixed_host ? a->fixed_host :
			ORTMEM_SPILL_FIXED_MIXED;

	EXPECT_EQ(want, st.fixed_host);
	EXPECT_EQ(a->fixed_host == ORTMEM_SPILL_FIXED_OFF ? a->fixed_error :
		  b->fixed_host == ORTMEM_SPILL_FIXED_OFF ? b->fixed_error : 0,
		  st.fixed_error);
	EXPECT_EQ(a->fixed_buffers + b->fixed_buffers, st.fixed_buffers);
}

/*
 * Two host tiers on one spill handle, the second on the mlock backend (in
 * the VM the first is the module's, which 6.1 refuses and 6.12 takes):
 * each tier reports its own verdict and registered buffers, the spill
 * handle sums them up (MIXED when they differ), and a tier that detaches
 * takes its part of the figures with it.
 */
TEST_F(fx, several_tiers_report_their_own_figures)
{
	ORTMEM_OPTS(ortmem_host_opts, o, .flags = ORTMEM_HOST_FORCE_MLOCK);
	const struct ortmem_host_stats none = { 0 };
	struct ortmem_host_stats a, b;
	struct ortmem_host *second;
	void *p[2], *q[3];
	int i;

	OK(ortmem_host_open(&o, &second));
	OK(ortmem_host_set_spill(second, self->spill));
	for (i = 0; i < 2; i++)
		OK(ortmem_host_alloc(self->host, 3 * self->page, -1, &p[i]));
	for (i = 0; i < 3; i++)
		OK(ortmem_host_alloc(second, 2 * self->page, -1, &q[i]));
	a = host_stats_of(self->host);
	b = host_stats_of(second);
	printf("# first tier (%s) %s, second (mlock) %s\n",
	       ortmem_host_backend_name(ortmem_host_backend(self->host)),
	       path_name(a.fixed_host), path_name(b.fixed_host));
	ASSERT_NE(ORTMEM_SPILL_FIXED_NONE, a.fixed_host);
	ASSERT_NE(ORTMEM_SPILL_FIXED_NONE, b.fixed_host);
	EXPECT_EQ(a.fixed_host == ORTMEM_SPILL_FIXED_ON ? 2 : 0, a.fixed_buffers);
	EXPECT_EQ(b.fixed_host == ORTMEM_SPILL_FIXED_ON ? 3 : 0, b.fixed_buffers);
	EXPECT_EQ(a.fixed_host == ORTMEM_SPILL_FIXED_OFF, a.fixed_error != 0);
	EXPECT_EQ(b.fixed_host == ORTMEM_SPILL_FIXED_OFF, b.fixed_error != 0);
	expect_summary(_metadata, self->spill, &a, &b);

	/* A freed buffer leaves its own tier's count only. */
	EXPECT_EQ(0, ortmem_host_free(second, q[2]));
	b = host_stats_of(second);
	EXPECT_EQ(b.fixed_host == ORTMEM_SPILL_FIXED_ON ? 2 : 0, b.fixed_buffers);
	EXPECT_EQ(a.fixed_buffers, host_stats_of(self->host).fixed_buffers);
	expect_summary(_metadata, self->spill, &a, &b);

	/* The second tier leaves: the handle shows the first tier alone. */
	OK(ortmem_host_set_spill(second, NULL));
	b = host_stats_of(second);
	EXPECT_EQ(ORTMEM_SPILL_FIXED_NONE, b.fixed_host);
	EXPECT_EQ(0, b.fixed_error);
	EXPECT_EQ(0, b.fixed_buffers);
	expect_summary(_metadata, self->spill, &a, &b);

	/* And with no tier attached, no verdict is left. */
	OK(ortmem_host_set_spill(self->host, NULL));
	EXPECT_EQ(ORTMEM_SPILL_FIXED_NONE, host_stats_of(self->host).fixed_host);
	expect_summary(_metadata, self->spill, &none, &none);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, ortmem_host_free(self->host, p[i]));
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, ortmem_host_free(second, q[i]));
	ortmem_host_close(second);
}

/* Leave CAP_IPC_LOCK out of the effective set: 0 or -errno. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/*
 * Tiers that disagree on one handle, made so on any machine: a tier
 * attached while io_uring may register its memory free of charge is ON; a
 * second one attached after the process gave up CAP_IPC_LOCK under a
 * finite RLIMIT_MEMLOCK is OFF with EPERM.  The handle says MIXED and
 * EPERM, and OFF alone once the first tier has left.  (Before the figures
 * were per tier, the handle showed whichever tier attached last.)
 */
TEST_F(fx, tiers_that_disagree_show_as_mixed)
{
	ORTMEM_OPTS(ortmem_host_opts, o, .flags = ORTMEM_HOST_FORCE_MLOCK);
	struct rlimit rl;
	struct ortmem_host_stats a, b;
	struct ortmem_spill_stats st;
	struct ortmem_host *second;
	void *p, *q;

	a = host_stats_of(self->host);
	if (a.fixed_host != ORTMEM_SPILL_FIXED_ON)
		SKIP("the first tier takes plain I/O here (%s)", strerror(a.fixed_error));
	OK(ortmem_host_alloc(self->host, self->page, -1, &p));
	ASSERT_EQ(0, drop_ipc_lock());
	/* Finite, and only ever lowered (raising needs CAP_SYS_RESOURCE). */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > 64 * MIB)
		rl.rlim_max = 64 * MIB;
	rl.rlim_cur = rl.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	OK(ortmem_host_open(&o, &second));
	OK(ortmem_host_set_spill(second, self->spill));
	OK(ortmem_host_alloc(second, self->page, -1, &q));
	b = host_stats_of(second);
	EXPECT_EQ(ORTMEM_SPILL_FIXED_OFF, b.fixed_host);
	EXPECT_EQ(EPERM, b.fixed_error);
	EXPECT_EQ(0, b.fixed_buffers);
	a = host_stats_of(self->host);
	EXPECT_EQ(ORTMEM_SPILL_FIXED_ON, a.fixed_host);
	EXPECT_EQ(1, a.fixed_buffers);
	st = stats_of(self->spill);
	EXPECT_EQ(ORTMEM_SPILL_FIXED_MIXED, st.fixed_host);
	EXPECT_EQ(EPERM, st.fixed_error);
	EXPECT_EQ(1, st.fixed_buffers);
	/* Both tiers' bytes still go to disk and back. */
	fill(p, self->page, 11);
	fill(q, self->page, 12);
	OK(ortmem_host_demote(self->host, p));
	OK(ortmem_host_demote(second, q));
	OK(ortmem_host_promote(self->host, p));
	OK(ortmem_host_promote(second, q));
	EXPECT_EQ(-1, check(p, self->page, 11));
	EXPECT_EQ(-1, check(q, self->page, 12));
	/* The first tier leaves (its buffer goes with it): OFF alone. */
	EXPECT_EQ(0, ortmem_host_free(self->host, p));
	OK(ortmem_host_set_spill(self->host, NULL));
	st = stats_of(self->spill);
	EXPECT_EQ(ORTMEM_SPILL_FIXED_OFF, st.fixed_host);
	EXPECT_EQ(EPERM, st.fixed_error);
	EXPECT_EQ(0, st.fixed_buffers);
	EXPECT_EQ(0, ortmem_host_free(second, q));
	ortmem_host_close(second);
}

TEST_HARNESS_MAIN
