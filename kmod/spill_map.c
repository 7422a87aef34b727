// SPDX-License-Identifier: GPL-2.0
/*
 * spill_map.c - the disk-spill mapping: bind a range of a region to an
 * extent of a spill file, unbind it, evict it, and the statistics.
 * fault_back.c brings evicted pages back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/crc32c.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "spill.h"

/**
 * DOC: Spill mapping
 *
 * A page of a region is in one of three states (&enum ortmem_page_state):
 * resident, evicted or busy (being read back).  BIND gives a range of pages
 * an extent of a spill file; userspace writes the pages there itself (the
 * library's spill engine, io_uring, O_DIRECT) and then calls EVICT with one
 * CRC32C per page.  EVICT checks the CRCs against the pages, takes the pages
 * out of the region under the region lock held for writing, zaps every user
 * mapping of them, and frees them, giving their charge back.  A page still
 * referenced by someone else after the zap (a GUP pin: O_DIRECT in flight, a
 * registered io_uring buffer, cuMemHostRegister) makes EVICT put every page
 * back and fail with -EBUSY, so a pinned page never changes under its pinner.
 * The next touch of an evicted page faults, and fault_back.c reads it back,
 * verifies it and maps it again.  EVICT with %ORTMEM_EVICT_DISCARD takes no
 * CRCs and checks nothing: it drops pages whose extent still holds what
 * their last EVICT since the bind wrote there, keeping that EVICT's CRCs.
 * Documentation/kmod/spill-map.rst has the state machine and the locking.
 */

static_assert(sizeof(struct ortmem_bind_args) == 40);
static_assert(sizeof(struct ortmem_range_args) == 24);
static_assert(sizeof(struct ortmem_evict_args) == 32);
static_assert(sizeof(struct ortmem_spill_stats_args) == 88);

atomic_long_t ortmem_evicted_pages = ATOMIC_LONG_INIT(0);
atomic_long_t ortmem_bound_files = ATOMIC_LONG_INIT(0);
atomic64_t ortmem_fault_backs = ATOMIC64_INIT(0);
atomic64_t ortmem_restored_pages = ATOMIC64_INIT(0);
atomic64_t ortmem_readahead_pages = ATOMIC64_INIT(0);
atomic64_t ortmem_spill_failed[ORTMEM_SPILL_FAIL_NR];

/**
 * ortmem_counters_new() - Fault-back counters for a newly opened file.
 *
 * Return: the counters with one reference, or NULL without memory.
 */
struct ortmem_spill_counters *ortmem_counters_new(void)
{
	struct ortmem_spill_counters *c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);

	if (c)
		kref_init(&c->ref);
	return c;
}

static void counters_release(struct kref *ref)
{
	kfree(container_of(ref, struct ortmem_spill_counters, ref));
}

/**
 * ortmem_counters_put() - Drop a reference to a file's counters.
 * @counters: the counters.
 */
void ortmem_counters_put(struct ortmem_spill_counters *counters)
{
	kref_put(&counters->ref, counters_release);
}

struct ortmem_region *ortmem_range_get(struct ortmem_file *file, u64 handle,
				       u64 offset, u64 length,
				       unsigned long *first, unsigned long *nr)
{
	struct ortmem_region *region;
	u64 size;

	if (!handle || handle > ORTMEM_HANDLE_MAX)
		return ERR_PTR(-ENOENT);
	region = ortmem_region_lookup(file, handle);
	if (!region)
		return ERR_PTR(-ENOENT);
	size = (u64)region->nr_pages << PAGE_SHIFT;
	if (!length || !PAGE_ALIGNED(offset) || !PAGE_ALIGNED(length) ||
	    offset >= size || length > size - offset) {
		ortmem_region_put(region);
		return ERR_PTR(-EINVAL);
	}
	*first = offset >> PAGE_SHIFT;
	*nr = length >> PAGE_SHIFT;
	return region;
}

u32 ortmem_page_crc(struct page *page)
{
	void *addr = kmap_local_page(page);
	u32 crc = crc32c(0, addr, PAGE_SIZE);

	kunmap_local(addr);
	return crc;
}

/* Drop one page's binding; the last page of a binding drops the file. */
static void page_unbind(struct ortmem_spill *spill, unsigned long idx)
{
	struct ortmem_binding *bind = spill->pg[idx].bind;

	spill->pg[idx].bind = NULL;
	__clear_bit(idx, spill->crc_known);
	spill->nr_bound--;
	if (--bind->nr_pages)
		return;
	fput(bind->file);
	atomic_long_dec(&ortmem_bound_files);
	kfree(bind);
}

