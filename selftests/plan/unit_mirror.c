// SPDX-License-Identifier: MIT
/*
 * Time turned around for a helper racer (pack_mirror.c): made only when
 * the most crowded step lies in the later half, the same pairs conflict,
 * and the race with a helper on it returns valid packings.
 */
#include <stdlib.h>

#include "pack/pack_internal.h"
#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_PACK
#include "plan_test.h"

static bool overlap_in_time(const struct pk_item *a, const struct pk_item *b)
{
	return a->lo < b->hi && b->lo < a->hi;
}

/* The first step (from the left) where the most bytes are live, by brute
 * force over the starts. */
static uint64_t peak_step(const struct pk_item *it, uint32_t n)
{
	uint64_t best = 0, at = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t live = 0;

		for (uint32_t j = 0; j < n; j++)
			if (it[j].size && it[j].lo <= it[i].lo && it[i].lo < it[j].hi)
				live += it[j].size;
		if (live > best || (live == best && it[i].lo < at)) {
			best = live;
			at = it[i].lo;
		}
	}
	return at;
}

/*
 * Random instances, skewed to crowd early or late: the mirror is made
 * exactly when the peak lies in the later half, it keeps every size and
 * length, and two items conflict in it exactly when they do in the
 * instance (so a packing of one is a packing of the other).
 */
TEST(mirror_only_when_the_peak_is_late_and_keeps_every_conflict)
{
	uint64_t seed = 31;
	int made = 0, not_made = 0;

	for (int round = 0; round < 400; round++) {
		uint32_t n = 2 + (uint32_t)(rnd(&seed) % 40);
		struct pk_item *it = calloc(n, sizeof(*it)), *m;
		struct packer pk = { .n = n };
		uint64_t lo = UINT64_MAX, hi = 0, peak;
		bool late;

		ASSERT_NE(NULL, it);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t start = rnd(&seed) % 50;

			/* half the rounds crowd the start of time */
			if (round & 1)
				start = start * start / 50;
			it[i].lo = start;
			it[i].hi = start + 1 + rnd(&seed) % 20;
			it[i].size = 1 + rnd(&seed) % 9;
			lo = it[i].lo < lo ? it[i].lo : lo;
			hi = it[i].hi > hi ? it[i].hi : hi;
		}
		pk.it = it;
		peak = peak_step(it, n);
		late = peak - lo > (hi - lo) / 2;
		m = ortmem__pk_mirror(&pk);
		ASSERT_EQ(late, m != NULL);
		made += late;
		not_made += !late;
		for (uint32_t i = 0; m && i < n; i++) {
			ASSERT_EQ(it[i].size, m[i].size);
			ASSERT_EQ(it[i].hi - it[i].lo, m[i].hi - m[i].lo);
			for (uint32_t j = 0; j < n; j++)
				ASSERT_EQ(overlap_in_time(&it[i], &it[j]),
					  overlap_in_time(&m[i], &m[j]));
		}
		free(m);
		free(it);
	}
	/* both cases were seen */
	EXPECT_LT(20, made);
	EXPECT_LT(20, not_made);
}

/*
 * A rectangle of 256 steps by 256 bytes cut at random into about @n - 1
 * pieces (a piece of time by a range of bytes; only its size matters), and
 * one byte more live over [192, 194): an instance whose optimum is its
 * bound (the pieces tile the rectangle, the byte goes on top), hard to
 * find, and whose most crowded step lies late.
 */
static uint32_t cut_late(struct pk_item *it, uint32_t n, uint64_t *seed)
{
	uint32_t m = 1;

	it[0] = (struct pk_item){ 0, 256, 256 };
	for (uint32_t tries = 0; m + 1 < n && tries < 20 * n; tries++) {
		struct pk_item *p = &it[rnd(seed) % m];
		uint64_t len = p->hi - p->lo, c;

		if (rnd(seed) & 1) {
			if (len < 2)
				continue;
			c = p->lo + 1 + rnd(seed) % (len - 1);
			it[m++] = (struct pk_item){ c, p->hi, p->size };
			p->hi = c;
		} else {
			if (p->size < 2)
				continue;
			c = 1 + rnd(seed) % (p->size - 1);
			it[m++] = (struct pk_item){ p->lo, p->hi, p->size - c };
			p->size = c;
		}
	}
	it[m++] = (struct pk_item){ 192, 194, 1 };
	return m;
}

/*
 * The whole packer with helpers, on hard instances crowded late (so a
 * helper races on the mirror): every packing is disjoint in the
 * instance's own time, at or above the bound, and optimal only at the
 * bound; and the race does run on many of them.
 */
TEST_TIMEOUT(race_with_a_mirrored_helper_packs_the_instance, 120)
{
	uint64_t seed = 77;
	int raced = 0;

	for (int round = 0; round < 40; round++) {
		struct pk_item *it = calloc(160, sizeof(*it)), *m;
		uint64_t *off = calloc(160, sizeof(*off));
		struct pk_opts o = { .deadline_ns = ortmem__now_ns() + 20000000,
				     .seed = 1 + round, .threads = 2 + round % 3 };
		struct pk_result res = { 0 };
		struct packer pk = { 0 };
		uint32_t n;

		ASSERT_TRUE(it && off);
		n = cut_late(it, 160, &seed);
		ASSERT_EQ(257, ortmem__pk_lower_bound(it, n));
		pk.n = n;
		pk.it = it;
		m = ortmem__pk_mirror(&pk);
		ASSERT_EQ(0, ortmem__pack(it, n, &o, off, &res));
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, off, n, NULL, NULL));
		ASSERT_LE(res.lb, res.height);
		ASSERT_EQ(ortmem__pk_lower_bound(it, n), res.lb);
		for (uint32_t i = 0; i < n; i++)
			ASSERT_LE(off[i] + it[i].size, res.height);
		if (res.optimal)
			ASSERT_EQ(res.lb, res.height);
		/* the race ran past the portfolio with a helper on the mirror */
		raced += m && res.iters > PK_PORTFOLIO + 1;
		free(m);
		free(it);
		free(off);
	}
	EXPECT_LT(10, raced);
}

TEST_HARNESS_MAIN
