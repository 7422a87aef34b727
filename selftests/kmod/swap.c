// SPDX-License-Identifier: MIT
/*
 * Never swapped: with a swap device on (ORTMEM_VM_SWAP, the VM's second
 * disk), reclaim that does swap anonymous memory out leaves a region's
 * pages mapped, resident and unchanged.  Two kinds of reclaim: MADV_PAGEOUT
 * on the mapping itself, and a memory cgroup whose limit a process
 * overruns with anonymous memory while it holds a region.  Each test also
 * checks that the anonymous control memory did go to swap, so a pass
 * means the region was spared, not that nothing was reclaimed.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

#define CGROOT "/sys/fs/cgroup"
#define CG CGROOT "/ortmem-swap"
#define NPAGES 64

static uint64_t pattern(size_t i)
{
	return i * 0x9e3779b97f4a7c15ull + 1;
}

/* Pages of [p, p + len) that mincore() says are resident. */
static long resident(void *p, size_t len)
{
	unsigned char vec[4096];
	size_t i, n = len / PAGE;
	long r = 0;

	if (n > sizeof(vec) || mincore(p, len, vec))
		return -1;
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	return r;
}

/*
 * A field ("Swap:", "Rss:", "VmFlags:") of the smaps entry of the VMA
 * starting at @p, into @out.  Returns 0, or -1 when not found.
 */
