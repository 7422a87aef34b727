/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the spill tests: a private spill directory, patterned
 * buffers, and opening a handle with a few options.
 */
#ifndef ORTMEM_SELFTESTS_SPILL_COMMON_H
#define ORTMEM_SELFTESTS_SPILL_COMMON_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#define MIB (1024ull * 1024)

/* A fresh folder for spill files, on the disk (not tmpfs) unless
 * ORTMEM_TEST_SPILL_DIR names another parent. */
static inline int spill_test_dir(char *path, size_t len)
{
	const char *parent = getenv("ORTMEM_TEST_SPILL_DIR");

	snprintf(path, len, "%s/ortmem-spill-test.XXXXXX", parent ? parent : "/var/tmp");
	return mkdtemp(path) ? 0 : -1;
}

/* Entries in @path besides . and .. */
static inline int spill_dir_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Bytes that differ for every seed and position. */
static inline void spill_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static inline int spill_open_in(const char *dir, uint32_t flags, uint32_t qd,
				uint64_t budget, struct ortmem_spill **sp)
{
	ORTMEM_OPTS(ortmem_spill_opts, o, .dir = dir, .flags = flags,
		    .queue_depth = qd, .budget_bytes = budget,
		    .grow_bytes = 8 * MIB);

	return ortmem_spill_open(&o, sp);
}

static inline int spill_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

#endif
