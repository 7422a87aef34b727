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
#include <sys/resource.h>
#include <sys/stat.h>

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

TEST_HARNESS_MAIN
