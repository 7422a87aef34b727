// SPDX-License-Identifier: MIT
/*
 * The compat ioctl path: this program is built -m32 -static and runs as an
 * i386 process in the VM, so every ioctl goes through the module's
 * compat_ioctl (compat_ptr_ioctl).  The structs are the same size and
 * layout as for 64-bit callers; the 64-bit fields must arrive whole.
 *
 * harness.h needs __int128, which i386 lacks, so this program prints its
 * TAP itself, with the harness's names for the checks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../ortmem_test.h"

#define KSFT_SKIP 4

static int failures;

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			printf("# %s:%d: check failed: %s\n", __FILE__,     \
			       __LINE__, #cond);                            \
			failures++;                                         \
		}                                                           \
	} while (0)
#define EXPECT_EQ(a, b) CHECK((int64_t)(a) == (int64_t)(b))
#define EXPECT_NE(a, b) CHECK((a) != (b))
#define EXPECT_TRUE(a) CHECK(a)
#define ASSERT_EQ(a, b)                                                     \
	do {                                                                \
		if ((int64_t)(a) != (int64_t)(b)) {                         \
			EXPECT_EQ(a, b);                                    \
			return;                                             \
		}                                                           \
	} while (0)
#define ASSERT_NE(a, b)                                                     \
	do {                                                                \
		if ((a) == (b)) {                                           \
			EXPECT_NE(a, b);                                    \
			return;                                             \
		}                                                           \
	} while (0)

struct c32 {
	int fd;
	int64_t pinned;
	int64_t regions;
};

#define TEST_F(fixture, name) static void fixture##_##name(struct fixture *self __attribute__((unused)))

TEST_F(c32, is_a_32bit_process)
{
	EXPECT_EQ(4, sizeof(void *));
	EXPECT_EQ(4, sizeof(long));
	EXPECT_EQ(40, sizeof(struct ortmem_version_args));
	EXPECT_EQ(32, sizeof(struct ortmem_alloc_args));
	EXPECT_EQ(8, sizeof(struct ortmem_free_args));
	EXPECT_EQ(32, sizeof(struct ortmem_query_args));
}

TEST_F(c32, version_handshake)
{
	struct ortmem_version_args v = { .lib_abi_version = ORTMEM_ABI_VERSION };

	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_GET_VERSION, &v));
	EXPECT_EQ(ORTMEM_ABI_VERSION, v.abi_version);
	EXPECT_EQ(ORTMEM_ABI_MIN_VERSION, v.min_abi_version);
	EXPECT_TRUE(v.features & ORTMEM_FEAT_REGIONS);
	EXPECT_EQ(PAGE, v.page_size);
	EXPECT_EQ(attr("max_pinned_bytes"), (int64_t)v.max_pinned_bytes);
}

TEST_F(c32, alloc_map_write_read_free)
{
	struct ortmem_alloc_args a;
	struct ortmem_query_args q = { 0 };
	uint32_t *p, *r;
	size_t i, n = 8 * PAGE / sizeof(*p);

	ASSERT_EQ(0, region_alloc(self->fd, 8 * PAGE, ORTMEM_NUMA_ANY, 0, &a));
	/* The offset is the module's to choose: page-aligned, in mmap2's reach. */
	EXPECT_EQ(0, a.mmap_offset % PAGE);
	CHECK(a.mmap_offset >= PAGE);
	CHECK(a.mmap_offset + 8 * PAGE <= ORTMEM_MMAP_OFFSET_LIMIT);
	EXPECT_EQ(self->pinned + (int64_t)(8 * PAGE), pinned_bytes());
	q.handle = a.handle;
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(8 * PAGE, q.size);
	EXPECT_EQ(a.mmap_offset, q.mmap_offset);

	p = region_map(self->fd, 8 * PAGE, a.mmap_offset, PROT_READ | PROT_WRITE,
		       MAP_SHARED);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, p[i]);
	for (i = 0; i < n; i++)
		p[i] = (uint32_t)(i * 2654435761u);
	r = region_map(self->fd, 8 * PAGE, a.mmap_offset, PROT_READ, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, r);
	for (i = 0; i < n; i++)
		if (r[i] != (uint32_t)(i * 2654435761u))
			break;
	EXPECT_EQ(n, i);
	q = (struct ortmem_query_args){ .handle = a.handle };
	ASSERT_EQ(0, xioctl(self->fd, ORTMEM_IOC_QUERY, &q));
	EXPECT_EQ(2, q.map_count);
	EXPECT_EQ(0, munmap(r, 8 * PAGE));
	EXPECT_EQ(0, munmap(p, 8 * PAGE));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	EXPECT_EQ(-ENOENT, region_free(self->fd, a.handle));
	EXPECT_EQ(self->pinned, pinned_bytes());
}

