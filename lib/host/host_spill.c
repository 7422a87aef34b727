// SPDX-License-Identifier: MIT
/*
 * Demotion of host buffers to disk, keeping their address: the spill
 * engine writes the bytes to an extent, then
 *  - with the module: the region's range is bound to that extent and
 *    evicted (one CRC32C per page, the same CRC32C the engine uses); a
 *    touch faults the bytes back, verified by the module; promotion is a
 *    restore without fill plus the engine's io_uring read, or the module's
 *    verified restore when part of the buffer was faulted back already;
 *  - with the mlock fallback: the memory is unlocked, released
 *    (MADV_DONTNEED) and made inaccessible (PROT_NONE) until promotion
 *    maps it again and reads the extent back.
 * Documentation/kmod/spill-map.rst and ortmem_host_demote(3).
 */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "host_internal.h"
#include "spill/spill_internal.h"

int ortmem__host_buf_cmp(const void *a, const void *b)
{
	const struct ortmem__host_buf *x = a, *y = b;

	return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

int ortmem__host_spill_mode(const struct ortmem_host *host)
{
	if (!host || !host->spill)
		return ORTMEM_HOST_SPILL_NONE;
	if (host->dev)
		return ORTMEM_HOST_SPILL_MAP;
	return ORTMEM_HOST_SPILL_RELEASE;
}

void ortmem__host_drop_extent(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	int ret;

	if (!b->demoted)
		return;
	b->demoted = false;
	host->demoted_bytes -= b->size;
	ret = ortmem_spill_free(host->spill, b->extent);
	if (ret)
		pr_warn("host tier: freeing the spill extent of %p: %s", b->ptr,
			ortmem_last_error_message());
}

ORTMEM_API int ortmem_host_spill_mode(const struct ortmem_host *host)
{
	int mode;

	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	pthread_mutex_lock((pthread_mutex_t *)&host->lock);
	mode = ortmem__host_spill_mode(host);
	pthread_mutex_unlock((pthread_mutex_t *)&host->lock);
	return mode;
}

ORTMEM_API int ortmem_host_set_spill(struct ortmem_host *host,
				     struct ortmem_spill *spill)
{
	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	pthread_mutex_lock(&host->lock);
	if (host->demoted_bytes) {
		pthread_mutex_unlock(&host->lock);
		return ortmem__err_plain(-EBUSY,
			"cannot change the host tier's spill handle: %" PRIu64 " bytes are demoted to the current one (promote or free them first)",
			host->demoted_bytes);
	}
	host->spill = spill;
	ortmem__host_fixed_attach(host, spill);
	pthread_mutex_unlock(&host->lock);
	return 0;
}

/* The live buffer at @ptr, host lock held; NULL with the error set. */
static struct ortmem__host_buf *buf_find(struct ortmem_host *host, void *ptr)
{
	struct ortmem__host_buf key = { .ptr = ptr };
	void *node = tfind(&key, &host->bufs, ortmem__host_buf_cmp);

	if (node)
		return *(struct ortmem__host_buf **)node;
	ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
		"%p is not a live buffer of this host allocator (already freed, or not from ortmem_host_alloc)",
		ptr);
	return NULL;
}

static uint32_t *page_crcs(const struct ortmem_host *host, const void *p,
			   uint64_t size)
{
	uint64_t n = size / (uint64_t)host->page_size, i;
	uint32_t *crcs = malloc(n * sizeof(*crcs));

	if (!crcs)
		return NULL;
	for (i = 0; i < n; i++)
		crcs[i] = (uint32_t)ortmem__csum((const char *)p + i * (uint64_t)host->page_size,
						 (size_t)host->page_size);
	return crcs;
}

/*
 * EVICT @len bytes of @b, waiting out references of O_DIRECT requests
 * still completing, and for a buffer just unregistered from io_uring, the
 * ring's unpin (a kernel may run it from a worker, after the update call
 * has returned).
 */
