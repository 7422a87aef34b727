// SPDX-License-Identifier: MIT
/*
 * The disk-spill mapping: bind a range of a region to an extent of a spill
 * file on the VM's ext4 disk (ORTMEM_VM_SPILL_DIR), write it there with
 * O_DIRECT, evict it, and get exactly the same bytes back by touching it,
 * by RESTORE in both forms, and as the source of O_DIRECT and io_uring
 * writes; the charges fall and come back; an EVICT unmaps no other file's
 * mapping; the argument checks refuse what they must.  spillmap_fail.c has
 * the failures and the lifetime cases.
 */
#include <liburing.h>
#include <sys/stat.h>

#include "../harness.h"
#include "spill_fixture.h"

FIXTURE(spill) {
	struct spill_fx fx;
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
	spill_fx_setup(_metadata, &self->fx, "spill", O_DIRECT,
		       variant->pages * PAGE);
	/* The extent starts one page into the file: offsets are honoured. */
	spill_fx_write(_metadata, &self->fx, 0x5eed, PAGE);
}

FIXTURE_TEARDOWN(spill)
{
	spill_fx_teardown(_metadata, &self->fx, true);
}

/*
 * Fault-backs a sequential touch of @n evicted pages takes: the first reads
 * 16 pages, each next one where the last ended twice as many, up to 256.
 */
static uint64_t sequential_fault_backs(uint64_t n)
{
	uint64_t window = 16, faults = 0;

	while (n) {
		n -= n < window ? n : window;
		faults++;
		if (window < 256)
			window *= 2;
	}
	return faults;
}

/* Evict everything and check that the charges and counters show it. */
static void evict_all(struct __test_metadata *_metadata,
		      FIXTURE_DATA(spill) *self, uint64_t pages)
{
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes(), out = outstanding();

	ASSERT_EQ(0, spill_evict(self->fx.fd, self->fx.a.handle, 0, self->fx.len,
				 self->fx.map, PAGE));
	EXPECT_EQ(pinned - (int64_t)self->fx.len, pinned_bytes());
	EXPECT_EQ(out - (int64_t)pages, outstanding());
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(self->fx.len, st.evicted_bytes);
	EXPECT_EQ(0, st.resident_bytes);
	EXPECT_EQ(self->fx.len, st.bound_bytes);
	ASSERT_EQ(0, spill_stats(self->fx.fd, 0, &st));
	EXPECT_EQ(self->fx.len, st.evicted_bytes);
}

TEST_F(spill, touch_returns_the_bytes_written)
{
	uint64_t n = variant->pages, last = n - 1;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes();
	volatile unsigned char *p = self->fx.map;

	evict_all(_metadata, self, n);
	EXPECT_EQ(0, mapped_pages(self->fx.map, n));
	/* The last page first, then the first: each comes back alone. */
	(void)p[last * PAGE + PAGE - 1];
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(1, st.fault_backs);
	EXPECT_EQ(PAGE, st.resident_bytes);
	EXPECT_EQ(pinned - (int64_t)self->fx.len + (int64_t)PAGE, pinned_bytes());
	EXPECT_EQ(-1, pattern_check(self->fx.map + last * PAGE, last, 1, 0x5eed, PAGE));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, 1, 0x5eed, PAGE));
	/* Page 0 came with up to 15 more, mapped by the same fault. */
	EXPECT_EQ(n < 17 ? n : 17, mapped_pages(self->fx.map, n));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	/* Touched pages, and the pages read with them (read-ahead). */
	EXPECT_EQ(n, st.fault_backs + st.readahead);
	/* The last page alone, then a run growing from 16 to 256 pages. */
	EXPECT_EQ(n > 1 ? 1 + sequential_fault_backs(n - 1) : 1, st.fault_backs);
	EXPECT_EQ(n, mapped_pages(self->fx.map, n));
	EXPECT_EQ(0, st.restored);
	EXPECT_EQ(0, st.evicted_bytes);
	EXPECT_EQ(self->fx.len, st.resident_bytes);
	EXPECT_EQ(pinned, pinned_bytes());
	/* Written again, evicted again: the new bytes come back. */
	pattern_fill(self->fx.map, 0, n, 0xbeef, PAGE);
	ASSERT_EQ((ssize_t)self->fx.len, pwrite(self->fx.file, self->fx.map, self->fx.len, PAGE));
	evict_all(_metadata, self, n);
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0xbeef, PAGE));
}

