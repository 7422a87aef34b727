// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Regions and their mappings: write and read back, zeroed pages, every bad
 * mmap refused, partial mappings, free while mapped, close, and fork (also
 * after madvise(MADV_DOFORK)).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/personality.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

FIXTURE(rg) {
	int fd;
	int64_t pinned;
	int64_t out;
	struct ortmem_alloc_args a;
};

FIXTURE_SETUP(rg)
{
	OPEN_OR_SKIP(self->fd);
	self->pinned = pinned_bytes();
	self->out = outstanding();
	ASSERT_EQ(0, region_alloc(self->fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, &self->a));
}

FIXTURE_TEARDOWN(rg)
{
	if (self->fd >= 0) {
		close(self->fd);
		EXPECT_EQ(self->pinned, pinned_bytes());
		EXPECT_EQ(self->out, outstanding());
	}
}

TEST_F(rg, map_write_read_free)
{
	uint64_t *p = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
				 PROT_READ | PROT_WRITE, MAP_SHARED);
	uint64_t *q;
	size_t i, n = 16 * PAGE / sizeof(*p);

	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < n; i++)
		p[i] = i * 0x9e3779b97f4a7c15ull;
	/* A second mapping sees the same pages. */
	q = region_map(self->fd, 16 * PAGE, self->a.mmap_offset, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, q);
	for (i = 0; i < n; i++)
		if (q[i] != i * 0x9e3779b97f4a7c15ull)
			break;
	EXPECT_EQ(n, i);
	EXPECT_EQ(0, munmap(q, 16 * PAGE));
	EXPECT_EQ(0, munmap(p, 16 * PAGE));
	EXPECT_EQ(0, region_free(self->fd, self->a.handle));
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->out, outstanding());
}

TEST_F(rg, pages_are_zeroed)
{
	struct ortmem_alloc_args b;
	unsigned char *p;
	size_t i;
	int round;

	/* Dirty pages, give them back, and take new ones: all zero. */
	for (round = 0; round < 2; round++) {
		ASSERT_EQ(0, region_alloc(self->fd, 64 * PAGE, ORTMEM_NUMA_ANY, 0, &b));
		p = region_map(self->fd, 64 * PAGE, b.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
		ASSERT_NE(MAP_FAILED, p);
		for (i = 0; i < 64 * PAGE; i++)
			if (p[i])
				break;
		EXPECT_EQ(64 * PAGE, i);
		memset(p, 0xa5, 64 * PAGE);
		EXPECT_EQ(0, munmap(p, 64 * PAGE));
		EXPECT_EQ(0, region_free(self->fd, b.handle));
	}
}

TEST_F(rg, mmap_bad_offset_is_einval)
{
	uint64_t off = self->a.mmap_offset;

	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, 0, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, off + 16 * PAGE, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, off + (1ull << ORTMEM_MMAP_SHIFT), PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, off + 123, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(self->pinned + (int64_t)(16 * PAGE), pinned_bytes());
}

TEST_F(rg, mmap_bad_length_is_einval)
{
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, 17 * PAGE, self->a.mmap_offset, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, 2 * PAGE, self->a.mmap_offset + 15 * PAGE, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, 0, self->a.mmap_offset, PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(rg, mmap_exec_is_eperm)
{
	void *p;

	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, self->a.mmap_offset,
					 PROT_READ | PROT_EXEC, MAP_SHARED));
	EXPECT_EQ(EPERM, errno);
	/* Nor can a mapping become executable later. */
	p = region_map(self->fd, PAGE, self->a.mmap_offset, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, PAGE, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(0, munmap(p, PAGE));
}

TEST_F(rg, mmap_private_is_einval)
{
	EXPECT_EQ(MAP_FAILED, region_map(self->fd, PAGE, self->a.mmap_offset,
					 PROT_READ | PROT_WRITE, MAP_PRIVATE));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(rg, partial_and_split_mappings)
{
	struct ortmem_query_args q = { .handle = self->a.handle };
	unsigned char *all, *mid;

	all = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
			 PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, all);
	all[5 * PAGE] = 0x11;
	all[6 * PAGE + 7] = 0x22;
	mid = region_map(self->fd, 2 * PAGE, self->a.mmap_offset + 5 * PAGE,
			 PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, mid);
	EXPECT_EQ(0x11, mid[0]);
	EXPECT_EQ(0x22, mid[PAGE + 7]);
	/* Punch a hole: the two halves are two mappings of the region. */
	EXPECT_EQ(0, munmap(all + 4 * PAGE, PAGE));
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(3, q.map_count);
	EXPECT_EQ(0x22, all[6 * PAGE + 7]);
	EXPECT_EQ(0, munmap(all, 16 * PAGE));
	EXPECT_EQ(0, munmap(mid, 2 * PAGE));
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(0, q.map_count);
}

TEST_F(rg, free_while_mapped_keeps_pages_until_unmap)
{
	int64_t with = pinned_bytes();
	unsigned char *p = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
				      PROT_READ | PROT_WRITE, MAP_SHARED);

	ASSERT_NE(MAP_FAILED, p);
	p[0] = 0x5a;
	EXPECT_EQ(0, region_free(self->fd, self->a.handle));
	/* The handle is gone, the pages are not: no use-after-free. */
	EXPECT_EQ(-ENOENT, region_free(self->fd, self->a.handle));
	EXPECT_EQ(with, pinned_bytes());
	p[16 * PAGE - 1] = 0x6b;
	EXPECT_EQ(0x5a, p[0]);
	EXPECT_EQ(0, munmap(p, 16 * PAGE));
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->out, outstanding());
}

