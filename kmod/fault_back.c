// SPDX-License-Identifier: GPL-2.0
/*
 * fault_back.c - bringing evicted pages back: on touch (the fault handler,
 * for the process and for GUP) and by %ORTMEM_IOC_RESTORE.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "spill.h"

/**
 * DOC: Fault-back
 *
 * A page is brought back by whoever moves its state from EVICTED to BUSY
 * (cmpxchg() under the region lock held for reading): a fault or a
 * RESTORE.  That owner drops the region lock, allocates and charges the
 * page, reads it from its extent and checks its CRC32C, then takes the lock
 * again for reading, stores the page and makes it RESIDENT.  Faults on a
 * BUSY page wait on the region's wait queue and retry, so a page touched by
 * several threads at once is read once.  Any failure (the charge, the read,
 * the checksum, no page) puts the page back to EVICTED, uncharged: the
 * faulting access gets SIGBUS (a system call's GUP gets -EFAULT), never a
 * zero or stale page, and the next touch tries again.
 *
 * Up to %RESTORE_BATCH consecutive pages with consecutive extents are read
 * with one read_iter() call into a bio_vec array, so a restore of an
 * O_DIRECT spill file issues large direct reads.  A fault-back reads the
 * evicted pages after the touched one with it: %FAULT_AHEAD_MIN pages, twice
 * as many on each fault where the last run ended (a sequential touch), up
 * to %FAULT_AHEAD_MAX.
 *
 * Pages come from the allocator in blocks of up to 2^%ALLOC_ORDER pages,
 * split into order-0 pages (one allocator call per block, not per page).
 * The filled (verified) forms allocate without __GFP_ZERO: the read
 * overwrites every byte, and a page whose read or check fails is freed, never
 * mapped.  (Debian's kernels set CONFIG_INIT_ON_ALLOC_DEFAULT_ON, so the
 * allocator zeroes them anyway; NOFILL asks for zeroed pages either way.)
 *
 * The pages brought back are mapped where they are wanted, so that their
 * first touch does not fault again: a fault-back maps its read-ahead into
 * the faulting VMA, and RESTORE maps each run into the caller's mappings of
 * it, with vm_insert_pages() under the region lock held for reading (an
 * EVICT, which holds it for writing, cannot run in between).
 */

#define RESTORE_BATCH 256
/* Pages one fault-back reads: the touched one and those after it. */
#define FAULT_AHEAD_MIN 16
#define FAULT_AHEAD_MAX 256
/*
 * Pages come in blocks of up to 2^ALLOC_ORDER (1 MiB, a RESTORE_BATCH),
 * from the free lists only (see spill_alloc_pages()).
 */
#define ALLOC_ORDER 8

static const char *const cause_names[ORTMEM_SPILL_FAIL_NR] = {
	[ORTMEM_SPILL_FAIL_CHARGE] = "over the memlock limit or the module cap",
	[ORTMEM_SPILL_FAIL_READ] = "the spill file could not be read (I/O error or truncated)",
	[ORTMEM_SPILL_FAIL_CHECKSUM] = "CRC32C mismatch (the extent changed on disk)",
	[ORTMEM_SPILL_FAIL_NOMEM] = "no memory for the page",
};

/* Read @nr pages from @file at @pos, all of them or an error. */
static int spill_read(struct file *file, loff_t pos, struct page **pages,
		      struct bio_vec *bv, unsigned long nr)
{
	size_t want = nr << PAGE_SHIFT, done = 0;
	struct iov_iter iter;
	struct kiocb kiocb;
	unsigned long i;
	ssize_t ret;