TEST_F(spill, restore_fills_and_verifies)
{
	uint64_t n = variant->pages;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes();

	evict_all(_metadata, self, n);
	EXPECT_EQ(0, mapped_pages(self->fx.map, n));
	ASSERT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 0, self->fx.len, 0));
	/* Mapped by the restore: the touches below take no fault. */
	EXPECT_EQ(n, mapped_pages(self->fx.map, n));
	EXPECT_EQ(pinned, pinned_bytes());
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(n, st.restored);
	EXPECT_EQ(self->fx.len, st.resident_bytes);
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(0, st.fault_backs);	/* the touch found them resident */
	/* Restoring resident pages is a no-op. */
	EXPECT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 0, self->fx.len, 0));
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
	ASSERT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 0, self->fx.len,
				   ORTMEM_RESTORE_NOFILL));
	EXPECT_EQ(n, mapped_pages(self->fx.map, n));
	EXPECT_EQ(pinned, pinned_bytes());
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(n, st.restored);
	/* Never stale data: zeroes until userspace fills them. */
	EXPECT_EQ(0, self->fx.map[0]);
	EXPECT_EQ(0, self->fx.map[self->fx.len - 1]);
	/* The library's way: an io_uring read into the mapping. */
	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, self->fx.file, self->fx.map, self->fx.len, PAGE);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)self->fx.len, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(0, st.fault_backs);
}

static int evict_flags(int fd, uint32_t h, uint64_t off, uint64_t len,
		       uint32_t flags, uint64_t crcs)
{
	struct ortmem_evict_args e = { .handle = h, .flags = flags,
				       .offset = off, .length = len,
				       .crcs = crcs };

	return ioctl(fd, ORTMEM_IOC_EVICT, &e) ? -errno : 0;
}

#define spill_discard(fd, h, off, len) \
	evict_flags(fd, h, off, len, ORTMEM_EVICT_DISCARD, 0)

/*
 * EVICT_DISCARD, the undo of a promotion that failed half way: pages
 * restored without fill (zeroes, or anything userspace wrote since) are
 * dropped unchecked, keep the CRCs of their last evict, and a touch brings
 * the extent's bytes back, verified.  Pages never evicted since their bind
 * are refused, and so are a CRC array and unknown flags.
 */
