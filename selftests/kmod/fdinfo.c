// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Per-client figures in /proc/PID/fdinfo of /dev/ortmem: ortmem-regions,
 * ortmem-total-host and ortmem-resident-host (KiB) follow what each open
 * file holds, file by file, as regions come and go; another process reads
 * them from outside, as ortmem-stat does.
 */
#include <inttypes.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

/* The value of @key in /proc/@pid/fdinfo/@fd; -1 when absent. */
static int64_t fdinfo_key(pid_t pid, int fd, const char *key, const char *unit)
{
	char path[64], line[256], want[64];
	int64_t v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	snprintf(want, sizeof(want), "%s:\t%%" SCNd64 "%s", key,
		 unit[0] ? " " : "");
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char tail[16] = "";
		size_t kl = strlen(key);

		if (strncmp(line, key, kl) || line[kl] != ':')
			continue;
		if (sscanf(line + kl, ":\t%" SCNd64 " %15s", &v, tail) < 1 ||
		    strcmp(tail, unit))
			v = -2;	/* malformed, or the wrong unit */
	}
	fclose(f);
	return v;
}

#define REGIONS(pid, fd) fdinfo_key(pid, fd, "ortmem-regions", "")
#define TOTAL(pid, fd) fdinfo_key(pid, fd, "ortmem-total-host", "KiB")
#define RESIDENT(pid, fd) fdinfo_key(pid, fd, "ortmem-resident-host", "KiB")

TEST(fdinfo_follows_each_files_regions)
{
	struct ortmem_alloc_args a[3];
	int fd, fd2;

	OPEN_OR_SKIP(fd);
	fd2 = dev_open();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, REGIONS(getpid(), fd));
	EXPECT_EQ(0, TOTAL(getpid(), fd));
	EXPECT_EQ(0, RESIDENT(getpid(), fd));

	ASSERT_EQ(0, region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, &a[0]));
	ASSERT_EQ(0, region_alloc(fd, MIB, ORTMEM_NUMA_ANY, 0, &a[1]));
	/* Sizes round up to whole pages. */
	ASSERT_EQ(0, region_alloc(fd, PAGE + 1, ORTMEM_NUMA_ANY, 0, &a[2]));
	EXPECT_EQ(3, REGIONS(getpid(), fd));
	EXPECT_EQ((int64_t)((16 * PAGE + MIB + 2 * PAGE) >> 10), TOTAL(getpid(), fd));
	EXPECT_EQ(TOTAL(getpid(), fd), RESIDENT(getpid(), fd));
	/* The other file holds nothing. */
	EXPECT_EQ(0, REGIONS(getpid(), fd2));
	EXPECT_EQ(0, TOTAL(getpid(), fd2));

	ASSERT_EQ(0, region_free(fd, a[1].handle));
	EXPECT_EQ(2, REGIONS(getpid(), fd));
	EXPECT_EQ((int64_t)((18 * PAGE) >> 10), TOTAL(getpid(), fd));
	close(fd2);
	close(fd);
}

TEST(fdinfo_read_from_another_process)
{
	struct ortmem_alloc_args a;
	int fd, st, up[2], down[2];
	char c = 0;
	pid_t child;

	OPEN_OR_SKIP(fd);
	close(fd);
	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		fd = dev_open();
		if (fd < 0 || region_alloc(fd, 4 * MIB, ORTMEM_NUMA_ANY, 0, &a))
			_exit(1);
		if (write(up[1], &fd, sizeof(fd)) != sizeof(fd) ||
		    read(down[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ((ssize_t)sizeof(fd), read(up[0], &fd, sizeof(fd)));
	EXPECT_EQ(1, REGIONS(child, fd));
	EXPECT_EQ((int64_t)(4 * MIB >> 10), RESIDENT(child, fd));
	ASSERT_EQ(1, write(down[1], &c, 1));
	ASSERT_EQ(child, waitpid(child, &st, 0));
	EXPECT_EQ(0, st);
}

TEST_HARNESS_MAIN
