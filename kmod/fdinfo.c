// SPDX-License-Identifier: GPL-2.0
/*
 * fdinfo.c - per-client figures in /proc/PID/fdinfo/FD of /dev/ortmem.
 */
#include <linux/fs.h>
#include <linux/seq_file.h>

#include "ortmem.h"

/**
 * DOC: fdinfo keys
 *
 * Each open file of /dev/ortmem shows, in /proc/PID/fdinfo/FD, key-value
 * lines named as DRM's usage statistics (Documentation/gpu/drm-usage-stats.rst)
 * name theirs, with the ``ortmem-`` prefix, so that tools that read
 * ``drm-total-*`` and ``drm-resident-*`` read these the same way:
 *
 * - ``ortmem-regions``: regions the file holds (a freed region that is
 *   still mapped is no longer the file's, and counts in no file);
 * - ``ortmem-total-host``: their size, in KiB;
 * - ``ortmem-resident-host``: how much of it is pinned in RAM, in KiB.
 *   Known limit: pages a spill-mapped region has evicted (spill_map.c) are
 *   not subtracted yet, nor are ``ortmem-evicted-host`` and fault-back
 *   keys shown: counting them needs each region's lock, which cannot be
 *   taken under the handle table's spinlock held here.
 *
 * Keys are only ever added; a reader skips what it does not know.
 */
void ortmem_show_fdinfo(struct seq_file *m, struct file *filp)
{
	struct ortmem_file *file = filp->private_data;
	struct ortmem_region *region;
	unsigned long handle, nr = 0;
	u64 pages = 0;

	xa_lock(&file->regions);
	xa_for_each(&file->regions, handle, region) {
		nr++;
		pages += region->nr_pages;
	}
	xa_unlock(&file->regions);
	seq_printf(m, "ortmem-regions:\t%lu\n", nr);
	seq_printf(m, "ortmem-total-host:\t%llu KiB\n", pages << (PAGE_SHIFT - 10));
	/* Pages are allocated and pinned at ALLOC (see the limit above). */
	seq_printf(m, "ortmem-resident-host:\t%llu KiB\n",
		   pages << (PAGE_SHIFT - 10));
}
