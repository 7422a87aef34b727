// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl.c - the ioctl commands of /dev/ortmem: argument checks and dispatch.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/uaccess.h>

#include "ortmem.h"

static long ortmem_get_version(void __user *uarg)
{
	struct ortmem_version_args args;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.pad)
		return -EINVAL;
	if (args.lib_abi_version && args.lib_abi_version < ORTMEM_ABI_MIN_VERSION)
		return -EPROTO;
	args.abi_version = ORTMEM_ABI_VERSION;
	args.min_abi_version = ORTMEM_ABI_MIN_VERSION;
	args.features = ORTMEM_FEAT_REGIONS | ORTMEM_FEAT_NUMA |
			ORTMEM_FEAT_SPILL_MAP | ORTMEM_FEAT_EVICT_DISCARD;
	args.max_pinned_bytes = (u64)ortmem_cap_pages() << PAGE_SHIFT;
	args.page_size = PAGE_SIZE;
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

static bool numa_node_valid(s32 node)
{
	if (node == ORTMEM_NUMA_ANY)
		return true;
	return node >= 0 && node < nr_node_ids && node_online(node);
}

/*
 * Undo a handle and offset range given to an ALLOC that then failed: the
 * cursors go back too, unless another ALLOC has moved them since, so a
 * refused call changes nothing.  Called with the xarray lock held.
 */
static void alloc_undo(struct ortmem_file *file, u32 handle, u32 next_handle,
		       struct ortmem_region *region, unsigned long next_pgoff)
{
	__xa_erase(&file->regions, handle);
	if (file->next_handle == handle + 1)
		file->next_handle = next_handle;
	if (!region)
		return;
	ortmem_offset_remove(file, region);
	if (file->next_pgoff == region->pgoff + region->nr_pages)
		file->next_pgoff = next_pgoff;
}

static long ortmem_alloc(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_alloc_args args;
	unsigned long next_pgoff;
	u32 handle, next_handle;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags & ~ORTMEM_ALLOC_FLAGS || args.pad || args.handle ||
	    args.mmap_offset)
		return -EINVAL;
	if (!args.size || args.size > ORTMEM_REGION_MAX_SIZE)
		return -EINVAL;
	if (!numa_node_valid(args.numa_node))
		return -EINVAL;

	/* Reserve the handle first: a failure after the pages are in costs. */
	if (ortmem_should_fail(ORTMEM_FAIL_HANDLE))
		return -ENOMEM;
	xa_lock(&file->regions);
	next_handle = file->next_handle;
	next_pgoff = file->next_pgoff;
	ret = __xa_alloc_cyclic(&file->regions, &handle, NULL,
				XA_LIMIT(1, ORTMEM_HANDLE_MAX),
				&file->next_handle, GFP_KERNEL_ACCOUNT);
	xa_unlock(&file->regions);
	if (ret == -EBUSY)
		return -ENOSPC;
	if (ret < 0)
		return ret;

	region = ortmem_region_create(args.size, args.numa_node, args.flags);
	xa_lock(&file->regions);
	if (IS_ERR(region)) {
		alloc_undo(file, handle, next_handle, NULL, 0);
		xa_unlock(&file->regions);
		return PTR_ERR(region);
	}
	region->handle = handle;
	ret = ortmem_offset_insert(file, region);
	if (ret)
		alloc_undo(file, handle, next_handle, NULL, 0);
	xa_unlock(&file->regions);
	if (ret) {
		ortmem_region_put(region);
		return ret;
	}

	args.handle = handle;
	args.mmap_offset = (u64)region->pgoff << PAGE_SHIFT;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		xa_lock(&file->regions);
		alloc_undo(file, handle, next_handle, region, next_pgoff);
		xa_unlock(&file->regions);
		ortmem_region_put(region);
		return -EFAULT;
	}
	xa_store(&file->regions, handle, region, GFP_KERNEL_ACCOUNT);
	return 0;
}

static long ortmem_free(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_free_args args;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	if (!args.handle || args.handle > ORTMEM_HANDLE_MAX)
		return -ENOENT;
	xa_lock(&file->regions);
	region = xa_load(&file->regions, args.handle);
	if (region) {
		__xa_erase(&file->regions, args.handle);
		ortmem_offset_remove(file, region);
	}
	xa_unlock(&file->regions);
	if (!region)
		return -ENOENT;
	ortmem_region_put(region);
	return 0;
}

static long ortmem_query(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_query_args args;
	u32 handle;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags)
		return -EINVAL;
	handle = args.handle;
	if (!handle || handle > ORTMEM_HANDLE_MAX)
		return -ENOENT;
	region = ortmem_region_lookup(file, handle);
	if (!region)
		return -ENOENT;
	memset(&args, 0, sizeof(args));
	args.handle = handle;
	args.size = (u64)region->nr_pages << PAGE_SHIFT;
	args.mmap_offset = (u64)region->pgoff << PAGE_SHIFT;
	args.numa_node = region->numa_node;
	args.map_count = atomic_read(&region->map_count);
	ortmem_region_put(region);
	if (copy_to_user(uarg, &args, sizeof(args)))
		return -EFAULT;
	return 0;
}

/**
 * ortmem_ioctl() - Dispatch an ioctl of /dev/ortmem.
 * @filp: the open file.
 * @cmd: the command.
 * @arg: user pointer to the command's struct.
 *
 * Return: 0, -ENOTTY for an unknown command, -EACCES when the caller's
 * process did not open @filp (all but %ORTMEM_IOC_GET_VERSION), -EBADF for
 * an ALLOC on a file not opened O_RDWR, or the command's own error (see Documentation/userspace-api/ortmem.rst).
 */
long ortmem_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct ortmem_file *file = filp->private_data;
	void __user *uarg = (void __user *)arg;

	/* Every command but GET_VERSION needs the file's own process. */
	switch (cmd) {
	case ORTMEM_IOC_GET_VERSION:
		return ortmem_get_version(uarg);
	case ORTMEM_IOC_ALLOC:
		if (!ortmem_file_owned(file))
			return -EACCES;
		/* Regions are mapped read-write: through this file, never. */
		if ((filp->f_mode & (FMODE_READ | FMODE_WRITE)) !=
		    (FMODE_READ | FMODE_WRITE))
			return -EBADF;
		return ortmem_alloc(file, uarg);
	case ORTMEM_IOC_FREE:
		return ortmem_file_owned(file) ? ortmem_free(file, uarg) : -EACCES;
	case ORTMEM_IOC_QUERY:
		return ortmem_file_owned(file) ? ortmem_query(file, uarg) : -EACCES;
	case ORTMEM_IOC_BIND:
		return ortmem_file_owned(file) ? ortmem_bind(file, uarg) : -EACCES;
	case ORTMEM_IOC_UNBIND:
		return ortmem_file_owned(file) ? ortmem_unbind(file, uarg) : -EACCES;
	case ORTMEM_IOC_EVICT:
		return ortmem_file_owned(file) ?
		       ortmem_evict(file, filp->f_mapping, uarg) : -EACCES;
	case ORTMEM_IOC_RESTORE:
		return ortmem_file_owned(file) ?
		       ortmem_restore(file, filp->f_mapping, uarg) : -EACCES;
	case ORTMEM_IOC_SPILL_STATS:
		return ortmem_file_owned(file) ? ortmem_spill_stats(file, uarg) : -EACCES;
	default:
		return -ENOTTY;
	}
}
