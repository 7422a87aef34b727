// SPDX-License-Identifier: MIT
/*
 * Host-tier backend on /dev/ortmem: one module region per buffer, mapped
 * shared and populated at once.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>

#include "internal.h"
#include "host_internal.h"

static int module_refusal(struct ortmem_host *host, uint64_t size, int ret)
{
	struct rlimit rl = { 0, 0 };
	uint64_t pinned = 0, cap = 0;

	ortmem__dev_attr(host->dev, "pinned_bytes", &pinned);
	ortmem__dev_attr(host->dev, "max_pinned_bytes", &cap);
	if (ret == -ENOSPC)
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, size,
			"ortmem module cap reached: %" PRIu64 " of %" PRIu64 " bytes pinned module-wide (raise the max_pinned_mb module parameter)",
			pinned, cap);
	if (ret == -ENOMEM) {
		getrlimit(RLIMIT_MEMLOCK, &rl);
		if (rl.rlim_cur != RLIM_INFINITY && size > rl.rlim_cur)
			return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, size,
				"ortmem module: the request is larger than RLIMIT_MEMLOCK (%llu bytes)",
				(unsigned long long)rl.rlim_cur);
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, size,
			"ortmem module: over RLIMIT_MEMLOCK (%llu bytes, shared by the user's pins) or out of pages; %" PRIu64 " bytes pinned module-wide",
			(unsigned long long)rl.rlim_cur, pinned);
	}
	if (ret == -EINVAL)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size,
			"the ortmem module refused the request as invalid");
	return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, size,
		"ortmem module: region allocation failed: %s", strerror(-ret));
}

static int module_alloc(struct ortmem_host *host, struct ortmem__host_buf *b,
			int numa_node)
{
	struct ortmem_alloc_args a = { .size = b->size, .numa_node = numa_node };
	void *p;
	int ret;

	ret = ortmem__sys_alloc(host->dev->fd, &a);
	if (ret)
		return module_refusal(host, b->size, ret);
	ret = ortmem__sys_map(host->dev->fd, b->size, a.mmap_offset, &p);
	if (ret) {
		ortmem__sys_free(host->dev->fd, a.handle);
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: mmap of region %" PRIu32 " failed: %s",
			a.handle, strerror(-ret));
	}
	b->ptr = p;
	b->handle = a.handle;
	return 0;
}

static int module_free(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	int ret = ortmem__sys_unmap(b->ptr, b->size);
	int ret2 = ortmem__sys_free(host->dev->fd, b->handle);

	return ret ? ret : ret2;
}

const struct ortmem__host_ops ortmem__host_module_ops = {
	.backend = ORTMEM_HOST_BACKEND_MODULE,
	.alloc = module_alloc,
	.free = module_free,
};
