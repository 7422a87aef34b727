/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the kmod selftests: open /dev/ortmem or skip, read the
 * module's sysfs counters, and thin ioctl calls that return -errno.
 */
#ifndef ORTMEM_KMOD_TEST_H
#define ORTMEM_KMOD_TEST_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <uapi/linux/ortmem.h>

#define ORTMEM_DEV "/dev/ortmem"
#define ORTMEM_SYSFS "/sys/class/misc/ortmem/"
#define PARAM_CAP "/sys/module/ortmem/parameters/max_pinned_mb"
#define PAGE 4096ull
#define MIB (1024ull * 1024)

static inline int64_t sysfs_read(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static inline int sysfs_write(const char *path, const char *val)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static inline int64_t attr(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), ORTMEM_SYSFS "%s", name);
	return sysfs_read(path);
}

#define pinned_bytes() attr("pinned_bytes")
#define nr_regions() attr("regions")
#define outstanding() attr("outstanding_pages")

static inline int dev_open(void)
{
	return open(ORTMEM_DEV, O_RDWR | O_CLOEXEC);
}

/* Open the device or skip the test when the module is not loaded. */
#define OPEN_OR_SKIP(fd)                                                    \
	do {                                                                \
		(fd) = dev_open();                                          \
		if ((fd) < 0)                                               \
			SKIP("%s: %s (module not loaded)", ORTMEM_DEV,      \
			     strerror(errno));                              \
	} while (0)

static inline int xioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static inline int region_alloc(int fd, uint64_t size, int node, uint32_t flags,
			       struct ortmem_alloc_args *out)
{
	struct ortmem_alloc_args a = { .size = size, .numa_node = node,
				       .flags = flags };
	int ret = xioctl(fd, ORTMEM_IOC_ALLOC, &a);

	if (out)
		*out = a;
	return ret;
}

static inline int region_free(int fd, uint32_t handle)
{
	struct ortmem_free_args a = { .handle = handle };

	return xioctl(fd, ORTMEM_IOC_FREE, &a);
}

static inline void *region_map(int fd, uint64_t len, uint64_t off, int prot,
			       int flags)
{
	return mmap(NULL, len, prot, flags, fd, (off_t)off);
}

/* Wait until the module's counters are back to @pinned / 0 outstanding. */
static inline int64_t settle_outstanding(void)
{
	int64_t v = outstanding();
	int i;

	/* Pages of a killed process go back when its exit completes. */
	for (i = 0; i < 200 && v != 0; i++) {
		usleep(10000);
		v = outstanding();
	}
	return v;
}

#endif /* ORTMEM_KMOD_TEST_H */
