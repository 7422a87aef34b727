/* SPDX-License-Identifier: MIT */
/*
 * What the host tier's demotion tests share: a host allocator with a spill
 * file (fixture dm), a page-keyed fill and its check, and reads that say
 * whether a touch got SIGBUS, the right word or something else.
 */
#ifndef ORTMEM_SELFTESTS_HOST_DEMOTE_UTIL_H
#define ORTMEM_SELFTESTS_HOST_DEMOTE_UTIL_H

#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#include "spill_dir.h"
#include "host_test.h"

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

static inline uint64_t word(uint64_t page, uint64_t w, unsigned int seed)
{
	return (page * 0x9E3779B97F4A7C15ull) ^ (w + seed * 0x100000001b3ull);
}

static inline void fill(void *p, uint64_t len, uint64_t page, unsigned int seed)
{
	uint64_t *q = p, n = len / 8, i, per = page / 8;

	for (i = 0; i < n; i++)
		q[i] = word(i / per, i % per, seed);
}

/* Index of the first wrong word, or -1. */
static inline int64_t check(const void *p, uint64_t len, uint64_t page, unsigned int seed)
{
	const uint64_t *q = p;
	uint64_t n = len / 8, i, per = page / 8;

	for (i = 0; i < n; i++)
		if (q[i] != word(i / per, i % per, seed))
			return (int64_t)i;
	return -1;
}

static sigjmp_buf segv_jmp;

static inline void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_jmp, 1);
}

/* Whether reading *@v raises SIGBUS (the value read otherwise in *@got). */
static inline bool read_gets_sigbus(volatile uint64_t *v, uint64_t *got)
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

static inline int fail_knob(const char *what)
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
static inline uint64_t word_at(uint64_t off, uint64_t page, unsigned int seed)
{
	uint64_t i = off / 8, per = page / 8;

	return word(i / per, i % per, seed);
}

/*
 * Whether reading the word at byte @off of @p gets its right value (not
 * SIGBUS, not zero), saying what it got otherwise.
 */
static inline bool reads_right(struct __test_metadata *_metadata, void *p,
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

#endif /* ORTMEM_SELFTESTS_HOST_DEMOTE_UTIL_H */