TEST_F(spill, evict_discard_keeps_the_crcs_of_the_last_evict)
{
	uint64_t n = variant->pages, len = self->fx.len;
	uint32_t h = self->fx.a.handle;
	struct ortmem_spill_stats_args st;
	int64_t pinned = pinned_bytes(), out = outstanding(), sys_fb, sys_ev;
	uint32_t crc = 0;

	/* Bound but never evicted: no CRC to keep, nothing evicted. */
	EXPECT_EQ(-ENODATA, spill_discard(self->fx.fd, h, 0, len));
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(-EINVAL, evict_flags(self->fx.fd, h, 0, len,
				       ORTMEM_EVICT_DISCARD, (uintptr_t)&crc));
	EXPECT_EQ(-EINVAL, evict_flags(self->fx.fd, h, 0, len, 2, 0));
	EXPECT_EQ(-EINVAL, evict_flags(self->fx.fd, h, 0, len,
				       ORTMEM_EVICT_DISCARD | (1u << 31), 0));
	EXPECT_EQ(pinned, pinned_bytes());

	evict_all(_metadata, self, n);
	EXPECT_EQ(-EALREADY, spill_discard(self->fx.fd, h, 0, len));
	ASSERT_EQ(0, spill_restore(self->fx.fd, h, 0, len, ORTMEM_RESTORE_NOFILL));
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(0, self->fx.map[len - 1]);
	/* Zeroes, and a half-written first page: dropped all the same. */
	memset(self->fx.map, 0x77, PAGE / 2);
	sys_ev = attr("spill/evicted_bytes");
	ASSERT_EQ(0, spill_discard(self->fx.fd, h, 0, len));
	EXPECT_EQ(sys_ev + (int64_t)len, attr("spill/evicted_bytes"));
	EXPECT_EQ(pinned - (int64_t)len, pinned_bytes());
	EXPECT_EQ(out - (int64_t)n, outstanding());
	EXPECT_EQ(0, mapped_pages(self->fx.map, n));
	ASSERT_EQ(0, spill_stats(self->fx.fd, h, &st));
	EXPECT_EQ(len, st.evicted_bytes);
	EXPECT_EQ(0, st.resident_bytes);
	EXPECT_EQ(len, st.bound_bytes);
	EXPECT_EQ(0, st.fault_backs);

	/* One touch, one fault-back, the extent's bytes. */
	sys_fb = attr("spill/fault_backs");
	EXPECT_EQ(-1, pattern_check(self->fx.map + (n - 1) * PAGE, n - 1, 1,
				    0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, h, &st));
	EXPECT_EQ(1, st.fault_backs);
	EXPECT_EQ(0, st.failed[ORTMEM_SPILL_FAIL_CHECKSUM]);
	EXPECT_EQ(sys_fb + 1, attr("spill/fault_backs"));
	EXPECT_EQ(pinned - (int64_t)len + (int64_t)PAGE, pinned_bytes());
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0x5eed, PAGE));
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(out, outstanding());
	EXPECT_EQ(sys_ev, attr("spill/evicted_bytes"));

	/* Touched back: discard again, then a verified restore. */
	ASSERT_EQ(0, spill_discard(self->fx.fd, h, 0, len));
	EXPECT_EQ(pinned - (int64_t)len, pinned_bytes());
	ASSERT_EQ(0, spill_restore(self->fx.fd, h, 0, len, 0));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, h, &st));
	EXPECT_EQ(0, st.failed[ORTMEM_SPILL_FAIL_CHECKSUM]);

	/* A new binding has no CRCs of its own yet. */
	ASSERT_EQ(0, spill_unbind(self->fx.fd, h, 0, len));
	ASSERT_EQ(0, spill_bind(self->fx.fd, h, 0, len, self->fx.file, PAGE));
	EXPECT_EQ(-ENODATA, spill_discard(self->fx.fd, h, 0, len));
	EXPECT_EQ(pinned, pinned_bytes());
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
	EXPECT_EQ((ssize_t)self->fx.len, pwrite(other, self->fx.map, self->fx.len, 0));
	ASSERT_EQ(0, posix_memalign(&back, PAGE, self->fx.len));
	EXPECT_EQ((ssize_t)self->fx.len, pread(other, back, self->fx.len, 0));
	EXPECT_EQ(-1, pattern_check(back, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
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
	io_uring_prep_write(sqe, other, self->fx.map, self->fx.len, 0);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ((int)self->fx.len, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	ASSERT_EQ(0, posix_memalign(&back, PAGE, self->fx.len));
	EXPECT_EQ((ssize_t)self->fx.len, pread(other, back, self->fx.len, 0));
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
	memcpy(first, self->fx.map, PAGE);
	EXPECT_EQ(-EBUSY, spill_bind(self->fx.fd, self->fx.a.handle, 0, PAGE,
				     self->fx.file, 0));
	ASSERT_EQ(0, spill_evict(self->fx.fd, self->fx.a.handle, 0, PAGE, first, PAGE));
	EXPECT_EQ(-EALREADY, spill_evict(self->fx.fd, self->fx.a.handle, 0, PAGE,
					 first, PAGE));
	EXPECT_EQ(-EBUSY, spill_unbind(self->fx.fd, self->fx.a.handle, 0, PAGE));
	ASSERT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 0, PAGE, 0));
	EXPECT_EQ(0, spill_unbind(self->fx.fd, self->fx.a.handle, 0, self->fx.len));
	EXPECT_EQ(-ENOLINK, spill_unbind(self->fx.fd, self->fx.a.handle, 0, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fx.fd, self->fx.a.handle, 0, PAGE,
					first, PAGE));
	EXPECT_EQ(0, spill_bind(self->fx.fd, self->fx.a.handle, 0, self->fx.len,
				self->fx.file, PAGE));
	EXPECT_EQ(0, spill_evict(self->fx.fd, self->fx.a.handle, 0, self->fx.len,
				 self->fx.map, PAGE));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, variant->pages, 0x5eed, PAGE));
	free(first);
}

