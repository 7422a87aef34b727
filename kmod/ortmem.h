/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ortmem.h - internal declarations of the ortmem module.
 *
 * Lock order: mmap_lock -> region lock (&ortmem_region.lock) -> i_mmap_rwsem
 * of the file's own inode (unmap_mapping_range() in evict).  The per-file xarray
 * lock is taken alone; region lifetime is a kref, never a lock.  The fault
 * handler takes the region lock for reading and drops it for the spill-file
 * read of a fault-back; no user memory is touched under the region lock
 * (Documentation/kmod/spill-map.rst).
 */
#ifndef ORTMEM_KMOD_H
#define ORTMEM_KMOD_H

#include <linux/atomic.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/rbtree.h>
#include <linux/mm.h>
#include <linux/rwsem.h>
#include <linux/xarray.h>

#include <uapi/linux/ortmem.h>

#include "ortmem_conftest.h"

struct user_struct;
struct pid;
struct seq_file;

/**
 * struct ortmem_region - A set of pinned, zeroed pages of one allocation.
 * @ref: held by the owning file's handle table and by each VMA mapping it.
 * @user: user charged for the pages, or NULL when exempt (CAP_IPC_LOCK).
 * @nr_pages: number of pages in @pages.
 * @pages: the pages, each with one reference of the region's own.
 * @pgoff: first page offset of the region in its file's mmap offset space.
 * @offset_node: in the file's @offsets tree, keyed by @pgoff.
 * @handle: the region's handle in its file.
 * @numa_node: node asked for, or %ORTMEM_NUMA_ANY.
 * @map_count: number of VMAs that map the region.
 * @lock: region lock: @pages entries and the spill state; read side in the
 *	fault handler, write side in bind, unbind and evict.
 * @spill: the spill-mapping state, NULL until the first bind.
 *
 * An entry of @pages is NULL while its page is evicted (spill_map.c).
 */
struct ortmem_region {
	struct kref ref;
	struct user_struct *user;
	unsigned long nr_pages;
	struct page **pages;
	pgoff_t pgoff;
	struct rb_node offset_node;
	u32 handle;
	int numa_node;
	atomic_t map_count;
	struct rw_semaphore lock;
	struct ortmem_spill *spill;
};

struct ortmem_spill;
struct ortmem_spill_counters;

/**
 * struct ortmem_file - State of one open file description of /dev/ortmem.
 * @regions: handle -> &struct ortmem_region, handles 1..%ORTMEM_HANDLE_MAX;
 *	its lock also guards @offsets and @next_pgoff.
 * @offsets: the live regions by mmap offset (offsets.c).
 * @next_pgoff: where the search for the next region's offsets starts.
 * @next_handle: where the search for the next handle starts (handles are
 *	given cyclically, so a freed one is not given again soon).
 * @owner: thread group that opened the file; only it may use the file.
 * @mm: address space of @owner when it opened the file (held by mmgrab(),
 *	so the pointer is never reused): the only one whose mappings of a
 *	region are faulted in.
 * @counters: fault-back counters of the file (%ORTMEM_IOC_SPILL_STATS),
 *	shared with its regions' spill state.
 * @inode: the file's own inode, whose address space is the file's
 *	f_mapping: the mappings an unmap of the file's offsets reaches
 *	(main.c, "One address space per open file").
 */
struct ortmem_file {
	struct xarray regions;
	struct rb_root offsets;
	unsigned long next_pgoff;
	u32 next_handle;
	struct pid *owner;
	struct mm_struct *mm;
	struct ortmem_spill_counters *counters;
	struct inode *inode;
};

/* main.c */
extern struct miscdevice ortmem_misc;
extern unsigned int max_pinned_mb;

/* accounting.c */
extern atomic_long_t ortmem_pinned_pages;
extern atomic_long_t ortmem_outstanding_pages;
extern atomic_t ortmem_nr_regions;
unsigned long ortmem_cap_pages(void);
int ortmem_charge(unsigned long nr_pages, struct user_struct **userp);
void ortmem_uncharge(unsigned long nr_pages, struct user_struct *user);
int ortmem_recharge(unsigned long nr_pages, struct user_struct *user);
void ortmem_discharge(unsigned long nr_pages, struct user_struct *user);

/* region.c */
struct ortmem_region *ortmem_region_create(u64 size, int numa_node, u32 flags);
void ortmem_region_put(struct ortmem_region *region);
struct ortmem_region *ortmem_region_lookup(struct ortmem_file *file, u32 handle);

