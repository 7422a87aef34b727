// SPDX-License-Identifier: MIT
/*
 * The disk-spill mapping: bind a range of a region to an extent of a spill
 * file on the VM's ext4 disk (ORTMEM_VM_SPILL_DIR), write it there with
 * O_DIRECT, evict it, and get exactly the same bytes back by touching it,
 * by RESTORE in both forms, and as the source of O_DIRECT and io_uring
 * writes; the charges fall and come back; the argument checks refuse what
 * they must.  spillmap_fail.c has the failures and the lifetime cases.
 */
#include <liburing.h>
#include <sys/stat.h>

#include "../harness.h"
#include "ortmem_test.h"
#include "spill_test.h"

FIXTURE(spill) {
	int fd;
	int file;
	char path[256];
	unsigned char *map;
	uint64_t len;
	struct ortmem_alloc_args a;
	int64_t pinned;
	int64_t out;
};

FIXTURE_VARIANT(spill) {
	uint64_t pages;
};

FIXTURE_VARIANT_ADD(spill, one_page) { .pages = 1 };
FIXTURE_VARIANT_ADD(spill, three_pages) { .pages = 3 };
FIXTURE_VARIANT_ADD(spill, one_mib) { .pages = 256 };
FIXTURE_VARIANT_ADD(spill, odd_4_mib) { .pages = 4 * 256 + 5 };

FIXTURE_SETUP(spill)
{
	self->file = -1;
	self->map = MAP_FAILED;
	OPEN_OR_SKIP(self->fd);
	self->file = spill_file_open("spill", O_DIRECT, self->path,
				     sizeof(self->path));
	if (self->file < 0)
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR): %s", strerror(errno));
	self->pinned = pinned_bytes();
	self->out = outstanding();
	self->len = variant->pages * PAGE;
	ASSERT_EQ(0, region_alloc(self->fd, self->len, ORTMEM_NUMA_ANY, 0, &self->a));
	self->map = region_map(self->fd, self->len, self->a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, self->map);
	pattern_fill(self->map, 0, variant->pages, 0x5eed, PAGE);
	/* The extent starts one page into the file: offsets are honoured. */
	ASSERT_EQ(0, spill_bind(self->fd, self->a.handle, 0, self->len,
				self->file, PAGE));
	ASSERT_EQ((ssize_t)self->len, pwrite(self->file, self->map, self->len, PAGE));
}

FIXTURE_TEARDOWN(spill)
{
	if (self->map != MAP_FAILED)
		munmap(self->map, self->len);
	if (self->file >= 0) {
		close(self->file);
		unlink(self->path);
	}
	if (self->fd >= 0) {
		close(self->fd);
		EXPECT_EQ(self->pinned, pinned_bytes());
		EXPECT_EQ(self->out, outstanding());
	}
}

/* Evict everything and check that the charges and counters show it. */
static void evict_all(struct __test_metadata *_metadata,
		      FIXTURE_DATA(spill) *self, uint64_t pages)
{
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes(), out = outstanding();

	ASSERT_EQ(0, spill_evict(self->fd, self->a.handle, 0, self->len,
				 self->map, PAGE));
	EXPECT_EQ(pinned - (int64_t)self->len, pinned_bytes());
	EXPECT_EQ(out - (int64_t)pages, outstanding());
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(self->len, st.evicted_bytes);
	EXPECT_EQ(0, st.resident_bytes);
	EXPECT_EQ(self->len, st.bound_bytes);
	ASSERT_EQ(0, spill_stats(self->fd, 0, &st));
	EXPECT_EQ(self->len, st.evicted_bytes);
}

