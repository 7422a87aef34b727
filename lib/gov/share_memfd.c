// SPDX-License-Identifier: MIT
/*
 * The built-in shared mapping of prefixes on the host tier: the physical
 * bytes are a memfd, the owner maps it shared and writable, and each
 * sharer reserves its whole range as private anonymous memory and maps the
 * memfd over its start, read-only unless the owner made the prefix
 * writable.  Both mappings are of the same pages: a write through one is
 * seen through every other, and the bytes exist once.  A write into a
 * read-only prefix faults (the kernel refuses it, not a convention).
 *
 * map_at maps a sharer into a range the caller reserved (an anonymous
 * PROT_NONE mapping of its own, checked in /proc/self/maps, since MAP_FIXED
 * over anything else would silently replace the caller's memory), and
 * unmap_at puts the reservation back instead of unmapping.
 *
 * A plugin like the backends: it includes only the public headers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ortmem/binding.h>

static int memfd_create_prefix(void *ctx, uint64_t size, uint64_t *physp,
			       uint64_t *addrp)
{
	void *addr;
	int fd;

	(void)ctx;
	fd = memfd_create("ortmem-prefix", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size)) {
		int err = -errno;

		close(fd);
		return err;
	}
	addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED) {
		int err = -errno;

		close(fd);
		return err;
	}
	*physp = (uint64_t)fd;
	*addrp = (uint64_t)(uintptr_t)addr;
	return 0;
}

static int memfd_map(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
		     int writable, uint64_t *addrp)
{
	void *base, *p;

	(void)ctx;
	base = mmap(NULL, total, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return -errno;
	p = mmap(base, plen, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED | MAP_FIXED, (int)phys, 0);
	if (p == MAP_FAILED) {
		int err = -errno;

		munmap(base, total);
		return err;
	}
	*addrp = (uint64_t)(uintptr_t)base;
	return 0;
}

static int memfd_unmap(void *ctx, uint64_t addr, uint64_t plen, uint64_t total)
{
	(void)ctx;
	(void)plen;
	return munmap((void *)(uintptr_t)addr, total) ? -errno : 0;
}

/*
 * Whether [addr, addr + len) is covered by anonymous PROT_NONE mappings
 * ("---p", no file): 1 yes, 0 no, -errno when the maps cannot be read.
 */
static int reserved_range(uint64_t addr, uint64_t len)
{
	uint64_t start, end, ino, cover = addr;
	char perms[5], line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -errno;
	while (cover < addr + len && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %*s %*s %" SCNu64,
			   &start, &end, perms, &ino) != 4)
			continue;
		if (start <= cover && cover < end && !strcmp(perms, "---p") &&
		    !ino)
			cover = end;
		/* A line longer than the buffer: skip the rest of it. */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	fclose(f);
	return cover >= addr + len;
}

static int memfd_map_at(void *ctx, uint64_t phys, uint64_t plen, uint64_t total,
			int writable, uint64_t addr)
{
	long page = sysconf(_SC_PAGESIZE);
	void *base = (void *)(uintptr_t)addr, *p;
	int ret;

	(void)ctx;
	if (page <= 0 || addr % (uint64_t)page || total > UINT64_MAX - addr)
		return -EINVAL;
	ret = reserved_range(addr, total);
	if (ret <= 0)
		return ret ? ret : -EINVAL;
	p = mmap(base, total, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	p = mmap(base, plen, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED | MAP_FIXED, (int)phys, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		mmap(base, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		     MAP_NORESERVE | MAP_FIXED, -1, 0);
		return ret;
	}
	return 0;
}

/* The caller's reservation again, as it was before map_at. */
static int memfd_unmap_at(void *ctx, uint64_t addr, uint64_t plen,
			  uint64_t total)
{
	void *p = mmap((void *)(uintptr_t)addr, total, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		       -1, 0);

	(void)ctx;
	(void)plen;
	return p == MAP_FAILED ? -errno : 0;
}

static void memfd_destroy(void *ctx, uint64_t phys, uint64_t addr,
			  uint64_t size)
{
	(void)ctx;
	munmap((void *)(uintptr_t)addr, size);
	close((int)phys);
}

static const struct ortmem_share_ops memfd_ops = {
	.sz = sizeof(struct ortmem_share_ops),
	.name = "memfd",
	.create = memfd_create_prefix,
	.map = memfd_map,
	.unmap = memfd_unmap,
	.destroy = memfd_destroy,
	.map_at = memfd_map_at,
	.unmap_at = memfd_unmap_at,
};

/* For gov_prefix.c: the default when a caller passes no ops. */
const struct ortmem_share_ops *ortmem__share_memfd(void);
const struct ortmem_share_ops *ortmem__share_memfd(void)
{
	return &memfd_ops;
}