/**
 * ortmem_spill_release() - Free a dying region's spill state.
 * @region: the region, with no reference left.
 *
 * Return: the region's pages that are not resident (their charge was given
 * back at evict, so the caller must not give it back again).
 */
unsigned long ortmem_spill_release(struct ortmem_region *region)
{
	struct ortmem_spill *spill = region->spill;
	unsigned long idx, out;

	if (!spill)
		return 0;
	for (idx = 0; idx < region->nr_pages && spill->nr_bound; idx++)
		if (spill->pg[idx].bind)
			page_unbind(spill, idx);
	out = spill->nr_out;
	atomic_long_sub(out, &ortmem_evicted_pages);
	ortmem_counters_put(spill->counters);
	kvfree(spill->crc_known);
	kvfree(spill->pg);
	kfree(spill);
	region->spill = NULL;
	return out;
}

/* The region's spill state, made on first use; region lock held for writing. */
static struct ortmem_spill *spill_get(struct ortmem_region *region,
				      struct ortmem_file *file)
{
	struct ortmem_spill *spill = region->spill;

	if (spill)
		return spill;
	if (ortmem_should_fail(ORTMEM_FAIL_SPILL_STATE))
		return NULL;
	spill = kzalloc(sizeof(*spill), GFP_KERNEL_ACCOUNT);
	if (!spill)
		return NULL;
	spill->pg = kvcalloc(region->nr_pages, sizeof(*spill->pg),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	/* kvcalloc(): a 1 TiB region's bitmap is 32 MiB, past kmalloc(). */
	spill->crc_known = kvcalloc(BITS_TO_LONGS(region->nr_pages),
				    sizeof(unsigned long),
				    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!spill->pg || !spill->crc_known) {
		kvfree(spill->crc_known);
		kvfree(spill->pg);
		kfree(spill);
		return NULL;
	}
	init_waitqueue_head(&spill->wq);
	kref_get(&file->counters->ref);
	spill->counters = file->counters;
	region->spill = spill;
	return spill;
}

/* A spill file: regular, opened for reading and writing, readable by iter. */
static struct file *spill_file_get(int fd)
{
	struct file *file = fget(fd);

	if (!file)
		return ERR_PTR(-EBADF);
	if (!S_ISREG(file_inode(file)->i_mode) || !file->f_op->read_iter) {
		fput(file);
		return ERR_PTR(-EINVAL);
	}
	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE)) {
		fput(file);
		return ERR_PTR(-EBADF);
	}
	return file;
}

static int bind_range(struct ortmem_region *region, struct ortmem_file *file,
		      unsigned long first, unsigned long nr,
		      struct ortmem_binding *bind)
{
	struct ortmem_spill *spill;
	unsigned long i;

	down_write(&region->lock);
	spill = spill_get(region, file);
	if (!spill) {
		up_write(&region->lock);
		return -ENOMEM;
	}
	for (i = first; i < first + nr; i++) {
		if (spill->pg[i].bind) {
			up_write(&region->lock);
			return -EBUSY;
		}
	}
	for (i = first; i < first + nr; i++)
		spill->pg[i].bind = bind;
	spill->nr_bound += nr;
	up_write(&region->lock);
	return 0;
}

/**
 * ortmem_bind() - %ORTMEM_IOC_BIND: bind a range to a spill-file extent.
 * @file: the caller's file.
 * @uarg: user pointer to &struct ortmem_bind_args.
 *
 * Return: 0; -EINVAL for flags, padding, a range or file offset not
 * page-aligned, out of the region or overflowing, or an fd that is not a
 * regular file; -EBADF for a bad fd or one not open for both reading and
 * writing; -ENOENT for a handle not live; -EBUSY when a page of the range is
 * bound already; -ENOMEM.
 */
long ortmem_bind(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_binding *bind;
	struct ortmem_region *region;
	struct ortmem_bind_args args;
	unsigned long first, nr;
	struct file *spill_file;
	long ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad || !PAGE_ALIGNED(args.file_offset))
		return -EINVAL;
	if (args.file_offset > (u64)MAX_LFS_FILESIZE ||
	    args.length > (u64)MAX_LFS_FILESIZE - args.file_offset)
		return -EINVAL;
	region = ortmem_range_get(file, args.handle, args.offset, args.length,
				  &first, &nr);
	if (IS_ERR(region))
		return PTR_ERR(region);
	spill_file = spill_file_get(args.fd);
	if (IS_ERR(spill_file)) {
		ret = PTR_ERR(spill_file);
		goto out_region;
	}
	bind = kzalloc(sizeof(*bind), GFP_KERNEL_ACCOUNT);
	if (!bind) {
		ret = -ENOMEM;
		goto out_file;
	}
	bind->file = spill_file;
	bind->file_offset = args.file_offset;
	bind->first = first;
	bind->nr_pages = nr;
	ret = bind_range(region, file, first, nr, bind);
	if (ret)
		goto out_bind;
	atomic_long_inc(&ortmem_bound_files);
	ortmem_region_put(region);
	return 0;

