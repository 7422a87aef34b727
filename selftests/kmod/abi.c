// SPDX-License-Identifier: MIT
/*
 * The ioctl ABI of /dev/ortmem: the version handshake, and every malformed
 * argument refused with its documented errno while nothing changes.
 */
#include "../harness.h"
#include "ortmem_test.h"

FIXTURE(dev) {
	int fd;
	int64_t pinned;
	int64_t regions;
};

FIXTURE_SETUP(dev)
{
	OPEN_OR_SKIP(self->fd);
	self->pinned = pinned_bytes();
	self->regions = nr_regions();
	ASSERT_LE(0, self->pinned);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0) {
		close(self->fd);
		/* Whatever a test did, the file's close gave it all back. */
		EXPECT_EQ(self->pinned, pinned_bytes());
		EXPECT_EQ(self->regions, nr_regions());
	}
}

/* Nothing was charged or created by a refused call. */
#define EXPECT_UNCHANGED()                                   \
	do {                                                 \
		EXPECT_EQ(self->pinned, pinned_bytes());     \
		EXPECT_EQ(self->regions, nr_regions());      \
	} while (0)

TEST_F(dev, version_handshake)
{
	struct ortmem_version_args v = { .lib_abi_version = ORTMEM_ABI_VERSION };

	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_GET_VERSION, &v));
	EXPECT_EQ(ORTMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(ORTMEM_ABI_MIN_VERSION, v.min_abi_version);
	EXPECT_TRUE(v.features & ORTMEM_FEAT_REGIONS);
	EXPECT_EQ(PAGE, v.page_size);
	EXPECT_EQ(0, v.pad);
	EXPECT_EQ(attr("max_pinned_bytes"), (int64_t)v.max_pinned_bytes);
	EXPECT_EQ(ORTMEM_ABI_VERSION, attr("abi_version"));
}

TEST_F(dev, version_rejects_flags_and_pad)
{
	struct ortmem_version_args v = { .flags = 1 };

	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_GET_VERSION, &v));
	v = (struct ortmem_version_args){ .pad = 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_GET_VERSION, &v));
	EXPECT_EQ(0, v.abi_version);
}

TEST_F(dev, unknown_commands_are_enotty)
{
	char buf[64] = { 0 };

	EXPECT_EQ(-ENOTTY, xioctl(self->fd, _IOWR(ORTMEM_IOC_MAGIC, 0x7f, struct ortmem_alloc_args), buf));
	/* Right number, wrong size or direction: another command. */
	EXPECT_EQ(-ENOTTY, xioctl(self->fd, _IOWR(ORTMEM_IOC_MAGIC, 0x01, struct ortmem_free_args), buf));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd, _IOW(ORTMEM_IOC_MAGIC, 0x01, struct ortmem_alloc_args), buf));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd, _IOWR('x', 0x01, struct ortmem_alloc_args), buf));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd, 0, buf));
	EXPECT_UNCHANGED();
}

TEST_F(dev, bad_user_pointer_is_efault)
{
	EXPECT_EQ(-EFAULT, xioctl(self->fd, ORTMEM_IOC_ALLOC, NULL));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, ORTMEM_IOC_GET_VERSION, (void *)8));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, ORTMEM_IOC_QUERY, (void *)-4096L));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_size_zero_is_einval)
{
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, 0, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_size_overflow_is_einval)
{
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, UINT64_MAX, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, UINT64_MAX - PAGE + 2, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, ORTMEM_REGION_MAX_SIZE + 1, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_above_cap_is_enospc)
{
	int64_t cap = attr("max_pinned_bytes");

	ASSERT_LT(0, cap);
	EXPECT_EQ(-ENOSPC, region_alloc(self->fd, (uint64_t)cap + PAGE, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(-ENOSPC, region_alloc(self->fd, ORTMEM_REGION_MAX_SIZE, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_unknown_flags_are_einval)
{
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		if ((1u << bit) & ORTMEM_ALLOC_FLAGS)
			continue;
		EXPECT_EQ(-EINVAL, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 1u << bit, NULL));
	}
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_nonzero_pad_or_output_is_einval)
{
	struct ortmem_alloc_args a = { .size = PAGE, .numa_node = -1, .pad = 1 };

	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_ALLOC, &a));
	a = (struct ortmem_alloc_args){ .size = PAGE, .numa_node = -1, .handle = 3 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_ALLOC, &a));
	a = (struct ortmem_alloc_args){ .size = PAGE, .numa_node = -1, .mmap_offset = 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_ALLOC, &a));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_bad_numa_node_is_einval)
{
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, PAGE, -2, 0, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, PAGE, 4096, 0, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, PAGE, INT32_MIN, 0, NULL));
	EXPECT_UNCHANGED();
}

