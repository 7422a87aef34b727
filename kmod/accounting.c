// SPDX-License-Identifier: GPL-2.0
/*
 * accounting.c - charging pinned pages to RLIMIT_MEMLOCK and the module cap.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "ortmem.h"

/**
 * DOC: Accounting
 *
 * Every page of a region is charged before it is allocated, twice:
 *
 * - to the module-wide cap, ``max_pinned_mb`` (0 means half of RAM); a
 *   request that does not fit gets -ENOSPC;
 * - to the calling user's ``locked_vm``, against the caller's
 *   RLIMIT_MEMLOCK, the way io_uring and RDMA charge their pins; a request
 *   that does not fit gets -ENOMEM.  A caller with CAP_IPC_LOCK is exempt.
 *
 * The region keeps a reference on the charged user, so the charge is given
 * back when the region's pages are freed, even after the process is gone.
 * The pages are also charged to the caller's memory cgroup (__GFP_ACCOUNT).
 */

/* Pages charged to the cap; regions' pages not yet freed; live regions. */
atomic_long_t ortmem_pinned_pages = ATOMIC_LONG_INIT(0);
atomic_long_t ortmem_outstanding_pages = ATOMIC_LONG_INIT(0);
atomic_t ortmem_nr_regions = ATOMIC_INIT(0);

/**
 * ortmem_cap_pages() - The module-wide cap on pinned pages now.
 *
 * Return: max_pinned_mb in pages, or half of RAM when it is 0.
 */
unsigned long ortmem_cap_pages(void)
{
	unsigned int mb = READ_ONCE(max_pinned_mb);

	if (!mb)
		return totalram_pages() / 2;
	return (unsigned long)mb << (20 - PAGE_SHIFT);
}

static int charge_cap(unsigned long nr_pages)
{
	unsigned long cap = ortmem_cap_pages();
	long cur = atomic_long_read(&ortmem_pinned_pages);

	if (ortmem_should_fail(ORTMEM_FAIL_CHARGE_CAP))
		return -ENOSPC;
	do {
		if (nr_pages > cap || cur > cap - nr_pages)
			goto full;
	} while (!atomic_long_try_cmpxchg(&ortmem_pinned_pages, &cur,
					  cur + nr_pages));
	return 0;

full:
	/* A request that could never fit is the caller's business. */
	if (nr_pages <= cap)
		pr_warn_ratelimited("pinning cap of %lu MiB reached (%ld MiB pinned); raise max_pinned_mb to allow more\n",
				    cap >> (20 - PAGE_SHIFT),
				    cur >> (20 - PAGE_SHIFT));
	return -ENOSPC;
}

static int charge_user(struct user_struct *user, unsigned long nr_pages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	long cur = atomic_long_read(&user->locked_vm);

	if (ortmem_should_fail(ORTMEM_FAIL_CHARGE_USER))
		return -ENOMEM;
	do {
		if (nr_pages > limit || cur > limit - nr_pages)
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur,
					  cur + nr_pages));
	return 0;
}

/**
 * ortmem_charge() - Charge pages to the cap and the caller's memlock limit.
 * @nr_pages: pages about to be pinned.
 * @userp: out: the user charged (with a reference), or NULL when exempt.
 *
 * Return: 0, -ENOSPC over the module cap, or -ENOMEM over RLIMIT_MEMLOCK;
 * on error nothing stays charged.
 */
int ortmem_charge(unsigned long nr_pages, struct user_struct **userp)
{
	struct user_struct *user;
	int ret;

	*userp = NULL;
	ret = charge_cap(nr_pages);
	if (ret)
		return ret;
	if (capable(CAP_IPC_LOCK))
		return 0;
	user = get_uid(current_user());
	ret = charge_user(user, nr_pages);
	if (ret) {
		free_uid(user);
		atomic_long_sub(nr_pages, &ortmem_pinned_pages);
		return ret;
	}
	*userp = user;
	return 0;
}

/**
 * ortmem_recharge() - Charge pages again to a region's user (fault-back).
 * @nr_pages: pages about to come back from a spill file.
 * @user: the user the region was charged to (its reference stays), or NULL
 *	when it was exempt.
 *
 * The memlock limit checked is the calling task's, the one touching or
 * restoring the pages (the region's owner, or its io_uring worker).
 *
 * Return: 0, -ENOSPC over the module cap, or -ENOMEM over RLIMIT_MEMLOCK.
 */
int ortmem_recharge(unsigned long nr_pages, struct user_struct *user)
{
	int ret = charge_cap(nr_pages);

	if (ret || !user)
		return ret;
	ret = charge_user(user, nr_pages);
	if (ret)
		atomic_long_sub(nr_pages, &ortmem_pinned_pages);
	return ret;
}

/**
 * ortmem_discharge() - Give back the charge of evicted pages.
 * @nr_pages: pages leaving RAM for their spill extent.
 * @user: the region's user, or NULL; its reference stays with the region.
 */
void ortmem_discharge(unsigned long nr_pages, struct user_struct *user)
{
	if (user)
		atomic_long_sub(nr_pages, &user->locked_vm);
	atomic_long_sub(nr_pages, &ortmem_pinned_pages);
}

/**
 * ortmem_uncharge() - Give back what ortmem_charge() took.
 * @nr_pages: the pages charged.
 * @user: the user ortmem_charge() returned (its reference is dropped), or NULL.
 */
void ortmem_uncharge(unsigned long nr_pages, struct user_struct *user)
{
	if (user) {
		atomic_long_sub(nr_pages, &user->locked_vm);
		free_uid(user);
	}
	atomic_long_sub(nr_pages, &ortmem_pinned_pages);
}