TEST_F(spill, touch_returns_the_bytes_written)
{
	uint64_t n = variant->pages, last = n - 1;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes();
	volatile unsigned char *p = self->map;

	evict_all(_metadata, self, n);
	/* The last page first, then the first: each comes back alone. */
	(void)p[last * PAGE + PAGE - 1];
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(1, st.fault_backs);
	EXPECT_EQ(PAGE, st.resident_bytes);
	EXPECT_EQ(pinned - (int64_t)self->len + (int64_t)PAGE, pinned_bytes());
	EXPECT_EQ(-1, pattern_check(self->map + last * PAGE, last, 1, 0x5eed, PAGE));
	EXPECT_EQ(-1, pattern_check(self->map, 0, 1, 0x5eed, PAGE));
	EXPECT_EQ(-1, pattern_check(self->map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	/* Touched pages, and the pages read with them (read-ahead of 16). */
	EXPECT_EQ(n, st.fault_backs + st.readahead);
	EXPECT_LE((n + 15) / 16, st.fault_backs);
	EXPECT_EQ(0, st.restored);
	EXPECT_EQ(0, st.evicted_bytes);
	EXPECT_EQ(self->len, st.resident_bytes);
	EXPECT_EQ(pinned, pinned_bytes());
	/* Written again, evicted again: the new bytes come back. */
	pattern_fill(self->map, 0, n, 0xbeef, PAGE);
	ASSERT_EQ((ssize_t)self->len, pwrite(self->file, self->map, self->len, PAGE));
	evict_all(_metadata, self, n);
	EXPECT_EQ(-1, pattern_check(self->map, 0, n, 0xbeef, PAGE));
}

TEST_F(spill, restore_fills_and_verifies)
{
	uint64_t n = variant->pages;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes();

	evict_all(_metadata, self, n);
	ASSERT_EQ(0, spill_restore(self->fd, self->a.handle, 0, self->len, 0));
	EXPECT_EQ(pinned, pinned_bytes());
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(n, st.restored);
	EXPECT_EQ(self->len, st.resident_bytes);
	EXPECT_EQ(-1, pattern_check(self->map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(0, st.fault_backs);	/* the touch found them resident */
	/* Restoring resident pages is a no-op. */
	EXPECT_EQ(0, spill_restore(self->fd, self->a.handle, 0, self->len, 0));
}

TEST_F(spill, restore_nofill_leaves_zeroed_pages_to_fill)
{
	uint64_t n = variant->pages;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes();
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;

	evict_all(_metadata, self, n);
	ASSERT_EQ(0, spill_restore(self->fd, self->a.handle, 0, self->len,
				   ORTMEM_RESTORE_NOFILL));
	EXPECT_EQ(pinned, pinned_bytes());
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(n, st.restored);
	/* Never stale data: zeroes until userspace fills them. */
	EXPECT_EQ(0, self->map[0]);
	EXPECT_EQ(0, self->map[self->len - 1]);
	/* The library's way: an io_uring read into the mapping. */
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, self->file, self->map, self->len, PAGE);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)self->len, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	EXPECT_EQ(-1, pattern_check(self->map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(0, st.fault_backs);
}

/* A second file on the spill disk, read back into @out. */
static int other_file(char *path, size_t len)
{
	return spill_file_open("other", O_DIRECT, path, len);
}

TEST_F(spill, odirect_write_from_an_evicted_range)
{
	uint64_t n = variant->pages;
	struct ortmem_spill_stats_args st;
	char path[256];
	void *back;
	int other;

	evict_all(_metadata, self, n);
	other = other_file(path, sizeof(path));
	ASSERT_LE(0, other);
	/* The write's GUP faults the pages back; the file gets the bytes. */
	EXPECT_EQ((ssize_t)self->len, pwrite(other, self->map, self->len, 0));
	ASSERT_EQ(0, posix_memalign(&back, PAGE, self->len));
	EXPECT_EQ((ssize_t)self->len, pread(other, back, self->len, 0));
	EXPECT_EQ(-1, pattern_check(back, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fd, self->a.handle, &st));
	EXPECT_EQ(n, st.fault_backs + st.readahead);
	free(back);
	close(other);
	unlink(path);
}

TEST_F(spill, io_uring_write_from_an_evicted_range)
{
	uint64_t n = variant->pages;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	char path[256];
	void *back;
	int other;

	evict_all(_metadata, self, n);
	other = other_file(path, sizeof(path));
	ASSERT_LE(0, other);
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write(sqe, other, self->map, self->len, 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)self->len, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	ASSERT_EQ(0, posix_memalign(&back, PAGE, self->len));
	EXPECT_EQ((ssize_t)self->len, pread(other, back, self->len, 0));
	EXPECT_EQ(-1, pattern_check(back, 0, n, 0x5eed, PAGE));
	free(back);
	close(other);
	unlink(path);
}

TEST_F(spill, unbind_needs_resident_pages_and_allows_rebinding)
{
	void *first;

	/* CRCs from a copy: computing them from the mapping would touch it. */
	ASSERT_EQ(0, posix_memalign(&first, PAGE, PAGE));
	memcpy(first, self->map, PAGE);
	EXPECT_EQ(-EBUSY, spill_bind(self->fd, self->a.handle, 0, PAGE,
				     self->file, 0));
	ASSERT_EQ(0, spill_evict(self->fd, self->a.handle, 0, PAGE, first, PAGE));
	EXPECT_EQ(-EALREADY, spill_evict(self->fd, self->a.handle, 0, PAGE,
					 first, PAGE));
	EXPECT_EQ(-EBUSY, spill_unbind(self->fd, self->a.handle, 0, PAGE));
	ASSERT_EQ(0, spill_restore(self->fd, self->a.handle, 0, PAGE, 0));
	EXPECT_EQ(0, spill_unbind(self->fd, self->a.handle, 0, self->len));
	EXPECT_EQ(-ENOLINK, spill_unbind(self->fd, self->a.handle, 0, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fd, self->a.handle, 0, PAGE,
					first, PAGE));
	EXPECT_EQ(0, spill_bind(self->fd, self->a.handle, 0, self->len,
				self->file, PAGE));
	EXPECT_EQ(0, spill_evict(self->fd, self->a.handle, 0, self->len,
				 self->map, PAGE));
	EXPECT_EQ(-1, pattern_check(self->map, 0, variant->pages, 0x5eed, PAGE));
	free(first);
}

FIXTURE(args) {
	int fd;
	int file;
	char path[256];
	unsigned char *map;
	struct ortmem_alloc_args a;
};

#define ARGS_PAGES 8

FIXTURE_SETUP(args)
{
	self->file = -1;
	self->map = MAP_FAILED;
	OPEN_OR_SKIP(self->fd);
	self->file = spill_file_open("args", 0, self->path, sizeof(self->path));
	if (self->file < 0)
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR): %s", strerror(errno));
	ASSERT_EQ(0, region_alloc(self->fd, ARGS_PAGES * PAGE, ORTMEM_NUMA_ANY,
				  0, &self->a));
	self->map = region_map(self->fd, ARGS_PAGES * PAGE, self->a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, self->map);
}

FIXTURE_TEARDOWN(args)
{
	if (self->map != MAP_FAILED)
		munmap(self->map, ARGS_PAGES * PAGE);
	if (self->file >= 0) {
		close(self->file);
		unlink(self->path);
	}
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(args, evicting_an_unbound_or_partly_bound_range_is_refused)
{
	int64_t pinned = pinned_bytes();
	uint32_t h = self->a.handle;

	EXPECT_EQ(-ENOLINK, spill_evict(self->fd, h, 0, PAGE, self->map, PAGE));
	ASSERT_EQ(0, spill_bind(self->fd, h, 2 * PAGE, 4 * PAGE, self->file, 0));
	ASSERT_EQ((ssize_t)(4 * PAGE), pwrite(self->file, self->map + 2 * PAGE,
					      4 * PAGE, 0));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fd, h, 0, ARGS_PAGES * PAGE,
					self->map, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fd, h, PAGE, 2 * PAGE,
					self->map + PAGE, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fd, h, 5 * PAGE, 2 * PAGE,
					self->map + 5 * PAGE, PAGE));
	EXPECT_EQ(pinned, pinned_bytes());
	/* CRCs of other pages (distinct contents): nothing is evicted. */
	self->map[PAGE] = 1;
	EXPECT_EQ(-EBADMSG, spill_evict(self->fd, h, 2 * PAGE, 4 * PAGE,
					self->map + PAGE, PAGE));
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(0, spill_evict(self->fd, h, 2 * PAGE, 4 * PAGE,
				 self->map + 2 * PAGE, PAGE));
	EXPECT_EQ(pinned - (int64_t)(4 * PAGE), pinned_bytes());
}

TEST_F(args, bind_checks_its_arguments)
{
	struct ortmem_bind_args b;
	uint32_t h = self->a.handle;
	int ro, fds[2];

	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 1, PAGE, self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE - 1, self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, 0, self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE, self->file, 512));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, (ARGS_PAGES + 1) * PAGE,
				      self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, ARGS_PAGES * PAGE, PAGE,
				      self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, UINT64_MAX - 4095, 8192,
				      self->file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE, self->file,
				      UINT64_MAX - 4095));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE, self->file,
				      (1ull << 63) - 4096));
	EXPECT_EQ(-ENOENT, spill_bind(self->fd, h + 1, 0, PAGE, self->file, 0));
	EXPECT_EQ(-ENOENT, spill_bind(self->fd, 0, 0, PAGE, self->file, 0));
	EXPECT_EQ(-EBADF, spill_bind(self->fd, h, 0, PAGE, -1, 0));
	EXPECT_EQ(-EBADF, spill_bind(self->fd, h, 0, PAGE, 9999, 0));
	ro = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, spill_bind(self->fd, h, 0, PAGE, ro, 0));
	close(ro);
	ASSERT_EQ(0, pipe(fds));
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE, fds[0], 0));
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(-EINVAL, spill_bind(self->fd, h, 0, PAGE, self->fd, 0));
	memset(&b, 0, sizeof(b));
	b.handle = h;
	b.length = PAGE;
	b.fd = self->file;
	b.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.pad = 0;
	b.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing of the above bound anything. */
	EXPECT_EQ(-ENOLINK, spill_unbind(self->fd, h, 0, PAGE));
}

