// SPDX-License-Identifier: MIT
/*
 * The disk-spill mapping when things go wrong or get odd: an extent
 * flipped on disk, a spill file truncated, a fault-back over the memlock
 * limit, an injected read error (each SIGBUS and nothing else, counted);
 * kill -9 with evicted ranges; eight threads on one evicted page; fork,
 * mremap and partial munmap of a range with evicted pages.
 */
#include <pthread.h>
#include <setjmp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "../harness.h"
#include "spill_fixture.h"

#define NOBODY 65534
#define PAGES 16
#define LEN (PAGES * PAGE)

static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_count;

static void on_sigbus(int sig)
{
	(void)sig;
	bus_count++;
	siglongjmp(bus_jmp, 1);
}

/* Read a byte; 1 when the read got SIGBUS, 0 when it read @*out. */
static int touch(volatile unsigned char *p, unsigned char *out)
{
	struct sigaction sa = { .sa_handler = on_sigbus };

	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(bus_jmp, 1))
		return 1;
	*out = *p;
	return 0;
}

static int64_t failed_attr(const char *cause)
{
	char name[64];

	snprintf(name, sizeof(name), "spill/failed_%s", cause);
	return attr(name);
}

FIXTURE(fail) {
	struct spill_fx fx;
};

FIXTURE_SETUP(fail)
{
	spill_fx_setup(_metadata, &self->fx, "fail", O_DIRECT, LEN);
	spill_fx_write(_metadata, &self->fx, 0xfa11, 0);
	ASSERT_EQ(0, spill_evict(self->fx.fd, self->fx.a.handle, 0, LEN,
				 self->fx.map, PAGE));
}

FIXTURE_TEARDOWN(fail)
{
	spill_fx_teardown(_metadata, &self->fx, true);
}

TEST_F(fail, flipped_byte_on_disk_gets_sigbus_until_repaired)
{
	struct ortmem_spill_stats_args st;
	int64_t before = failed_attr("checksum");
	unsigned char *page, v = 0;

	ASSERT_EQ(0, posix_memalign((void **)&page, PAGE, PAGE));
	ASSERT_EQ((ssize_t)PAGE, pread(self->fx.file, page, PAGE, 3 * PAGE));
	page[100] ^= 0x40;
	ASSERT_EQ((ssize_t)PAGE, pwrite(self->fx.file, page, PAGE, 3 * PAGE));
	EXPECT_EQ(1, touch(self->fx.map + 3 * PAGE + 100, &v));
	EXPECT_EQ(1, touch(self->fx.map + 3 * PAGE, &v));	/* every touch */
	EXPECT_EQ(before + 2, failed_attr("checksum"));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(2, st.failed[ORTMEM_SPILL_FAIL_CHECKSUM]);
	EXPECT_EQ(0, st.fault_backs);
	EXPECT_EQ(LEN, st.evicted_bytes);
	/* Neighbours are fine; RESTORE says the same as the touch. */
	EXPECT_EQ(0, touch(self->fx.map + 2 * PAGE, &v));
	EXPECT_EQ(-EBADMSG, spill_restore(self->fx.fd, self->fx.a.handle, 3 * PAGE, PAGE, 0));
	/* Repaired on disk: the page comes back right. */
	page[100] ^= 0x40;
	ASSERT_EQ((ssize_t)PAGE, pwrite(self->fx.file, page, PAGE, 3 * PAGE));
	EXPECT_EQ(0, touch(self->fx.map + 3 * PAGE + 100, &v));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, PAGES, 0xfa11, PAGE));
	free(page);
}

TEST_F(fail, truncated_spill_file_gets_sigbus)
{
	struct ortmem_spill_stats_args st;
	int64_t before = failed_attr("read");
	unsigned char v = 0;

	ASSERT_EQ(0, ftruncate(self->fx.file, 4 * PAGE));
	EXPECT_EQ(0, touch(self->fx.map + 3 * PAGE, &v));	/* below the cut */
	EXPECT_EQ(1, touch(self->fx.map + 4 * PAGE, &v));
	EXPECT_EQ(1, touch(self->fx.map + LEN - 1, &v));
	EXPECT_EQ(before + 2, failed_attr("read"));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(2, st.failed[ORTMEM_SPILL_FAIL_READ]);
	EXPECT_EQ(-ENODATA, spill_restore(self->fx.fd, self->fx.a.handle, 0, LEN, 0));
	/* The region goes away with evicted pages: teardown checks the counts. */
}

