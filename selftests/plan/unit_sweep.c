// SPDX-License-Identifier: MIT
/*
 * The sweeps in start order that make a dense instance's first plan
 * (lib/pack/pack_first.c): best fit, checked item by item against best fit
 * over the conflict lists; by ends, checked for the seat it picks, for
 * disjoint packings, and for an order the searches can start from.
 */
#include <stdlib.h>
#include <string.h>

#include "pack/pack_internal.h"
#include "plan/plan_internal.h"
#include "../harness.h"

#include "plan_test.h"

/* Random items, from sparse to every item live at once, with ties of
 * times and of hole lengths, and some empty ones. */
static struct pk_item *random_items(uint32_t n, uint64_t *seed)
{
	uint64_t span = 1 + rnd(seed) % 200;
	struct pk_item *it = calloc(n, sizeof(*it));

	for (uint32_t i = 0; it && i < n; i++) {
		it[i].lo = rnd(seed) % span;
		it[i].hi = it[i].lo + rnd(seed) % (span / 2 + 2);
		it[i].size = (rnd(seed) % 9 == 0) ? 0 : 64 * (1 + rnd(seed) % 6);
	}
	return it;
}

/* A fresh packer over @it, its scratch allocated, no deadline. */
static int fresh_packer(struct packer *pk, const struct pk_item *it, uint32_t n)
{
	*pk = (struct packer){ .n = n, .it = it, .opts = { .deadline_ns = UINT64_MAX } };
	pk->best_h = UINT64_MAX;
	return ortmem__pk_alloc(pk);
}

/* A fresh packer over @it swept with @holes; a copy of its offsets, or
 * NULL when something failed. */
static uint64_t *swept(struct packer *pk, const struct pk_item *it, uint32_t n, uint32_t holes)
{
	uint64_t *off;

	if (!it || fresh_packer(pk, it, n) || ortmem__pk_sweep(pk, holes))
		return NULL;
	off = malloc(sizeof(*off) * n);
	if (off)
		memcpy(off, pk->best_off, sizeof(*off) * n);
	return off;
}

/*
 * The sweep by best fit is best fit in start order: the same offsets, item
 * by item, as placing the same order over the conflict lists.
 */
TEST(sweep_by_best_fit_is_best_fit_in_start_order)
{
	uint64_t seed = 4711;

	for (int round = 0; round < 300; round++) {
		uint32_t n = 1 + (uint32_t)(rnd(&seed) % 400), i, *order;
		struct pk_item *it = random_items(n, &seed);
		struct packer pk;
		uint64_t *want = swept(&pk, it, n, PK_SWEEP_BEST_FIT);

		ASSERT_NE(NULL, want);
		order = malloc(sizeof(*order) * n);
		ASSERT_NE(NULL, order);
		memcpy(order, pk.best_order, sizeof(*order) * n);
		/* The order it kept, placed again over the conflict lists,
		 * whose build leaves the best packing alone. */
		ASSERT_EQ(0, ortmem__pk_build_conflicts(&pk, false));
		EXPECT_EQ(0, memcmp(order, pk.best_order, sizeof(*order) * n));
		EXPECT_EQ(0, memcmp(want, pk.best_off, sizeof(*want) * n));
		memcpy(pk.order, order, sizeof(*pk.order) * n);
		EXPECT_EQ(pk.best_h, ortmem__pk_place_from(&pk, 0));
		for (i = 0; i < n; i++)
			if (ortmem__pk_live(&it[i]))
				EXPECT_EQ(want[i], pk.off[i]);
		EXPECT_EQ(0, ortmem__plan_check_disjoint(it, want, n, NULL, NULL));
		free(want);
		free(order);
		ortmem__pk_free(&pk);
		free(it);
	}
}

/*
 * Two free ranges of one unit each when item 6 starts: [1, 2) between
 * items 0 and 2, which end at 100, and [3, 4) below item 4, which ends at
 * 60 with item 6.  Best fit takes the lowest, and item 8 the other; by
 * ends item 6 takes the one beside the neighbour that leaves with it, and
 * item 8 (to 100) the one between the items that end at 100.  Item 7 (two
 * units, from 60 on) then takes the range items 4 and 6 leave together,
 * where after best fit two ranges of one unit are left and it goes on top.
 */
