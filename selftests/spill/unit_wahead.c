// SPDX-License-Identifier: MIT
/*
 * Read-ahead of a weights file (lib/spill/spill_wahead.c): an announced
 * read starts on the lane of the read before it once that one has nothing
 * left to issue, and the ortmem_wfile_read() of the same range into the
 * same buffer finishes it with the file's bytes, or with the error a read
 * of its own would have had (a failed I/O, a block that does not match its
 * checksum), its buffer zeroed.  Ranges with partial blocks at both ends,
 * several announcements at once, a full set, cancel, and close with reads
 * still in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#include <ortmem/wfile.h>

#include "spill/spill_internal.h"
#include "../harness.h"
#include "common.h"

#define BLK 65536u
#define NBLK 48u
#define FSIZE ((uint64_t)NBLK * BLK)
/* Partial blocks at the head and the tail, whole ones between. */
#define A_OFF (3ull * BLK + 1000)
#define A_LEN (10ull * BLK + 5000)
#define B_OFF (20ull * BLK)
#define B_LEN (12ull * BLK + 777)

FIXTURE(wahead) {
	char dir[256];
	char path[300];
	uint8_t *file;		/* what the file holds */
	uint8_t *a, *b, *c;
	struct ortmem_wfile *wf;
};

FIXTURE_SETUP(wahead)
{
	ORTMEM_OPTS(ortmem_wfile_opts, o, .queue_depth = 4, .chunk_bytes = BLK);
	int fd;

	ASSERT_EQ(0, spill_test_dir(self->dir, sizeof(self->dir)));
	snprintf(self->path, sizeof(self->path), "%s/w.bin", self->dir);
	self->file = malloc(FSIZE);
	ASSERT_NONNULL(self->file);
	spill_fill(self->file, FSIZE, 7);
	fd = open(self->path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ((ssize_t)FSIZE, write(fd, self->file, FSIZE));
	close(fd);
	ASSERT_EQ(0, ortmem_wfile_checksum(self->path, NULL, BLK));
	ASSERT_EQ(0, ortmem_wfile_open(self->path, &o, &self->wf));
	self->a = aligned_alloc(4096, FSIZE);
	self->b = aligned_alloc(4096, FSIZE);
	self->c = aligned_alloc(4096, FSIZE);
	ASSERT_NONNULL(self->a);
	ASSERT_NONNULL(self->b);
	ASSERT_NONNULL(self->c);
}

FIXTURE_TEARDOWN(wahead)
{
	char csum[320];

	ortmem_wfile_close(self->wf);
	free(self->file);
	free(self->a);
	free(self->b);
	free(self->c);
	snprintf(csum, sizeof(csum), "%s.csum", self->path);
	unlink(csum);
	unlink(self->path);
	rmdir(self->dir);
}

static uint64_t submissions(struct ortmem_wfile *wf)
{
	return atomic_load(&wf->eng.fault.seq);
}

TEST_F(wahead, announced_reads_start_behind_a_read_and_match_the_file)
{
	uint64_t before;

	if (!(self->wf->features & ORTMEM_SPILL_HAVE_URING))
		SKIP("no io_uring here: nothing starts ahead");
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, A_OFF, self->a, A_LEN));
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, B_OFF, self->b, B_LEN));
	/* One block: one request of its own, then the queue has room. */
	before = submissions(self->wf);
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 40ull * BLK, self->c, BLK));
	EXPECT_EQ(0, memcmp(self->c, self->file + 40ull * BLK, BLK));
	EXPECT_GT(submissions(self->wf), before + 1);
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, A_OFF, self->a, A_LEN));
	EXPECT_EQ(0, memcmp(self->a, self->file + A_OFF, A_LEN));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, B_OFF, self->b, B_LEN));
	EXPECT_EQ(0, memcmp(self->b, self->file + B_OFF, B_LEN));
	/* Taken: a second read of the range is a plain one. */
	memset(self->a, 0, A_LEN);
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, A_OFF, self->a, A_LEN));
	EXPECT_EQ(0, memcmp(self->a, self->file + A_OFF, A_LEN));
}

TEST_F(wahead, taken_before_it_started_reads_all_of_it)
{
	if (!(self->wf->features & ORTMEM_SPILL_HAVE_URING))
		SKIP("no io_uring here");
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, 0, self->a, FSIZE));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 0, self->a, FSIZE));
	EXPECT_EQ(0, memcmp(self->a, self->file, FSIZE));
}

TEST_F(wahead, a_failed_io_is_the_takers_error)
{
	const struct ortmem_error *e;

	if (!(self->wf->features & ORTMEM_SPILL_HAVE_URING))
		SKIP("no io_uring here");
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, B_OFF, self->b, B_LEN));
	/* The plain read's one request, then the third of the announced. */
	ASSERT_EQ(0, ortmem_wfile_inject_fault(self->wf, 4, -EIO));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 0, self->c, BLK));
	ASSERT_EQ(-EIO, ortmem_wfile_read(self->wf, B_OFF, self->b, B_LEN));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_EQ(-EIO, e->code);
	EXPECT_NE(NULL, strstr(e->reason, "reading weights file"));
	EXPECT_NE(NULL, strstr(e->reason, self->path));
	for (uint64_t i = 0; i < B_LEN; i++)
		ASSERT_EQ(0, self->b[i]);
	ASSERT_EQ(0, ortmem_wfile_inject_fault(self->wf, 0, 0));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, B_OFF, self->b, B_LEN));
	EXPECT_EQ(0, memcmp(self->b, self->file + B_OFF, B_LEN));
}

