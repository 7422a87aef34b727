// SPDX-License-Identifier: GPL-2.0
/*
 * mmap.c - mapping regions into a process and faulting their pages in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>

#include "ortmem.h"

static void ortmem_vm_open(struct vm_area_struct *vma)
{
	struct ortmem_region *region = vma->vm_private_data;
	struct ortmem_file *file = vma->vm_file->private_data;

	kref_get(&region->ref);
	atomic_inc(&region->map_count);
	/*
	 * A copy in another process: fork after MADV_DOFORK and
	 * MADV_KEEPONFORK (see ortmem_mmap()), whose page table entries fork
	 * has copied (6.1, for one, copies them before it calls open).  Zap them,
	 * so the child's touches fault and get SIGBUS (ortmem_vm_fault()).  The
	 * unmap reaches only this file's mappings (main.c, "One address space
	 * per open file"): the owner's mappings of the range lose theirs too,
	 * and fault them in again; no other file's mapping is touched.
	 * fork holds both mms' mmap_lock for writing here: the fault path's
	 * order (mmap_lock, then i_mmap_rwsem).
	 */
	if (vma->vm_mm != file->mm && !(vma->vm_flags & VM_WIPEONFORK))
		unmap_mapping_range(vma->vm_file->f_mapping,
				    (loff_t)vma->vm_pgoff << PAGE_SHIFT,
				    vma->vm_end - vma->vm_start, 1);
}

static void ortmem_vm_close(struct vm_area_struct *vma)
{
	struct ortmem_region *region = vma->vm_private_data;

	atomic_dec(&region->map_count);
	ortmem_region_put(region);
}

static vm_fault_t ortmem_vm_fault(struct vm_fault *vmf)
{
	struct ortmem_region *region = vmf->vma->vm_private_data;
	struct ortmem_file *file = vmf->vma->vm_file->private_data;
	pgoff_t idx = vmf->pgoff - region->pgoff;

	/* A copy made by fork after MADV_DOFORK: never share the pages. */
	if (vmf->vma->vm_mm != file->mm)
		return VM_FAULT_SIGBUS;
	if (vmf->pgoff < region->pgoff || idx >= region->nr_pages)
		return VM_FAULT_SIGBUS;
	if (ortmem_should_fail(ORTMEM_FAIL_FAULT))
		return VM_FAULT_SIGBUS;
	/* A resident page, or an evicted one read back from its extent. */
	return ortmem_fault_back(region, idx, vmf);
}

static const struct vm_operations_struct ortmem_vm_ops = {
	.open = ortmem_vm_open,
	.close = ortmem_vm_close,
	.fault = ortmem_vm_fault,
};

/**
 * ortmem_mmap() - Map (part of) a region.
 * @filp: the open file; the caller's process must have opened it.
 * @vma: the new mapping; vm_pgoff selects the region and the offset in it.
 *
 * Return: 0, -EACCES when another process opened @filp (or the caller
 * has exec'ed a new program since), -EINVAL for a
 * private mapping or an offset and length that do not lie in one live
 * region, -EPERM for an executable mapping.
 */
int ortmem_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct ortmem_file *file = filp->private_data;
	struct ortmem_region *region;
	pgoff_t first;

	if (!ortmem_file_owned(file) || vma->vm_mm != file->mm)
		return -EACCES;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	region = ortmem_offset_lookup(file, vma->vm_pgoff);
	if (!region)
		return -EINVAL;
	first = vma->vm_pgoff - region->pgoff;
	if (first >= region->nr_pages ||
	    vma_pages(vma) > region->nr_pages - first) {
		ortmem_region_put(region);
		return -EINVAL;
	}

	/*
	 * VM_MIXEDMAP: a fault-back's read-ahead and RESTORE map the pages they
	 * bring back with vm_insert_pages(), which may set it itself only under
	 * the mmap_lock held for writing.  The pages stay ordinary refcounted
	 * pages (vm_normal_page() finds them).  But fork copies the page table
	 * entries of a VM_MIXEDMAP mapping (where it leaves other shared
	 * mappings to fault), which would share the pages with a child after
	 * MADV_DOFORK: VM_WIPEONFORK makes fork skip that copy (the child's
	 * mapping is then empty and its faults get SIGBUS), and
	 * ortmem_vm_open() zaps a copy made after MADV_KEEPONFORK too.
	 */
	ortmem_vma_mod_flags(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_DONTDUMP |
			     VM_MIXEDMAP | VM_WIPEONFORK, VM_MAYEXEC);
	vma->vm_private_data = region;
	vma->vm_ops = &ortmem_vm_ops;
	atomic_inc(&region->map_count);
	return 0;
}