TEST_F(fail, injected_read_error_gets_sigbus_and_eio)
{
	int knob = open("/sys/kernel/debug/ortmem/fail", O_WRONLY | O_CLOEXEC);
	unsigned char v = 0;

	if (knob < 0)
		SKIP("no fault injection (module not built with ORTMEM_DEBUG=1)");
	/* The last page: no read-ahead run whose failure it would retry alone. */
	ASSERT_LT(0, write(knob, "spill_read 1", 12));
	EXPECT_EQ(1, touch(self->fx.map + LEN - 1, &v));
	ASSERT_LT(0, write(knob, "spill_read 1", 12));
	EXPECT_EQ(-EIO, spill_restore(self->fx.fd, self->fx.a.handle, 0, LEN, 0));
	ASSERT_LT(0, write(knob, "off", 3));
	close(knob);
	EXPECT_EQ(0, touch(self->fx.map, &v));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, PAGES, 0xfa11, PAGE));
}

/*
 * In a child running as nobody with a memlock limit of PAGES pages: evict
 * a region (its charge goes back), fill the limit with another region, then
 * touch an evicted page.  Exit 0 when the touch got SIGBUS and was counted.
 */
static int memlock_child(const char *dir)
{
	struct rlimit rl = { .rlim_cur = LEN, .rlim_max = LEN };
	struct ortmem_spill_stats_args st;
	struct ortmem_alloc_args a, b;
	unsigned char *map, v;
	char path[256];
	int fd, file;

	snprintf(path, sizeof(path), "%s/memlock.%d", dir, (int)getpid());
	file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	fd = dev_open();
	if (file < 0 || fd < 0 || setrlimit(RLIMIT_MEMLOCK, &rl) ||
	    setgid(NOBODY) || setuid(NOBODY))
		return 10;
	unlink(path);
	if (region_alloc(fd, LEN, ORTMEM_NUMA_ANY, 0, &a))
		return 11;
	map = region_map(fd, LEN, a.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (map == MAP_FAILED)
		return 12;
	pattern_fill(map, 0, PAGES, 7, PAGE);
	if (spill_bind(fd, a.handle, 0, LEN, file, 0) ||
	    pwrite(file, map, LEN, 0) != (ssize_t)LEN ||
	    spill_evict(fd, a.handle, 0, LEN, map, PAGE))
		return 13;
	if (region_alloc(fd, LEN, ORTMEM_NUMA_ANY, 0, &b))
		return 14;	/* the evicted charge was given back */
	if (!touch(map, &v))
		return 15;	/* over the limit: must not come back */
	if (spill_restore(fd, a.handle, 0, PAGE, 0) != -ENOMEM)
		return 16;
	if (spill_stats(fd, 0, &st) || st.failed[ORTMEM_SPILL_FAIL_CHARGE] != 2)
		return 17;
	if (region_free(fd, b.handle))
		return 18;
	if (touch(map, &v) || pattern_check(map, 0, PAGES, 7, PAGE) != -1)
		return 19;	/* room again: it comes back right */
	return 0;
}

TEST(fault_back_over_the_memlock_limit_gets_sigbus)
{
	const char *dir = getenv("ORTMEM_VM_SPILL_DIR");
	int64_t pinned = pinned_bytes(), before = failed_attr("charge");
	int status = -1, fd;
	pid_t pid;

	OPEN_OR_SKIP(fd);
	close(fd);
	if (!dir || !*dir)
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR)");
	if (geteuid() != 0)
		SKIP("needs root to switch users");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(memlock_child(dir));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(before + 2, failed_attr("charge"));
	EXPECT_EQ(pinned, pinned_bytes());
}

