// SPDX-License-Identifier: MIT
/*
 * Host-tier fallback without the module: anonymous mmap + mlock, bound to a
 * NUMA node with mbind when one is asked for, not inherited across fork.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "host_internal.h"

#define MPOL_BIND 2
#define MPOL_MF_STRICT (1 << 0)
#define MAX_NODES 1024

static int bind_node(void *p, uint64_t size, int node)
{
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);

	mask[node / bits] |= 1ul << (node % bits);
	if (syscall(SYS_mbind, p, size, MPOL_BIND, mask,
		    (unsigned long)MAX_NODES + 1, MPOL_MF_STRICT))
		return -errno;
	return 0;
}

/*
 * Buffers of at least one huge page start on a huge-page boundary and ask
 * for transparent huge pages: the disk's O_DIRECT reads into them then
 * pin one folio per 2 MiB rather than 512 pages (pinning was 6 % of
 * ortmem-run's CPU with 4 KiB pages, 0.2 % with these), and the compute
 * that streams through them misses the TLB far less.  Where THP is off,
 * madvise is refused or ignored and the buffer is plain.
 */
#define HUGE_BYTES (2ull << 20)

static void *map_buffer(uint64_t size)
{
	uint64_t head, span = size + HUGE_BYTES;
	uint8_t *p;

	if (size < HUGE_BYTES || span < size)
		return mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p = mmap(NULL, span, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return p;
	/* Keep [p + head, + size), aligned; give back what is around it. */
	head = (HUGE_BYTES - (uintptr_t)p % HUGE_BYTES) % HUGE_BYTES;
	if (head)
		munmap(p, head);
	munmap(p + head + size, span - head - size);
	p += head;
	madvise(p, size, MADV_HUGEPAGE);
	return p;
}

static int mlock_alloc(struct ortmem_host *host, struct ortmem__host_buf *b,
		       int numa_node)
{
	struct rlimit rl = { 0, 0 };
	void *p;
	int ret;

	(void)host;
	p = map_buffer(b->size);
	if (p == MAP_FAILED)
		return ortmem__err_alloc_failed(-errno, ORTMEM_TIER_HOST, b->size,
			"mmap of %" PRIu64 " anonymous bytes failed: %s",
			b->size, strerror(errno));
	if (numa_node >= 0) {
		ret = bind_node(p, b->size, numa_node);
		if (ret) {
			munmap(p, b->size);
			return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
				"mbind to NUMA node %d failed: %s", numa_node,
				strerror(-ret));
		}
	}
	/* Not shared with a forked child, as with the module (VM_DONTCOPY). */
	if (madvise(p, b->size, MADV_DONTFORK)) {
		ret = -errno;
		munmap(p, b->size);
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
			"madvise(MADV_DONTFORK) failed: %s", strerror(-ret));
	}
	/* The raw call: sanitizer runtimes turn mlock() into a no-op. */
	if (syscall(SYS_mlock, p, b->size)) {
		ret = -errno;
		munmap(p, b->size);
		getrlimit(RLIMIT_MEMLOCK, &rl);
		if (rl.rlim_cur == RLIM_INFINITY)
			return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
				"mlock backend: mlock failed: %s (RLIMIT_MEMLOCK is unlimited, so RAM is short)",
				strerror(-ret));
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
			"mlock backend: mlock failed: %s; RLIMIT_MEMLOCK is %llu bytes (raise it, e.g. 'ulimit -l' or LimitMEMLOCK=, or load the ortmem module)",
			strerror(-ret), (unsigned long long)rl.rlim_cur);
	}
	b->ptr = p;
	b->handle = 0;
	return 0;
}

static int mlock_free(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	(void)host;
	/* munmap unlocks too. */
	return munmap(b->ptr, b->size) ? -errno : 0;
}

const struct ortmem__host_ops ortmem__host_mlock_ops = {
	.backend = ORTMEM_HOST_BACKEND_MLOCK,
	.alloc = mlock_alloc,
	.free = mlock_free,
};
