// SPDX-License-Identifier: MIT
/*
 * ALLOC inside a memory cgroup whose limit the region does not fit: the
 * pages are charged to the cgroup (__GFP_ACCOUNT), and the allocation must
 * fail with ENOMEM, as documented, without waking the OOM killer.  Region
 * pages that are not mapped count in no process's RSS, so an OOM kill
 * would pick a bystander (or the caller) while the ALLOC never returns.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

#define CGROOT "/sys/fs/cgroup"
#define CG CGROOT "/ortmem-memcg"

/* The "oom_kill N" count of the cgroup's memory.events, or -1. */
static long oom_kills(void)
{
	FILE *f = fopen(CG "/memory.events", "r");
	char key[64];
	long n, kills = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &n) == 2)
		if (!strcmp(key, "oom_kill"))
			kills = n;
	fclose(f);
	return kills;
}

TEST(alloc_over_memcg_limit_is_enomem_without_oom_kill)
{
	const uint64_t limit = 16 * MIB, size = 64 * MIB;
	int64_t pinned = pinned_bytes(), out = outstanding();
	int status, fd = dev_open();
	char pid[32];
	pid_t child;

	if (fd < 0)
		SKIP("%s: %s", ORTMEM_DEV, strerror(errno));
	close(fd);
	if (access(CGROOT "/cgroup.controllers", F_OK) &&
	    mount("cgroup2", CGROOT, "cgroup2", 0, NULL))
		SKIP("mounting cgroup2: %s", strerror(errno));
	if (sysfs_write(CGROOT "/cgroup.subtree_control", "+memory"))
		SKIP("the memory controller cannot be enabled");
	if (mkdir(CG, 0755) && errno != EEXIST)
		SKIP("mkdir %s: %s", CG, strerror(errno));
	snprintf(pid, sizeof(pid), "%llu", (unsigned long long)limit);
	ASSERT_EQ(0, sysfs_write(CG "/memory.max", pid));
	/* No swap to fall back on: the limit is hard. */
	sysfs_write(CG "/memory.swap.max", "0");
	ASSERT_EQ(0, oom_kills());

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct ortmem_alloc_args a;
		int cfd, ret;

		snprintf(pid, sizeof(pid), "%d", getpid());
		if (sysfs_write(CG "/cgroup.procs", pid))
			_exit(90);
		cfd = dev_open();
		if (cfd < 0)
			_exit(91);
		/* Twice: a failed ALLOC leaves the file usable. */
		ret = region_alloc(cfd, size, ORTMEM_NUMA_ANY, 0, &a);
		if (ret != -ENOMEM) {
			fprintf(stderr, "# ALLOC of 64 MiB under a 16 MiB limit: %d\n", ret);
			_exit(92);
		}
		if (region_alloc(cfd, size, ORTMEM_NUMA_ANY, 0, &a) != -ENOMEM)
			_exit(93);
		/* What fits still works. */
		if (region_alloc(cfd, 1 * MIB, ORTMEM_NUMA_ANY, 0, &a) ||
		    region_free(cfd, a.handle))
			_exit(94);
		close(cfd);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	if (WIFSIGNALED(status))
		TH_LOG("the child was killed by signal %d", WTERMSIG(status));
	else
		EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, oom_kills());
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(out, settle_outstanding());
	EXPECT_EQ(0, rmdir(CG));
}

TEST_HARNESS_MAIN
