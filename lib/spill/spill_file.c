// SPDX-License-Identifier: MIT
/*
 * The spill file: an O_TMPFILE (mode 0600) in the spill directory, so it has
 * no name and vanishes with the last descriptor, even after a crash; opened
 * with O_DIRECT where the filesystem allows, with the alignment the kernel
 * reports; space reserved with fallocate() as the extents need it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "spill_internal.h"

/* Extents are laid out in units of at least a page. */
#define SFILE_MIN_UNIT 4096u

static uint32_t sfile_sysfs_lbs(dev_t dev)
{
	char path[128];
	unsigned int lbs = 0;
	FILE *fp;

	snprintf(path, sizeof(path),
		 "/sys/dev/block/%u:%u/queue/logical_block_size",
		 major(dev), minor(dev));
	fp = fopen(path, "re");
	if (!fp) {
		/* A partition keeps its queue/ in the parent's folder. */
		snprintf(path, sizeof(path),
			 "/sys/dev/block/%u:%u/../queue/logical_block_size",
			 major(dev), minor(dev));
		fp = fopen(path, "re");
	}
	if (!fp)
		return 0;
	if (fscanf(fp, "%u", &lbs) != 1)
		lbs = 0;
	fclose(fp);
	return lbs;
}

static bool is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/* Alignment for O_DIRECT: statx(STATX_DIOALIGN), else the logical block size. */
static void sfile_probe_align(struct ortmem__sfile *f)
{
	struct statx stx;
	uint32_t off_align = 0, mem_align = 0;

	if (!statx(f->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN | STATX_BASIC_STATS,
		   &stx)) {
		if ((stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
			off_align = stx.stx_dio_offset_align;
			mem_align = stx.stx_dio_mem_align;
			f->dioalign = true;
		} else {
			off_align = sfile_sysfs_lbs(makedev(stx.stx_dev_major,
							    stx.stx_dev_minor));
		}
	}
	if (!is_pow2(off_align))
		off_align = SFILE_MIN_UNIT;
	if (!is_pow2(mem_align))
		mem_align = off_align;
	f->align = off_align > SFILE_MIN_UNIT ? off_align : SFILE_MIN_UNIT;
	f->mem_align = mem_align;
}

static int sfile_open_tmp(const char *dir, int flags)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | flags, 0600);

	return fd < 0 ? -errno : fd;
}

int ortmem__sfile_open(struct ortmem__sfile *f, const char *dir, bool buffered)
{
	int fd = -EINVAL;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	if (!buffered) {
		fd = sfile_open_tmp(dir, O_DIRECT);
		if (fd >= 0)
			f->direct = true;
		else if (fd == -EINVAL)
			pr_info("spill: %s does not take O_DIRECT; using buffered I/O",
				dir);
	}
	if (fd < 0 && (buffered || fd == -EINVAL))
		fd = sfile_open_tmp(dir, 0);
	if (fd < 0) {
		if (fd == -EISDIR || fd == -EINVAL)
			fd = -EOPNOTSUPP;
		return ortmem__err_alloc_failed(fd, ORTMEM_TIER_DISK, 0,
			"cannot create a spill file with O_TMPFILE in %s", dir);
	}
	f->fd = fd;
	sfile_probe_align(f);
	if (!f->direct)
		f->mem_align = 1;
	return 0;
}

int ortmem__sfile_open_ro(struct ortmem__sfile *f, const char *path,
			  bool buffered)
{
	int fd = -EINVAL;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	snprintf(f->dir, sizeof(f->dir), "%s", path);
	if (!buffered) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
		if (fd >= 0)
			f->direct = true;
		else
			fd = -errno;
	}
	if (fd < 0 && (buffered || fd == -EINVAL)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	if (fd < 0)
		return fd;
	f->fd = fd;
	sfile_probe_align(f);
	if (!f->direct)
		f->mem_align = 1;
	return 0;
}

void ortmem__sfile_close(struct ortmem__sfile *f)
{
	if (f->fd >= 0 && close(f->fd))
		pr_warn("spill: closing the spill file in %s failed (errno %d)",
			f->dir, errno);
	f->fd = -1;
}

int ortmem__sfile_reserve(struct ortmem__sfile *f, uint64_t from, uint64_t to)
{
	int ret;

	if (to <= from)
		return 0;
	do {
		ret = fallocate(f->fd, 0, (off_t)from, (off_t)(to - from));
	} while (ret && errno == EINTR);
	if (!ret)
		return 0;
	ret = -errno;
	if (ret != -EOPNOTSUPP && ftruncate(f->fd, (off_t)from))
		pr_warn("spill: cannot trim a failed reservation in %s (errno %d)",
			f->dir, errno);
	if (ret == -EOPNOTSUPP) {
		/* No fallocate here: a sparse size at least bounds the file. */
		if (!ftruncate(f->fd, (off_t)to))
			return 0;
		ret = -errno;
	}
	return ret;
}
