/* SPDX-License-Identifier: MIT */
/*
 * The threads this process has now (/proc/self/task), for the planner's
 * tests that check a call joined every helper it started: compare with
 * the count before (a sanitizer may run a thread of its own).  -1 when
 * it cannot be read.
 */
#ifndef SELFTESTS_PLAN_PLAN_THREADS_H
#define SELFTESTS_PLAN_PLAN_THREADS_H

#include <dirent.h>

static inline int threads_of_process(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int k = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		k += e->d_name[0] != '.';
	closedir(d);
	return k;
}

#endif
