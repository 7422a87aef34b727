// SPDX-License-Identifier: MIT
/*
 * Small utilities every layer may use: the monotonic clock, growing an
 * array by doubling, and sorting pairs of 64-bit numbers.
 */
#include <errno.h>
#include <stdbool.h>
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

static inline bool pairs_before(const uint64_t *a, const uint64_t *b, bool by_second)
{
	if (by_second && a[1] != b[1])
		return a[1] < b[1];
	return a[0] < b[0];
}

static inline void pairs_swap(uint64_t *a, uint64_t *b)
{
	uint64_t t0 = a[0], t1 = a[1];

	a[0] = b[0];
	a[1] = b[1];
	b[0] = t0;
	b[1] = t1;
}

/* Sift @r[i] down the max-heap @r[0, n). */
static void pairs_sift(uint64_t (*r)[2], uint32_t i, uint32_t n, bool by_second)
{
	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			return;
		if (c + 1 < n && pairs_before(r[c], r[c + 1], by_second))
			c++;
		if (!pairs_before(r[i], r[c], by_second))
			return;
		pairs_swap(r[i], r[c]);
		i = c;
	}
}

static void pairs_heapsort(uint64_t (*r)[2], uint32_t n, bool by_second)
{
	uint32_t i;

	for (i = n / 2; i-- > 0;)
		pairs_sift(r, i, n, by_second);
	for (i = n; i-- > 1;) {
		pairs_swap(r[0], r[i]);
		pairs_sift(r, 0, i, by_second);
	}
}

static void pairs_sort(uint64_t (*r)[2], uint32_t d, bool by_second, uint32_t depth)
{
	uint32_t lo = 0, hi = d, i, j, m;

	while (hi - lo > 16) {
		/* median of three can be led into n^2 by crafted input: past
		 * 2 log2 d levels the rest is heap sorted */
		if (!depth--) {
			pairs_heapsort(r + lo, hi - lo, by_second);
			return;
		}
		m = lo + (hi - lo) / 2;
		if (pairs_before(r[m], r[lo], by_second))
			pairs_swap(r[m], r[lo]);
		if (pairs_before(r[hi - 1], r[lo], by_second))
			pairs_swap(r[hi - 1], r[lo]);
		if (pairs_before(r[hi - 1], r[m], by_second))
			pairs_swap(r[hi - 1], r[m]);
		pairs_swap(r[m], r[hi - 2]);	/* the pivot, out of the way */
		for (i = lo, j = hi - 2;;) {
			while (pairs_before(r[++i], r[hi - 2], by_second))
				;
			while (pairs_before(r[hi - 2], r[--j], by_second))
				;
			if (i >= j)
				break;
			pairs_swap(r[i], r[j]);
		}
		pairs_swap(r[i], r[hi - 2]);
		if (i - lo < hi - i - 1) {
			pairs_sort(r + lo, i - lo, by_second, depth);
			lo = i + 1;
		} else {
			pairs_sort(r + i + 1, hi - i - 1, by_second, depth);
			hi = i;
		}
	}
	for (i = lo + 1; i < hi; i++)
		for (j = i; j > lo && pairs_before(r[j], r[j - 1], by_second); j--)
			pairs_swap(r[j], r[j - 1]);
}

void ortmem__sort_pairs_limited(uint64_t (*r)[2], uint32_t d, bool by_second,
				uint32_t depth)
{
	pairs_sort(r, d, by_second, depth);
}

void ortmem__sort_pairs(uint64_t (*r)[2], uint32_t d, bool by_second)
{
	uint32_t depth = 0;

	for (uint32_t x = d; x > 1; x >>= 1)
		depth += 2;
	pairs_sort(r, d, by_second, depth);
}
