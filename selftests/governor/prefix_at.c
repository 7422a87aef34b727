// SPDX-License-Identifier: MIT
/*
 * A sharer of a host prefix mapped into address space the caller reserved
 * itself (ortmem_prefix_bind_at()), as a runtime that lays its KV blocks
 * out in one big reservation does: the prefix and the private tail land
 * exactly there, the bytes are still charged once, and unbinding (or the
 * governor's close) gives the range back reserved, not unmapped.  A range
 * that is not the caller's reservation (its own memory, a misaligned or
 * overhanging range, a buffer of ortmem's host tier, live or demoted) is
 * refused and left as it was.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "../harness.h"

#include <ortmem/ortmem.h>

#define MIB (1024ull * 1024)
#define RES_PAGES 16

static uint64_t page;

FIXTURE(pat) {
	struct ortmem_gov *gov;
	char *res;		/* the caller's reservation */
};

FIXTURE_SETUP(pat)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 64 * MIB, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);

	page = (uint64_t)sysconf(_SC_PAGESIZE);
	self->res = mmap(NULL, RES_PAGES * page, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->res);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
}

FIXTURE_TEARDOWN(pat)
{
	ortmem_gov_close(self->gov);
	/* Still the caller's to unmap, whatever the test did. */
	EXPECT_EQ(0, munmap(self->res, RES_PAGES * page));
}

static uint64_t host_used(struct ortmem_gov *gov)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };

	ortmem_gov_stats(gov, &st);
	return st.tier[ORTMEM_TIER_HOST].used;
}

/* Does touching @p (a write, or with @read a read) kill with SIGSEGV? */
static bool access_faults(volatile char *p, bool read)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);	/* a sanitizer's handler would exit */
		if (read)
			(void)*p;
		else
			*p = 1;
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

/* Every page of [p, p + n pages) is reserved again: even a read faults. */
static bool reserved(char *p, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (!access_faults(p + i * page, true))
			return false;
	return true;
}

TEST_F(pat, a_sharer_lands_in_the_callers_reservation)
{
	uint64_t plen = 2 * page, tail = page + 100;
	struct ortmem_commit_range r[2];
	struct ortmem_handle s, s2;
	struct ortmem_prefix *p;
	char *owner, *at = self->res + 4 * page;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  plen, 0, NULL, NULL, &p, (void **)&owner));
	memset(owner, 0x11, plen);
	ASSERT_EQ(0, ortmem_prefix_bind_at(p, tail, at, &s));
	EXPECT_EQ(0x11, at[0]);
	EXPECT_EQ(0x11, at[plen - 1]);
	owner[plen / 2] = 0x77;
	EXPECT_EQ(0x77, at[plen / 2]);		/* the same pages */
	memset(at + plen, 0x22, tail);		/* the tail is its own */
	EXPECT_EQ(0x22, at[plen + tail - 1]);
	EXPECT_TRUE(access_faults(at, false));	/* the prefix is read-only */
	EXPECT_EQ(2, ortmem_prefix_ranges(self->gov, s, r, 2));
	EXPECT_EQ(plen + tail, host_used(self->gov));
	/* The rest of the reservation is untouched. */
	EXPECT_TRUE(reserved(self->res, 4));
	EXPECT_TRUE(reserved(at + plen + 2 * page, RES_PAGES - 4 - 4));

	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s));
	EXPECT_EQ(plen, host_used(self->gov));
	EXPECT_TRUE(reserved(at, 4));
	EXPECT_EQ(0x77, owner[plen / 2]);
	/* The range can take a sharer again, and the governor's close
	 * gives it back reserved too. */
	ASSERT_EQ(0, ortmem_prefix_bind_at(p, tail, at, &s2));
	EXPECT_EQ(0x77, at[plen / 2]);
	ortmem_gov_close(self->gov);
	self->gov = NULL;
	EXPECT_TRUE(reserved(self->res, RES_PAGES));
}