static int evict_range(struct ortmem_host *host, struct ortmem__host_buf *b,
		       uint64_t len, const uint32_t *crcs, uint32_t flags)
{
	struct ortmem_evict_args e = { .handle = b->handle, .flags = flags,
				       .length = len, .crcs = (uintptr_t)crcs };
	struct timespec ms = { 0, 1000000 };
	int ret, tries, patience = b->unregistered ? 1500 : 50;

	b->unregistered = false;
	for (tries = 0; tries < patience; tries++) {
		ret = ortmem__sys_evict(host->dev->fd, &e);
		if (ret != -EBUSY)
			break;
		nanosleep(&ms, NULL);
	}
	return ret;
}

static int module_demote(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	struct ortmem_bind_args bind = { .handle = b->handle, .length = b->size };
	uint64_t off = 0, disk_len = 0;
	uint32_t *crcs;
	int fd = -1, ret;

	ret = ortmem__spill_extent_where(host->spill, b->extent, &fd, &off, &disk_len);
	if (ret)
		return ret;
	if (off % (uint64_t)host->page_size)
		return ortmem__err_plain(-EOPNOTSUPP,
			"the spill extent of %p starts at byte %" PRIu64 ", not on a page boundary: the module cannot map it (use a spill file aligned to the page size)",
			b->ptr, off);
	bind.fd = fd;
	bind.file_offset = off;
	ret = ortmem__sys_bind(host->dev->fd, &bind);
	if (ret)
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: binding region %" PRIu32 " to its spill extent failed: %s",
			b->handle, strerror(-ret));
	crcs = page_crcs(host, b->ptr, b->size);
	ret = crcs ? evict_range(host, b, b->size, crcs, 0) : -ENOMEM;
	free(crcs);
	if (ret) {
		ortmem__sys_range(host->dev->fd, ORTMEM_IOC_UNBIND, b->handle, 0,
				  b->size, 0);
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: evicting region %" PRIu32 " failed: %s%s",
			b->handle, strerror(-ret),
			ret == -EBUSY ? " (a page is pinned by I/O in flight or a device registration)" : "");
	}
	return 0;
}

/* The raw calls, as host_mlock.c: sanitizer runtimes make (mun)lock no-ops. */
static int raw_mlock(void *p, uint64_t len)
{
	return (int)syscall(SYS_mlock, p, len);
}

static int raw_munlock(void *p, uint64_t len)
{
	return (int)syscall(SYS_munlock, p, len);
}

static int mlock_demote(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	(void)host;
	if (raw_munlock(b->ptr, b->size) || madvise(b->ptr, b->size, MADV_DONTNEED) ||
	    mprotect(b->ptr, b->size, PROT_NONE)) {
		int ret = -errno;

		mprotect(b->ptr, b->size, PROT_READ | PROT_WRITE);
		raw_mlock(b->ptr, b->size);
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"releasing the demoted buffer %p failed: %s", b->ptr,
			strerror(-ret));
	}
	return 0;
}

ORTMEM_API int ortmem_host_demote(struct ortmem_host *host, void *ptr)
{
	struct ortmem__host_buf *b;
	int ret;

	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	pthread_mutex_lock(&host->lock);
	b = buf_find(host, ptr);
	if (!b) {
		ret = -EINVAL;
		goto out;
	}
	ret = -EALREADY;
	if (b->demoted) {
		ortmem__err_plain(ret, "buffer %p is demoted already", ptr);
		goto out;
	}
	ret = -EOPNOTSUPP;
	if (!host->spill) {
		ortmem__err_plain(ret, "the host tier has no spill handle to demote to (ortmem_host_set_spill())");
		goto out;
	}
	if (host->dev && !(host->dev->version.features & ORTMEM_FEAT_SPILL_MAP)) {
		ortmem__err_plain(ret, "the loaded ortmem module has no spill mapping (an older module): update it");
		goto out;
	}
	ret = ortmem_spill_write(host->spill, b->ptr, b->size, &b->extent);
	if (ret)
		goto out;
	/* The ring must let go of the pages before they are evicted or
	 * released. */
	ortmem__host_fixed_del(host, b);
	ret = host->dev ? module_demote(host, b) : mlock_demote(host, b);
	if (ret) {
		ortmem_spill_free(host->spill, b->extent);
		ortmem__host_fixed_add(host, b);
		goto out;
	}
	b->demoted = true;
	host->demoted_bytes += b->size;
out:
	pthread_mutex_unlock(&host->lock);
	return ret;
}