TEST_F(c32, bad_input)
{
	struct ortmem_alloc_args a = { .size = PAGE, .numa_node = ORTMEM_NUMA_ANY,
				       .pad = 1 };

	EXPECT_EQ(-EINVAL, xioctl(self->fd, ORTMEM_IOC_ALLOC, &a));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 1u << 31, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, 0, ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(-EINVAL, region_alloc(self->fd, ORTMEM_REGION_MAX_SIZE + PAGE,
					ORTMEM_NUMA_ANY, 0, NULL));
	/* 4 GiB + 1 page: truncated to 32 bits it would be one valid page. */
	EXPECT_EQ(-ENOSPC, region_alloc(self->fd, (1ull << 32) + PAGE,
					ORTMEM_NUMA_ANY, 0, NULL));
	EXPECT_EQ(-ENOENT, region_free(self->fd, 12345));
	EXPECT_EQ(-EFAULT, xioctl(self->fd, ORTMEM_IOC_ALLOC, NULL));
	EXPECT_EQ(-ENOTTY, xioctl(self->fd, _IOWR(ORTMEM_IOC_MAGIC, 0x7f,
						  struct ortmem_alloc_args), &a));
	/* mmap past the region, and private: refused here too. */
	ASSERT_EQ(0, region_alloc(self->fd, PAGE, ORTMEM_NUMA_ANY, 0, &a));
	CHECK(MAP_FAILED == region_map(self->fd, 2 * PAGE, a.mmap_offset,
					 PROT_READ, MAP_SHARED));
	CHECK(MAP_FAILED == region_map(self->fd, PAGE, a.mmap_offset,
					 PROT_READ, MAP_PRIVATE));
	EXPECT_EQ(0, region_free(self->fd, a.handle));
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->regions, nr_regions());
}

/*
 * Many regions, handles well past 15 (where handle << 40 left mmap2's
 * reach): each maps, and each mapping reaches its own region's pages, seen
 * again through a second mapping.
 */
#define NR_MANY 40
TEST_F(c32, many_regions_each_map_their_own)
{
	struct ortmem_alloc_args a[NR_MANY];
	unsigned int i, pages;
	uint32_t *p;

	for (i = 0; i < NR_MANY; i++) {
		pages = i % 5 + 1;
		ASSERT_EQ(0, region_alloc(self->fd, pages * PAGE, ORTMEM_NUMA_ANY, 0, &a[i]));
		CHECK(a[i].mmap_offset + pages * PAGE <= ORTMEM_MMAP_OFFSET_LIMIT);
		p = region_map(self->fd, pages * PAGE, a[i].mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
		ASSERT_NE(MAP_FAILED, (void *)p);
		p[0] = 0x5eed0000u + i;
		p[pages * PAGE / 4 - 1] = ~(0x5eed0000u + i);
		EXPECT_EQ(0, munmap(p, pages * PAGE));
	}
	CHECK(a[NR_MANY - 1].handle >= 16);
	for (i = 0; i < NR_MANY; i++) {
		pages = i % 5 + 1;
		p = region_map(self->fd, pages * PAGE, a[i].mmap_offset, PROT_READ,
			       MAP_SHARED);
		ASSERT_NE(MAP_FAILED, (void *)p);
		EXPECT_EQ(0x5eed0000u + i, p[0]);
		EXPECT_EQ(~(0x5eed0000u + i), p[pages * PAGE / 4 - 1]);
		EXPECT_EQ(0, munmap(p, pages * PAGE));
		/* One page more would reach into the next region: refused. */
		p = region_map(self->fd, (pages + 1) * PAGE, a[i].mmap_offset,
			       PROT_READ, MAP_SHARED);
		EXPECT_TRUE(p == MAP_FAILED && errno == EINVAL);
	}
	for (i = 0; i < NR_MANY; i++)
		EXPECT_EQ(0, region_free(self->fd, a[i].handle));
}

static const struct {
	const char *name;
	void (*fn)(struct c32 *self);
} tests[] = {
	{ "c32.is_a_32bit_process", c32_is_a_32bit_process },
	{ "c32.version_handshake", c32_version_handshake },
	{ "c32.alloc_map_write_read_free", c32_alloc_map_write_read_free },
	{ "c32.bad_input", c32_bad_input },
	{ "c32.many_regions_each_map_their_own", c32_many_regions_each_map_their_own },
};

int main(void)
{
	unsigned int i, n = sizeof(tests) / sizeof(tests[0]), bad = 0;
	struct c32 self;

	printf("TAP version 13\n1..%u\n", n);
	for (i = 0; i < n; i++) {
		self.fd = dev_open();
		if (self.fd < 0) {
			printf("ok %u %s # SKIP %s: %s (module not loaded)\n",
			       i + 1, tests[i].name, ORTMEM_DEV, strerror(errno));
			continue;
		}
		self.pinned = pinned_bytes();
		self.regions = nr_regions();
		failures = 0;
		tests[i].fn(&self);
		close(self.fd);
		/* Whatever the test did, the close gave it all back. */
		EXPECT_EQ(self.pinned, pinned_bytes());
		EXPECT_EQ(self.regions, nr_regions());
		printf("%sok %u %s\n", failures ? "not " : "", i + 1, tests[i].name);
		bad += !!failures;
	}
	return bad ? 1 : 0;
}