out_bind:
	kfree(bind);
out_file:
	fput(spill_file);
out_region:
	ortmem_region_put(region);
	return ret;
}

/**
 * ortmem_unbind() - %ORTMEM_IOC_UNBIND: forget the extents of a range.
 * @file: the caller's file.
 * @uarg: user pointer to &struct ortmem_range_args.
 *
 * Return: 0; -EINVAL for flags or a bad range; -ENOENT for a handle not
 * live; -ENOLINK when a page of the range is not bound; -EBUSY when one is
 * not resident (restore it first).
 */
long ortmem_unbind(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_range_args args;
	struct ortmem_spill *spill;
	unsigned long first, nr, i;
	long ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	region = ortmem_range_get(file, args.handle, args.offset, args.length,
				  &first, &nr);
	if (IS_ERR(region))
		return PTR_ERR(region);
	down_write(&region->lock);
	spill = region->spill;
	ret = spill ? 0 : -ENOLINK;
	for (i = first; !ret && i < first + nr; i++) {
		if (!spill->pg[i].bind)
			ret = -ENOLINK;
		else if (spill->pg[i].state != ORTMEM_PG_RESIDENT)
			ret = -EBUSY;
	}
	for (i = first; !ret && i < first + nr; i++)
		page_unbind(spill, i);
	up_write(&region->lock);
	ortmem_region_put(region);
	return ret;
}

/*
 * Every page of the range bound and resident, with the CRC it claims; for
 * a discard (!@crcs), with a CRC recorded by an EVICT since its bind.
 */
static long evict_check(struct ortmem_region *region, unsigned long first,
			unsigned long nr, const u32 *crcs)
{
	struct ortmem_spill *spill = region->spill;
	unsigned long i;

	if (!spill)
		return -ENOLINK;
	for (i = 0; i < nr; i++) {
		struct ortmem_spill_page *sp = &spill->pg[first + i];

		if (!sp->bind)
			return -ENOLINK;
		if (sp->state == ORTMEM_PG_EVICTED)
			return -EALREADY;
		if (sp->state != ORTMEM_PG_RESIDENT)
			return -EBUSY;
	}
	if (!crcs) {
		if (find_next_zero_bit(spill->crc_known, first + nr, first) <
		    first + nr)
			return -ENODATA;
		return 0;
	}
	for (i = 0; i < nr; i++) {
		if (ortmem_page_crc(region->pages[first + i]) != crcs[i])
			return -EBADMSG;
		if (!(i & 255))
			cond_resched();
	}
	return 0;
}

/* About 10 ms of waiting for transient page references to go. */
#define EVICT_BUSY_TRIES 32

/*
 * Take the pages out, zap their mappings, and free them if nobody else
 * holds one; else put them all back.  Region lock held for writing.
 */
static long evict_pages(struct ortmem_region *region,
			struct address_space *mapping, unsigned long first,
			unsigned long nr, struct page **taken)
{
	struct ortmem_spill *spill = region->spill;
	unsigned long i;
	bool busy = false;
	int tries;

	for (i = 0; i < nr; i++) {
		taken[i] = region->pages[first + i];
		WRITE_ONCE(region->pages[first + i], NULL);
	}
	unmap_mapping_range(mapping,
			    (loff_t)(region->pgoff + first) << PAGE_SHIFT,
			    (loff_t)nr << PAGE_SHIFT, 0);
	/*
	 * Only the region's own reference may be left.  A synchronous O_DIRECT
	 * write from the range returns before its bio's end_io has put the
	 * pages, so give a reference that is on its way out a moment.
	 */
	for (tries = 0; tries < EVICT_BUSY_TRIES; tries++) {
		busy = false;
		for (i = 0; i < nr && !busy; i++)
			busy = page_count(taken[i]) != 1;
		if (!busy)
			break;
		usleep_range(200, 400);
	}
	if (busy) {
		for (i = 0; i < nr; i++)
			WRITE_ONCE(region->pages[first + i], taken[i]);
		return -EBUSY;
	}
	for (i = 0; i < nr; i++) {
		spill->pg[first + i].state = ORTMEM_PG_EVICTED;
		put_page(taken[i]);
	}
	spill->nr_out += nr;
	atomic_long_sub(nr, &ortmem_outstanding_pages);
	atomic_long_add(nr, &ortmem_evicted_pages);
	ortmem_discharge(nr, region->user);
	return 0;
}

