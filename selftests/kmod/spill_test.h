/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the spill-mapping selftests (and bench/kmod/spillbench.c):
 * the ioctl calls, a CRC32C as the module computes it, per-page patterns,
 * and the spill file on the VM's ext4 disk (ORTMEM_VM_SPILL_DIR).
 */
#ifndef ORTMEM_KMOD_SPILL_TEST_H
#define ORTMEM_KMOD_SPILL_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <uapi/linux/ortmem.h>

/* CRC32C (Castagnoli, reflected, seed 0, no final inversion), bytewise. */
static inline uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	const unsigned char *p = buf;
	size_t i;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;
			int k;

			for (k = 0; k < 8; k++)
				c = (c >> 1) ^ (c & 1 ? 0x82F63B78u : 0);
			table[i] = c;
		}
	}
	for (i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

/* Page @idx of a buffer filled by seed @seed: distinct for every page. */
static inline uint64_t pattern_word(uint64_t seed, uint64_t idx, size_t w)
{
	return (seed ^ (idx * 0x9E3779B97F4A7C15ull)) + w * 0x100000001b3ull;
}

static inline void pattern_fill(void *buf, uint64_t first, uint64_t nr,
				uint64_t seed, size_t page)
{
	uint64_t *p = buf;
	size_t per = page / sizeof(*p), w;
	uint64_t i;

	for (i = 0; i < nr; i++)
		for (w = 0; w < per; w++)
			p[i * per + w] = pattern_word(seed, first + i, w);
}

/* Index of the first page of @buf that differs from the pattern, or -1. */
static inline int64_t pattern_check(const void *buf, uint64_t first,
				    uint64_t nr, uint64_t seed, size_t page)
{
	const uint64_t *p = buf;
	size_t per = page / sizeof(*p), w;
	uint64_t i;

	for (i = 0; i < nr; i++)
		for (w = 0; w < per; w++)
			if (p[i * per + w] != pattern_word(seed, first + i, w))
				return (int64_t)i;
	return -1;
}

static inline int spill_bind(int fd, uint32_t handle, uint64_t off,
			     uint64_t len, int file, uint64_t file_off)
{
	struct ortmem_bind_args a = { .handle = handle, .offset = off,
				      .length = len, .fd = file,
				      .file_offset = file_off };

	return ioctl(fd, ORTMEM_IOC_BIND, &a) ? -errno : 0;
}

static inline int spill_range(int fd, unsigned long cmd, uint32_t handle,
			      uint64_t off, uint64_t len, uint32_t flags)
{
	struct ortmem_range_args a = { .handle = handle, .flags = flags,
				       .offset = off, .length = len };

	return ioctl(fd, cmd, &a) ? -errno : 0;
}

#define spill_unbind(fd, h, off, len) spill_range(fd, ORTMEM_IOC_UNBIND, h, off, len, 0)
#define spill_restore(fd, h, off, len, fl) spill_range(fd, ORTMEM_IOC_RESTORE, h, off, len, fl)

/* Evict @len bytes at @off whose contents are at @addr, CRCs computed here. */
static inline int spill_evict(int fd, uint32_t handle, uint64_t off,
			      uint64_t len, const void *addr, size_t page)
{
	uint64_t nr = len / page, i;
	uint32_t *crcs = calloc(nr ? nr : 1, sizeof(*crcs));
	struct ortmem_evict_args a = { .handle = handle, .offset = off,
				       .length = len };
	int ret;

	if (!crcs)
		return -ENOMEM;
	for (i = 0; i < nr; i++)
		crcs[i] = crc32c_sw(0, (const char *)addr + i * page, page);
	a.crcs = (uintptr_t)crcs;
	ret = ioctl(fd, ORTMEM_IOC_EVICT, &a) ? -errno : 0;
	free(crcs);
	return ret;
}

static inline int spill_stats(int fd, uint32_t handle,
			      struct ortmem_spill_stats_args *out)
{
	memset(out, 0, sizeof(*out));
	out->handle = handle;
	return ioctl(fd, ORTMEM_IOC_SPILL_STATS, out) ? -errno : 0;
}

/* A new spill file in ORTMEM_VM_SPILL_DIR (O_DIRECT), or -1 with errno. */
static inline int spill_file_open(const char *name, int extra_flags,
				  char *path, size_t path_len)
{
	const char *dir = getenv("ORTMEM_VM_SPILL_DIR");

	if (!dir || !*dir) {
		errno = ENOENT;
		return -1;
	}
	snprintf(path, path_len, "%s/%s.%d", dir, name, (int)getpid());
	return open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | extra_flags,
		    0666);
}

#endif /* ORTMEM_KMOD_SPILL_TEST_H */
