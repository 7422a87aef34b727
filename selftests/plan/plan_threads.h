/* SPDX-License-Identifier: MIT */
/*
 * The threads this process has now (/proc/self/task), for the planner's
 * tests that check a call joined every helper it started: take the count
 * before with threads_at_rest() and compare after with threads_back_to().
 * -1 when it cannot be read.
 */
#ifndef SELFTESTS_PLAN_PLAN_THREADS_H
#define SELFTESTS_PLAN_PLAN_THREADS_H

#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

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

static void *plan_threads_idle(void *arg)
{
	return arg;
}

/*
 * The count before a call that starts threads.  ThreadSanitizer starts
 * a thread of its own at the process's first pthread_create(), so one
 * thread is started and joined first: a count taken before that would
 * be one short of any count taken after.
 */
static inline int threads_at_rest(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, plan_threads_idle, NULL) == 0)
		pthread_join(t, NULL);
	return threads_of_process();
}

/*
 * The count after a call that joined its threads, waiting up to a
 * second for it to come down to @want: pthread_join() returns when the
 * kernel clears the thread's id, a moment before its task leaves
 * /proc/self/task.  A thread still running (not joined) stays counted.
 */
static inline int threads_back_to(int want)
{
	int k = threads_of_process();

	for (int i = 0; i < 1000 && k > want && want >= 0; i++) {
		usleep(1000);
		k = threads_of_process();
	}
	return k;
}

#endif