TEST_F(args, range_commands_check_their_arguments)
{
	struct ortmem_spill_stats_args st;
	struct ortmem_evict_args e;
	uint32_t h = self->a.handle;

	EXPECT_EQ(-EINVAL, spill_restore(self->fd, h, 0, PAGE, 2));
	EXPECT_EQ(-EINVAL, spill_restore(self->fd, h, 0, PAGE, 1u << 31));
	EXPECT_EQ(-EINVAL, spill_restore(self->fd, h, 4096 + 1, PAGE, 0));
	EXPECT_EQ(-EINVAL, spill_restore(self->fd, h, 0, UINT64_MAX & ~4095ull, 0));
	EXPECT_EQ(-ENOENT, spill_restore(self->fd, 77, 0, PAGE, 0));
	EXPECT_EQ(0, spill_restore(self->fd, h, 0, PAGE, 0));	/* resident */
	EXPECT_EQ(-EINVAL, spill_range(self->fd, ORTMEM_IOC_UNBIND, h, 0, PAGE, 1));
	EXPECT_EQ(-EINVAL, spill_unbind(self->fd, h, 0, 0));
	ASSERT_EQ(0, spill_bind(self->fd, h, 0, ARGS_PAGES * PAGE, self->file, 0));
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.length = PAGE;
	e.crcs = 8;	/* not a readable address */
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EFAULT, errno);
	e.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EINVAL, errno);
	e.flags = 0;
	e.length = 2 * PAGE * (uint64_t)ORTMEM_EVICT_MAX_PAGES;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EINVAL, errno);	/* beyond the region first */
	memset(&st, 0, sizeof(st));
	st.handle = h;
	st.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_SPILL_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.flags = 0;
	st.fault_backs = 1;
	EXPECT_EQ(-1, ioctl(self->fd, ORTMEM_IOC_SPILL_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, spill_stats(self->fd, 999, &st));
	ASSERT_EQ(0, spill_stats(self->fd, h, &st));
	EXPECT_EQ(ARGS_PAGES * PAGE, st.bound_bytes);
	EXPECT_EQ(ARGS_PAGES * PAGE, st.resident_bytes);
}

TEST(feature_bit_is_reported)
{
	struct ortmem_version_args v = { 0 };
	int fd;

	OPEN_OR_SKIP(fd);
	ASSERT_EQ(0, ioctl(fd, ORTMEM_IOC_GET_VERSION, &v));
	EXPECT_TRUE(v.features & ORTMEM_FEAT_SPILL_MAP);
	close(fd);
}

TEST_HARNESS_MAIN
