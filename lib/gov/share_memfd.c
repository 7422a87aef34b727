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
 * A plugin like the backends: it includes only the public headers.
 */
#include <errno.h>
#include <stdint.h>
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
};

/* For gov_prefix.c: the default when a caller passes no ops. */
const struct ortmem_share_ops *ortmem__share_memfd(void);
const struct ortmem_share_ops *ortmem__share_memfd(void)
{
	return &memfd_ops;
}