static int smaps_field(void *p, const char *field, char *out, size_t outlen)
{
	unsigned long start, end;
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		/* A VMA's first line: "start-end perms offset dev inode path". */
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start == (unsigned long)p;
		else if (in && !strncmp(line, field, strlen(field))) {
			snprintf(out, outlen, "%s", line + strlen(field));
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static long smaps_kb(void *p, const char *field)
{
	char buf[128];

	if (smaps_field(p, field, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

FIXTURE(sw) {
	int fd;
	const char *dev;
	int64_t pinned;
	int64_t out;
};

FIXTURE_SETUP(sw)
{
	char cmd[256];
	struct stat st;

	self->dev = NULL;
	OPEN_OR_SKIP(self->fd);
	self->pinned = pinned_bytes();
	self->out = outstanding();
	self->dev = getenv("ORTMEM_VM_SWAP");
	if (!self->dev || !*self->dev || stat(self->dev, &st) || !S_ISBLK(st.st_mode)) {
		self->dev = NULL;
		SKIP("ORTMEM_VM_SWAP names no block device to swap to");
	}
	snprintf(cmd, sizeof(cmd), "mkswap %s > /dev/null 2>&1", self->dev);
	if (system(cmd)) {
		const char *dev = self->dev;

		self->dev = NULL;
		SKIP("mkswap %s failed", dev);
	}
	if (swapon(self->dev, 0)) {
		int err = errno;

		self->dev = NULL;
		SKIP("swapon: %s", strerror(err));
	}
}

FIXTURE_TEARDOWN(sw)
{
	if (self->dev)
		EXPECT_EQ(0, swapoff(self->dev));
	if (self->fd >= 0) {
		close(self->fd);
		EXPECT_EQ(self->pinned, pinned_bytes());
		EXPECT_EQ(0, settle_outstanding() - self->out);
	}
}

/* Fill @p with the pattern; returns the index of the first bad word or n. */
static size_t fill(uint64_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pattern(i);
	return n;
}

static size_t verify(const uint64_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pattern(i))
			break;
	return i;
}

TEST_F(sw, pageout_leaves_region_resident)
{
	const size_t len = NPAGES * PAGE, n = len / sizeof(uint64_t);
	struct ortmem_alloc_args a;
	uint64_t *p, *anon;
	char flags[128];

	ASSERT_EQ(0, region_alloc(self->fd, len, ORTMEM_NUMA_ANY, 0, &a));
	p = region_map(self->fd, len, a.mmap_offset, PROT_READ | PROT_WRITE,
		       MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p);
	anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	fill(p, n);
	fill(anon, n);
	ASSERT_EQ(NPAGES, resident(p, len));
	ASSERT_EQ(NPAGES, resident(anon, len));

	ASSERT_EQ(0, madvise(anon, len, MADV_PAGEOUT));
	ASSERT_EQ(0, madvise(p, len, MADV_PAGEOUT));

	/* The control went to swap (its pages may still sit in the swap
	 * cache, so mincore() is no witness for it; its swap entries are)... */
	EXPECT_LE((long)(len / 2 / 1024), smaps_kb(anon, "Swap:"));
	/* ...the region did not. */
	EXPECT_EQ(NPAGES, resident(p, len));
	EXPECT_EQ(0, smaps_kb(p, "Swap:"));
	EXPECT_EQ((long)(len / 1024), smaps_kb(p, "Rss:"));
	EXPECT_EQ(n, verify(p, n));
	EXPECT_EQ(n, verify(anon, n));
	/* Shared, never executable, not copied on fork, not dumped. */
	ASSERT_EQ(0, smaps_field(p, "VmFlags:", flags, sizeof(flags)));
	EXPECT_NE(NULL, strstr(flags, " sh"));
	EXPECT_NE(NULL, strstr(flags, " dc"));
	EXPECT_NE(NULL, strstr(flags, " dd"));
	EXPECT_EQ(NULL, strstr(flags, " ex"));
	EXPECT_EQ(self->out + NPAGES, outstanding());

	EXPECT_EQ(0, munmap(anon, len));
	EXPECT_EQ(0, munmap(p, len));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
}

static int cg_write(const char *path, const char *val)
{
	return sysfs_write(path, val);
}

/*
 * A child in a memory cgroup limited to 16 MiB holds a 4 MiB region and
 * touches 40 MiB of anonymous memory: reclaim must push most of it to
 * swap, and must leave the region alone.
 */
TEST_F(sw, cgroup_pressure_leaves_region_resident)
{
	const size_t rlen = 4 * MIB, alen = 40 * MIB;
	char pid[32];
	int status;
	pid_t child;

	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", CGROOT, "cgroup2", 0, NULL))
		SKIP("mounting cgroup2: %s", strerror(errno));
	if (cg_write(CGROOT "/cgroup.subtree_control", "+memory"))
		SKIP("the memory controller cannot be enabled");
	if (mkdir(CG, 0755) && errno != EEXIST)
		SKIP("mkdir %s: %s", CG, strerror(errno));
	ASSERT_EQ(0, cg_write(CG "/memory.max", "16M"));

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct ortmem_alloc_args a;
		uint64_t *p, *anon;
		int fd = dev_open();
		size_t i;

		snprintf(pid, sizeof(pid), "%d", getpid());
		if (cg_write(CG "/cgroup.procs", pid))
			_exit(90);
		/* A file is the opener's: the child opens its own. */
		if (fd < 0 || region_alloc(fd, rlen, ORTMEM_NUMA_ANY, 0, &a))
			_exit(91);
		p = region_map(fd, rlen, a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
		anon = mmap(NULL, alen, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || anon == MAP_FAILED)
			_exit(92);
		fill(p, rlen / 8);
		for (i = 0; i < alen / 8; i += PAGE / 8)
			anon[i] = i;
		if (smaps_kb(anon, "Swap:") < (long)((alen - 16 * MIB) / 1024)) {
			fprintf(stderr, "# anon swap %ld kB: no pressure\n",
				smaps_kb(anon, "Swap:"));
			_exit(93);
		}
		if (resident(p, rlen) != (long)(rlen / PAGE) ||
		    smaps_kb(p, "Swap:") != 0) {
			fprintf(stderr, "# region resident %ld pages, swap %ld kB\n",
				resident(p, rlen), smaps_kb(p, "Swap:"));
			_exit(94);
		}
		if (verify(p, rlen / 8) != rlen / 8)
			_exit(95);
		for (i = 0; i < alen / 8; i += PAGE / 8)
			if (anon[i] != i)
				_exit(96);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, rmdir(CG));
}

TEST_HARNESS_MAIN
