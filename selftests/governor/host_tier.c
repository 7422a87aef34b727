// SPDX-License-Identifier: MIT
/*
 * The governor on the real tiers below the device: the host tier on
 * ortmem_backend_host() (pinned host RAM: the mmap + mlock fallback here,
 * the kernel module in the VM, where scripts/suites/vm.sh runs this program
 * again) and the disk tier on ortmem_backend_spill().  Demotion host -> disk
 * and promotion back keep the bytes exact; releases give the host buffers
 * back to the allocator and free the extents; a corrupted extent refuses
 * promotion instead of handing bad bytes back.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#include "../host/spill_dir.h"

#define KIB 1024ull
#define MIB (1024 * KIB)

FIXTURE(tiers) {
	struct ortmem_gov *gov;
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	uint64_t page;
	char dir[64];
};

FIXTURE_SETUP(tiers)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 8 * MIB, [ORTMEM_TIER_DISK] = 256 * MIB });
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MIB);
	void *probe;
	int ret;

	self->page = (uint64_t)sysconf(_SC_PAGESIZE);
	self->dir[0] = '\0';
	if (ortmem_host_open(NULL, &self->host))
		SKIP("no host allocator: %s", ortmem_last_error_message());
	/* The whole host budget must be lockable, or there is no test. */
	ret = ortmem_host_alloc(self->host, 8 * MIB, -1, &probe);
	if (ret)
		SKIP("cannot pin 8 MiB of host memory (%s); raise RLIMIT_MEMLOCK",
		     ortmem_last_error_message());
	ASSERT_EQ(0, ortmem_host_free(self->host, probe));
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_host(), self->host));
	/*
	 * The spill folder last, and removed on every way out of here: the
	 * teardown runs only after a setup that finished, so a skip or a
	 * failure below would leave it in /var/tmp.
	 */
	ASSERT_TRUE(make_spill_dir(self->dir, sizeof(self->dir), "ortmem-gov-host"));
	so.dir = self->dir;
	ret = ortmem_spill_open(&so, &self->spill);
	if (ret) {
		rmdir(self->dir);
		SKIP("spill engine unavailable in %s: %s", self->dir,
		     ortmem_last_error_message());
	}
	ret = ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DISK,
				     ortmem_backend_spill(), self->spill);
	if (ret) {
		ortmem_gov_close(self->gov);
		ortmem_spill_close(self->spill);
		rmdir(self->dir);
	}
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(tiers)
{
	/* The governor first: it frees into the allocators it was given. */
	ortmem_gov_close(self->gov);
	ortmem_spill_close(self->spill);
	ortmem_host_close(self->host);
	if (self->dir[0])
		rmdir(self->dir);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 7919) >> 3);
}

/* The host allocator's live buffers and bytes; UINT64_MAX on error. */
static uint64_t host_buffers(struct ortmem_host *host, uint64_t *bytesp)
{
	ORTMEM_OPTS(ortmem_host_stats, st);

	if (ortmem_host_stats(host, &st))
		return UINT64_MAX;
	if (bytesp)
		*bytesp = st.bytes;
	return st.buffers;
}

static uint64_t live_extents(struct ortmem_spill *spill)
{
	ORTMEM_OPTS(ortmem_spill_stats, st);

	if (ortmem_spill_stats(spill, &st))
		return UINT64_MAX;
	return st.extents;
}

static uint64_t round_page(uint64_t n, uint64_t page)
{
	return (n + page - 1) / page * page;
}

TEST_F(tiers, caps_follow_the_host_backend)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	int caps = ortmem_gov_backend_caps(self->gov, ORTMEM_TIER_HOST);
	int want = ORTMEM_BACKEND_CAP_HOST_POINTER;

	if (ortmem_host_backend(self->host) == ORTMEM_HOST_BACKEND_MODULE)
		want |= ORTMEM_BACKEND_CAP_SHARED_MAPPING;
	EXPECT_EQ(want, caps);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_STREQ("host", st.tier[ORTMEM_TIER_HOST].backend);
	EXPECT_EQ((uint32_t)want, st.tier[ORTMEM_TIER_HOST].caps);
}

