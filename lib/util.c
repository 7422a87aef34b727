// SPDX-License-Identifier: MIT
/*
 * Small utilities every layer may use: the monotonic clock.
 */
#include <time.h>

#include "internal.h"

uint64_t ortmem__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