TEST(kill_9_with_evicted_ranges_drops_pages_and_files)
{
	const char *dir = getenv("ORTMEM_VM_SPILL_DIR");
	int64_t out = outstanding(), files = attr("spill/bound_files");
	int64_t pinned = pinned_bytes(), evicted = attr("spill/evicted_bytes");
	const uint64_t len = 8 * MIB;
	struct statvfs before, now;
	char path[256];
	int pipefd[2], i;
	uint64_t used;
	pid_t pid;
	char c;

	if (!dir || !*dir)
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR)");
	ASSERT_EQ(0, statvfs(dir, &before));
	ASSERT_EQ(0, pipe(pipefd));
	snprintf(path, sizeof(path), "%s/kill9.%d", dir, (int)getpid());
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ortmem_alloc_args a;
		unsigned char *map;
		int fd = dev_open();
		int file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);

		if (fd < 0 || file < 0 || region_alloc(fd, len, ORTMEM_NUMA_ANY, 0, &a))
			_exit(10);
		map = region_map(fd, len, a.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED);
		if (map == MAP_FAILED)
			_exit(11);
		pattern_fill(map, 0, len / PAGE, 9, PAGE);
		if (spill_bind(fd, a.handle, 0, len, file, 0) ||
		    pwrite(file, map, len, 0) != (ssize_t)len ||
		    spill_evict(fd, a.handle, 0, len / 2, map, PAGE))
			_exit(12);
		close(file);	/* only the module holds the file now */
		unlink(path);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(13);
		pause();
		_exit(14);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	EXPECT_EQ(files + 1, attr("spill/bound_files"));
	EXPECT_EQ(evicted + (int64_t)len / 2, attr("spill/evicted_bytes"));
	/* Unlinked but held by the module: its blocks are still used. */
	ASSERT_EQ(0, statvfs(dir, &now));
	used = (before.f_bfree - now.f_bfree) * before.f_bsize;
	EXPECT_GE(used, len);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	for (i = 0; i < 200 && outstanding() != out; i++)
		usleep(10000);
	EXPECT_EQ(out, outstanding());
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(evicted, attr("spill/evicted_bytes"));
	/* The module's file reference is dropped: the space comes back. */
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, statvfs(dir, &now));
		if (attr("spill/bound_files") == files &&
		    now.f_bfree * now.f_bsize + len / 2 > before.f_bfree * before.f_bsize)
			break;
		usleep(10000);
	}
	EXPECT_EQ(files, attr("spill/bound_files"));
	EXPECT_GT(now.f_bfree * now.f_bsize + len / 2, before.f_bfree * before.f_bsize);
}

struct toucher {
	pthread_barrier_t *bar;
	volatile unsigned char *p;
	uint64_t word;
};

static void *touch_thread(void *arg)
{
	struct toucher *t = arg;

	pthread_barrier_wait(t->bar);
	t->word = *(volatile uint64_t *)(t->p + 808);
	return NULL;
}