TEST(sweep_by_ends_seats_beside_the_neighbour_that_ends_with_it)
{
	const struct pk_item it[] = {
		{ 0, 100, 1 }, { 0, 10, 1 }, { 0, 100, 1 }, { 0, 10, 1 },
		{ 0, 60, 1 }, { 0, 100, 1 }, { 20, 60, 1 }, { 60, 100, 2 },
		{ 25, 100, 1 },
	};
	/* per sweep: the offsets of items 6, 8 and 7, and the height */
	const struct { uint32_t holes; uint64_t off6, off8, off7, h; } want[] = {
		{ PK_SWEEP_BEST_FIT, 1, 3, 6, 8 },
		{ PK_SWEEP_BY_ENDS, 3, 1, 3, 6 },
	};
	const uint32_t n = sizeof(it) / sizeof(it[0]);

	for (int w = 0; w < 2; w++) {
		struct packer pk;
		uint64_t *off = swept(&pk, it, n, want[w].holes);

		ASSERT_NE(NULL, off);
		EXPECT_EQ(want[w].off6, off[6]);
		EXPECT_EQ(want[w].off8, off[8]);
		EXPECT_EQ(want[w].off7, off[7]);
		EXPECT_EQ(want[w].h, pk.best_h);
		EXPECT_EQ(0, ortmem__plan_check_disjoint(it, off, n, NULL, NULL));
		free(off);
		ortmem__pk_free(&pk);
	}
}

/*
 * The sweep by ends packs disjoint, and keeps its offset order: placed
 * again by best fit over the conflict lists in that order, no item rises,
 * so the searches that start from the best order start no higher.
 */
TEST(sweep_by_ends_is_disjoint_and_its_order_raises_no_item)
{
	uint64_t seed = 815;

	for (int round = 0; round < 300; round++) {
		uint32_t n = 1 + (uint32_t)(rnd(&seed) % 400), i;
		struct pk_item *it = random_items(n, &seed);
		struct packer pk;
		uint64_t *want = swept(&pk, it, n, PK_SWEEP_BY_ENDS);

		ASSERT_NE(NULL, want);
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, want, n, NULL, NULL));
		for (i = 0; i < n; i++)
			if (ortmem__pk_live(&it[i]))
				EXPECT_LE(want[i] + it[i].size, pk.best_h);
		ASSERT_EQ(0, ortmem__pk_build_conflicts(&pk, false));
		memcpy(pk.order, pk.best_order, sizeof(*pk.order) * n);
		EXPECT_LE(ortmem__pk_place_from(&pk, 0), pk.best_h);
		for (i = 0; i < n; i++)
			if (ortmem__pk_live(&it[i]))
				EXPECT_LE(pk.off[i], want[i]);
		free(want);
		ortmem__pk_free(&pk);
		free(it);
	}
}

/*
 * The first plan keeps the lowest sweep, with its order: by ends first,
 * best fit second (so two iterations give the lower of those two), then
 * others while time is left (none lower than the lowest of those two
 * kept); by ends alone under an iteration limit of one.
 */
TEST(first_plan_keeps_the_lowest_sweep)
{
	uint64_t seed = 99;

	for (int round = 0; round < 100; round++) {
		uint32_t n = 1 + (uint32_t)(rnd(&seed) % 400);
		struct pk_item *it = random_items(n, &seed);
		struct packer pk;
		uint64_t fit, ends;

		ASSERT_NE(NULL, it);
		ASSERT_EQ(0, fresh_packer(&pk, it, n));
		ASSERT_EQ(0, ortmem__pk_sweep(&pk, PK_SWEEP_BEST_FIT));
		fit = pk.best_h;
		ortmem__pk_free(&pk);
		ASSERT_EQ(0, fresh_packer(&pk, it, n));
		ASSERT_EQ(0, ortmem__pk_sweep(&pk, PK_SWEEP_BY_ENDS));
		ends = pk.best_h;
		ortmem__pk_free(&pk);

		ASSERT_EQ(0, fresh_packer(&pk, it, n));
		ASSERT_EQ(0, ortmem__pk_first_plan(&pk));
		EXPECT_LE(pk.best_h, fit < ends ? fit : ends);
		EXPECT_LT(2, pk.iters);
		/* the order kept is the kept packing's, whichever it is */
		ASSERT_EQ(0, ortmem__pk_build_conflicts(&pk, false));
		memcpy(pk.order, pk.best_order, sizeof(*pk.order) * n);
		EXPECT_LE(ortmem__pk_place_from(&pk, 0), pk.best_h);
		ortmem__pk_free(&pk);

		for (uint64_t limit = 1; limit <= 2; limit++) {
			ASSERT_EQ(0, fresh_packer(&pk, it, n));
			pk.opts.max_iter = limit;
			ASSERT_EQ(0, ortmem__pk_first_plan(&pk));
			EXPECT_EQ(limit == 1 || ends < fit ? ends : fit, pk.best_h);
			EXPECT_EQ(limit, pk.iters);
			ortmem__pk_free(&pk);
		}
		free(it);
	}
}

TEST_HARNESS_MAIN