	if (ortmem_should_fail(ORTMEM_FAIL_SPILL_READ))
		return -EIO;
	for (i = 0; i < nr; i++) {
		bv[i].bv_page = pages[i];
		bv[i].bv_offset = 0;
		bv[i].bv_len = PAGE_SIZE;
	}
	iov_iter_bvec(&iter, READ, bv, nr, want);
	while (done < want) {
		init_sync_kiocb(&kiocb, file);
		kiocb.ki_pos = pos + done;
		ret = file->f_op->read_iter(&kiocb, &iter);
		if (ret < 0)
			return ret;
		if (ret == 0)
			return -ENODATA;	/* the file ends inside the extent */
		done += ret;
	}
	return 0;
}

static struct page *spill_alloc(struct ortmem_region *region, gfp_t gfp,
				unsigned int order)
{
	if (region->numa_node == ORTMEM_NUMA_ANY)
		return alloc_pages(gfp, order);
	return alloc_pages_node(region->numa_node, gfp, order);
}

/*
 * Fill @pages with @nr order-0 pages: blocks of up to 2^ALLOC_ORDER split
 * with split_page() (their memcg charge is split with them), single pages
 * where no block is free.  A block is taken only from the free lists: no
 * reclaim or compaction for it (that would cost more than the calls it
 * saves); the single pages may reclaim.  When no block of an order is
 * free, the rest of the call asks for blocks of at most
 * PAGE_ALLOC_COSTLY_ORDER, then for single pages, so a fragmented machine
 * pays one failed attempt per step down, not one per block.  Return how
 * many were allocated.
 */
static unsigned long spill_alloc_pages(struct ortmem_region *region, gfp_t gfp,
				       struct page **pages, unsigned long nr)
{
	unsigned int order, top = ALLOC_ORDER;
	unsigned long got = 0, k;
	struct page *page;

	while (got < nr) {
		order = min_t(unsigned int, top, ilog2(nr - got));
		page = NULL;
		if (order) {
			page = spill_alloc(region, (gfp & ~__GFP_RECLAIM) |
					   __GFP_NORETRY, order);
			if (!page) {
				top = order > PAGE_ALLOC_COSTLY_ORDER ?
				      PAGE_ALLOC_COSTLY_ORDER : 0;
				continue;
			}
			split_page(page, order);
		} else {
			page = spill_alloc(region, gfp, 0);
			if (!page)
				break;
		}
		for (k = 0; k < (1UL << order); k++)
			pages[got++] = nth_page(page, k);
	}
	return got;
}

/*
 * Allocate, charge and (unless @nofill) read and verify @nr BUSY pages from
 * @first, all in one extent run.  Called without the region lock.  On
 * error nothing stays allocated or charged and *cause says why.
 */
static int bring_back(struct ortmem_region *region, unsigned long first,
		      unsigned long nr, bool nofill, struct page **pages,
		      struct bio_vec *bv, int *cause)
{
	struct ortmem_spill *spill = region->spill;
	struct ortmem_binding *bind = spill->pg[first].bind;
	gfp_t gfp = GFP_HIGHUSER | __GFP_ACCOUNT | __GFP_NOWARN;
	unsigned long i, got = 0;
	loff_t pos;
	int ret;

	if (nofill)
		gfp |= __GFP_ZERO;
	ret = ortmem_recharge(nr, region->user);
	if (ret) {
		*cause = ORTMEM_SPILL_FAIL_CHARGE;
		return ret;
	}
	got = spill_alloc_pages(region, gfp, pages, nr);
	if (got < nr) {
		*cause = ORTMEM_SPILL_FAIL_NOMEM;
		ret = -ENOMEM;
		goto undo;
	}
	if (nofill)
		return 0;
	pos = bind->file_offset + ((loff_t)(first - bind->first) << PAGE_SHIFT);
	ret = spill_read(bind->file, pos, pages, bv, nr);
	if (ret) {
		*cause = ORTMEM_SPILL_FAIL_READ;
		goto undo;
	}
	for (i = 0; i < nr; i++) {
		if (ortmem_page_crc(pages[i]) != spill->pg[first + i].crc) {
			*cause = ORTMEM_SPILL_FAIL_CHECKSUM;
			ret = -EBADMSG;
			goto undo;
		}
	}
	return 0;

undo:
	for (i = 0; i < got; i++)
		put_page(pages[i]);
	ortmem_discharge(nr, region->user);
	return ret;
}

