// SPDX-License-Identifier: MIT
/*
 * The host tier's public API: backend choice (module or mmap + mlock), the
 * table of live buffers, and the checks every request goes through.
 */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"
#include "host_internal.h"

/* The fallback is announced once per process, whatever the reason. */
static atomic_int fallback_announced;

static void announce_fallback(const char *why)
{
	if (atomic_exchange(&fallback_announced, 1))
		return;
	pr_warn("host tier: using mmap + mlock instead of the ortmem module: %s",
		why);
}

/* ORTMEM_HOST_BACKEND: 0 auto, else the flag it sets; -EINVAL when bad. */
static int backend_from_env(uint32_t *flags)
{
	const char *env = getenv("ORTMEM_HOST_BACKEND");

	if (!env || !*env || !strcasecmp(env, "auto"))
		return 0;
	if (!strcasecmp(env, "mlock")) {
		*flags |= ORTMEM_HOST_FORCE_MLOCK;
		return 0;
	}
	if (!strcasecmp(env, "module")) {
		*flags |= ORTMEM_HOST_REQUIRE_MODULE;
		return 0;
	}
	return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
		"ORTMEM_HOST_BACKEND=%s is not one of auto, module, mlock", env);
}

static int host_pick_backend(struct ortmem_host *host, uint32_t flags,
			     const char *device)
{
	int ret;

	if (flags & ORTMEM_HOST_FORCE_MLOCK) {
		host->ops = &ortmem__host_mlock_ops;
		announce_fallback("forced (ORTMEM_HOST_BACKEND=mlock or ORTMEM_HOST_FORCE_MLOCK)");
		return 0;
	}
	ret = ortmem__dev_open(device, &host->dev);
	if (!ret) {
		host->ops = &ortmem__host_module_ops;
		return 0;
	}
	if (flags & ORTMEM_HOST_REQUIRE_MODULE)
		return ret;
	host->ops = &ortmem__host_mlock_ops;
	announce_fallback(ortmem_last_error_message());
	ortmem_error_clear();
	return 0;
}

/* Every open host allocator, for ortmem__host_owned(). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ortmem_host *open_hosts;

struct owned_walk {
	uint64_t addr, len;
	struct ortmem__host_buf *hit;
	bool found;
};

static void owned_visit(const void *node, VISIT which, void *arg)
{
	const struct ortmem__host_buf *b = *(struct ortmem__host_buf *const *)node;
	struct owned_walk *w = arg;
	uint64_t p = (uint64_t)(uintptr_t)b->ptr;

	if ((which == postorder || which == leaf) && !w->found &&
	    p < w->addr + w->len && w->addr < p + b->size) {
		*w->hit = *b;
		w->found = true;
	}
}

bool ortmem__host_owned(uint64_t addr, uint64_t len,
			struct ortmem__host_buf *hit)
{
	struct owned_walk w = { .addr = addr, .len = len, .hit = hit };
	struct ortmem_host *host;

	if (!len || addr > UINT64_MAX - len)
		return false;
	/* Every buffer, not a lookup: the tree is ordered by start only, and
	 * a bind into a reservation is rare next to the mmap it costs. */
	pthread_mutex_lock(&open_lock);
	for (host = open_hosts; host && !w.found; host = host->next_open) {
		pthread_mutex_lock(&host->lock);
		twalk_r(host->bufs, owned_visit, &w);
		pthread_mutex_unlock(&host->lock);
	}
	pthread_mutex_unlock(&open_lock);
	return w.found;
}

ORTMEM_API int ortmem_host_open(const struct ortmem_host_opts *opts,
				struct ortmem_host **hostp)
{
	struct ortmem_host *host;
	uint32_t flags;
	int ret;

