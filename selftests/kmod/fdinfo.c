// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Per-client figures in /proc/PID/fdinfo of /dev/ortmem: ortmem-regions,
 * ortmem-total-host and ortmem-resident-host (KiB) follow what each open
 * file holds, file by file, as regions come and go; another process reads
 * them from outside, as ortmem-stat does.  With a spill mapping, evicted
 * pages leave the resident figure for ortmem-evicted-host, and touching
 * them back moves them back, counted in ortmem-fault-backs.
 */
#include <inttypes.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"
#include "spill_test.h"

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
#define EVICTED(pid, fd) fdinfo_key(pid, fd, "ortmem-evicted-host", "KiB")
#define COUNT(pid, fd, key) fdinfo_key(pid, fd, "ortmem-" key, "")
#define KIB(pages) ((int64_t)((pages) * PAGE >> 10))

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

/*
 * Evict pages 4..11 of a 16-page region: fdinfo moves them from resident
 * to evicted and agrees with SPILL_STATS; touching page 6 brings it (and
 * its read-ahead) back, counted as fault-backs; RESTORE brings the rest.
 */
TEST(fdinfo_counts_evicted_and_faulted_back_pages)
{
	struct ortmem_spill_stats_args st;
	struct ortmem_alloc_args a;
	volatile unsigned char *p;
	unsigned char *map;
	int64_t back, ahead;
	char path[256];
	int fd, file;
	pid_t me = getpid();

	OPEN_OR_SKIP(fd);
	file = spill_file_open("fdinfo", O_DIRECT, path, sizeof(path));
	if (file < 0) {
		close(fd);
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR): %s", strerror(errno));
	}
	ASSERT_EQ(0, region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, &a));
	map = region_map(fd, 16 * PAGE, a.mmap_offset, PROT_READ | PROT_WRITE,
			 MAP_SHARED);
	ASSERT_NE(MAP_FAILED, map);
	pattern_fill(map, 0, 16, 0xfd1f0, PAGE);
	ASSERT_EQ(0, spill_bind(fd, a.handle, 0, 16 * PAGE, file, 0));
	ASSERT_EQ((ssize_t)(16 * PAGE), pwrite(file, map, 16 * PAGE, 0));
	EXPECT_EQ(0, EVICTED(me, fd));
	EXPECT_EQ(0, COUNT(me, fd, "fault-backs"));

	ASSERT_EQ(0, spill_evict(fd, a.handle, 4 * PAGE, 8 * PAGE,
				 map + 4 * PAGE, PAGE));
	EXPECT_EQ(1, REGIONS(me, fd));
	EXPECT_EQ(KIB(16), TOTAL(me, fd));
	EXPECT_EQ(KIB(8), RESIDENT(me, fd));
	EXPECT_EQ(KIB(8), EVICTED(me, fd));
	ASSERT_EQ(0, spill_stats(fd, 0, &st));
	EXPECT_EQ((int64_t)(st.evicted_bytes >> 10), EVICTED(me, fd));
	EXPECT_EQ((int64_t)(st.resident_bytes >> 10), RESIDENT(me, fd));

	p = map;
	(void)p[6 * PAGE + 17];
	back = COUNT(me, fd, "fault-backs");
	ahead = COUNT(me, fd, "readahead");
	EXPECT_EQ(1, back);
	/* Read-ahead brings others of the 8 with it, or none. */
	EXPECT_LE(0, ahead);
	EXPECT_GE(7, ahead);
	EXPECT_EQ(KIB(8 + back + ahead), RESIDENT(me, fd));
	EXPECT_EQ(KIB(8 - back - ahead), EVICTED(me, fd));
	EXPECT_EQ(KIB(16), TOTAL(me, fd));
	ASSERT_EQ(0, spill_stats(fd, 0, &st));
	EXPECT_EQ((int64_t)st.fault_backs, back);
	EXPECT_EQ((int64_t)st.readahead, ahead);
	EXPECT_EQ((int64_t)(st.evicted_bytes >> 10), EVICTED(me, fd));

	ASSERT_EQ(0, spill_restore(fd, a.handle, 0, 16 * PAGE, 0));
	EXPECT_EQ(KIB(16), RESIDENT(me, fd));
	EXPECT_EQ(0, EVICTED(me, fd));
	EXPECT_EQ(8 - back - ahead, COUNT(me, fd, "restored"));
	EXPECT_EQ(0, COUNT(me, fd, "fault-back-failures"));
	EXPECT_EQ(-1, pattern_check(map, 0, 16, 0xfd1f0, PAGE));

	munmap(map, 16 * PAGE);
	close(file);
	unlink(path);
	close(fd);
}

TEST_HARNESS_MAIN
