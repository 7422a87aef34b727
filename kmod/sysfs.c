// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs.c - usage attributes under /sys/class/misc/ortmem/.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/mm.h>
#include <linux/sysfs.h>

#include "ortmem.h"

/**
 * DOC: sysfs attributes
 *
 * Read-only, under /sys/class/misc/ortmem/:
 *
 * - ``abi_version``: the ioctl ABI version;
 * - ``pinned_bytes``: bytes charged to the cap now;
 * - ``regions``: regions alive now (freed handles still mapped count);
 * - ``max_pinned_bytes``: the cap (module parameter ``max_pinned_mb``);
 * - ``outstanding_pages``: pages of live regions, which the module still
 *   holds; 0 whenever no region is alive.  A page that something else
 *   still references when its region goes (a pipe that vmsplice filled, an
 *   I/O in flight) stops counting then; the kernel frees it when that last
 *   reference goes, with its data intact until then.  Evicted pages are
 *   not outstanding: they went back to the kernel.
 *
 * The spill mapping's figures are in the ``spill/`` folder (spill_map.c).
 */

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", ORTMEM_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

static ssize_t pinned_bytes_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	u64 pages = atomic_long_read(&ortmem_pinned_pages);

	return sysfs_emit(buf, "%llu\n", pages << PAGE_SHIFT);
}
static DEVICE_ATTR_RO(pinned_bytes);

static ssize_t regions_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&ortmem_nr_regions));
}
static DEVICE_ATTR_RO(regions);

static ssize_t max_pinned_bytes_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", (u64)ortmem_cap_pages() << PAGE_SHIFT);
}
static DEVICE_ATTR_RO(max_pinned_bytes);

static ssize_t outstanding_pages_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%ld\n",
			  atomic_long_read(&ortmem_outstanding_pages));
}
static DEVICE_ATTR_RO(outstanding_pages);

static struct attribute *ortmem_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_pinned_bytes.attr,
	&dev_attr_regions.attr,
	&dev_attr_max_pinned_bytes.attr,
	&dev_attr_outstanding_pages.attr,
	NULL,
};

static const struct attribute_group ortmem_group = {
	.attrs = ortmem_attrs,
};

const struct attribute_group *ortmem_groups[] = {
	&ortmem_group,
	&ortmem_spill_group,
	NULL,
};