	if (!hostp)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "hostp is NULL");
	ret = ORTMEM_OPTS_VALID(opts, ortmem_host_opts) ?:
	      ORTMEM_OPTS_WHOLE(opts, ortmem_host_opts,
			ORTMEM_OPTS_SPAN(ortmem_host_opts, flags),
			ORTMEM_OPTS_SPAN(ortmem_host_opts, pad),
			ORTMEM_OPTS_SPAN(ortmem_host_opts, device));
	if (ret)
		return ret;
	flags = ORTMEM_OPTS_GET(opts, flags, 0);
	if (flags & ~ORTMEM_HOST_FLAGS)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"unknown flags 0x%" PRIx32 " in ortmem_host_opts",
			flags & ~ORTMEM_HOST_FLAGS);
	if (ORTMEM_OPTS_GET(opts, pad, 0))
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"ortmem_host_opts.pad must be 0");
	ret = backend_from_env(&flags);
	if (ret)
		return ret;
	if ((flags & ORTMEM_HOST_FLAGS) == ORTMEM_HOST_FLAGS)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"the module is both required and refused (flags or ORTMEM_HOST_BACKEND)");

	host = calloc(1, sizeof(*host));
	if (!host)
		return ortmem__err_plain(-ENOMEM, "out of memory for the host allocator");
	pthread_mutex_init(&host->lock, NULL);
	host->page_size = sysconf(_SC_PAGESIZE);
	ret = host_pick_backend(host, flags, ORTMEM_OPTS_GET(opts, device, NULL));
	if (ret) {
		pthread_mutex_destroy(&host->lock);
		free(host);
		return ret;
	}
	pr_debug("host tier: %s backend", ortmem_host_backend_name(host->ops->backend));
	pthread_mutex_lock(&open_lock);
	host->next_open = open_hosts;
	open_hosts = host;
	pthread_mutex_unlock(&open_lock);
	*hostp = host;
	return 0;
}

static struct ortmem_host *closing_host;

static void buf_release(void *node)
{
	struct ortmem__host_buf *b = node;
	int ret;

	ortmem__host_fixed_del(closing_host, b);
	ret = closing_host->ops->free(closing_host, b);

	ortmem__host_drop_extent(closing_host, b);
	if (ret)
		pr_warn("host tier: freeing %" PRIu64 " bytes at %p on close: %s",
			b->size, b->ptr, strerror(-ret));
	free(b);
}

ORTMEM_API void ortmem_host_close(struct ortmem_host *host)
{
	static pthread_mutex_t close_lock = PTHREAD_MUTEX_INITIALIZER;

	struct ortmem_host **pp;

	if (!host)
		return;
	pthread_mutex_lock(&open_lock);
	for (pp = &open_hosts; *pp; pp = &(*pp)->next_open)
		if (*pp == host) {
			*pp = host->next_open;
			break;
		}
	pthread_mutex_unlock(&open_lock);
	/* tdestroy's callback has no argument: one close at a time. */
	pthread_mutex_lock(&close_lock);
	closing_host = host;
	tdestroy(host->bufs, buf_release);
	host->bufs = NULL;
	closing_host = NULL;
	pthread_mutex_unlock(&close_lock);
	ortmem__host_fixed_detach(host);
	ortmem__dev_close(host->dev);
	pthread_mutex_destroy(&host->lock);
	free(host);
}

static bool numa_node_exists(int node)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
	return access(path, F_OK) == 0;
}

static int alloc_check(const struct ortmem_host *host, uint64_t size,
		       int numa_node, void **ptrp)
{
	if (!host || !ptrp)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size,
					   "host or ptrp is NULL");
	if (!size)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size,
					   "a buffer of 0 bytes");
	if (size > ORTMEM_REGION_MAX_SIZE)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size,
			"larger than the %llu-byte maximum of one host buffer",
			(unsigned long long)ORTMEM_REGION_MAX_SIZE);
	if (numa_node < -1 || (numa_node >= 0 && !numa_node_exists(numa_node)))
		return ortmem__err_invalid(ORTMEM_TIER_HOST, size,
			"NUMA node %d does not exist (use -1 for any node)",
			numa_node);
	return 0;
}

ORTMEM_API int ortmem_host_alloc(struct ortmem_host *host, uint64_t size,
				 int numa_node, void **ptrp)
{
	struct ortmem__host_buf *b;
	int ret;

	ret = alloc_check(host, size, numa_node, ptrp);
	if (ret)
		return ret;
	b = calloc(1, sizeof(*b));
	if (!b)
		return ortmem__err_alloc_failed(-ENOMEM, ORTMEM_TIER_HOST, size,
						"no memory for the buffer record");
	b->size = (size + (uint64_t)host->page_size - 1) & ~((uint64_t)host->page_size - 1);

	pthread_mutex_lock(&host->lock);
	ret = host->ops->alloc(host, b, numa_node);
	if (!ret && !tsearch(b, &host->bufs, ortmem__host_buf_cmp)) {
		host->ops->free(host, b);
		ret = ortmem__err_alloc_failed(-ENOMEM, ORTMEM_TIER_HOST, size,
					       "no memory for the buffer table");
	}
	if (!ret) {
		host->bytes += b->size;
		host->nbufs++;
		ortmem__host_fixed_add(host, b);
	}
	pthread_mutex_unlock(&host->lock);
	if (ret) {
		free(b);
		return ret;
	}
	*ptrp = b->ptr;
	return 0;
}