TEST_F(tiers, allocations_are_host_buffers_and_release_frees_them)
{
	struct ortmem_handle h[3];
	static const uint64_t sizes[] = { 1, 4096 + 1, 2 * MIB };
	uint64_t bytes = 0, want = 0;
	unsigned char *p;
	int i;

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
					      ORTMEM_ROLE_KV_CACHE, sizes[i], 0,
					      &h[i]));
		want += round_page(sizes[i], self->page);
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, (void **)&p));
		ASSERT_NONNULL(p);
		EXPECT_EQ(0, (uintptr_t)p % self->page);
		/* Host buffers come zeroed. */
		EXPECT_EQ(0, p[0]);
		EXPECT_EQ(0, p[sizes[i] - 1]);
		memset(p, 0xa5, sizes[i]);
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
	}
	EXPECT_EQ(3u, host_buffers(self->host, &bytes));
	EXPECT_EQ(want, bytes);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_gov_release(self->gov, h[i], 0));
		want -= round_page(sizes[i], self->page);
		EXPECT_EQ((uint64_t)(2 - i), host_buffers(self->host, &bytes));
		EXPECT_EQ(want, bytes);
	}
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_pin(self->gov, h[0], 0,
							 (void **)&p));
}

TEST_F(tiers, demote_to_disk_and_promote_back_bit_exact)
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
		EXPECT_EQ(ORTMEM_TIER_HOST, info.home_tier);
	}
	/* Every byte is on disk: the host buffers went back to the allocator. */
	EXPECT_EQ(0u, host_buffers(self->host, NULL));
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
		EXPECT_EQ(i + 1, host_buffers(self->host, NULL));
	}
	EXPECT_EQ(0u, live_extents(self->spill));
	for (i = 0; i < 5; i++)
		EXPECT_EQ(0, ortmem_gov_release(self->gov, h[i], 0));
	EXPECT_EQ(0u, host_buffers(self->host, NULL));
}

TEST_F(tiers, host_pressure_spills_to_disk_and_data_survives)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h[3];
	struct ortmem_alloc_info info;
	uint64_t bytes = 0;
	unsigned char *p;
	int i;

	/* Three 3 MiB allocations in an 8 MiB host tier: the third pushes the
	 * least recently used one down to disk, and its buffer is freed. */
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
	EXPECT_EQ(2u, host_buffers(self->host, &bytes));
	EXPECT_EQ(6 * MIB, bytes);
	EXPECT_EQ(1u, live_extents(self->spill));
	/* Pinning it brings it back, demoting another to make room. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], 0, (void **)&p));
	EXPECT_EQ('a', p[0]);
	EXPECT_EQ('a', p[3 * MIB - 1]);
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[0]));
	EXPECT_EQ(2u, host_buffers(self->host, &bytes));
	EXPECT_EQ(6 * MIB, bytes);
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[1], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(6 * MIB, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(3 * MIB, st.tier[ORTMEM_TIER_DISK].used);
	EXPECT_GE(8 * MIB, st.tier[ORTMEM_TIER_HOST].peak);
	/* Releasing the one on disk frees its extent, not a host buffer. */
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h[1], 0));
	EXPECT_EQ(0u, live_extents(self->spill));
	EXPECT_EQ(2u, host_buffers(self->host, NULL));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h[0], 0));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h[2], 0));
	EXPECT_EQ(0u, host_buffers(self->host, NULL));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_DISK].used);
}

TEST_F(tiers, close_frees_what_is_still_live)
{
	struct ortmem_handle h;
	unsigned char *p;

	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST,
				      ORTMEM_ROLE_WEIGHTS, MIB, 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, (void **)&p));
	p[0] = 1;
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	EXPECT_EQ(1u, host_buffers(self->host, NULL));
	ortmem_gov_close(self->gov);
	self->gov = NULL;
	/* The governor gave its buffer back; the allocator is still ours. */
	EXPECT_EQ(0u, host_buffers(self->host, NULL));
}

/* A host backend without its allocator refuses, it does not crash. */
TEST_F(tiers, releasing_a_demoted_allocation_frees_its_extent)
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

TEST_F(tiers, corrupted_extent_refuses_promotion)
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

TEST(missing_allocator_refuses_allocations)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = MIB });
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_gov *gov;
	struct ortmem_handle h;
	const struct ortmem_error *e;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST,
					    ortmem_backend_host(), NULL));
	EXPECT_EQ(ORTMEM_BACKEND_CAP_HOST_POINTER,
		  ortmem_gov_backend_caps(gov, ORTMEM_TIER_HOST));
	EXPECT_GT(0, ortmem_gov_alloc(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE, 4096, 0, &h));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "host or ptrp is NULL"));
	/* The charge was given back. */
	ASSERT_EQ(0, ortmem_gov_stats(gov, &st));
	EXPECT_EQ(0, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0, st.handles_live);
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
