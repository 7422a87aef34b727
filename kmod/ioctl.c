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
			ORTMEM_FEAT_SPILL_MAP;
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

static long ortmem_alloc(struct ortmem_file *file, void __user *uarg)
{
	struct ortmem_region *region;
	struct ortmem_alloc_args args;
	u32 handle;
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
	ret = xa_alloc(&file->regions, &handle, NULL,
		       XA_LIMIT(1, ORTMEM_HANDLE_MAX), GFP_KERNEL_ACCOUNT);
	if (ret == -EBUSY)
		return -ENOSPC;
	if (ret)
		return ret;

	region = ortmem_region_create(args.size, args.numa_node, args.flags);
	if (IS_ERR(region)) {
		xa_erase(&file->regions, handle);
		return PTR_ERR(region);
	}
	region->handle = handle;
	region->pgoff = (pgoff_t)handle << (ORTMEM_MMAP_SHIFT - PAGE_SHIFT);

	args.handle = handle;
	args.mmap_offset = (u64)handle << ORTMEM_MMAP_SHIFT;
	if (copy_to_user(uarg, &args, sizeof(args))) {
		xa_erase(&file->regions, handle);
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
	if (region)
		__xa_erase(&file->regions, args.handle);
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
	args.mmap_offset = (u64)handle << ORTMEM_MMAP_SHIFT;
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
 * process did not open @filp (all but %ORTMEM_IOC_GET_VERSION), or the
 * command's own error (see Documentation/userspace-api/ortmem.rst).
 */
long ortmem_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct ortmem_file *file = filp->private_data;
	void __user *uarg = (void __user *)arg;

	if (cmd == ORTMEM_IOC_GET_VERSION)
		return ortmem_get_version(uarg);

	switch (cmd) {
	case ORTMEM_IOC_ALLOC:
	case ORTMEM_IOC_FREE:
	case ORTMEM_IOC_QUERY:
	case ORTMEM_IOC_BIND:
	case ORTMEM_IOC_UNBIND:
	case ORTMEM_IOC_EVICT:
	case ORTMEM_IOC_RESTORE:
	case ORTMEM_IOC_SPILL_STATS:
		break;
	default:
		return -ENOTTY;
	}
	if (!ortmem_file_owned(file))
		return -EACCES;

	switch (cmd) {
	case ORTMEM_IOC_ALLOC:
		return ortmem_alloc(file, uarg);
	case ORTMEM_IOC_FREE:
		return ortmem_free(file, uarg);
	case ORTMEM_IOC_BIND:
		return ortmem_bind(file, uarg);
	case ORTMEM_IOC_UNBIND:
		return ortmem_unbind(file, uarg);
	case ORTMEM_IOC_EVICT:
		return ortmem_evict(file, filp->f_mapping, uarg);
	case ORTMEM_IOC_RESTORE:
		return ortmem_restore(file, uarg);
	case ORTMEM_IOC_SPILL_STATS:
		return ortmem_spill_stats(file, uarg);
	default:
		return ortmem_query(file, uarg);
	}
}