TEST_F(pat, a_range_that_is_not_a_reservation_is_refused_untouched)
{
	uint64_t plen = page, tail = page;
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	char *owner, *mine;

	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  plen, 0, NULL, NULL, &p, (void **)&owner));
	memset(owner, 0x33, plen);
	/* The caller's own memory: mapping over it would lose its bytes. */
	mine = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mine);
	memset(mine, 0x5a, 4 * page);
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, mine, &s));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "reserved"));
	EXPECT_EQ(0x5a, mine[0]);
	EXPECT_EQ(0x5a, mine[2 * page - 1]);
	mine[0] = 1;				/* still writable */
	EXPECT_EQ(0, munmap(mine, 4 * page));
	/* A range whose last page is the caller's memory again. */
	mine = self->res + (RES_PAGES - 1) * page;
	ASSERT_EQ(0, mprotect(mine, page, PROT_READ | PROT_WRITE));
	memset(mine, 0x6b, page);
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, mine - page, &s));
	EXPECT_EQ(0x6b, mine[page - 1]);
	EXPECT_TRUE(reserved(mine - page, 1));
	ASSERT_EQ(0, mprotect(mine, page, PROT_NONE));
	/* Misaligned, NULL, no tail. */
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, self->res + 1, &s));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, NULL, &s));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, 0, self->res, &s));
	/* Nothing was charged or mapped by the refusals. */
	EXPECT_EQ(plen, host_used(self->gov));
	EXPECT_TRUE(reserved(self->res, RES_PAGES));
	EXPECT_EQ(0, ortmem_prefix_release(p));
	EXPECT_EQ(0, host_used(self->gov));
}

/*
 * A buffer of ortmem's own host tier is no reservation of the caller's,
 * even where /proc/self/maps cannot tell: the mlock fallback's demoted
 * buffer is anonymous PROT_NONE, as a reservation is.  Binding over it
 * (or over a live one) is refused, naming the buffer, and its bytes come
 * back from the spill file intact.
 */
TEST_F(pat, a_buffer_of_the_host_tier_is_refused)
{
	ORTMEM_OPTS(ortmem_host_opts, ho, .flags = ORTMEM_HOST_FORCE_MLOCK);
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MIB);
	uint64_t plen = page, tail = page, i;
	struct ortmem_spill *spill;
	struct ortmem_host *host;
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	char dir[] = "/var/tmp/ortmem-prefix-at.XXXXXX", *buf;

	ASSERT_NONNULL(mkdtemp(dir));
	so.dir = dir;
	if (ortmem_spill_open(&so, &spill)) {
		rmdir(dir);
		SKIP("spill engine unavailable: %s", ortmem_last_error_message());
	}
	ASSERT_EQ(0, ortmem_host_open(&ho, &host));
	ASSERT_EQ(0, ortmem_host_set_spill(host, spill));
	ASSERT_EQ(0, ortmem_host_alloc(host, 4 * page, -1, (void **)&buf));
	for (i = 0; i < 4 * page; i++)
		buf[i] = (char)(i * 7);
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
					  plen, 0, NULL, NULL, &p, NULL));
	/* Live: refused, and its bytes are still there. */
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, buf + page, &s));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "a live buffer of ortmem's host tier"));
	EXPECT_EQ((char)(page * 7), buf[page]);
	/* Demoted: anonymous PROT_NONE now, as a reservation is. */
	ASSERT_EQ(0, ortmem_host_demote(host, buf));
	EXPECT_TRUE(reserved(buf, 4));
	EXPECT_EQ(-EINVAL, ortmem_prefix_bind_at(p, tail, buf + 2 * page, &s));
	TH_LOG("%s", ortmem_last_error_message());
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "a demoted buffer of ortmem's host tier"));
	EXPECT_EQ(plen, host_used(self->gov));
	ASSERT_EQ(0, ortmem_host_promote(host, buf));
	for (i = 0; i < 4 * page && buf[i] == (char)(i * 7); i++)
		;
	EXPECT_EQ(4 * page, i);
	/* Freed, the range is no one's: the caller's reservation may take it. */
	EXPECT_EQ(0, ortmem_prefix_release(p));
	EXPECT_EQ(0, ortmem_host_free(host, buf));
	ortmem_host_close(host);
	ortmem_spill_close(spill);
	rmdir(dir);
}

TEST_HARNESS_MAIN