/* Make BUSY pages RESIDENT with @pages, or EVICTED again when !pages. */
static void finish_busy(struct ortmem_region *region, unsigned long first,
			unsigned long nr, struct page **pages)
{
	struct ortmem_spill *spill = region->spill;
	unsigned long i;

	down_write(&region->lock);
	for (i = 0; i < nr; i++) {
		struct ortmem_spill_page *sp = &spill->pg[first + i];

		if (pages)
			WRITE_ONCE(region->pages[first + i], pages[i]);
		/* Pairs with the acquire in busy_done(): the page is seen first. */
		smp_store_release(&sp->state, pages ? ORTMEM_PG_RESIDENT :
						      ORTMEM_PG_EVICTED);
	}
	if (pages) {
		spill->nr_out -= nr;
		atomic_long_add(nr, &ortmem_outstanding_pages);
		atomic_long_sub(nr, &ortmem_evicted_pages);
	}
	up_write(&region->lock);
	wake_up_all(&spill->wq);
}

static bool busy_done(struct ortmem_spill_page *sp)
{
	return smp_load_acquire(&sp->state) != ORTMEM_PG_BUSY;
}

static void count_failure(struct ortmem_region *region, int cause)
{
	atomic64_inc(&ortmem_spill_failed[cause]);
	atomic64_inc(&region->spill->counters->failed[cause]);
}

/*
 * Map the resident pages @idx.. @idx + @nr - 1 of @region where @vma maps
 * them; the region lock is held for reading.  A page already mapped (a
 * racing fault got there first) is skipped; one no longer resident ends the
 * run.  Mapping is an optimisation: a page left out faults in on its touch.
 */
static void map_run(struct ortmem_region *region, struct vm_area_struct *vma,
		    unsigned long idx, unsigned long nr)
{
	pgoff_t first = max_t(pgoff_t, region->pgoff + idx, vma->vm_pgoff);
	pgoff_t end = min_t(pgoff_t, region->pgoff + idx + nr,
			    vma->vm_pgoff + vma_pages(vma));
	unsigned long i, n, left;
	int ret;

	while (first < end) {
		i = first - region->pgoff;
		for (n = 0; first + n < end && READ_ONCE(region->pages[i + n]); n++)
			;
		if (!n)
			return;
		left = n;
		ret = vm_insert_pages(vma, vma->vm_start +
				      ((first - vma->vm_pgoff) << PAGE_SHIFT),
				      &region->pages[i], &left);
		if (ret && ret != -EBUSY)
			return;
		/* -EBUSY: the page after those inserted is mapped already. */
		first += n - left + (ret ? 1 : 0);
	}
}

/*
 * The caller's mappings of a region RESTORE maps its runs into, as the
 * address page 0 of the region has (or would have) in each.  The VMAs are
 * looked up again for each run, under the mmap_lock: they may change
 * between runs.
 */
#define RESTORE_MAP_BASES 8
struct restore_map {
	struct mm_struct *mm;
	struct address_space *mapping;
	int nr;
	unsigned long base[RESTORE_MAP_BASES];
};

static bool maps_region(struct vm_area_struct *vma,
			struct ortmem_region *region,
			struct address_space *mapping)
{
	return vma->vm_private_data == region && vma->vm_file &&
	       vma->vm_file->f_mapping == mapping;
}

static unsigned long region_base(struct vm_area_struct *vma,
				 struct ortmem_region *region)
{
	return vma->vm_start - ((vma->vm_pgoff - region->pgoff) << PAGE_SHIFT);
}

static void find_mappings(struct ortmem_region *region,
			  struct address_space *mapping, struct restore_map *rm)
{
	struct vm_area_struct *vma;
	unsigned long base;
	int i;

