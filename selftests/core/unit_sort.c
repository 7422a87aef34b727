// SPDX-License-Identifier: MIT
/*
 * ortmem__sort_pairs(): the order the packer's best fit and the closing's
 * searches rely on, on random, repeated, sorted, reversed, equal and
 * organ-pipe inputs, by the first number and by the second then the
 * first, with and without the heap sort that bounds its time.
 */
#include <stdlib.h>

#include "internal.h"
#include "../harness.h"

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int by_both(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return (x[0] > y[0]) - (x[0] < y[0]);
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* In order by the key, and the same pairs as @ref (fully sorted). */
static bool sorted_like(uint64_t (*r)[2], uint64_t (*ref)[2], uint32_t n, bool by_second)
{
	uint32_t i;

	for (i = 1; i < n; i++) {
		if (by_second ? (r[i][1] < r[i - 1][1] ||
				 (r[i][1] == r[i - 1][1] && r[i][0] < r[i - 1][0]))
			      : r[i][0] < r[i - 1][0])
			return false;
	}
	qsort(r, n, sizeof(*r), by_both);
	return !n || !memcmp(r, ref, sizeof(*r) * n);
}

static void fill(uint64_t (*r)[2], uint32_t n, int shape, uint64_t *seed)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t x = rng_next(seed);

		switch (shape) {
		case 0: r[i][0] = x; break;			/* random */
		case 1: r[i][0] = x % 4; break;			/* few keys */
		case 2: r[i][0] = i; break;			/* sorted */
		case 3: r[i][0] = n - i; break;			/* reversed */
		case 4: r[i][0] = 7; break;			/* all equal */
		default: r[i][0] = i % 2 ? i : n + i; break;	/* organ pipe */
		}
		r[i][1] = rng_next(seed) % 16;
	}
}

#define N_MAX 3000
#define NO_LIMIT UINT32_MAX

/* @n pairs of every shape, both keys, sorted with the levels of quicksort
 * @depth allows (NO_LIMIT: the sort as the library calls it). */
static bool sorts_every_shape(uint32_t n, uint32_t depth, uint64_t *seed)
{
	static uint64_t r[N_MAX][2], ref[N_MAX][2];
	bool ok = true;

	for (int shape = 0; shape < 6; shape++) {
		for (int way = 0; way < 2; way++) {
			fill(r, n, shape, seed);
			memcpy(ref, r, sizeof(r[0]) * n);
			qsort(ref, n, sizeof(ref[0]), by_both);
			if (depth == NO_LIMIT)
				ortmem__sort_pairs(r, n, way);
			else
				ortmem__sort_pairs_limited(r, n, way, depth);
			ok &= sorted_like(r, ref, n, way);
		}
	}
	return ok;
}

TEST(pairs_come_out_sorted_on_every_shape)
{
	static const uint32_t sizes[] = { 0, 1, 2, 15, 16, 17, 24, 100, 1000, N_MAX };
	uint64_t seed = 0x2545f4914f6cdd1dull;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		EXPECT_TRUE(sorts_every_shape(sizes[k], NO_LIMIT, &seed));
}

/* Past its depth limit the sort heap sorts what is left: the bound on
 * its time whatever the input.  Every limit from none on. */
TEST(the_heap_sort_past_the_depth_limit_sorts_too)
{
	static const uint32_t sizes[] = { 2, 17, 33, 1000 };
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (uint32_t depth = 0; depth < 4; depth++)
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			EXPECT_TRUE(sorts_every_shape(sizes[k], depth, &seed));
}

TEST_HARNESS_MAIN