static long evict_locked(struct ortmem_region *region,
			 struct address_space *mapping, unsigned long first,
			 unsigned long nr, const u32 *crcs)
{
	struct page **taken;
	unsigned long i;
	long ret;

	taken = kvmalloc_array(nr, sizeof(*taken), GFP_KERNEL);
	if (!taken)
		return -ENOMEM;
	down_write(&region->lock);
	ret = evict_check(region, first, nr, crcs);
	if (!ret)
		ret = evict_pages(region, mapping, first, nr, taken);
	if (!ret && crcs) {
		for (i = 0; i < nr; i++)
			region->spill->pg[first + i].crc = crcs[i];
		bitmap_set(region->spill->crc_known, first, nr);
	}
	up_write(&region->lock);
	kvfree(taken);
	return ret;
}

/**
 * ortmem_evict() - %ORTMEM_IOC_EVICT: drop a written range's pages.
 * @file: the caller's file.
 * @mapping: the file's own address space, whose mappings of the range are
 *	zapped (another file's mappings of the same offsets are not).
 * @uarg: user pointer to &struct ortmem_evict_args.
 *
 * The CRCs are copied in before the region lock is taken: the array may
 * itself lie in an evicted range, and its fault-back takes that lock.  With
 * %ORTMEM_EVICT_DISCARD there are none: the pages keep the CRCs of their
 * last EVICT since the bind.
 *
 * Return: 0; -EINVAL for unknown flags, a non-zero crcs with
 * %ORTMEM_EVICT_DISCARD, or a bad range; -E2BIG over
 * %ORTMEM_EVICT_MAX_PAGES; -EFAULT for an unreadable crcs array; -ENOENT
 * for a handle not live; -ENOLINK when a page is not bound; -EALREADY when
 * one is evicted already; -EBADMSG when a page's CRC32C is not the one
 * given (nothing is evicted); -ENODATA, for a discard, when a page was not
 * evicted since its bind (nothing is evicted); -EBUSY when a page is being
 * read back or is referenced by someone else (a GUP pin), nothing evicted;
 * -ENOMEM.
 */
long ortmem_evict(struct ortmem_file *file, struct address_space *mapping,
		  void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_evict_args args;
	unsigned long first, nr;
	u32 *crcs;
	long ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags & ~ORTMEM_EVICT_FLAGS)
		return -EINVAL;
	if ((args.flags & ORTMEM_EVICT_DISCARD) && args.crcs)
		return -EINVAL;
	region = ortmem_range_get(file, args.handle, args.offset, args.length,
				  &first, &nr);
	if (IS_ERR(region))
		return PTR_ERR(region);
	ret = -E2BIG;
	if (nr > ORTMEM_EVICT_MAX_PAGES)
		goto out;
	if (args.flags & ORTMEM_EVICT_DISCARD) {
		ret = evict_locked(region, mapping, first, nr, NULL);
		goto out;
	}
	ret = -ENOMEM;
	crcs = kvmalloc_array(nr, sizeof(*crcs), GFP_KERNEL | __GFP_NOWARN);
	if (!crcs)
		goto out;
	ret = -EFAULT;
	if (!copy_from_user(crcs, u64_to_user_ptr(args.crcs), nr * sizeof(*crcs)))
		ret = evict_locked(region, mapping, first, nr, crcs);
	kvfree(crcs);
out:
	ortmem_region_put(region);
	return ret;
}

void ortmem_region_spill_bytes(struct ortmem_region *region,
			       struct ortmem_spill_stats_args *args)
{
	struct ortmem_spill *spill;
	unsigned long out = 0, bound = 0;

	down_read(&region->lock);
	spill = region->spill;
	if (spill) {
		out = spill->nr_out;
		bound = spill->nr_bound;
	}
	up_read(&region->lock);
	args->resident_bytes += (u64)(region->nr_pages - out) << PAGE_SHIFT;
	args->evicted_bytes += (u64)out << PAGE_SHIFT;
	args->bound_bytes += (u64)bound << PAGE_SHIFT;
}