	rm->mm = current->mm;
	rm->mapping = mapping;
	rm->nr = 0;
	if (!rm->mm || !atomic_read(&region->map_count) ||
	    mmap_read_lock_killable(rm->mm))
		return;
	for (vma = find_vma(rm->mm, 0); vma && rm->nr < RESTORE_MAP_BASES;
	     vma = find_vma(rm->mm, vma->vm_end)) {
		if (!maps_region(vma, region, mapping))
			continue;
		base = region_base(vma, region);
		for (i = 0; i < rm->nr && rm->base[i] != base; i++)
			;
		if (i == rm->nr)
			rm->base[rm->nr++] = base;
	}
	mmap_read_unlock(rm->mm);
}

/*
 * Map a run RESTORE brought back into the caller's mappings of it.  The
 * order is the fault path's: the mmap_lock, then the region lock.
 */
static void map_restored(struct ortmem_region *region,
			 const struct restore_map *rm, unsigned long idx,
			 unsigned long nr)
{
	unsigned long start, end;
	struct vm_area_struct *vma;
	int i;

	if (!rm->nr || mmap_read_lock_killable(rm->mm))
		return;
	down_read(&region->lock);
	for (i = 0; i < rm->nr; i++) {
		start = rm->base[i] + (idx << PAGE_SHIFT);
		end = start + (nr << PAGE_SHIFT);
		for (vma = find_vma_intersection(rm->mm, start, end); vma;
		     vma = find_vma_intersection(rm->mm, vma->vm_end, end))
			if (maps_region(vma, region, rm->mapping) &&
			    region_base(vma, region) == rm->base[i])
				map_run(region, vma, idx, nr);
	}
	up_read(&region->lock);
	mmap_read_unlock(rm->mm);
}

/*
 * How many pages a fault-back at @idx reads: FAULT_AHEAD_MIN, or twice the
 * last run's when @idx is where that run ended.
 */
static unsigned long fault_window(struct ortmem_spill *spill, pgoff_t idx)
{
	unsigned long last = READ_ONCE(spill->ra_window);

	if (idx != READ_ONCE(spill->ra_next) || last < FAULT_AHEAD_MIN)
		return FAULT_AHEAD_MIN;
	return min_t(unsigned long, 2 * last, FAULT_AHEAD_MAX);
}

/*
 * Claim for a fault the evicted pages after @idx (BUSY), up to @max - 1,
 * same binding, consecutive; the region lock is held for reading and page
 * @idx is claimed already.  Return the run's length.
 */
static unsigned long claim_ahead(struct ortmem_region *region, pgoff_t idx,
				 unsigned long max)
{
	struct ortmem_spill *spill = region->spill;
	unsigned long n = 1;

	while (n < max && idx + n < region->nr_pages) {
		struct ortmem_spill_page *sp = &spill->pg[idx + n];

		if (sp->bind != spill->pg[idx].bind ||
		    cmpxchg(&sp->state, ORTMEM_PG_EVICTED, ORTMEM_PG_BUSY) !=
		    ORTMEM_PG_EVICTED)
			break;
		n++;
	}
	return n;
}

static void fault_failed(struct ortmem_region *region, pgoff_t idx, int ret,
			 int cause)
{
	count_failure(region, cause);
	pr_warn_ratelimited("%s[%d]: fault-back of region %u page %lu failed (%d): %s; sending SIGBUS\n",
			    current->comm, task_pid_nr(current), region->handle,
			    (unsigned long)idx, ret, cause_names[cause]);
}

/**
 * ortmem_fault_back() - Give the fault handler a region page, reading it
 * back from its extent when it is evicted.
 * @region: the region the faulting VMA maps.
 * @idx: the page's index in @region, already checked to be in range.
 * @vmf: the fault; vmf->page gets the page with a new reference.
 *
 * An evicted page comes back with the evicted pages after it (read-ahead,
 * fault_window() pages in all, one read), which are mapped into the
 * faulting VMA too: a sequential touch then costs one fault and one read
 * per run instead of one per page.  When the run fails as a whole (a
 * neighbour's charge, read or checksum), the page is tried alone, so only
 * its own failure gives SIGBUS.
 *
 * Return: 0, or VM_FAULT_SIGBUS when the page cannot come back (logged,
 * rate-limited, with the process, the region and the cause; counted).
 */
