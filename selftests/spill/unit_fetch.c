// SPDX-License-Identifier: MIT
/*
 * Reads into a buffer that comes back piece by piece
 * (ortmem__spill_read_fetch(), the module's promotion): the engine reads
 * only into the part that is back, brings the next piece back while the
 * reads of the last are in flight, and on failure zeroes only what is
 * back.  The buffer here is PROT_NONE until its fetch makes a piece
 * readable and writable, so a read past the ready part fails (O_DIRECT:
 * -EFAULT) or crashes (bounce copy): the test sees either.
 */
#include <errno.h>
#include <sys/mman.h>

#include "spill/spill_internal.h"
#include "../harness.h"
#include "common.h"

#define CHUNK 65536u
/* Several chunks, an odd piece at the end, a tail that is not whole. */
#define LEN (10 * CHUNK + 3 * 4096 + 100)
#define MAP_LEN ((LEN + 4095) & ~4095ul)

struct fetch_log {
	uint64_t step;
	int calls;
	int fail_at;		/* call that fails with -ENOMEM, 0 none */
	int with_reads_issued;	/* calls made after some reads were issued */
	int past_ready;		/* reads issued beyond what was ready */
};

static int test_fetch(struct ortmem__sreq *r)
{
	struct fetch_log *log = r->fetch_arg;
	uint64_t n = r->len - r->ready < log->step ? r->len - r->ready : log->step;
	uint64_t from = r->ready & ~4095ull, to = (r->ready + n + 4095) & ~4095ull;

	if (++log->calls == log->fail_at)
		return -ENOMEM;
	if (r->sched > r->ready)
		log->past_ready++;
	if (r->sched)
		log->with_reads_issued++;
	if (mprotect(r->buf + from, to - from, PROT_READ | PROT_WRITE))
		return -errno;
	r->ready += n;
	return 0;
}

FIXTURE(fetch) {
	char dir[256];
	struct ortmem_spill *s;
	uint8_t *src;
	uint8_t *dst;
	uint64_t ext;
};

FIXTURE_VARIANT(fetch) {
	uint32_t flags;
	uint64_t step;
};

/* Steps above, at and below the engine's chunk (segments cut to fit). */
FIXTURE_VARIANT_ADD(fetch, uring_step4) { .flags = 0, .step = 4 * CHUNK };
FIXTURE_VARIANT_ADD(fetch, uring_step_chunk) { .flags = 0, .step = CHUNK };
FIXTURE_VARIANT_ADD(fetch, uring_step_quarter) { .flags = 0, .step = CHUNK / 4 };
FIXTURE_VARIANT_ADD(fetch, sync) { .flags = ORTMEM_SPILL_F_NO_URING, .step = 3 * CHUNK };
FIXTURE_VARIANT_ADD(fetch, buffered) { .flags = ORTMEM_SPILL_F_BUFFERED, .step = 2 * CHUNK };

FIXTURE_SETUP(fetch)
{
	ORTMEM_OPTS(ortmem_spill_opts, o, .flags = variant->flags,
		    .queue_depth = 4, .chunk_bytes = CHUNK, .grow_bytes = MIB);

	ASSERT_EQ(0, spill_test_dir(self->dir, sizeof(self->dir)));
	o.dir = self->dir;
	ASSERT_EQ(0, ortmem_spill_open(&o, &self->s));
	self->src = aligned_alloc(4096, MAP_LEN);
	ASSERT_NONNULL(self->src);
	spill_fill(self->src, LEN, 77);
	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, LEN, &self->ext));
	self->dst = mmap(NULL, MAP_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->dst);
}

FIXTURE_TEARDOWN(fetch)
{
	ortmem_spill_close(self->s);
	free(self->src);
	munmap(self->dst, MAP_LEN);
	rmdir(self->dir);
}

TEST_F(fetch, reads_only_what_is_back_and_overlaps)
{
	struct fetch_log log = { .step = variant->step };
	uint64_t ready = 0, pieces = (LEN + variant->step - 1) / variant->step;

	ASSERT_EQ(0, ortmem__spill_read_fetch(self->s, self->ext, self->dst, LEN,
					      test_fetch, &log, variant->step,
					      &ready));
	EXPECT_EQ(LEN, ready);
	EXPECT_EQ(pieces, (uint64_t)log.calls);
	EXPECT_EQ(0, log.past_ready);
	/* Every piece after the first came back with reads issued before it. */
	EXPECT_EQ(log.calls - 1, log.with_reads_issued);
	EXPECT_EQ(0, memcmp(self->src, self->dst, LEN));
}

/* A fetch that fails fails the read: the part back is zeroed, the rest untouched. */
TEST_F(fetch, failed_fetch_zeroes_only_what_is_back)
{
	struct fetch_log log = { .step = variant->step, .fail_at = 3 };
	uint64_t ready = 0, i;
	uint8_t *again = aligned_alloc(4096, MAP_LEN);

	ASSERT_NONNULL(again);
	EXPECT_EQ(-ENOMEM, ortmem__spill_read_fetch(self->s, self->ext, self->dst,
						    LEN, test_fetch, &log,
						    variant->step, &ready));
	EXPECT_EQ(2 * variant->step, ready);
	EXPECT_EQ(3, log.calls);
	for (i = 0; i < ready && !self->dst[i]; i++)
		;
	EXPECT_EQ(ready, i);
	/* The rest was never made accessible, so never written. */
	EXPECT_EQ(0, mprotect(self->dst, MAP_LEN, PROT_READ | PROT_WRITE));
	for (i = (ready + 4095) & ~4095ull; i < LEN && !self->dst[i]; i++)
		;
	EXPECT_EQ(LEN, i);
	/* The extent is intact: a plain read gets its bytes. */
	ASSERT_EQ(0, ortmem_spill_read(self->s, self->ext, again, LEN));
	EXPECT_EQ(0, memcmp(self->src, again, LEN));
	free(again);
}

TEST_HARNESS_MAIN
