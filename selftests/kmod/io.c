// SPDX-License-Identifier: MIT
/*
 * The region mapping as an I/O buffer: O_DIRECT reads and writes and
 * io_uring reads and writes on a real block device (the VM's virtio disk,
 * named by ORTMEM_VM_DISK).  Every one of them pins the region's pages with
 * get_user_pages, which is what cuMemHostRegister() does too.
 */
#include <liburing.h>
#include <stdlib.h>

#include "../harness.h"
#include "ortmem_test.h"

#define LEN (256 * 1024)

FIXTURE(io) {
	int fd;
	int disk;
	unsigned char *buf;
	struct ortmem_alloc_args a;
	int64_t pinned;
};

FIXTURE_SETUP(io)
{
	const char *disk = getenv("ORTMEM_VM_DISK");

	self->disk = -1;
	OPEN_OR_SKIP(self->fd);
	if (!disk)
		SKIP("ORTMEM_VM_DISK names no block device for O_DIRECT");
	self->disk = open(disk, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (self->disk < 0)
		SKIP("%s: %s", disk, strerror(errno));
	self->pinned = pinned_bytes();
	ASSERT_EQ(0, region_alloc(self->fd, 2 * LEN, ORTMEM_NUMA_ANY, 0, &self->a));
	self->buf = region_map(self->fd, 2 * LEN, self->a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, self->buf);
}

FIXTURE_TEARDOWN(io)
{
	if (self->disk >= 0)
		close(self->disk);
	if (self->fd >= 0) {
		if (self->buf && self->buf != MAP_FAILED)
			munmap(self->buf, 2 * LEN);
		close(self->fd);
		EXPECT_EQ(self->pinned, pinned_bytes());
	}
}

static void fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

TEST_F(io, odirect_write_then_read_back)
{
	unsigned char *in = self->buf, *out = self->buf + LEN;

	fill(in, LEN, 7);
	ASSERT_EQ(LEN, pwrite(self->disk, in, LEN, 0));
	memset(out, 0, LEN);
	ASSERT_EQ(LEN, pread(self->disk, out, LEN, 0));
	EXPECT_EQ(0, memcmp(in, out, LEN));
	/* Unaligned by the block size: O_DIRECT refuses, nothing breaks. */
	EXPECT_EQ(-1, pread(self->disk, out + 1, 4096, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(io, io_uring_write_then_read_back)
{
	unsigned char *in = self->buf, *out = self->buf + LEN;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret)
		SKIP("io_uring_queue_init: %s", strerror(-ret));
	fill(in, LEN, 99);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write(sqe, self->disk, in, LEN, LEN);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(LEN, cqe->res);
	io_uring_cqe_seen(&ring, cqe);

	memset(out, 0, LEN);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, self->disk, out, LEN, LEN);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(LEN, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	EXPECT_EQ(0, memcmp(in, out, LEN));
	io_uring_queue_exit(&ring);
}

/*
 * Registering the mapping as fixed buffers: Linux 6.1 refuses buffers in a
 * non-shmem file mapping (-EOPNOTSUPP); later kernels accept them.  Either
 * answer is documented (Documentation/admin-guide/ortmem.rst); anything else
 * is a bug, and an accepted registration must work for READ_FIXED.
 */
TEST_F(io, io_uring_register_buffers_answer)
{
	struct iovec iov = { .iov_base = self->buf, .iov_len = LEN };
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	int ret;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret)
		SKIP("io_uring_queue_init: %s", strerror(-ret));
	ret = io_uring_register_buffers(&ring, &iov, 1);
	TH_LOG("IORING_REGISTER_BUFFERS on a region: %d (%s)", ret,
	       ret ? strerror(-ret) : "accepted");
	EXPECT_TRUE(ret == 0 || ret == -EOPNOTSUPP);
	if (ret == 0) {
		io_uring_prep_read_fixed(io_uring_get_sqe(&ring), self->disk,
					 self->buf, LEN, 0, 0);
		ASSERT_EQ(1, io_uring_submit(&ring));
		ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
		EXPECT_EQ(LEN, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
		io_uring_unregister_buffers(&ring);
	}
	io_uring_queue_exit(&ring);
}

TEST_HARNESS_MAIN