TEST_F(dev, alloc_on_node_0_strict)
{
	struct ortmem_alloc_args a;
	struct ortmem_query_args q = { 0 };

	ASSERT_EQ(0, region_alloc(self->fd, 3 * PAGE, 0, ORTMEM_ALLOC_NODE_STRICT, &a));
	q.handle = a.handle;
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(0, q.numa_node);
	EXPECT_EQ(3 * PAGE, q.size);
	EXPECT_EQ(self->pinned + (int64_t)(3 * PAGE), pinned_bytes());
	EXPECT_EQ(0, region_free(self->fd, a.handle));
}

TEST_F(dev, free_bad_handle_is_enoent)
{
	struct ortmem_alloc_args a;

	EXPECT_EQ(-ENOENT, region_free(self->fd, 0));
	EXPECT_EQ(-ENOENT, region_free(self->fd, 1));
	EXPECT_EQ(-ENOENT, region_free(self->fd, ORTMEM_HANDLE_MAX + 1));
	EXPECT_EQ(-ENOENT, region_free(self->fd, UINT32_MAX));
	ASSERT_EQ(0, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 0, &a));
	EXPECT_EQ(-ENOENT, region_free(self->fd, a.handle + 1));
	EXPECT_EQ(self->pinned + (int64_t)PAGE, pinned_bytes());
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	EXPECT_UNCHANGED();
}

TEST_F(dev, double_free_is_enoent)
{
	struct ortmem_alloc_args a;

	ASSERT_EQ(0, region_alloc(self->fd, 2 * PAGE, ORTMEM_NUMA_ANY, 0, &a));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	EXPECT_UNCHANGED();
	EXPECT_EQ(-ENOENT, region_free(self->fd, a.handle));
	EXPECT_UNCHANGED();
}

TEST_F(dev, free_and_query_reject_flags)
{
	struct ortmem_free_args f;
	struct ortmem_query_args q = { 0 };
	struct ortmem_alloc_args a;

	ASSERT_EQ(0, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 0, &a));
	f = (struct ortmem_free_args){ .handle = a.handle, .flags = 1 };
	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_FREE, &f));
	q.handle = a.handle;
	q.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	/* Still there after the refusals. */
	EXPECT_EQ(self->pinned + (int64_t)PAGE, pinned_bytes());
	EXPECT_EQ(0, region_free(self->fd, a.handle));
}