/*
 * Every open file's offsets start at page 1, so a second file's region of
 * the same size has the same offsets.  EVICT unmaps the range from every
 * mapping of its own file (a second mapping of the region too, else its
 * freed pages would stay mapped) and from no mapping of another file: the
 * second file's pages keep their entries (mincore) and their bytes.
 */
TEST_F(spill, evict_leaves_other_files_mappings_alone)
{
	uint64_t n = variant->pages, len = self->fx.len;
	struct ortmem_alloc_args b;
	unsigned char *other, *again;
	int fd2 = open(ORTMEM_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, region_alloc(fd2, len, ORTMEM_NUMA_ANY, 0, &b));
	/* The premise: the same offsets in both files. */
	ASSERT_EQ(self->fx.a.mmap_offset, b.mmap_offset);
	other = region_map(fd2, len, b.mmap_offset, PROT_READ | PROT_WRITE,
			   MAP_SHARED);
	ASSERT_NE(MAP_FAILED, other);
	again = region_map(self->fx.fd, len, self->fx.a.mmap_offset, PROT_READ,
			   MAP_SHARED);
	ASSERT_NE(MAP_FAILED, again);
	pattern_fill(other, 0, n, 0xf00d, PAGE);
	EXPECT_EQ(-1, pattern_check(again, 0, n, 0x5eed, PAGE));
	ASSERT_EQ(n, mapped_pages(other, n));
	ASSERT_EQ(n, mapped_pages(again, n));
	evict_all(_metadata, self, n);
	EXPECT_EQ(0, mapped_pages(self->fx.map, n));
	EXPECT_EQ(0, mapped_pages(again, n));
	EXPECT_EQ(n, mapped_pages(other, n));
	EXPECT_EQ(-1, pattern_check(other, 0, n, 0xf00d, PAGE));
	/* The second mapping of the evicted region faults the bytes back. */
	EXPECT_EQ(-1, pattern_check(again, 0, n, 0x5eed, PAGE));
	munmap(again, len);
	munmap(other, len);
	close(fd2);
}

FIXTURE(args) {
	struct spill_fx fx;
};

#define ARGS_PAGES 8

FIXTURE_SETUP(args)
{
	spill_fx_setup(_metadata, &self->fx, "args", 0, ARGS_PAGES * PAGE);
}

FIXTURE_TEARDOWN(args)
{
	spill_fx_teardown(_metadata, &self->fx, false);
}

TEST_F(args, evicting_an_unbound_or_partly_bound_range_is_refused)
{
	int64_t pinned = pinned_bytes();
	uint32_t h = self->fx.a.handle;

	EXPECT_EQ(-ENOLINK, spill_evict(self->fx.fd, h, 0, PAGE, self->fx.map, PAGE));
	ASSERT_EQ(0, spill_bind(self->fx.fd, h, 2 * PAGE, 4 * PAGE, self->fx.file, 0));
	ASSERT_EQ((ssize_t)(4 * PAGE), pwrite(self->fx.file, self->fx.map + 2 * PAGE,
					      4 * PAGE, 0));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fx.fd, h, 0, ARGS_PAGES * PAGE,
					self->fx.map, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fx.fd, h, PAGE, 2 * PAGE,
					self->fx.map + PAGE, PAGE));
	EXPECT_EQ(-ENOLINK, spill_evict(self->fx.fd, h, 5 * PAGE, 2 * PAGE,
					self->fx.map + 5 * PAGE, PAGE));
	EXPECT_EQ(pinned, pinned_bytes());
	/* CRCs of other pages (distinct contents): nothing is evicted. */
	self->fx.map[PAGE] = 1;
	EXPECT_EQ(-EBADMSG, spill_evict(self->fx.fd, h, 2 * PAGE, 4 * PAGE,
					self->fx.map + PAGE, PAGE));
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(0, spill_evict(self->fx.fd, h, 2 * PAGE, 4 * PAGE,
				 self->fx.map + 2 * PAGE, PAGE));
	EXPECT_EQ(pinned - (int64_t)(4 * PAGE), pinned_bytes());
}

