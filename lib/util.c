// SPDX-License-Identifier: MIT
/*
 * Small utilities every layer may use: the monotonic clock, and growing an
 * array by doubling.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

uint64_t ortmem__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * ORTMEM_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int ortmem__grow(void **arr, size_t *cap, size_t need, size_t elem,
		 size_t first)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : first;
	if (!ncap)
		ncap = 1;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	p = reallocarray(*arr, ncap, elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}
