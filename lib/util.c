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

/* Below this many pairs a run is insertion sorted. */
#define PAIRS_INSERTION 16

static inline __attribute__((always_inline)) bool
pairs_before(const uint64_t *a, const uint64_t *b, bool by_second)
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

/* Insertion sort of @r[lo, hi), shifting rather than swapping. */
static inline __attribute__((always_inline)) void
pairs_insertion(uint64_t (*r)[2], uint32_t lo, uint32_t hi, bool by_second)
{
	for (uint32_t i = lo + 1; i < hi; i++) {
		uint64_t t[2] = { r[i][0], r[i][1] };
		uint32_t j = i;

		for (; j > lo && pairs_before(t, r[j - 1], by_second); j--) {
			r[j][0] = r[j - 1][0];
			r[j][1] = r[j - 1][1];
		}
		r[j][0] = t[0];
		r[j][1] = t[1];
	}
}

/*
 * Partition @r[lo, hi - 1) around the pivot at @r[hi - 1]: those before it
 * (with @eq, those not after it) first; where they end.  No branch on the
 * comparison: on ranges in random order a branch is mispredicted half the
 * time, which made the sort twice as slow.
 */
static inline __attribute__((always_inline)) uint32_t
pairs_partition(uint64_t (*r)[2], uint32_t lo, uint32_t hi, bool by_second, bool eq)
{
	const uint64_t p[2] = { r[hi - 1][0], r[hi - 1][1] };
	uint32_t i, lt = lo;

	for (i = lo; i < hi - 1; i++) {
		uint64_t x[2] = { r[i][0], r[i][1] };
		bool left = eq ? !pairs_before(p, x, by_second) : pairs_before(x, p, by_second);

		r[i][0] = r[lt][0];
		r[i][1] = r[lt][1];
		r[lt][0] = x[0];
		r[lt][1] = x[1];
		lt += left;
	}
	return lt;
}

/*
 * Quicksort (Lomuto's partition, the median of three, the smaller side
 * first), its body inlined once per key so that the key's test leaves the
 * inner loops.  Where nothing is before the pivot, the pairs equal to it
 * are set aside in one more pass, so that many equal keys cost O(d).
 */
static inline __attribute__((always_inline)) void
pairs_sort_body(uint64_t (*r)[2], uint32_t d, bool by_second, uint32_t depth,
		void (*self)(uint64_t (*)[2], uint32_t, uint32_t))
{
	uint32_t lo = 0, hi = d, i, m;

	while (hi - lo > PAIRS_INSERTION) {
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
		pairs_swap(r[m], r[hi - 1]);	/* the pivot, at the end */
		i = pairs_partition(r, lo, hi, by_second, false);
		if (i == lo) {
			/* all at or after the pivot: those equal to it are done */
			lo = pairs_partition(r, lo, hi, by_second, true);
			pairs_swap(r[lo], r[hi - 1]);
			lo++;
			continue;
		}
		pairs_swap(r[i], r[hi - 1]);
		if (i - lo < hi - i - 1) {
			self(r + lo, i - lo, depth);
			lo = i + 1;
		} else {
			self(r + i + 1, hi - i - 1, depth);
			hi = i;
		}
	}
	pairs_insertion(r, lo, hi, by_second);
}

static void pairs_sort_first(uint64_t (*r)[2], uint32_t d, uint32_t depth)
{
	pairs_sort_body(r, d, false, depth, pairs_sort_first);
}

static void pairs_sort_second(uint64_t (*r)[2], uint32_t d, uint32_t depth)
{
	pairs_sort_body(r, d, true, depth, pairs_sort_second);
}

static void pairs_sort(uint64_t (*r)[2], uint32_t d, bool by_second, uint32_t depth)
{
	if (by_second)
		pairs_sort_second(r, d, depth);
	else
		pairs_sort_first(r, d, depth);
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
