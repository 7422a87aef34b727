/* SPDX-License-Identifier: MIT */
/*
 * The setup the spill-mapping selftests share (spillmap.c, spillmap_fail.c):
 * the device, a new spill file on the VM's ext4 disk, and a mapped region,
 * optionally filled with a pattern, bound to the file and written there.
 * Include after ../harness.h.
 */
#ifndef ORTMEM_KMOD_SPILL_FIXTURE_H
#define ORTMEM_KMOD_SPILL_FIXTURE_H

#include <stdbool.h>
#include <sys/mman.h>

#include "ortmem_test.h"
#include "spill_test.h"

struct spill_fx {
	int fd;			/* /dev/ortmem */
	int file;		/* the spill file, unlinked at teardown */
	char path[256];
	unsigned char *map;	/* the region, mapped shared */
	uint64_t len;
	struct ortmem_alloc_args a;
	int64_t pinned;		/* pinned bytes and outstanding pages before */
	int64_t out;
};

/*
 * Open the device and a new spill file called @name (with @file_flags,
 * O_DIRECT for the tests that need a real disk read), skipping the test
 * without either; then allocate and map a region of @len bytes.
 */
static inline void spill_fx_setup(struct __test_metadata *_metadata,
				  struct spill_fx *fx, const char *name,
				  int file_flags, uint64_t len)
{
	fx->file = -1;
	fx->map = MAP_FAILED;
	fx->len = len;
	OPEN_OR_SKIP(fx->fd);
	fx->file = spill_file_open(name, file_flags, fx->path, sizeof(fx->path));
	if (fx->file < 0)
		SKIP("no spill file system (ORTMEM_VM_SPILL_DIR): %s", strerror(errno));
	fx->pinned = pinned_bytes();
	fx->out = outstanding();
	ASSERT_EQ(0, region_alloc(fx->fd, len, ORTMEM_NUMA_ANY, 0, &fx->a));
	fx->map = region_map(fx->fd, len, fx->a.mmap_offset,
			     PROT_READ | PROT_WRITE, MAP_SHARED);
	ASSERT_NE(MAP_FAILED, fx->map);
}

/* Fill the region with @seed's pattern, bind it at @file_off, write it there. */
static inline void spill_fx_write(struct __test_metadata *_metadata,
				  struct spill_fx *fx, uint64_t seed,
				  uint64_t file_off)
{
	pattern_fill(fx->map, 0, fx->len / PAGE, seed, PAGE);
	ASSERT_EQ(0, spill_bind(fx->fd, fx->a.handle, 0, fx->len, fx->file,
				file_off));
	ASSERT_EQ((ssize_t)fx->len, pwrite(fx->file, fx->map, fx->len,
					   (off_t)file_off));
}

/*
 * Unmap, remove the spill file and close the device; with @check, the
 * charges must be back where they were before the setup.
 */
static inline void spill_fx_teardown(struct __test_metadata *_metadata,
				     struct spill_fx *fx, bool check)
{
	if (fx->map != MAP_FAILED)
		munmap(fx->map, fx->len);
	if (fx->file >= 0) {
		close(fx->file);
		unlink(fx->path);
	}
	if (fx->fd >= 0) {
		close(fx->fd);
		if (check) {
			EXPECT_EQ(fx->pinned, pinned_bytes());
			EXPECT_EQ(fx->out, outstanding());
		}
	}
}

/*
 * Pages of @map whose page table entry is there (mincore(2): for a mapping of
 * the device, whose address space caches nothing, that is exactly the pages
 * mapped), so that a test can tell a page mapped ahead of its touch.
 */
static inline uint64_t mapped_pages(const void *map, uint64_t n)
{
	unsigned char *vec = calloc(n, 1);
	uint64_t i, got = 0;

	if (!vec || mincore((void *)map, n * PAGE, vec)) {
		free(vec);
		return UINT64_MAX;
	}
	for (i = 0; i < n; i++)
		got += vec[i] & 1;
	free(vec);
	return got;
}

#endif /* ORTMEM_KMOD_SPILL_FIXTURE_H */
