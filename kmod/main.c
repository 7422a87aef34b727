// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - the /dev/ortmem misc device: load, unload, open and release.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "ortmem.h"

unsigned int max_pinned_mb;
module_param(max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Cap on the bytes all regions may pin together, in MiB (0: half of RAM)");

/**
 * DOC: Ownership and fork
 *
 * A file descriptor of /dev/ortmem belongs to the process (thread group)
 * that opened it.  Any thread of that process may use it.  Another process
 * that holds the same file description (a forked child, or a receiver of the
 * descriptor over SCM_RIGHTS) gets -EACCES from every ioctl but
 * %ORTMEM_IOC_GET_VERSION and from mmap; it may open /dev/ortmem itself.
 * Mappings are not inherited across fork (VM_DONTCOPY): a child touching a
 * parent's region address gets SIGSEGV instead of sharing pinned pages by
 * surprise.  madvise(MADV_DOFORK) clears VM_DONTCOPY, so the fault handler
 * enforces the rule too: it maps pages only into the address space that
 * opened the file, and a child that inherited a mapping gets SIGBUS.  The
 * mappings are VM_MIXEDMAP (for vm_insert_pages()), whose page table entries
 * fork would copy: they are VM_WIPEONFORK as well, and a copy made after
 * madvise(MADV_KEEPONFORK) is zapped in vm_ops->open (mmap.c).  For
 * the same reason mmap after an execve() that kept the descriptor is
 * refused with -EACCES: the new program has a new address space.  The last close of the file frees every handle, whoever closes
 * it; the pages of a region live on until its last mapping is gone.
 */
bool ortmem_file_owned(const struct ortmem_file *file)
{
	return file->owner == task_tgid(current);
}

/**
 * DOC: One address space per open file
 *
 * Every open file of /dev/ortmem has an mmap offset space of its own
 * (offsets.c), and every one starts at page 1, so two files' regions often
 * have the same offsets.  The device inode has one address space, shared by
 * every open: unmapping a range there (EVICT, the fork-copy zap in mmap.c)
 * would zap every process's mapping of those offsets, whatever file and
 * region they belong to, costing them faults and leaking one process's
 * evictions into another's page tables.  So each open gets an inode of its
 * own from a kernel-internal pseudo file system, as DRM and VFIO do, and
 * its file's f_mapping is that inode's address space: an unmap reaches only
 * the mappings of the file that asked for it.  The file system is mounted
 * while any file is open (simple_pin_fs()), which holds a module reference
 * no longer than the open files do.
 */
#define ORTMEM_FS_MAGIC 0x6f72746d	/* "ortm" */

static struct vfsmount *ortmem_mnt;
static int ortmem_mnt_count;

static int ortmem_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, ORTMEM_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type ortmem_fs_type = {
	.name = "ortmem_mapping",
	.owner = THIS_MODULE,
	.init_fs_context = ortmem_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* An inode whose address space is the new file's alone. */
static struct inode *ortmem_mapping_inode_new(void)
{
	struct inode *inode;
	int ret;

	ret = simple_pin_fs(&ortmem_fs_type, &ortmem_mnt, &ortmem_mnt_count);
	if (ret)
		return ERR_PTR(ret);
	inode = alloc_anon_inode(ortmem_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&ortmem_mnt, &ortmem_mnt_count);
	return inode;
}

static void ortmem_mapping_inode_free(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&ortmem_mnt, &ortmem_mnt_count);
}

static int ortmem_open(struct inode *inode, struct file *filp)
{
	struct ortmem_file *file;

	if (!current->mm)
		return -EPERM;
	file = kzalloc(sizeof(*file), GFP_KERNEL_ACCOUNT);
	if (!file)
		return -ENOMEM;
	file->counters = ortmem_counters_new();
	if (!file->counters) {
		kfree(file);
		return -ENOMEM;
	}
	file->inode = ortmem_mapping_inode_new();
	if (IS_ERR(file->inode)) {
		long ret = PTR_ERR(file->inode);

		ortmem_counters_put(file->counters);
		kfree(file);
		return ret;
	}
	filp->f_mapping = file->inode->i_mapping;
	xa_init_flags(&file->regions, XA_FLAGS_ALLOC1);
	file->offsets = RB_ROOT;
	file->owner = get_pid(task_tgid(current));
	file->mm = current->mm;
	mmgrab(file->mm);
	filp->private_data = file;
	return 0;
}

static int ortmem_release(struct inode *inode, struct file *filp)
{
	struct ortmem_file *file = filp->private_data;
	struct ortmem_region *region;
	unsigned long handle;

	xa_for_each(&file->regions, handle, region) {
		xa_lock(&file->regions);
		__xa_erase(&file->regions, handle);
		ortmem_offset_remove(file, region);
		xa_unlock(&file->regions);
		ortmem_region_put(region);
	}
	xa_destroy(&file->regions);
	ortmem_counters_put(file->counters);
	/* No mapping is left: each one held a reference to @filp. */
	filp->f_mapping = inode->i_mapping;
	ortmem_mapping_inode_free(file->inode);
	put_pid(file->owner);
	mmdrop(file->mm);
	kfree(file);
	return 0;
}

static const struct file_operations ortmem_fops = {
	.owner = THIS_MODULE,
	.open = ortmem_open,
	.release = ortmem_release,
	.unlocked_ioctl = ortmem_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = ortmem_mmap,
	.show_fdinfo = ortmem_show_fdinfo,
	.llseek = noop_llseek,
};

struct miscdevice ortmem_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "ortmem",
	.fops = &ortmem_fops,
	.mode = 0660,
	.groups = ortmem_groups,
};

static int __init ortmem_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct ortmem_version_args) != 40);
	BUILD_BUG_ON(sizeof(struct ortmem_alloc_args) != 32);
	BUILD_BUG_ON(sizeof(struct ortmem_free_args) != 8);
	BUILD_BUG_ON(sizeof(struct ortmem_query_args) != 32);

	ret = misc_register(&ortmem_misc);
	if (ret) {
		pr_err("cannot register the misc device: %d\n", ret);
		return ret;
	}
	ortmem_fault_inject_init();
	pr_info("ABI %u loaded, pinning cap %lu MiB\n", ORTMEM_ABI_VERSION,
		ortmem_cap_pages() >> (20 - PAGE_SHIFT));
	return 0;
}

static void __exit ortmem_exit(void)
{
	ortmem_fault_inject_exit();
	misc_deregister(&ortmem_misc);
	WARN_ON_ONCE(atomic_long_read(&ortmem_outstanding_pages));
	WARN_ON_ONCE(atomic_long_read(&ortmem_pinned_pages));
}

module_init(ortmem_init);
module_exit(ortmem_exit);

MODULE_DESCRIPTION("ortmem: pinned host memory regions for tiered ML inference");
MODULE_AUTHOR("The ortmem developers");
MODULE_LICENSE("GPL");