/*
 * A promotion's read failed with @len bytes of @b back, zeroed (RESTORE
 * NOFILL) or part read: evict them again.  A module with EVICT_DISCARD
 * drops them keeping the CRCs of the demotion, whose bytes are intact on
 * disk: a touch faults them back, verified, and a later promotion finds
 * the buffer as demoted.  An older one is given the pages' own CRCs, so
 * that a touch gets SIGBUS (its fault-back finds the extent's CRC is not
 * the zero page's), never zeroes; the pages past @len stayed evicted,
 * their bytes on disk.
 */
static void promote_undo(struct ortmem_host *host, struct ortmem__host_buf *b,
			 uint64_t len)
{
	uint32_t *crcs;
	int ret;

	if (!len)
		return;
	if (host->dev->version.features & ORTMEM_FEAT_EVICT_DISCARD) {
		ret = evict_range(host, b, len, NULL, ORTMEM_EVICT_DISCARD);
		if (ret)
			pr_warn("host tier: dropping the %" PRIu64 " bytes of %p back from a failed promotion failed: %s",
				len, b->ptr, strerror(-ret));
		return;
	}
	crcs = page_crcs(host, b->ptr, len);
	if (crcs)
		evict_range(host, b, len, crcs, 0);
	free(crcs);
}

struct promote_fetch {
	int fd;
	uint32_t handle;
};

/*
 * The engine's fetch: the next ORTMEM__PROMOTE_STEP of the buffer.  A
 * failure (the memlock limit, no memory) fails the read, and the engine's
 * error names the extent and the cause; the RESTORE may have brought part
 * of its step back (in order) before failing, so ready becomes what the
 * module says is back (all else was evicted at the start), for the undo.
 */
static int promote_fetch(struct ortmem__sreq *r)
{
	const struct promote_fetch *pf = r->fetch_arg;
	struct ortmem_spill_stats_args st = { .handle = pf->handle };
	uint64_t n = r->len - r->ready;
	int ret;

	if (n > ORTMEM__PROMOTE_STEP)
		n = ORTMEM__PROMOTE_STEP;
	ret = ortmem__sys_range(pf->fd, ORTMEM_IOC_RESTORE, pf->handle, r->ready,
				n, ORTMEM_RESTORE_NOFILL);
	if (!ret) {
		r->ready += n;
		return 0;
	}
	if (!ortmem__sys_spill_stats(pf->fd, &st) && st.resident_bytes > r->ready &&
	    st.resident_bytes <= r->len)
		r->ready = st.resident_bytes;
	return ret;
}

/*
 * All of @b still on disk: the engine's io_uring read, verified by it, into
 * pages the module allocates without reading (RESTORE NOFILL).  A buffer
 * of more than one step comes back step by step under the reads
 * (ortmem__spill_read_fetch()); it cannot be a fixed buffer meanwhile
 * (registering pins every page, which would fault them all back from
 * disk), so it is registered after.  One of a step or less comes back
 * whole, then is read through the fixed-buffer path.
 */