TEST_F(wahead, a_damaged_block_is_named_by_the_taker)
{
	const struct ortmem_error *e;
	uint8_t x = 0;
	int fd;

	if (!(self->wf->features & ORTMEM_SPILL_HAVE_URING))
		SKIP("no io_uring here");
	/* Flip a byte of the tail block, outside the range but in a block
	 * the range needs: it is verified whole. */
	fd = open(self->path, O_RDWR | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(1, pread(fd, &x, 1, (off_t)(A_OFF + A_LEN + 10)));
	x ^= 0x40;
	ASSERT_EQ(1, pwrite(fd, &x, 1, (off_t)(A_OFF + A_LEN + 10)));
	fsync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, A_OFF, self->a, A_LEN));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 0, self->c, BLK));
	ASSERT_EQ(-ORTMEM_E_CHECKSUM, ortmem_wfile_read(self->wf, A_OFF, self->a, A_LEN));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_NE(NULL, strstr(e->reason, "do not match the checksum list"));
	EXPECT_NE(NULL, strstr(e->reason, "block 13 of 48"));
	for (uint64_t i = 0; i < A_LEN; i++)
		ASSERT_EQ(0, self->a[i]);
}

TEST_F(wahead, refusals_full_set_cancel_and_close_in_flight)
{
	uint8_t *bufs[5];
	int i;

	EXPECT_EQ(-EINVAL, ortmem__wf_ahead(self->wf, FSIZE - BLK, self->a, 2 * BLK));
	EXPECT_EQ(-EINVAL, ortmem__wf_ahead(self->wf, 0, NULL, BLK));
	if (!(self->wf->features & ORTMEM_SPILL_HAVE_URING))
		SKIP("no io_uring here: every announcement is refused");
	/* Inside one block: nothing to start ahead. */
	EXPECT_EQ(-EOPNOTSUPP, ortmem__wf_ahead(self->wf, 100, self->a, 200));
	for (i = 0; i < 5; i++)
		bufs[i] = self->a + (uint64_t)i * 8 * BLK;
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, ortmem__wf_ahead(self->wf, (uint64_t)i * 8 * BLK,
					      bufs[i], 8 * BLK));
	EXPECT_EQ(-EBUSY, ortmem__wf_ahead(self->wf, 32ull * BLK, bufs[4], 8 * BLK));
	/* Cancelled before it started: the slot is free again. */
	ortmem__wf_ahead_cancel(self->wf, bufs[3]);
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, 32ull * BLK, bufs[4], 8 * BLK));
	/* A read of another range is a plain one; the oldest announcement
	 * starts behind it and stays until taken or cancelled. */
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 40ull * BLK, self->c, BLK));
	EXPECT_EQ(0, memcmp(self->c, self->file + 40ull * BLK, BLK));
	EXPECT_EQ(-EBUSY, ortmem__wf_ahead(self->wf, 40ull * BLK, self->b, BLK * 2));
	/* Cancel waits for what is in flight into the buffer. */
	ortmem__wf_ahead_cancel(self->wf, bufs[0]);
	ASSERT_EQ(0, ortmem__wf_ahead(self->wf, 40ull * BLK, self->b, BLK * 2));
	/* The next oldest (bufs[1]) starts behind this read; close waits
	 * for all of it, and frees nothing a request still writes into. */
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 44ull * BLK, self->c, BLK));
	ortmem_wfile_close(self->wf);
	self->wf = NULL;
	EXPECT_EQ(0, memcmp(bufs[1], self->file + 8ull * BLK, 8 * BLK));
}

TEST(no_ring_refuses)
{
	ORTMEM_OPTS(ortmem_wfile_opts, o, .flags = ORTMEM_WFILE_F_NO_URING);
	char dir[256], path[300], csum[320];
	struct ortmem_wfile *wf;
	uint8_t *buf = aligned_alloc(4096, 4 * BLK);
	int fd;

	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, spill_test_dir(dir, sizeof(dir)));
	snprintf(path, sizeof(path), "%s/w.bin", dir);
	snprintf(csum, sizeof(csum), "%s.csum", path);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_GE(fd, 0);
	spill_fill(buf, 4 * BLK, 3);
	ASSERT_EQ((ssize_t)(4 * BLK), write(fd, buf, 4 * BLK));
	close(fd);
	ASSERT_EQ(0, ortmem_wfile_checksum(path, NULL, BLK));
	ASSERT_EQ(0, ortmem_wfile_open(path, &o, &wf));
	/* Synchronous reads would make the read before wait for it. */
	EXPECT_EQ(-EOPNOTSUPP, ortmem__wf_ahead(wf, 0, buf, 4 * BLK));
	ortmem_wfile_close(wf);
	unlink(csum);
	unlink(path);
	rmdir(dir);
	free(buf);
}

TEST_HARNESS_MAIN
