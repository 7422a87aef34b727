/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spill.h - state of the disk-spill mapping, shared by spill_map.c (bind,
 * unbind, evict, statistics) and fault_back.c (fault-back and restore).
 */
#ifndef ORTMEM_KMOD_SPILL_H
#define ORTMEM_KMOD_SPILL_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/wait.h>

#include "ortmem.h"

/**
 * enum ortmem_page_state - Where one page of a bound range is.
 * @ORTMEM_PG_RESIDENT: in RAM, in &ortmem_region.pages.
 * @ORTMEM_PG_EVICTED: only in its extent; the pages entry is NULL.
 * @ORTMEM_PG_BUSY: being read back (a fault-back or a restore owns it);
 *	others wait on &ortmem_spill.wq.
 */
enum ortmem_page_state {
	ORTMEM_PG_RESIDENT,
	ORTMEM_PG_EVICTED,
	ORTMEM_PG_BUSY,
};

/**
 * struct ortmem_binding - One BIND: a range of a region and its file extent.
 * @file: the spill file, with the module's own reference.
 * @file_offset: where page @first lies in @file.
 * @first: first page index of the range in the region.
 * @nr_pages: pages of the range still bound; the last unbind frees this.
 */
struct ortmem_binding {
	struct file *file;
	loff_t file_offset;
	unsigned long first;
	unsigned long nr_pages;
};

/**
 * struct ortmem_spill_page - Spill state of one page of a region.
 * @bind: its binding, or NULL when unbound.
 * @crc: CRC32C the page had when evicted (valid while not resident, and
 *	after a restore while the page's bit in &ortmem_spill.crc_known is set).
 * @state: an &enum ortmem_page_state; moved from EVICTED to BUSY with
 *	cmpxchg() under the region lock held for reading.
 */
struct ortmem_spill_page {
	struct ortmem_binding *bind;
	u32 crc;
	unsigned int state;
};

/**
 * struct ortmem_spill_counters - Fault-back counters of one open file.
 * @ref: held by the file and by each region's spill state.
 * @fault_backs: pages brought back by a touch.
 * @restored: pages brought back by RESTORE.
 * @readahead: pages brought back with a fault-back, after the touched one.
 * @failed: failed fault-backs and restores by cause (%ORTMEM_SPILL_FAIL_*).
 */
struct ortmem_spill_counters {
	struct kref ref;
	atomic64_t fault_backs;
	atomic64_t restored;
	atomic64_t readahead;
	atomic64_t failed[ORTMEM_SPILL_FAIL_NR];
};

/**
 * struct ortmem_spill - Spill state of a region, made at its first bind.
 * @pg: one entry per page of the region.
 * @nr_bound: pages bound now.
 * @nr_out: pages not resident (evicted or busy); their charge is given back.
 * @crc_known: bitmap, one bit per page: its &ortmem_spill_page.crc is the
 *	one its extent was evicted with since the page was bound (set by
 *	EVICT, cleared by UNBIND); what EVICT_DISCARD needs.  Changed under
 *	the region lock held for writing.
 * @counters: the owning file's counters (a reference).
 * @wq: where faults wait for a busy page.
 * @ra_next: the page after the last fault-back's run: a fault there is
 *	sequential and doubles @ra_window (a hint, read and written racily).
 * @ra_window: pages the last fault-back read (its touched page included).
 */
struct ortmem_spill {
	struct ortmem_spill_page *pg;
	unsigned long nr_bound;
	unsigned long nr_out;
	unsigned long *crc_known;
	struct ortmem_spill_counters *counters;
	wait_queue_head_t wq;
	unsigned long ra_next;
	unsigned long ra_window;
};

/* Module-wide figures of the spill mapping (sysfs spill/). */
extern atomic_long_t ortmem_evicted_pages;
extern atomic_long_t ortmem_bound_files;
extern atomic64_t ortmem_fault_backs;
extern atomic64_t ortmem_restored_pages;
extern atomic64_t ortmem_readahead_pages;
extern atomic64_t ortmem_spill_failed[ORTMEM_SPILL_FAIL_NR];

/*
 * ortmem_range_get() - The region @handle names, with a reference, and its
 * page range; ERR_PTR(-ENOENT) for no such region, ERR_PTR(-EINVAL) for a
 * range that is empty, unaligned or past its end.
 */
struct ortmem_region *ortmem_range_get(struct ortmem_file *file, u64 handle,
				       u64 offset, u64 length,
				       unsigned long *first, unsigned long *nr);

/*
 * ortmem_next_region() - The live region of @file with the lowest handle
 * >= *@handle, with a reference (put it with ortmem_region_put()); NULL
 * past the last.  The handle table's lock is held only for the lookup, so
 * the caller may sleep on the region's lock (SPILL_STATS, fdinfo).
 */
struct ortmem_region *ortmem_next_region(struct ortmem_file *file,
					 unsigned long *handle);

/*
 * ortmem_region_spill_bytes() - Add @region's resident, evicted and bound
 * bytes to @args, read under the region lock (taken here for reading).
 */
void ortmem_region_spill_bytes(struct ortmem_region *region,
			       struct ortmem_spill_stats_args *args);

/* ortmem_page_crc() - CRC32C of a page, as EVICT's crcs[] gives it. */
u32 ortmem_page_crc(struct page *page);

#endif /* ORTMEM_KMOD_SPILL_H */