TEST_F(fail, eight_threads_on_one_evicted_page_fault_it_in_once)
{
	struct ortmem_spill_stats_args st;
	struct toucher t[8];
	pthread_t th[8];
	pthread_barrier_t bar;
	int i;

	pthread_barrier_init(&bar, NULL, 8);
	for (i = 0; i < 8; i++) {
		t[i].bar = &bar;
		t[i].p = self->fx.map + 5 * PAGE;
		t[i].word = 0;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, touch_thread, &t[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(pattern_word(0xfa11, 5, 808 / 8), t[i].word);
	}
	pthread_barrier_destroy(&bar);
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(1, st.fault_backs);
	/* Pages 6..15 came with it, in the same read. */
	EXPECT_EQ(PAGES - 6, st.readahead);
	EXPECT_EQ((PAGES - 5) * PAGE, st.resident_bytes);
}

TEST_F(fail, restore_maps_the_range_in_each_mapping_of_it)
{
	struct ortmem_spill_stats_args st;
	unsigned char *again, *middle;

	again = region_map(self->fx.fd, LEN, self->fx.a.mmap_offset,
			   PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, again);
	/* Pages 4..11 only. */
	middle = region_map(self->fx.fd, 8 * PAGE, self->fx.a.mmap_offset + 4 * PAGE,
			    PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, middle);
	EXPECT_EQ(0, mapped_pages(self->fx.map, PAGES));
	/* Pages 2..13, with both forms. */
	ASSERT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 2 * PAGE,
				   6 * PAGE, 0));
	ASSERT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 8 * PAGE,
				   6 * PAGE, ORTMEM_RESTORE_NOFILL));
	EXPECT_EQ(12, mapped_pages(self->fx.map, PAGES));
	EXPECT_EQ(12, mapped_pages(again, PAGES));
	EXPECT_EQ(8, mapped_pages(middle, 8));
	EXPECT_EQ(0, mapped_pages(self->fx.map, 2));
	EXPECT_EQ(0, mapped_pages(self->fx.map + 14 * PAGE, 2));
	/* The same pages under each mapping: the filled ones verified. */
	EXPECT_EQ(-1, pattern_check(again + 2 * PAGE, 2, 6, 0xfa11, PAGE));
	EXPECT_EQ(-1, pattern_check(middle, 4, 4, 0xfa11, PAGE));
	again[9 * PAGE] = 0x77;
	EXPECT_EQ(0x77, self->fx.map[9 * PAGE]);
	EXPECT_EQ(0x77, middle[5 * PAGE]);
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(12, st.restored);
	EXPECT_EQ(0, st.fault_backs);
	munmap(middle, 8 * PAGE);
	munmap(again, LEN);
}

TEST_F(fail, fork_child_has_no_mapping_parent_still_faults_back)
{
	int status = -1;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		(void)*(volatile unsigned char *)self->fx.map;	/* VM_DONTCOPY */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, PAGES, 0xfa11, PAGE));
}

TEST_F(fail, mremap_moves_evicted_pages_with_the_mapping)
{
	unsigned char *spot, *moved;

	spot = mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, spot);
	moved = mremap(self->fx.map, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED, spot);
	ASSERT_EQ((uintptr_t)spot, (uintptr_t)moved);
	self->fx.map = moved;
	EXPECT_EQ(-1, pattern_check(moved + LEN - PAGE, PAGES - 1, 1, 0xfa11, PAGE));
	EXPECT_EQ(-1, pattern_check(moved, 0, PAGES, 0xfa11, PAGE));
	/* Growing is refused (VM_DONTEXPAND), evicted or not. */
	EXPECT_EQ(MAP_FAILED, mremap(moved, LEN, 2 * LEN, 0));
}

TEST_F(fail, partial_munmap_of_evicted_pages)
{
	struct ortmem_spill_stats_args st;

	ASSERT_EQ(0, munmap(self->fx.map + 4 * PAGE, 8 * PAGE));
	/* The tail first: its read-ahead stops at the region's end. */
	EXPECT_EQ(-1, pattern_check(self->fx.map + 12 * PAGE, 12, 4, 0xfa11, PAGE));
	ASSERT_EQ(0, spill_stats(self->fx.fd, self->fx.a.handle, &st));
	EXPECT_EQ(4 * PAGE, st.resident_bytes);
	EXPECT_EQ(12 * PAGE, st.evicted_bytes);
	/* The head's read-ahead brings the unmapped middle too. */
	EXPECT_EQ(-1, pattern_check(self->fx.map, 0, 4, 0xfa11, PAGE));
	/* The unmapped middle still comes back through RESTORE. */
	EXPECT_EQ(0, spill_restore(self->fx.fd, self->fx.a.handle, 0, LEN, 0));
	ASSERT_EQ(0, munmap(self->fx.map, 4 * PAGE));
	ASSERT_EQ(0, munmap(self->fx.map + 12 * PAGE, 4 * PAGE));
	self->fx.map = MAP_FAILED;
}

TEST_HARNESS_MAIN