static int module_promote_read(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	struct promote_fetch pf = { .fd = host->dev->fd, .handle = b->handle };
	int ret;

	if (b->size > ORTMEM__PROMOTE_STEP) {
		uint64_t back = 0;

		ret = ortmem__spill_read_fetch(host->spill, b->extent, b->ptr,
					       b->size, promote_fetch, &pf,
					       ORTMEM__PROMOTE_STEP, &back);
		if (ret)
			promote_undo(host, b, back);
		return ret;
	}
	ret = ortmem__sys_range(pf.fd, ORTMEM_IOC_RESTORE, b->handle, 0, b->size,
				ORTMEM_RESTORE_NOFILL);
	if (ret)
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: restoring region %" PRIu32 " failed: %s",
			b->handle, strerror(-ret));
	/* The pages are in: the read can go straight to them. */
	ortmem__host_fixed_add(host, b);
	ret = ortmem_spill_read(host->spill, b->extent, b->ptr, b->size);
	if (ret) {
		ortmem__host_fixed_del(host, b);
		promote_undo(host, b, b->size);
	}
	return ret;
}

static int module_promote(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	struct ortmem_spill_stats_args st = { .handle = b->handle };
	int fd = host->dev->fd, ret;

	ret = ortmem__sys_spill_stats(fd, &st);
	if (!ret && st.evicted_bytes == b->size) {
		ret = module_promote_read(host, b);
		if (ret)
			return ret;
	} else if (!ret && st.evicted_bytes) {
		/* Part faulted back (maybe written since): the module restores
		 * only the evicted pages, verified. */
		ret = ortmem__sys_range(fd, ORTMEM_IOC_RESTORE, b->handle, 0, b->size, 0);
	}
	if (ret)
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: restoring region %" PRIu32 " failed: %s",
			b->handle, strerror(-ret));
	ret = ortmem__sys_range(fd, ORTMEM_IOC_UNBIND, b->handle, 0, b->size, 0);
	if (ret)
		return ortmem__err_io(ret, ORTMEM_TIER_HOST, b->size,
			"ortmem module: unbinding region %" PRIu32 " failed: %s",
			b->handle, strerror(-ret));
	return 0;
}

static int mlock_promote(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	int ret;

	if (mprotect(b->ptr, b->size, PROT_READ | PROT_WRITE))
		return ortmem__err_io(-errno, ORTMEM_TIER_HOST, b->size,
			"mapping the demoted buffer %p again failed: %s", b->ptr,
			strerror(errno));
	if (raw_mlock(b->ptr, b->size)) {
		ret = -errno;
		mprotect(b->ptr, b->size, PROT_NONE);
		return ortmem__err_alloc_failed(ret, ORTMEM_TIER_HOST, b->size,
			"mlock of the promoted buffer %p failed: %s (RLIMIT_MEMLOCK?)",
			b->ptr, strerror(-ret));
	}
	ortmem__host_fixed_add(host, b);
	ret = ortmem_spill_read(host->spill, b->extent, b->ptr, b->size);
	if (ret) {
		ortmem__host_fixed_del(host, b);
		raw_munlock(b->ptr, b->size);
		madvise(b->ptr, b->size, MADV_DONTNEED);
		mprotect(b->ptr, b->size, PROT_NONE);
	}
	return ret;
}

ORTMEM_API int ortmem_host_promote(struct ortmem_host *host, void *ptr)
{
	struct ortmem__host_buf *b;
	int ret = 0;

	if (!host)
		return ortmem__err_invalid(ORTMEM_TIER_HOST, 0, "host is NULL");
	pthread_mutex_lock(&host->lock);
	b = buf_find(host, ptr);
	if (!b)
		ret = -EINVAL;
	else if (b->demoted)
		ret = host->dev ? module_promote(host, b) : mlock_promote(host, b);
	if (!ret && b && b->demoted) {
		ortmem__host_drop_extent(host, b);
		/* Partly faulted back, the module restored it: register now. */
		ortmem__host_fixed_add(host, b);
	}
	pthread_mutex_unlock(&host->lock);
	return ret;
}