/* offsets.c */
int ortmem_offset_insert(struct ortmem_file *file, struct ortmem_region *region);
void ortmem_offset_remove(struct ortmem_file *file, struct ortmem_region *region);
struct ortmem_region *ortmem_offset_lookup(struct ortmem_file *file,
					   unsigned long pgoff);

/* ioctl.c */
long ortmem_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);

/* fdinfo.c */
void ortmem_show_fdinfo(struct seq_file *m, struct file *filp);

/* mmap.c */
int ortmem_mmap(struct file *filp, struct vm_area_struct *vma);

/* spill_map.c */
extern const struct attribute_group ortmem_spill_group;
struct ortmem_spill_counters *ortmem_counters_new(void);
void ortmem_counters_put(struct ortmem_spill_counters *counters);
unsigned long ortmem_spill_release(struct ortmem_region *region);
long ortmem_bind(struct ortmem_file *file, void __user *uarg);
long ortmem_unbind(struct ortmem_file *file, void __user *uarg);
long ortmem_evict(struct ortmem_file *file, struct address_space *mapping,
		  void __user *uarg);
long ortmem_spill_stats(struct ortmem_file *file, void __user *uarg);

/* fault_back.c */
vm_fault_t ortmem_fault_back(struct ortmem_region *region, pgoff_t idx,
			     struct vm_fault *vmf);
long ortmem_restore(struct ortmem_file *file, struct address_space *mapping,
		    void __user *uarg);

/**
 * enum ortmem_fail_point - Points where a debug build can inject a failure.
 * @ORTMEM_FAIL_REGION: kzalloc() of &struct ortmem_region.
 * @ORTMEM_FAIL_CHARGE_CAP: charging the module-wide cap.
 * @ORTMEM_FAIL_CHARGE_USER: charging the caller's RLIMIT_MEMLOCK.
 * @ORTMEM_FAIL_PAGE_ARRAY: kvmalloc_array() of the region's page array.
 * @ORTMEM_FAIL_PAGE: allocating one page of a region.
 * @ORTMEM_FAIL_HANDLE: reserving a handle in the file's xarray.
 * @ORTMEM_FAIL_FAULT: faulting one page of a mapping in.
 * @ORTMEM_FAIL_SPILL_STATE: allocating a region's spill state at bind.
 * @ORTMEM_FAIL_SPILL_READ: reading pages back from a spill file.
 * @ORTMEM_FAIL_NR: number of points; also "none armed".
 */
enum ortmem_fail_point {
	ORTMEM_FAIL_REGION,
	ORTMEM_FAIL_CHARGE_CAP,
	ORTMEM_FAIL_CHARGE_USER,
	ORTMEM_FAIL_PAGE_ARRAY,
	ORTMEM_FAIL_PAGE,
	ORTMEM_FAIL_HANDLE,
	ORTMEM_FAIL_FAULT,
	ORTMEM_FAIL_SPILL_STATE,
	ORTMEM_FAIL_SPILL_READ,
	ORTMEM_FAIL_NR,
};

/* fault_inject.c, in ORTMEM_DEBUG builds only */
#ifdef ORTMEM_DEBUG
bool ortmem_should_fail(enum ortmem_fail_point point);
void ortmem_fault_inject_init(void);
void ortmem_fault_inject_exit(void);
#else
static inline bool ortmem_should_fail(enum ortmem_fail_point point)
{
	return false;
}

static inline void ortmem_fault_inject_init(void)
{
}

static inline void ortmem_fault_inject_exit(void)
{
}
#endif

/* sysfs.c */
extern const struct attribute_group *ortmem_groups[];

/**
 * ortmem_vma_mod_flags() - Set and clear flags of a VMA being mmapped.
 * @vma: the new VMA.
 * @set: flags to set.
 * @clear: flags to clear.
 *
 * Since 6.3 vm_flags may only be changed through vm_flags_mod() and its
 * friends; ORTMEM_HAVE_VM_FLAGS_MOD comes from kmod/conftest.sh.
 */
static inline void ortmem_vma_mod_flags(struct vm_area_struct *vma,
					unsigned long set, unsigned long clear)
{
#ifdef ORTMEM_HAVE_VM_FLAGS_MOD
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

/**
 * ortmem_file_owned() - Whether the calling process opened @file.
 * @file: the per-file state.
 *
 * Return: true when current belongs to the thread group that opened it.
 */
bool ortmem_file_owned(const struct ortmem_file *file);

#endif /* ORTMEM_KMOD_H */
