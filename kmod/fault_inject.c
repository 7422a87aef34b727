// SPDX-License-Identifier: GPL-2.0
/*
 * fault_inject.c - debug builds only: fail the Nth call of a chosen point.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "ortmem.h"

/**
 * DOC: Fault injection
 *
 * A module built with ``ORTMEM_DEBUG=1`` (``make -C kmod ORTMEM_DEBUG=1``;
 * the VM bench builds it so) has injection points on every path that can
 * fail, and ``/sys/kernel/debug/ortmem/fail`` (root only) to trigger them.
 * Debian's kernel has no ``CONFIG_FAULT_INJECTION``, so the module counts
 * calls itself.  Writing ``POINT N`` arms one failure: the Nth call of
 * ``POINT`` made by the writing process (any thread of it) after the write
 * fails, once; calls from other processes are neither counted nor failed.
 * Writing ``off`` disarms.  Reading gives ``POINT N CALLS FAILED``: the
 * armed point (``off`` when none), N, the calls counted since the write and
 * how many failed (0 or 1).  ``/sys/kernel/debug/ortmem/points`` lists the
 * points, one a line, with the error each one simulates:
 *
 * - ``region``: allocating the region's bookkeeping (-ENOMEM);
 * - ``charge_cap``: charging the module cap (-ENOSPC);
 * - ``charge_user``: charging RLIMIT_MEMLOCK; only callers without
 *   CAP_IPC_LOCK reach it (-ENOMEM);
 * - ``page_array``: allocating the region's page array (-ENOMEM);
 * - ``page``: allocating one page, called once per page (-ENOMEM);
 * - ``handle``: reserving the handle in the file's xarray (-ENOMEM);
 * - ``fault``: faulting one page of a mapping in, called once per fault
 *   (SIGBUS on a touch by the process; a system call that pins the page,
 *   as O_DIRECT, vmsplice and io_uring do, fails with -EFAULT: the pinning
 *   does not retry a fault that gave VM_FAULT_SIGBUS);
 * - ``spill_state``: allocating a region's spill state at its first bind
 *   (-ENOMEM);
 * - ``spill_read``: reading pages back from a spill file, once per read
 *   (SIGBUS on a fault-back, -EIO from a restore; counted as a read
 *   failure).
 *
 * A production build (``make kmod``) has neither the points nor the files.
 */

static const char *const point_names[ORTMEM_FAIL_NR] = {
	[ORTMEM_FAIL_REGION] = "region",
	[ORTMEM_FAIL_CHARGE_CAP] = "charge_cap",
	[ORTMEM_FAIL_CHARGE_USER] = "charge_user",
	[ORTMEM_FAIL_PAGE_ARRAY] = "page_array",
	[ORTMEM_FAIL_PAGE] = "page",
	[ORTMEM_FAIL_HANDLE] = "handle",
	[ORTMEM_FAIL_FAULT] = "fault",
	[ORTMEM_FAIL_SPILL_STATE] = "spill_state",
	[ORTMEM_FAIL_SPILL_READ] = "spill_read",
};

static const char *const point_errors[ORTMEM_FAIL_NR] = {
	[ORTMEM_FAIL_REGION] = "ENOMEM",
	[ORTMEM_FAIL_CHARGE_CAP] = "ENOSPC",
	[ORTMEM_FAIL_CHARGE_USER] = "ENOMEM",
	[ORTMEM_FAIL_PAGE_ARRAY] = "ENOMEM",
	[ORTMEM_FAIL_PAGE] = "ENOMEM",
	[ORTMEM_FAIL_HANDLE] = "ENOMEM",
	[ORTMEM_FAIL_FAULT] = "SIGBUS",
	[ORTMEM_FAIL_SPILL_STATE] = "ENOMEM",
	[ORTMEM_FAIL_SPILL_READ] = "EIO",
};

