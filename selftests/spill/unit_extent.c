// SPDX-License-Identifier: MIT
/*
 * The extent allocator: first fit, coalescing, refusal of double and
 * out-of-range frees, and a long random run of allocations and frees
 * checked against an independent bitmap of the space.
 */
#include "spill/spill_internal.h"
#include "../harness.h"

#define UNITS 4096

/* Independent model: one byte per unit, 1 = allocated. */
struct model {
	uint8_t used[UNITS];
};

static int model_mark(struct model *m, uint64_t off, uint64_t len, uint8_t v)
{
	uint64_t i;

	for (i = off; i < off + len; i++) {
		if (i >= UNITS || m->used[i] == v)
			return -1;
		m->used[i] = v;
	}
	return 0;
}

TEST(first_fit_and_coalescing)
{
	struct ortmem__ealloc a;
	uint64_t x, y, z;

	ortmem__ealloc_init(&a);
	EXPECT_EQ(-ENOSPC, ortmem__ealloc_get(&a, 1, &x));
	ASSERT_EQ(0, ortmem__ealloc_grow(&a, 100));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 10, &x));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 20, &y));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 30, &z));
	EXPECT_EQ(0, x);
	EXPECT_EQ(10, y);
	EXPECT_EQ(30, z);
	EXPECT_EQ(60, a.used);
	EXPECT_EQ(40, ortmem__ealloc_tail_free(&a));
	ASSERT_EQ(0, ortmem__ealloc_put(&a, x, 10));
	ASSERT_EQ(0, ortmem__ealloc_put(&a, z, 30));
	EXPECT_EQ(2, a.nfree);
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 5, &x));
	EXPECT_EQ(0, x);
	ASSERT_EQ(0, ortmem__ealloc_put(&a, 0, 5));
	ASSERT_EQ(0, ortmem__ealloc_put(&a, y, 20));
	EXPECT_EQ(1, a.nfree);
	EXPECT_EQ(100, ortmem__ealloc_largest(&a));
	EXPECT_EQ(0, a.used);
	ortmem__ealloc_fini(&a);
}

TEST(grow_merges_with_free_tail)
{
	struct ortmem__ealloc a;
	uint64_t x;

	ortmem__ealloc_init(&a);
	ASSERT_EQ(0, ortmem__ealloc_grow(&a, 64));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 60, &x));
	ASSERT_EQ(0, ortmem__ealloc_grow(&a, 128));
	EXPECT_EQ(1, a.nfree);
	EXPECT_EQ(68, ortmem__ealloc_largest(&a));
	EXPECT_EQ(-EINVAL, ortmem__ealloc_grow(&a, 100));
	ortmem__ealloc_fini(&a);
}

TEST(hostile_frees_are_refused)
{
	struct ortmem__ealloc a;
	uint64_t x, y;

	ortmem__ealloc_init(&a);
	ASSERT_EQ(0, ortmem__ealloc_grow(&a, 100));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 10, &x));
	ASSERT_EQ(0, ortmem__ealloc_get(&a, 10, &y));
	ASSERT_EQ(0, ortmem__ealloc_put(&a, x, 10));
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, x, 10));	/* double */
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, y - 5, 10));	/* overlaps free */
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, y, 20));	/* runs into free */
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, 95, 10));	/* past the end */
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, UINT64_MAX - 2, 10));
	EXPECT_EQ(-EINVAL, ortmem__ealloc_put(&a, y, 0));
	EXPECT_EQ(-EINVAL, ortmem__ealloc_get(&a, 0, &x));
	EXPECT_EQ(10, a.used);
	ortmem__ealloc_fini(&a);
}

TEST(random_alloc_free_never_overlaps)
{
	struct ortmem__ealloc a;
	static struct model m;
	static uint64_t offs[UNITS], lens[UNITS];
	unsigned int seed = 12345, live = 0, i, step;
	uint64_t off, len, free_sum;

	ortmem__ealloc_init(&a);
	ASSERT_EQ(0, ortmem__ealloc_grow(&a, UNITS / 2));
	for (step = 0; step < 200000; step++) {
		if (live && (rand_r(&seed) % 2 || live == UNITS)) {
			i = rand_r(&seed) % live;
			ASSERT_EQ(0, ortmem__ealloc_put(&a, offs[i], lens[i]));
			ASSERT_EQ(0, model_mark(&m, offs[i], lens[i], 0));
			offs[i] = offs[--live];
			lens[i] = lens[live];
			continue;
		}
		len = 1 + rand_r(&seed) % (rand_r(&seed) % 8 ? 8 : 200);
		if (ortmem__ealloc_get(&a, len, &off)) {
			ASSERT_LT(ortmem__ealloc_largest(&a), len);
			if (a.size < UNITS)
				ASSERT_EQ(0, ortmem__ealloc_grow(&a, a.size + 64 > UNITS ? UNITS : a.size + 64));
			continue;
		}
		ASSERT_EQ(0, model_mark(&m, off, len, 1));
		offs[live] = off;
		lens[live++] = len;
	}
	/* The free list is sorted, never adjacent, and sums to what is free. */
	free_sum = 0;
	for (i = 0; i < a.nfree; i++) {
		free_sum += a.free[i].len;
		if (i)
			ASSERT_LT(a.free[i - 1].off + a.free[i - 1].len, a.free[i].off);
		for (off = a.free[i].off; off < a.free[i].off + a.free[i].len; off++)
			ASSERT_EQ(0, m.used[off]);
	}
	ASSERT_EQ(a.size - a.used, free_sum);
	while (live) {
		live--;
		ASSERT_EQ(0, ortmem__ealloc_put(&a, offs[live], lens[live]));
	}
	EXPECT_EQ(1, a.nfree);
	EXPECT_EQ(0, a.used);
	ortmem__ealloc_fini(&a);
}

TEST_HARNESS_MAIN