vm_fault_t ortmem_fault_back(struct ortmem_region *region, pgoff_t idx,
			     struct vm_fault *vmf)
{
	struct bio_vec bv_small[FAULT_AHEAD_MIN], *bv = bv_small;
	struct page *pages_small[FAULT_AHEAD_MIN], **pages = pages_small;
	struct ortmem_spill_page *sp;
	unsigned long n, window;
	struct page *page;
	vm_fault_t vmret;
	int cause, ret;

	down_read(&region->lock);
	for (;;) {
		page = READ_ONCE(region->pages[idx]);
		if (page) {
			get_page(page);
			up_read(&region->lock);
			vmf->page = page;
			return 0;
		}
		sp = &region->spill->pg[idx];
		if (cmpxchg(&sp->state, ORTMEM_PG_EVICTED, ORTMEM_PG_BUSY) ==
		    ORTMEM_PG_EVICTED)
			break;
		/* Someone else is reading it back: wait, then look again. */
		up_read(&region->lock);
		if (wait_event_killable(region->spill->wq, busy_done(sp)))
			return VM_FAULT_SIGBUS;
		down_read(&region->lock);
	}
	window = fault_window(region->spill, idx);
	if (window > FAULT_AHEAD_MIN) {
		pages = kmalloc_array(window, sizeof(*pages), GFP_KERNEL | __GFP_NOWARN);
		bv = kmalloc_array(window, sizeof(*bv), GFP_KERNEL | __GFP_NOWARN);
		if (!pages || !bv) {
			kfree(pages);
			kfree(bv);
			pages = pages_small;
			bv = bv_small;
			window = FAULT_AHEAD_MIN;
		}
	}
	n = claim_ahead(region, idx, window);
	up_read(&region->lock);

	ret = bring_back(region, idx, n, false, pages, bv, &cause);
	if (ret && n > 1) {
		finish_busy(region, idx + 1, n - 1, NULL);
		n = 1;
		ret = bring_back(region, idx, 1, false, pages, bv, &cause);
	}
	if (ret) {
		finish_busy(region, idx, 1, NULL);
		fault_failed(region, idx, ret, cause);
		vmret = VM_FAULT_SIGBUS;
		goto out;
	}
	page = pages[0];
	get_page(page);		/* the fault's reference; the region keeps its own */
	finish_busy(region, idx, n, pages);
	WRITE_ONCE(region->spill->ra_next, idx + n);
	WRITE_ONCE(region->spill->ra_window, window);
	if (n > 1) {
		/* The read-ahead is mapped now; the fault maps @page itself. */
		down_read(&region->lock);
		map_run(region, vmf->vma, idx + 1, n - 1);
		up_read(&region->lock);
	}
	atomic64_inc(&ortmem_fault_backs);
	atomic64_inc(&region->spill->counters->fault_backs);
	atomic64_add(n - 1, &ortmem_readahead_pages);
	atomic64_add(n - 1, &region->spill->counters->readahead);
	vmf->page = page;
	vmret = 0;
out:
	if (pages != pages_small) {
		kfree(pages);
		kfree(bv);
	}
	return vmret;
}

/*
 * Mark the run of EVICTED pages from @idx (at most @max, one binding,
 * consecutive) BUSY.  Return its length; 0 when page @idx is resident, and
 * -EAGAIN after waiting for a BUSY one.
 */
