// SPDX-License-Identifier: GPL-2.0
/*
 * fdinfo.c - per-client figures in /proc/PID/fdinfo/FD of /dev/ortmem.
 */
#include <linux/fs.h>
#include <linux/seq_file.h>

#include "ortmem.h"
#include "spill.h"

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
 * - ``ortmem-resident-host``: how much of it is pinned in RAM, in KiB;
 * - ``ortmem-evicted-host``: how much of it a spill mapping has evicted to
 *   its file (resident + evicted = total), in KiB;
 * - ``ortmem-fault-backs``: pages brought back by a touch since open;
 * - ``ortmem-restored``: pages brought back by RESTORE since open;
 * - ``ortmem-readahead``: pages read back with a fault-back, after the
 *   touched page, since open;
 * - ``ortmem-fault-back-failures``: fault-backs and restores that failed
 *   since open, all causes (SPILL_STATS splits them).
 *
 * Keys are only ever added; a reader skips what it does not know.
 */
void ortmem_show_fdinfo(struct seq_file *m, struct file *filp)
{
	struct ortmem_file *file = filp->private_data;
	struct ortmem_spill_counters *c = file->counters;
	struct ortmem_spill_stats_args fig = { 0 };
	struct ortmem_region *region;
	unsigned long handle = 1, nr = 0;
	u64 failed = 0;
	int i;

	/*
	 * Evicted pages are counted under each region's lock, which sleeps:
	 * take each region with a reference, the handle table's spinlock
	 * held only for that, as SPILL_STATS does.  No lock is held while
	 * seq_file copies out, and no mmap_lock is held here.
	 */
	while ((region = ortmem_next_region(file, &handle))) {
		nr++;
		ortmem_region_spill_bytes(region, &fig);
		ortmem_region_put(region);
		handle++;
	}
	for (i = 0; i < ORTMEM_SPILL_FAIL_NR; i++)
		failed += atomic64_read(&c->failed[i]);
	seq_printf(m, "ortmem-regions:\t%lu\n", nr);
	seq_printf(m, "ortmem-total-host:\t%llu KiB\n",
		   (fig.resident_bytes + fig.evicted_bytes) >> 10);
	seq_printf(m, "ortmem-resident-host:\t%llu KiB\n", fig.resident_bytes >> 10);
	seq_printf(m, "ortmem-evicted-host:\t%llu KiB\n", fig.evicted_bytes >> 10);
	seq_printf(m, "ortmem-fault-backs:\t%lld\n", atomic64_read(&c->fault_backs));
	seq_printf(m, "ortmem-restored:\t%lld\n", atomic64_read(&c->restored));
	seq_printf(m, "ortmem-readahead:\t%lld\n", atomic64_read(&c->readahead));
	seq_printf(m, "ortmem-fault-back-failures:\t%llu\n", failed);
}
