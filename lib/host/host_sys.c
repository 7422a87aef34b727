// SPDX-License-Identifier: MIT
/*
 * Thin wrappers over the /dev/ortmem ioctls and mmap, one per command, that
 * return -errno instead of setting errno.
 */
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "internal.h"
#include "host_internal.h"

static int sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

int ortmem__sys_get_version(int fd, struct ortmem_version_args *args)
{
	return sys_ioctl(fd, ORTMEM_IOC_GET_VERSION, args);
}

int ortmem__sys_alloc(int fd, struct ortmem_alloc_args *args)
{
	return sys_ioctl(fd, ORTMEM_IOC_ALLOC, args);
}

int ortmem__sys_free(int fd, uint32_t handle)
{
	struct ortmem_free_args args = { .handle = handle };

	return sys_ioctl(fd, ORTMEM_IOC_FREE, &args);
}

int ortmem__sys_map(int fd, uint64_t len, uint64_t offset, void **addrp)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, (off_t)offset);

	if (p == MAP_FAILED)
		return -errno;
	*addrp = p;
	return 0;
}

int ortmem__sys_unmap(void *addr, uint64_t len)
{
	return munmap(addr, len) ? -errno : 0;
}

int ortmem__sys_bind(int fd, struct ortmem_bind_args *args)
{
	return sys_ioctl(fd, ORTMEM_IOC_BIND, args);
}

int ortmem__sys_range(int fd, unsigned long cmd, uint32_t handle,
		      uint64_t off, uint64_t len, uint32_t flags)
{
	struct ortmem_range_args args = { .handle = handle, .flags = flags,
					  .offset = off, .length = len };

	return sys_ioctl(fd, cmd, &args);
}

int ortmem__sys_evict(int fd, struct ortmem_evict_args *args)
{
	return sys_ioctl(fd, ORTMEM_IOC_EVICT, args);
}

int ortmem__sys_spill_stats(int fd, struct ortmem_spill_stats_args *args)
{
	return sys_ioctl(fd, ORTMEM_IOC_SPILL_STATS, args);
}