TEST_F(rg, close_frees_every_region)
{
	struct ortmem_alloc_args b;
	int i;

	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, region_alloc(self->fd, (i + 1) * PAGE, ORTMEM_NUMA_ANY, 0, &b));
	EXPECT_EQ(self->pinned + (int64_t)((16 + 36) * PAGE), pinned_bytes());
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->out, outstanding());
}

TEST_F(rg, mapping_outlives_close)
{
	unsigned char *p = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
				      PROT_READ | PROT_WRITE, MAP_SHARED);

	ASSERT_NE(MAP_FAILED, p);
	close(self->fd);
	self->fd = -1;
	memset(p, 1, 16 * PAGE);
	EXPECT_EQ(self->pinned + (int64_t)(16 * PAGE), pinned_bytes());
	EXPECT_EQ(0, munmap(p, 16 * PAGE));
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->out, outstanding());
}

TEST_F(rg, fork_shares_nothing)
{
	volatile unsigned char *p = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
					       PROT_READ | PROT_WRITE, MAP_SHARED);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ortmem_query_args q = { .handle = self->a.handle };
		struct ortmem_version_args v = { 0 };
		void *m;

		/* The inherited fd is the parent's: refused, but versioned. */
		if (xioctl(self->fd, ORTMEM_IOC_QUERY, &q) != -EACCES)
			_exit(10);
		if (region_free(self->fd, self->a.handle) != -EACCES)
			_exit(11);
		if (region_alloc(self->fd, PAGE, -1, 0, NULL) != -EACCES)
			_exit(12);
		if (xioctl(self->fd, ORTMEM_IOC_GET_VERSION, &v) != 0)
			_exit(13);
		m = region_map(self->fd, PAGE, self->a.mmap_offset, PROT_READ, MAP_SHARED);
		if (m != MAP_FAILED || errno != EACCES)
			_exit(14);
		/* The mapping was not copied: touching it faults. */
		signal(SIGSEGV, SIG_DFL);
		p[0] = 2;
		_exit(15);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	else
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(0, munmap((void *)p, 16 * PAGE));
}

/*
 * MADV_DOFORK clears VM_DONTCOPY, so fork copies the VMA: the child's copy
 * must still never reach the parent's pages (SIGBUS on touch), and the
 * parent's data stays its own.
 */