static long claim_run(struct ortmem_region *region, unsigned long idx,
		      unsigned long max)
{
	struct ortmem_spill *spill;
	struct ortmem_spill_page *sp;
	unsigned long n = 0;

	down_read(&region->lock);
	spill = region->spill;
	if (!spill || !spill->pg[idx].bind) {
		up_read(&region->lock);
		return 0;	/* an unbound page is always resident */
	}
	for (n = 0; n < max; n++) {
		sp = &spill->pg[idx + n];
		if (sp->bind != spill->pg[idx].bind ||
		    cmpxchg(&sp->state, ORTMEM_PG_EVICTED, ORTMEM_PG_BUSY) !=
		    ORTMEM_PG_EVICTED)
			break;
	}
	sp = &spill->pg[idx];
	up_read(&region->lock);
	if (n || READ_ONCE(sp->state) == ORTMEM_PG_RESIDENT)
		return n;
	if (wait_event_killable(spill->wq, busy_done(sp)))
		return -EINTR;
	return -EAGAIN;
}

static long restore_range(struct ortmem_region *region,
			  struct address_space *mapping, unsigned long first,
			  unsigned long nr, bool nofill)
{
	struct restore_map rm;
	struct page **pages;
	struct bio_vec *bv;
	unsigned long idx = first;
	long ret = 0, n;
	int cause;

	pages = kmalloc_array(RESTORE_BATCH, sizeof(*pages), GFP_KERNEL);
	bv = kmalloc_array(RESTORE_BATCH, sizeof(*bv), GFP_KERNEL);
	if (!pages || !bv) {
		ret = -ENOMEM;
		goto out;
	}
	find_mappings(region, mapping, &rm);
	while (idx < first + nr) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		n = claim_run(region, idx, min_t(unsigned long, RESTORE_BATCH,
						 first + nr - idx));
		if (n == -EAGAIN)
			continue;
		if (n < 0) {
			ret = n;
			break;
		}
		if (n == 0) {
			idx++;		/* resident already */
			continue;
		}
		ret = bring_back(region, idx, n, nofill, pages, bv, &cause);
		if (ret) {
			finish_busy(region, idx, n, NULL);
			count_failure(region, cause);
			break;
		}
		finish_busy(region, idx, n, pages);
		map_restored(region, &rm, idx, n);
		atomic64_add(n, &ortmem_restored_pages);
		atomic64_add(n, &region->spill->counters->restored);
		idx += n;
		cond_resched();
	}
out:
	kfree(bv);
	kfree(pages);
	return ret;
}

/**
 * ortmem_restore() - %ORTMEM_IOC_RESTORE: bring a range back now.
 * @file: the caller's file.
 * @mapping: the file's own address space, where the caller's mappings of the
 *	range are found to map the pages brought back.
 * @uarg: user pointer to &struct ortmem_range_args.
 *
 * Resident pages of the range (bound or not) are skipped.  Pages already back stay back
 * when a later one fails.  The region lock is held only to claim and to
 * publish pages, never across the reads, so a restore run from a helper
 * thread ahead of use does not hold up the other threads' faults on other
 * pages of the region.
 *
 * Return: 0; -EINVAL for unknown flags or a bad range; -ENOENT for a handle
 * not live; -ENOSPC or -ENOMEM over the
 * module cap or RLIMIT_MEMLOCK, or -ENOMEM without pages; the read's error,
 * or -ENODATA for a file that ends inside the extent; -EBADMSG for a CRC32C
 * mismatch; -EINTR when killed.
 */
long ortmem_restore(struct ortmem_file *file, struct address_space *mapping,
		    void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_range_args args;
	unsigned long first, nr;
	long ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags & ~ORTMEM_RESTORE_FLAGS)
		return -EINVAL;
	region = ortmem_range_get(file, args.handle, args.offset, args.length,
				  &first, &nr);
	if (IS_ERR(region))
		return PTR_ERR(region);
	ret = restore_range(region, mapping, first, nr,
			    args.flags & ORTMEM_RESTORE_NOFILL);
	ortmem_region_put(region);
	return ret;
}