/* The live region of the lowest handle >= *handle, with a reference. */
struct ortmem_region *ortmem_next_region(struct ortmem_file *file,
					 unsigned long *handle)
{
	struct ortmem_region *region;

	if (*handle > ORTMEM_HANDLE_MAX)
		return NULL;
	xa_lock(&file->regions);
	region = xa_find(&file->regions, handle, ORTMEM_HANDLE_MAX, XA_PRESENT);
	if (region)
		kref_get(&region->ref);
	xa_unlock(&file->regions);
	return region;
}

/**
 * ortmem_spill_stats() - %ORTMEM_IOC_SPILL_STATS: the file's figures.
 * @file: the caller's file.
 * @uarg: user pointer to &struct ortmem_spill_stats_args.
 *
 * Return: 0; -EINVAL for flags or output fields not 0; -ENOENT for a
 * handle not live.
 */
long ortmem_spill_stats(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_spill_counters *c = file->counters;
	struct ortmem_spill_stats_args args;
	struct ortmem_region *region;
	unsigned long handle;
	u32 want;
	int i;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || memchr_inv(&args.resident_bytes, 0,
				     sizeof(args) - offsetof(typeof(args), resident_bytes)))
		return -EINVAL;
	want = args.handle;
	if (want > ORTMEM_HANDLE_MAX)
		return -ENOENT;
	if (want) {
		region = ortmem_region_lookup(file, want);
		if (!region)
			return -ENOENT;
		ortmem_region_spill_bytes(region, &args);
		ortmem_region_put(region);
	} else {
		handle = 1;
		while ((region = ortmem_next_region(file, &handle))) {
			ortmem_region_spill_bytes(region, &args);
			ortmem_region_put(region);
			handle++;
		}
	}
	args.fault_backs = atomic64_read(&c->fault_backs);
	args.restored = atomic64_read(&c->restored);
	args.readahead = atomic64_read(&c->readahead);
	for (i = 0; i < ORTMEM_SPILL_FAIL_NR; i++)
		args.failed[i] = atomic64_read(&c->failed[i]);
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

/**
 * DOC: sysfs spill folder
 *
 * Read-only, under /sys/class/misc/ortmem/spill/, module-wide:
 *
 * - ``evicted_bytes``: bytes of all regions now only in their extents;
 * - ``bound_files``: bindings holding a spill-file reference now;
 * - ``fault_backs``: pages brought back by a touch since load;
 * - ``restored_pages``: pages brought back by RESTORE since load;
 * - ``readahead_pages``: pages brought back with a fault-back, after the
 *   touched page (one read for the run) since load;
 * - ``failed_charge``, ``failed_read``, ``failed_checksum``,
 *   ``failed_nomem``: failed fault-backs and restores by cause.
 */

/* A read-only counter file NAME showing EXPR (a u64) in decimal. */
#define COUNTER_ATTR(name, expr)						\
static ssize_t name##_show(struct device *dev,					\
			   struct device_attribute *attr, char *buf)		\
{										\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)(expr));		\
}										\
static DEVICE_ATTR_RO(name)

COUNTER_ATTR(evicted_bytes,
	     (u64)atomic_long_read(&ortmem_evicted_pages) << PAGE_SHIFT);
COUNTER_ATTR(bound_files, atomic_long_read(&ortmem_bound_files));
COUNTER_ATTR(fault_backs, atomic64_read(&ortmem_fault_backs));
COUNTER_ATTR(readahead_pages, atomic64_read(&ortmem_readahead_pages));
COUNTER_ATTR(restored_pages, atomic64_read(&ortmem_restored_pages));
COUNTER_ATTR(failed_charge,
	     atomic64_read(&ortmem_spill_failed[ORTMEM_SPILL_FAIL_CHARGE]));
COUNTER_ATTR(failed_read,
	     atomic64_read(&ortmem_spill_failed[ORTMEM_SPILL_FAIL_READ]));
COUNTER_ATTR(failed_checksum,
	     atomic64_read(&ortmem_spill_failed[ORTMEM_SPILL_FAIL_CHECKSUM]));
COUNTER_ATTR(failed_nomem,
	     atomic64_read(&ortmem_spill_failed[ORTMEM_SPILL_FAIL_NOMEM]));

static struct attribute *spill_attrs[] = {
	&dev_attr_evicted_bytes.attr,
	&dev_attr_bound_files.attr,
	&dev_attr_fault_backs.attr,
	&dev_attr_restored_pages.attr,
	&dev_attr_readahead_pages.attr,
	&dev_attr_failed_charge.attr,
	&dev_attr_failed_read.attr,
	&dev_attr_failed_checksum.attr,
	&dev_attr_failed_nomem.attr,
	NULL,
};

const struct attribute_group ortmem_spill_group = {
	.name = "spill",
	.attrs = spill_attrs,
};
