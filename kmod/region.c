// SPDX-License-Identifier: GPL-2.0
/*
 * region.c - pinned regions: allocation, lookup and freeing of their pages.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "ortmem.h"

/**
 * DOC: Pages of a region
 *
 * A region owns ordinary order-0 pages allocated with GFP_HIGHUSER (never
 * from ZONE_MOVABLE or CMA, so FOLL_LONGTERM pins need no migration),
 * zeroed by the allocator before any mapping exists.  The pages are not on
 * any LRU list, so reclaim never swaps or migrates them.  They are mapped
 * one page at a time by the module's fault handler as normal struct pages
 * (no VM_PFNMAP, no VM_IO), so get_user_pages(), pin_user_pages(),
 * O_DIRECT, io_uring and cuMemHostRegister() accept the mapping.  The page
 * table is the only place a page is mapped from, which is what a later
 * eviction needs: unmap the range, free the pages, and let the same fault
 * handler bring them back from a spill file.
 */

/* Evicted pages have a NULL entry: they went back to the kernel at evict. */
static void region_free_pages(struct ortmem_region *region, unsigned long n)
{
	unsigned long i, freed = 0;

	for (i = 0; i < n; i++) {
		if (!(i & 511))
			cond_resched();	/* freeing gigabytes takes a while */
		if (!region->pages[i])
			continue;
		put_page(region->pages[i]);
		freed++;
	}
	atomic_long_sub(freed, &ortmem_outstanding_pages);
}

static int region_alloc_pages(struct ortmem_region *region, u32 flags)
{
	/*
	 * __GFP_RETRY_MAYFAIL: out of pages (or over a memory cgroup's limit)
	 * the ALLOC fails with -ENOMEM rather than waking the OOM killer,
	 * which would pick a bystander: these pages are in nobody's RSS.
	 */
	gfp_t gfp = GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT | __GFP_NOWARN |
		    __GFP_RETRY_MAYFAIL;
	struct page *page;
	unsigned long i;

	if (region->numa_node != ORTMEM_NUMA_ANY &&
	    (flags & ORTMEM_ALLOC_NODE_STRICT))
		gfp |= __GFP_THISNODE;

	for (i = 0; i < region->nr_pages; i++) {
		if (fatal_signal_pending(current))
			goto undo_intr;
		if (ortmem_should_fail(ORTMEM_FAIL_PAGE))
			page = NULL;
		else if (region->numa_node == ORTMEM_NUMA_ANY)
			page = alloc_page(gfp);
		else
			page = alloc_pages_node(region->numa_node, gfp, 0);
		if (!page)
			goto undo_nomem;
		region->pages[i] = page;
		atomic_long_inc(&ortmem_outstanding_pages);
		if (!(i & 511))
			cond_resched();
	}
	return 0;

undo_intr:
	region_free_pages(region, i);
	return -EINTR;
undo_nomem:
	region_free_pages(region, i);
	return -ENOMEM;
}

/**
 * ortmem_region_create() - Charge, allocate and zero a new region.
 * @size: bytes asked for, already checked to be in 1..ORTMEM_REGION_MAX_SIZE.
 * @numa_node: node, or %ORTMEM_NUMA_ANY; already checked to be online.
 * @flags: %ORTMEM_ALLOC_* bits, already checked.
 *
 * Return: the region with one reference, or an ERR_PTR: -ENOSPC over the
 * module cap, -ENOMEM over RLIMIT_MEMLOCK or out of pages, -EINTR when the
 * caller was killed while the pages were being allocated.
 */
struct ortmem_region *ortmem_region_create(u64 size, int numa_node, u32 flags)
{
	unsigned long nr_pages = PAGE_ALIGN(size) >> PAGE_SHIFT;
	struct ortmem_region *region;
	int ret;

	if (ortmem_should_fail(ORTMEM_FAIL_REGION))
		return ERR_PTR(-ENOMEM);
	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return ERR_PTR(-ENOMEM);
	kref_init(&region->ref);
	init_rwsem(&region->lock);
	region->nr_pages = nr_pages;
	region->numa_node = numa_node;

	ret = ortmem_charge(nr_pages, &region->user);
	if (ret)
		goto err_free;
	if (!ortmem_should_fail(ORTMEM_FAIL_PAGE_ARRAY))
		region->pages = kvmalloc_array(nr_pages, sizeof(*region->pages),
					       GFP_KERNEL_ACCOUNT | __GFP_NOWARN |
					       __GFP_RETRY_MAYFAIL);
	if (!region->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	ret = region_alloc_pages(region, flags);
	if (ret)
		goto err_array;
	atomic_inc(&ortmem_nr_regions);
	dev_dbg(ortmem_misc.this_device, "region of %lu pages on node %d\n",
		nr_pages, numa_node);
	return region;

err_array:
	kvfree(region->pages);
err_uncharge:
	ortmem_uncharge(nr_pages, region->user);
err_free:
	kfree(region);
	return ERR_PTR(ret);
}

static void region_release(struct kref *ref)
{
	struct ortmem_region *region = container_of(ref, struct ortmem_region, ref);
	unsigned long evicted = ortmem_spill_release(region);

	region_free_pages(region, region->nr_pages);
	kvfree(region->pages);
	ortmem_uncharge(region->nr_pages - evicted, region->user);
	atomic_dec(&ortmem_nr_regions);
	kfree(region);
}

/**
 * ortmem_region_put() - Drop a reference; the last one frees the region.
 * @region: the region.
 */
void ortmem_region_put(struct ortmem_region *region)
{
	kref_put(&region->ref, region_release);
}

/**
 * ortmem_region_lookup() - Find a live handle of a file and take a reference.
 * @file: the per-file state.
 * @handle: the handle.
 *
 * Return: the region with a new reference, or NULL when @handle is not live.
 */
struct ortmem_region *ortmem_region_lookup(struct ortmem_file *file, u32 handle)
{
	struct ortmem_region *region;

	xa_lock(&file->regions);
	region = xa_load(&file->regions, handle);
	if (region)
		kref_get(&region->ref);
	xa_unlock(&file->regions);
	return region;
}
