// SPDX-License-Identifier: MIT
/*
 * Finding /dev/ortmem with libudev, opening it, and the version handshake.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <libudev.h>

#include "internal.h"
#include "host_internal.h"

/* Subsystem misc, sysname ortmem: the node udev made and its sysfs folder. */
static int dev_find(struct ortmem__dev *dev)
{
	struct udev_enumerate *en = NULL;
	struct udev_list_entry *entry;
	struct udev *udev;
	int ret = -ENODEV;

	udev = udev_new();
	if (!udev)
		return ortmem__err_plain(-ENOMEM, "udev_new() failed");
	en = udev_enumerate_new(udev);
	if (!en || udev_enumerate_add_match_subsystem(en, "misc") < 0 ||
	    udev_enumerate_add_match_sysname(en, "ortmem") < 0 ||
	    udev_enumerate_scan_devices(en) < 0) {
		ret = ortmem__err_plain(-ENOMEM, "libudev: cannot enumerate misc devices");
		goto out;
	}
	udev_list_entry_foreach(entry, udev_enumerate_get_list_entry(en)) {
		struct udev_device *d;
		const char *node;

		d = udev_device_new_from_syspath(udev, udev_list_entry_get_name(entry));
		if (!d)
			continue;
		node = udev_device_get_devnode(d);
		if (node) {
			snprintf(dev->node, sizeof(dev->node), "%s", node);
			snprintf(dev->syspath, sizeof(dev->syspath), "%s",
				 udev_device_get_syspath(d));
			ret = 0;
		}
		udev_device_unref(d);
		if (!ret)
			break;
	}
	if (ret)
		ret = ortmem__err_plain(-ENODEV,
			"the ortmem kernel module is not loaded (no misc device \"ortmem\" in sysfs); load it with 'modprobe ortmem'");
out:
	udev_enumerate_unref(en);
	udev_unref(udev);
	return ret;
}

static int dev_handshake(struct ortmem__dev *dev)
{
	struct ortmem_version_args *v = &dev->version;
	int ret;

	*v = (struct ortmem_version_args){ .lib_abi_version = ORTMEM_ABI_VERSION };
	ret = ortmem__sys_get_version(dev->fd, v);
	if (ret == -EPROTO)
		return ortmem__err_plain(-ORTMEM_E_ABI_MISMATCH,
			"%s refuses library ABI %d as too old; upgrade libortmem",
			dev->node, ORTMEM_ABI_VERSION);
	if (ret)
		return ortmem__err_plain(ret == -ENOTTY ? -ORTMEM_E_ABI_MISMATCH : ret,
			"%s: version handshake failed; is it the ortmem module?",
			dev->node);
	if (v->abi_version < ORTMEM_ABI_MIN_VERSION ||
	    v->min_abi_version > ORTMEM_ABI_VERSION)
		return ortmem__err_plain(-ORTMEM_E_ABI_MISMATCH,
			"%s speaks ABI %" PRIu32 " (accepts >= %" PRIu32 "), libortmem speaks %d (needs >= %d); install matching module and library",
			dev->node, v->abi_version, v->min_abi_version,
			ORTMEM_ABI_VERSION, ORTMEM_ABI_MIN_VERSION);
	if (!(v->features & ORTMEM_FEAT_REGIONS))
		return ortmem__err_plain(-ORTMEM_E_ABI_MISMATCH,
			"%s does not offer regions (features 0x%" PRIx64 ")",
			dev->node, (uint64_t)v->features);
	return 0;
}

int ortmem__dev_open(const char *node, struct ortmem__dev **devp)
{
	struct ortmem__dev *dev;
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return ortmem__err_plain(-ENOMEM, "out of memory for the device state");
	dev->fd = -1;
	if (!node)
		node = getenv("ORTMEM_DEVICE");
	if (node && *node) {
		snprintf(dev->node, sizeof(dev->node), "%s", node);
	} else {
		ret = dev_find(dev);
		if (ret)
			goto err;
	}
	dev->fd = open(dev->node, O_RDWR | O_CLOEXEC);
	if (dev->fd < 0) {
		ret = -errno;
		if (ret == -ENOENT || ret == -ENXIO || ret == -ENODEV)
			ret = ortmem__err_plain(-ENODEV, "%s: no such device; load the ortmem module",
						dev->node);
		else if (ret == -EACCES || ret == -EPERM)
			ret = ortmem__err_plain(ret, "%s: permission denied; add the user to group 'ortmem' (see the udev rule)",
						dev->node);
		else
			ret = ortmem__err_plain(ret, "%s: cannot open", dev->node);
		goto err;
	}
	ret = dev_handshake(dev);
	if (ret)
		goto err;
	pr_debug("%s: ABI %u, cap %llu bytes", dev->node, dev->version.abi_version,
		 (unsigned long long)dev->version.max_pinned_bytes);
	*devp = dev;
	return 0;
err:
	ortmem__dev_close(dev);
	return ret;
}

void ortmem__dev_close(struct ortmem__dev *dev)
{
	if (!dev)
		return;
	if (dev->fd >= 0)
		close(dev->fd);
	free(dev);
}

int ortmem__dev_attr(const struct ortmem__dev *dev, const char *name,
		     uint64_t *val)
{
	char path[PATH_MAX + 64];
	unsigned long long v;
	FILE *f;
	int ret = 0;

	if (!dev->syspath[0])
		snprintf(path, sizeof(path), "/sys/class/misc/ortmem/%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dev->syspath, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%llu", &v) == 1)
		*val = v;
	else
		ret = -EIO;
	fclose(f);
	return ret;
}