/* The armed failure; @point is ORTMEM_FAIL_NR when disarmed. */
static struct {
	spinlock_t lock;	/* protects all below */
	int point;
	unsigned long nth;
	unsigned long calls;
	unsigned long failed;
	struct pid *tgid;
} fi = {
	.lock = __SPIN_LOCK_UNLOCKED(fi.lock),
	.point = ORTMEM_FAIL_NR,
};

static struct dentry *fi_dir;

/**
 * ortmem_should_fail() - Whether this call of an injection point must fail.
 * @point: the point, an %ORTMEM_FAIL_* value.
 *
 * Return: true on the armed call of the armed point in the arming process.
 */
bool ortmem_should_fail(enum ortmem_fail_point point)
{
	unsigned long nth = 0;
	bool fail = false;

	if (likely(READ_ONCE(fi.point) != point))
		return false;
	spin_lock(&fi.lock);
	if (fi.point == point && fi.tgid == task_tgid(current)) {
		fi.calls++;
		if (fi.calls == fi.nth) {
			fi.failed++;
			nth = fi.nth;
			fail = true;
		}
	}
	spin_unlock(&fi.lock);
	if (fail)
		pr_debug("injected a failure of %s, call %lu\n",
			 point_names[point], nth);
	return fail;
}

static void fi_arm(int point, unsigned long nth)
{
	struct pid *old, *new = NULL;

	if (point != ORTMEM_FAIL_NR)
		new = get_pid(task_tgid(current));
	spin_lock(&fi.lock);
	old = fi.tgid;
	fi.tgid = new;
	fi.nth = nth;
	fi.calls = 0;
	fi.failed = 0;
	WRITE_ONCE(fi.point, point);
	spin_unlock(&fi.lock);
	put_pid(old);
}

static int fail_show(struct seq_file *m, void *v)
{
	spin_lock(&fi.lock);
	seq_printf(m, "%s %lu %lu %lu\n",
		   fi.point == ORTMEM_FAIL_NR ? "off" : point_names[fi.point],
		   fi.nth, fi.calls, fi.failed);
	spin_unlock(&fi.lock);
	return 0;
}

static int fail_open(struct inode *inode, struct file *filp)
{
	return single_open(filp, fail_show, NULL);
}

static ssize_t fail_write(struct file *filp, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	char buf[32], *s, *name;
	unsigned long nth;
	int point;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	s = strim(buf);
	if (!strcmp(s, "off")) {
		fi_arm(ORTMEM_FAIL_NR, 0);
		return len;
	}
	name = strsep(&s, " ");
	if (!s || kstrtoul(skip_spaces(s), 10, &nth) || !nth)
		return -EINVAL;
	point = match_string(point_names, ORTMEM_FAIL_NR, name);
	if (point < 0)
		return -EINVAL;
	fi_arm(point, nth);
	return len;
}

static const struct file_operations fail_fops = {
	.owner = THIS_MODULE,
	.open = fail_open,
	.read = seq_read,
	.write = fail_write,
	.llseek = seq_lseek,
	.release = single_release,
};

static int points_show(struct seq_file *m, void *v)
{
	int i;

	for (i = 0; i < ORTMEM_FAIL_NR; i++)
		seq_printf(m, "%s %s\n", point_names[i], point_errors[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(points);

/**
 * ortmem_fault_inject_init() - Create /sys/kernel/debug/ortmem/.
 *
 * Failures are not fatal: the module works without its debugfs files.
 */
void ortmem_fault_inject_init(void)
{
	fi_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("fail", 0600, fi_dir, NULL, &fail_fops);
	debugfs_create_file("points", 0400, fi_dir, NULL, &points_fops);
	pr_info("fault injection compiled in (debug build)\n");
}

/**
 * ortmem_fault_inject_exit() - Remove the files and disarm.
 */
void ortmem_fault_inject_exit(void)
{
	debugfs_remove(fi_dir);
	fi_arm(ORTMEM_FAIL_NR, 0);
}