static void dofork_child_shares_nothing(struct __test_metadata *_metadata,
					int fd, struct ortmem_alloc_args *a,
					int keeponfork)
{
	volatile unsigned char *p = region_map(fd, 16 * PAGE, a->mmap_offset,
					       PROT_READ | PROT_WRITE, MAP_SHARED);
	struct ortmem_query_args q = { .handle = a->handle };
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ(0, madvise((void *)p, 16 * PAGE, MADV_DOFORK));
	/* The mapping is VM_WIPEONFORK; a process may clear that too. */
	if (keeponfork)
		ASSERT_EQ(0, madvise((void *)p, 16 * PAGE, MADV_KEEPONFORK));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		p[0] = 2;	/* the parent's page, were it shared */
		p[PAGE] = 2;	/* one the parent never touched */
		_exit(15);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGBUS, WTERMSIG(status));
	else
		TH_LOG("the child wrote to the region and exited with %d",
		       WEXITSTATUS(status));
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(0, p[PAGE]);
	/* The child's copy is gone with it: one mapping left. */
	ASSERT_EQ(0, xioctl(fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(1, q.map_count);
	EXPECT_EQ(0, munmap((void *)p, 16 * PAGE));
}

TEST_F(rg, madv_dofork_child_shares_nothing)
{
	dofork_child_shares_nothing(_metadata, self->fd, &self->a, 0);
}

TEST_F(rg, madv_dofork_and_keeponfork_child_shares_nothing)
{
	dofork_child_shares_nothing(_metadata, self->fd, &self->a, 1);
}

/*
 * vmsplice puts region pages in a pipe; FREE and munmap then end the region:
 * outstanding_pages drops at once (the module holds nothing), and the pipe
 * still reads the data, intact, from the pages it keeps alive.
 */
TEST_F(rg, pipe_keeps_pages_after_free)
{
	unsigned char *p = region_map(self->fd, 16 * PAGE, self->a.mmap_offset,
				      PROT_READ | PROT_WRITE, MAP_SHARED);
	unsigned char buf[PAGE];
	struct iovec iov;
	int pfd[2];
	size_t i;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, pipe(pfd));
	for (i = 0; i < 2 * PAGE; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	iov = (struct iovec){ .iov_base = p, .iov_len = 2 * PAGE };
	ASSERT_EQ((ssize_t)(2 * PAGE), vmsplice(pfd[1], &iov, 1, 0));
	EXPECT_EQ(0, region_free(self->fd, self->a.handle));
	EXPECT_EQ(0, munmap(p, 16 * PAGE));
	EXPECT_EQ(self->out, outstanding());
	EXPECT_EQ(self->pinned, pinned_bytes());
	for (i = 0; i < 2; i++) {
		size_t j;

		ASSERT_EQ((ssize_t)PAGE, read(pfd[0], buf, PAGE));
		for (j = 0; j < PAGE; j++)
			if (buf[j] != (unsigned char)((i * PAGE + j) * 7 + 3))
				break;
		EXPECT_EQ(PAGE, j);
	}
	close(pfd[0]);
	close(pfd[1]);
}

/* Whether the mapping at @addr is executable, per /proc/self/maps. */
static int mapping_is_exec(void *addr)
{
	char line[256], perms[8];
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/maps", "r");
	int x = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    (unsigned long)addr >= lo && (unsigned long)addr < hi)
			x = perms[2] == 'x';
	fclose(f);
	return x;
}

/*
 * READ_IMPLIES_EXEC makes the kernel add PROT_EXEC to readable file
 * mappings, except on noexec mounts.  Where it does (seen on /dev/zero, a
 * device node on the same mount), a region mapping is refused with EPERM,
 * as an explicit PROT_EXEC is; where it does not, the mapping works and is
 * not executable.
 */
TEST_F(rg, read_implies_exec_follows_the_kernel)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int zfd = open("/dev/zero", O_RDWR | O_CLOEXEC), implied;
		/* The fixture's file is the parent's: the child opens its own. */
		int fd = dev_open();
		struct ortmem_alloc_args a;
		void *z, *m;

		if (zfd < 0 || fd < 0 ||
		    region_alloc(fd, PAGE, ORTMEM_NUMA_ANY, 0, &a) ||
		    personality(READ_IMPLIES_EXEC) < 0)
			_exit(90);
		z = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, zfd, 0);
		if (z == MAP_FAILED)
			_exit(91);
		implied = mapping_is_exec(z);
		m = region_map(fd, PAGE, a.mmap_offset, PROT_READ, MAP_SHARED);
		fprintf(stderr, "# READ_IMPLIES_EXEC: /dev/zero mapping %s; region mmap %s (%s)\n",
			implied == 1 ? "executable" : "not executable",
			m == MAP_FAILED ? "refused" : "mapped",
			m == MAP_FAILED ? strerror(errno) : "-");
		if (implied == 1)
			_exit(m == MAP_FAILED && errno == EPERM ? 0 : 92);
		if (implied != 0 || m == MAP_FAILED)
			_exit(93);
		_exit(mapping_is_exec(m) == 0 ? 0 : 94);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
