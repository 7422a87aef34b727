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

static int mlock_alloc(struct ortmem_host *host, struct ortmem__host_buf *b,
		       int numa_node)
{
	struct rlimit rl = { 0, 0 };
	void *p;
	int ret;

	(void)host;
	p = mmap(NULL, b->size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
