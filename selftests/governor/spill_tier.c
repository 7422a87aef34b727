// SPDX-License-Identifier: MIT
/*
 * The governor's disk tier on the real spill engine: demotion host -> disk
 * and promotion back keep the bytes exact, releases free the extents, and a
 * corrupted extent refuses promotion instead of handing bad bytes back.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define KIB 1024ull
#define MIB (1024 * KIB)

FIXTURE(tier) {
	struct ortmem_gov *gov;
	struct ortmem_spill *spill;
	char dir[64];
};

FIXTURE_SETUP(tier)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 8 * MIB, 256 * MIB });
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MIB);

	snprintf(self->dir, sizeof(self->dir), "/var/tmp/ortmem-gov-XXXXXX");
	ASSERT_NONNULL(mkdtemp(self->dir));
	so.dir = self->dir;
	if (ortmem_spill_open(&so, &self->spill))
		SKIP("spill engine unavailable in %s: %s", self->dir,
		     ortmem_last_error_message());
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DISK,
					    ortmem_backend_spill(), self->spill));
}

FIXTURE_TEARDOWN(tier)
{
	ortmem_gov_close(self->gov);
	ortmem_spill_close(self->spill);
	rmdir(self->dir);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 7919) >> 3);
}

static uint64_t live_extents(struct ortmem_spill *spill)
{
	ORTMEM_OPTS(ortmem_spill_stats, st);

	if (ortmem_spill_get_stats(spill, &st))
		return UINT64_MAX;
	return st.extents;
}

TEST_F(tier, demote_and_promote_keep_bytes_exact)
{
	static const uint64_t sizes[] = { 1, 4095, 4096, 65537, 3 * MIB + 5 };
	struct ortmem_handle h[5];
	struct ortmem_alloc_info info;
	void *p;
	size_t i;

	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
					      ORTMEM_ROLE_ACTIVATION, sizes[i],
					      ORTMEM_ALLOC_MOVABLE, &h[i]));
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, &p));
		fill(p, sizes[i], (unsigned)i);
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
		ASSERT_EQ(0, ortmem_gov_demote(self->gov, h[i]));
		ASSERT_EQ(0, ortmem_gov_query(self->gov, h[i], &info));
		EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	}
	EXPECT_EQ(5u, live_extents(self->spill));
	for (i = 0; i < 5; i++) {
		unsigned char *want = malloc(sizes[i]);

		ASSERT_NONNULL(want);
		fill(want, sizes[i], (unsigned)i);
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, &p));
		EXPECT_EQ(0, memcmp(p, want, sizes[i]));
		free(want);
		ASSERT_EQ(0, ortmem_gov_query(self->gov, h[i], &info));
		EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
	}
	/* Promotion gave every extent back. */
	EXPECT_EQ(0u, live_extents(self->spill));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, ortmem_gov_release(self->gov, h[i], 0));
}

TEST_F(tier, releasing_a_demoted_allocation_frees_its_extent)
{
	struct ortmem_handle h;
	void *p;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
				      ORTMEM_ROLE_KV_CACHE, 256 * KIB,
				      ORTMEM_ALLOC_MOVABLE, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	memset(p, 0x5a, 256 * KIB);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	EXPECT_EQ(1u, live_extents(self->spill));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(0u, live_extents(self->spill));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h, 0, &p));
}

TEST_F(tier, host_pressure_demotes_to_disk_and_data_survives)
{
	struct ortmem_handle h[3];
	struct ortmem_alloc_info info;
	unsigned char *p;
	int i;

	/* Three 3 MiB allocations in an 8 MiB host tier: the third pushes
	 * the least recently used one down to disk. */
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
					      ORTMEM_ROLE_WEIGHTS, 3 * MIB,
					      ORTMEM_ALLOC_MOVABLE, &h[i]));
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, (void **)&p));
		memset(p, 'a' + i, 3 * MIB);
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
	}
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[0], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	/* Pinning it brings it back (demoting another to make room). */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], 0, (void **)&p));
	EXPECT_EQ('a', p[0]);
	EXPECT_EQ('a', p[3 * MIB - 1]);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[0]));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, ortmem_gov_release(self->gov, h[i], 0));
	EXPECT_EQ(0u, live_extents(self->spill));
}

/* The spill file has no name: reach it through our own descriptor table. */
static int open_spill_file(const char *dir)
{
	char link[64], target[256];
	int fd;

	for (fd = 3; fd < 1024; fd++) {
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strncmp(target, dir, strlen(dir)))
			return open(link, O_RDWR);
	}
	return -1;
}

TEST_F(tier, corrupted_extent_refuses_promotion)
{
	struct ortmem_handle h;
	struct ortmem_alloc_info info;
	unsigned char byte;
	void *p;
	int fd;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
				      ORTMEM_ROLE_ACTIVATION, 64 * KIB,
				      ORTMEM_ALLOC_MOVABLE, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, &p));
	memset(p, 0x11, 64 * KIB);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	fd = open_spill_file(self->dir);
	ASSERT_LE(0, fd);
	/* The only extent starts the file; flip a byte of its payload. */
	ASSERT_EQ(1, pread(fd, &byte, 1, 1000));
	EXPECT_EQ(0x11, byte);
	byte ^= 0x40;
	ASSERT_EQ(1, pwrite(fd, &byte, 1, 1000));
	close(fd);
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_gov_pin(self->gov, h, 0, &p));
	/* Nothing was handed back: it is still on disk, unpinned. */
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	EXPECT_EQ(0u, live_extents(self->spill));
}

TEST_HARNESS_MAIN