ORTMEM_API int ortmem_host_free(struct ortmem_host *host, void *ptr)
{
	struct ortmem__host_buf key = { .ptr = ptr }, *b;
	void *node;
	int ret;

	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	pthread_mutex_lock(&host->lock);
	node = tfind(&key, &host->bufs, ortmem__host_buf_cmp);
	if (!node) {
		pthread_mutex_unlock(&host->lock);
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"%p is not a live buffer of this host allocator (already freed, or not from ortmem_host_alloc)",
			ptr);
	}
	b = *(struct ortmem__host_buf **)node;
	tdelete(&key, &host->bufs, ortmem__host_buf_cmp);
	host->bytes -= b->size;
	host->nbufs--;
	ortmem__host_fixed_del(host, b);
	ret = host->ops->free(host, b);
	ortmem__host_drop_extent(host, b);
	pthread_mutex_unlock(&host->lock);
	if (ret)
		pr_warn("host tier: freeing %" PRIu64 " bytes at %p: %s", b->size,
			ptr, strerror(-ret));
	free(b);
	return 0;
}

ORTMEM_API int ortmem_host_backend(const struct ortmem_host *host)
{
	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	return host->ops->backend;
}

ORTMEM_API const char *ortmem_host_backend_name(int backend)
{
	switch (backend) {
	case ORTMEM_HOST_BACKEND_MODULE:
		return "module";
	case ORTMEM_HOST_BACKEND_MLOCK:
		return "mlock";
	default:
		return NULL;
	}
}

static int module_stats(const struct ortmem_host *host, struct ortmem_host_stats *s)
{
	static const char *const failed[4] = {
		"spill/failed_charge", "spill/failed_read",
		"spill/failed_checksum", "spill/failed_nomem",
	};
	uint64_t abi = 0;
	int ret, i;

	ret = ortmem__dev_attr(host->dev, "pinned_bytes", &s->module_pinned_bytes);
	if (!ret)
		ret = ortmem__dev_attr(host->dev, "max_pinned_bytes", &s->module_max_pinned_bytes);
	if (!ret)
		ret = ortmem__dev_attr(host->dev, "regions", &s->module_regions);
	if (!ret)
		ret = ortmem__dev_attr(host->dev, "outstanding_pages", &s->module_outstanding_pages);
	if (!ret)
		ret = ortmem__dev_attr(host->dev, "abi_version", &abi);
	if (ret)
		return ortmem__err_plain(-EIO, "cannot read the ortmem module's sysfs attributes: %s",
					 strerror(-ret));
	s->module_abi_version = (uint32_t)abi;
	/* A module without the spill mapping has no spill/ folder: zeros. */
	ortmem__dev_attr(host->dev, "spill/evicted_bytes", &s->module_evicted_bytes);
	ortmem__dev_attr(host->dev, "spill/fault_backs", &s->module_fault_backs);
	for (i = 0; i < 4; i++) {
		uint64_t v = 0;

		ortmem__dev_attr(host->dev, failed[i], &v);
		s->module_failed_fault_backs += v;
	}
	return 0;
}

ORTMEM_API int ortmem_host_stats(const struct ortmem_host *host,
				 struct ortmem_host_stats *stats)
{
	struct ortmem_host_stats s = { .sz = sizeof(s) };
	size_t want;
	int ret = 0;

	if (!host || !stats)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host or stats is NULL");
	want = offsetof(struct ortmem_host_stats, module_pinned_bytes);
	if (stats->sz < want)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
			"ortmem_host_stats.sz is %zu, at least %zu is needed",
			stats->sz, want);
	s.backend = host->ops->backend;
	pthread_mutex_lock((pthread_mutex_t *)&host->lock);
	s.bytes = host->bytes;
	s.buffers = host->nbufs;
	s.demoted_bytes = host->demoted_bytes;
	s.spill_mode = ortmem__host_spill_mode(host);
	ortmem__host_fixed_stats((struct ortmem_host *)host, &s.fixed_host,
				 &s.fixed_error, &s.fixed_buffers);
	pthread_mutex_unlock((pthread_mutex_t *)&host->lock);
	if (host->dev)
		ret = module_stats(host, &s);
	if (ret)
		return ret;
	s.sz = stats->sz < sizeof(s) ? stats->sz : sizeof(s);
	memcpy(stats, &s, s.sz);
	return 0;
}
