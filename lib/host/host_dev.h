/* SPDX-License-Identifier: MIT */
/*
 * lib/host/host_dev.h - /dev/ortmem inside libortmem: ioctl wrappers
 * (host_sys.c) and discovery, open and handshake (host_dev.c).  Never
 * installed.
 */
#ifndef ORTMEM_LIB_HOST_DEV_H
#define ORTMEM_LIB_HOST_DEV_H

#include <limits.h>
#include <stdint.h>

#include <uapi/linux/ortmem.h>

/* ---- host_sys.c: one wrapper per command; 0 or -errno, never errno ---- */

int ortmem__sys_get_version(int fd, struct ortmem_version_args *args);
int ortmem__sys_alloc(int fd, struct ortmem_alloc_args *args);
int ortmem__sys_free(int fd, uint32_t handle);
int ortmem__sys_query(int fd, struct ortmem_query_args *args);
/* mmap of a region: 0 and *addrp, or -errno. */
int ortmem__sys_map(int fd, uint64_t len, uint64_t offset, void **addrp);
int ortmem__sys_unmap(void *addr, uint64_t len);
/* The spill mapping (ORTMEM_FEAT_SPILL_MAP); UNBIND and RESTORE by cmd. */
int ortmem__sys_bind(int fd, struct ortmem_bind_args *args);
int ortmem__sys_range(int fd, unsigned long cmd, uint32_t handle,
		      uint64_t off, uint64_t len, uint32_t flags);
int ortmem__sys_evict(int fd, struct ortmem_evict_args *args);
int ortmem__sys_spill_stats(int fd, struct ortmem_spill_stats_args *args);

/* ---- host_dev.c ---- */

struct ortmem__dev {
	int fd;
	char node[PATH_MAX];		/* e.g. /dev/ortmem */
	char syspath[PATH_MAX];		/* sysfs folder; "" when unknown */
	struct ortmem_version_args version;
};

/*
 * ortmem__dev_open() - Find /dev/ortmem (libudev, or @node when not NULL,
 * or $ORTMEM_DEVICE), open it and run the version handshake.
 *
 * Return: 0, -ENODEV (no module), -EACCES/-EPERM (node not accessible),
 * -ORTMEM_E_ABI_MISMATCH, -ENOMEM; the detailed error says which and why.
 */
int ortmem__dev_open(const char *node, struct ortmem__dev **devp);
void ortmem__dev_close(struct ortmem__dev *dev);

/* Read a numeric sysfs attribute of the device: 0 or -errno. */
int ortmem__dev_attr(const struct ortmem__dev *dev, const char *name,
		     uint64_t *val);

#endif /* ORTMEM_LIB_HOST_DEV_H */