TEST_F(dev, query_reports_the_region)
{
	struct ortmem_alloc_args a;
	struct ortmem_query_args q = { 0 };

	ASSERT_EQ(0, region_alloc(self->fd, 5 * PAGE - 1, ORTMEM_NUMA_ANY, 0, &a));
	EXPECT_LE(1, a.handle);
	EXPECT_EQ(0, a.mmap_offset % PAGE);
	EXPECT_LE(PAGE, a.mmap_offset);
	EXPECT_GE(ORTMEM_MMAP_OFFSET_LIMIT, a.mmap_offset + 5 * PAGE);
	q.handle = a.handle;
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(5 * PAGE, q.size);
	EXPECT_EQ(a.mmap_offset, q.mmap_offset);
	EXPECT_EQ(ORTMEM_NUMA_ANY, q.numa_node);
	EXPECT_EQ(0, q.map_count);
	EXPECT_EQ(self->pinned + (int64_t)(5 * PAGE), pinned_bytes());
	EXPECT_EQ(self->regions + 1, nr_regions());
	q = (struct ortmem_query_args){ .handle = a.handle + 7 };
	EXPECT_EQ(-ENOENT, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	q.handle = a.handle;
	EXPECT_EQ(-ENOENT, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
}

TEST_F(dev, cap_parameter_is_enforced)
{
	char old[32];
	FILE *f = fopen(PARAM_CAP, "r");
	struct ortmem_alloc_args a, b;

	if (!f || geteuid() != 0)
		SKIP("needs root and %s", PARAM_CAP);
	ASSERT_NONNULL(fgets(old, sizeof(old), f));
	fclose(f);
	if (self->pinned)
		SKIP("someone else pins %lld bytes", (long long)self->pinned);
	ASSERT_EQ(0, sysfs_write(PARAM_CAP, "1"));
	EXPECT_EQ((int64_t)MIB, attr("max_pinned_bytes"));
	EXPECT_EQ(0, region_alloc(self->fd, MIB / 2, ORTMEM_NUMA_ANY, 0, &a));
	EXPECT_EQ(-ENOSPC, region_alloc(self->fd, MIB / 2 + PAGE, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(0, region_alloc(self->fd, MIB / 2, ORTMEM_NUMA_ANY, 0, &b));
	EXPECT_EQ((int64_t)MIB, pinned_bytes());
	EXPECT_EQ(-ENOSPC, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	EXPECT_EQ(0, region_free(self->fd, b.handle));
	EXPECT_EQ(0, sysfs_write(PARAM_CAP, old));
}

/*
 * A freed handle and its offsets are not given out again at once: a stale
 * FREE, QUERY or mmap of them fails instead of reaching the next region.
 */
TEST_F(dev, freed_handle_and_offset_are_not_reused_at_once)
{
	struct ortmem_alloc_args a, b;
	struct ortmem_query_args q = { 0 };
	void *p;
	int i;

	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, region_alloc(self->fd, 2 * PAGE, ORTMEM_NUMA_ANY, 0, &a));
		ASSERT_EQ(0, region_free(self->fd, a.handle));
		ASSERT_EQ(0, region_alloc(self->fd, 2 * PAGE, ORTMEM_NUMA_ANY, 0, &b));
		EXPECT_NE(a.handle, b.handle);
		EXPECT_NE(a.mmap_offset, b.mmap_offset);
		/* The offsets of the two never overlap. */
		EXPECT_TRUE(b.mmap_offset >= a.mmap_offset + 2 * PAGE ||
			    a.mmap_offset >= b.mmap_offset + 2 * PAGE);
		q = (struct ortmem_query_args){ .handle = a.handle };
		EXPECT_EQ(-ENOENT, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
		p = region_map(self->fd, PAGE, a.mmap_offset, PROT_READ, MAP_SHARED);
		EXPECT_EQ(MAP_FAILED, p);
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-ENOENT, region_free(self->fd, a.handle));
		ASSERT_EQ(0, region_free(self->fd, b.handle));
	}
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->regions, nr_regions());
}

/* A region is mapped read-write: a file not opened O_RDWR cannot ALLOC. */
TEST(alloc_needs_o_rdwr)
{
	static const int modes[] = { O_RDONLY, O_WRONLY };
	struct ortmem_version_args v = { 0 };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		int64_t regions = nr_regions();
		int fd = open(ORTMEM_DEV, modes[i] | O_CLOEXEC);

		if (fd < 0)
			SKIP("%s: %s", ORTMEM_DEV, strerror(errno));
		EXPECT_EQ(0, xioctl(fd, ORTMEM_IOC_GET_VERSION, &v));
		EXPECT_EQ(-EBADF, region_alloc(fd, PAGE, ORTMEM_NUMA_ANY, 0, NULL));
		EXPECT_EQ(regions, nr_regions());
		close(fd);
	}
}

TEST_HARNESS_MAIN