TEST_F(args, bind_checks_its_arguments)
{
	struct ortmem_bind_args b;
	uint32_t h = self->fx.a.handle;
	int ro, fds[2];

	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 1, PAGE, self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE - 1, self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, 0, self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE, self->fx.file, 512));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, (ARGS_PAGES + 1) * PAGE,
				      self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, ARGS_PAGES * PAGE, PAGE,
				      self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, UINT64_MAX - 4095, 8192,
				      self->fx.file, 0));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE, self->fx.file,
				      UINT64_MAX - 4095));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE, self->fx.file,
				      (1ull << 63) - 4096));
	EXPECT_EQ(-ENOENT, spill_bind(self->fx.fd, h + 1, 0, PAGE, self->fx.file, 0));
	EXPECT_EQ(-ENOENT, spill_bind(self->fx.fd, 0, 0, PAGE, self->fx.file, 0));
	EXPECT_EQ(-EBADF, spill_bind(self->fx.fd, h, 0, PAGE, -1, 0));
	EXPECT_EQ(-EBADF, spill_bind(self->fx.fd, h, 0, PAGE, 9999, 0));
	ro = open(self->fx.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, spill_bind(self->fx.fd, h, 0, PAGE, ro, 0));
	close(ro);
	ASSERT_EQ(0, pipe(fds));
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE, fds[0], 0));
	close(fds[0]);
	close(fds[1]);
	EXPECT_EQ(-EINVAL, spill_bind(self->fx.fd, h, 0, PAGE, self->fx.fd, 0));
	memset(&b, 0, sizeof(b));
	b.handle = h;
	b.length = PAGE;
	b.fd = self->fx.file;
	b.pad = 1;
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.pad = 0;
	b.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	/* Nothing of the above bound anything. */
	EXPECT_EQ(-ENOLINK, spill_unbind(self->fx.fd, h, 0, PAGE));
}

TEST_F(args, range_commands_check_their_arguments)
{
	struct ortmem_spill_stats_args st;
	struct ortmem_evict_args e;
	uint32_t h = self->fx.a.handle;

	EXPECT_EQ(-EINVAL, spill_restore(self->fx.fd, h, 0, PAGE, 2));
	EXPECT_EQ(-EINVAL, spill_restore(self->fx.fd, h, 0, PAGE, 1u << 31));
	EXPECT_EQ(-EINVAL, spill_restore(self->fx.fd, h, 4096 + 1, PAGE, 0));
	EXPECT_EQ(-EINVAL, spill_restore(self->fx.fd, h, 0, UINT64_MAX & ~4095ull, 0));
	EXPECT_EQ(-ENOENT, spill_restore(self->fx.fd, 77, 0, PAGE, 0));
	EXPECT_EQ(0, spill_restore(self->fx.fd, h, 0, PAGE, 0));	/* resident */
	EXPECT_EQ(-EINVAL, spill_range(self->fx.fd, ORTMEM_IOC_UNBIND, h, 0, PAGE, 1));
	EXPECT_EQ(-EINVAL, spill_unbind(self->fx.fd, h, 0, 0));
	ASSERT_EQ(0, spill_bind(self->fx.fd, h, 0, ARGS_PAGES * PAGE, self->fx.file, 0));
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.length = PAGE;
	e.crcs = 8;	/* not a readable address */
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EFAULT, errno);
	e.flags = 2;	/* unknown */
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EINVAL, errno);
	e.flags = ORTMEM_EVICT_DISCARD;	/* takes no CRC array */
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EINVAL, errno);
	e.flags = 0;
	e.length = 2 * PAGE * (uint64_t)ORTMEM_EVICT_MAX_PAGES;
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_EVICT, &e));
	EXPECT_EQ(EINVAL, errno);	/* beyond the region first */
	memset(&st, 0, sizeof(st));
	st.handle = h;
	st.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_SPILL_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	st.flags = 0;
	st.fault_backs = 1;
	EXPECT_EQ(-1, ioctl(self->fx.fd, ORTMEM_IOC_SPILL_STATS, &st));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-ENOENT, spill_stats(self->fx.fd, 999, &st));
	ASSERT_EQ(0, spill_stats(self->fx.fd, h, &st));
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
	EXPECT_TRUE(v.features & ORTMEM_FEAT_EVICT_DISCARD);
	close(fd);
}

TEST_HARNESS_MAIN
