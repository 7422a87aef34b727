// SPDX-License-Identifier: MIT
/*
 * The packer against a brute-force optimum on tiny instances, the
 * validator against planted overlaps, and ortmem_plan_pack()'s contract.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/pack_internal.h"
#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_PACK
#include "plan_test.h"

TEST_TIMEOUT(tiny_instances_match_brute_force, 120)
{
	uint64_t seed = 7;
	int g;

	for (g = 0; g < 1500; g++) {
		struct pk_item it[7];
		uint64_t off[7], boff[7];
		int perm[7], n = 2 + (int)(rnd(&seed) % 6), i;
		struct pk_opts o = { .deadline_ns = ortmem__now_ns() + 2000000000ull, .seed = 1 };
		struct pk_result r = { 0 };

		for (i = 0; i < n; i++) {
			it[i].lo = rnd(&seed) % 8;
			it[i].hi = it[i].lo + 1 + rnd(&seed) % 5;
			it[i].size = 1 + rnd(&seed) % 5;
			perm[i] = i;
		}
		ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off, &r));
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, off, (uint32_t)n, NULL, NULL));
		ASSERT_EQ(brute(it, n, perm, 0, boff), r.height);
		EXPECT_TRUE(r.optimal);
	}
}

/* The compact search alone (pack_compact.c), height by height from the
 * bound: each infeasibility it proves and each packing it finds is checked
 * against brute force, so its pruning rules are too. */
TEST_TIMEOUT(compact_search_matches_brute_force, 120)
{
	uint64_t seed = 11;
	int g;

	for (g = 0; g < 3000; g++) {
		struct pk_item it[7];
		uint64_t off[7], boff[7];
		int perm[7], n = 1 + (int)(rnd(&seed) % 7), i;
		struct pk_opts o = { .deadline_ns = UINT64_MAX, .seed = 1,
				     .compact_only = true };
		struct pk_result r = { 0 };

		for (i = 0; i < n; i++) {
			it[i].lo = rnd(&seed) % 8;
			it[i].hi = it[i].lo + 1 + rnd(&seed) % 5;
			/* equal sizes and spans now and then: ties */
			it[i].size = 1 + rnd(&seed) % (g & 1 ? 3 : 6);
			if (i && rnd(&seed) % 4 == 0)
				it[i] = it[i - 1];
			perm[i] = i;
		}
		ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off, &r));
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, off, (uint32_t)n, NULL, NULL));
		ASSERT_EQ(brute(it, n, perm, 0, boff), r.height);
		EXPECT_TRUE(r.optimal);
	}
}

TEST(validator_finds_planted_overlaps)
{
	struct pk_item it[3] = { { 0, 4, 10 }, { 3, 6, 10 }, { 6, 9, 10 } };
	uint64_t off[3] = { 0, 10, 0 };
	uint32_t a = 0, b = 0;

	EXPECT_EQ(0, ortmem__plan_check_disjoint(it, off, 3, NULL, NULL));
	off[1] = 9;
	EXPECT_EQ(-EFAULT, ortmem__plan_check_disjoint(it, off, 3, &a, &b));
	EXPECT_EQ(1, a);
	EXPECT_EQ(0, b);
	off[1] = 10;
	off[2] = 15;	/* [6,9) starts as [3,6) ends: half-open, no clash */
	EXPECT_EQ(0, ortmem__plan_check_disjoint(it, off, 3, NULL, NULL));
}

TEST_TIMEOUT(random_instances_stay_disjoint, 60)
{
	uint64_t seed = 99;
	int g;

	for (g = 0; g < 300; g++) {
		struct ortmem_plan_buffer b[200];
		uint64_t off[200];
		ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 200, .align = { 1, 0, 0 },
			    .flags = ORTMEM_PLAN_F_VALIDATE);
		ORTMEM_OPTS(ortmem_plan_stats, st);
		int n = 1 + (int)(rnd(&seed) % 200), i;

		for (i = 0; i < n; i++) {
			b[i].lower = rnd(&seed) % 1000;
			b[i].upper = b[i].lower + 1 + rnd(&seed) % 300;
			b[i].size = rnd(&seed) % 5000;
		}
		ASSERT_EQ(0, ortmem_plan_pack(b, (size_t)n, &o, off, &st));
		EXPECT_LE(st.lower_bound, st.arena[ORTMEM_TIER_DEVICE]);
	}
}

/* The same under a time budget, with 1 to 4 racers: timing decides what
 * each racer finds, and every packing kept must still be valid (the
 * VALIDATE flag makes ortmem_plan_pack() check it). */
TEST_TIMEOUT(random_instances_race_in_threads, 120)
{
	uint64_t seed = 1234;

	for (int g = 0; g < 60; g++) {
		struct ortmem_plan_buffer b[200];
		uint64_t off[200];
		ORTMEM_OPTS(ortmem_plan_opts, o, .time_budget_us = 20000,
			    .threads = 1 + (uint32_t)(g % 4), .align = { 1, 0, 0 },
			    .flags = ORTMEM_PLAN_F_VALIDATE);
		ORTMEM_OPTS(ortmem_plan_stats, st);
		int n = 65 + (int)(rnd(&seed) % 135);
		uint64_t top;

		for (int i = 0; i < n; i++) {
			b[i].lower = rnd(&seed) % 1000;
			b[i].upper = b[i].lower + 1 + rnd(&seed) % 300;
			b[i].size = 1 + rnd(&seed) % 5000;
		}
		ASSERT_EQ(0, ortmem_plan_pack(b, (size_t)n, &o, off, &st));
		EXPECT_LE(st.lower_bound, st.arena[ORTMEM_TIER_DEVICE]);
		/* the arena reported is the packing returned */
		top = 0;
		for (int i = 0; i < n; i++)
			if (off[i] + b[i].size > top)
				top = off[i] + b[i].size;
		EXPECT_EQ(top, st.arena[ORTMEM_TIER_DEVICE]);
	}
}

TEST(pack_contract)
{
	struct ortmem_plan_buffer b[2] = { { 0, 2, 100 }, { 1, 3, 100 } };
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 256, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t off[2];

	ASSERT_EQ(0, ortmem_plan_pack(b, 2, NULL, off, &st));
	EXPECT_EQ(512, st.arena[ORTMEM_TIER_DEVICE]);	/* aligned to 256 */
	EXPECT_EQ(512, st.lower_bound);
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_pack(b, 2, &o, off, &st));
	EXPECT_EQ(512, ortmem_last_error()->requested);
	EXPECT_EQ(256, ortmem_last_error()->available);
	b[1].upper = 1;
	EXPECT_EQ(-EINVAL, ortmem_plan_pack(b, 2, NULL, off, &st));
	b[1].upper = 3;
	b[1].size = UINT64_MAX - 3;
	EXPECT_EQ(-EOVERFLOW, ortmem_plan_pack(b, 2, NULL, off, &st));
	EXPECT_EQ(-EINVAL, ortmem_plan_pack(NULL, 2, NULL, off, &st));
	EXPECT_EQ(0, ortmem_plan_pack(NULL, 0, NULL, NULL, NULL));
}

/* @n buffers of 1-64 KiB living 1-30 steps, starting in [0, 100). */
static void random_buffers(struct ortmem_plan_buffer *b, int n, uint64_t seed)
{
	for (int i = 0; i < n; i++) {
		uint64_t lo = rnd(&seed) % 100;

		b[i] = (struct ortmem_plan_buffer){ lo, lo + 1 + rnd(&seed) % 30,
						    1024 * (1 + rnd(&seed) % 64) };
	}
}

/*
 * A packing over the budget says which it is: none can fit (the lower
 * bound is over the budget), or the search ran out of time (one search
 * step, max_iterations = 1, on 200 random buffers whose first packing is
 * above their bound; the budget is the bound).
 */
TEST(pack_over_budget_says_why)
{
	struct ortmem_plan_buffer b[200];
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 1, .align = { 1, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t off[200], lb;
	const char *msg;
	char want[96];

	random_buffers(b, 200, 7);
	ASSERT_EQ(0, ortmem_plan_pack(b, 200, &o, off, &st));
	ASSERT_LT(st.lower_bound, st.arena[ORTMEM_TIER_DEVICE]);
	ASSERT_EQ(0, st.optimal);
	lb = st.lower_bound;

	o.budget[ORTMEM_TIER_DEVICE] = lb;
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_pack(b, 200, &o, off, &st));
	msg = ortmem_last_error_message();
	snprintf(want, sizeof(want), "lower bound of %llu fits", (unsigned long long)lb);
	EXPECT_NONNULL(strstr(msg, want));
	EXPECT_NONNULL(strstr(msg, "in 1 iterations (max_iterations)"));
	TH_LOG("%s", msg);

	o.budget[ORTMEM_TIER_DEVICE] = lb - 1;
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_pack(b, 200, &o, off, &st));
	msg = ortmem_last_error_message();
	EXPECT_NONNULL(strstr(msg, "no packing fits: the bytes live at one time"));
	EXPECT_NULL(strstr(msg, "may find one"));
}

/*
 * Under the time budget alone the refusal names the time budget: the
 * 200 buffers above (their first packing is above their bound), the
 * search given 1 us, the budget at the bound.
 */
TEST(pack_over_budget_in_time_names_the_time_budget)
{
	struct ortmem_plan_buffer b[200];
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 1, .align = { 1, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t off[200];
	int ret;

	random_buffers(b, 200, 7);
	ASSERT_EQ(0, ortmem_plan_pack(b, 200, &o, off, &st));
	o.max_iterations = 0;
	o.time_budget_us = 1;
	o.budget[ORTMEM_TIER_DEVICE] = st.lower_bound;
	ASSERT_LT(st.lower_bound, st.arena[ORTMEM_TIER_DEVICE]);
	ret = ortmem_plan_pack(b, 200, &o, off, &st);
	EXPECT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ret);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(),
			      "in 1 us (time_budget_us); a longer time budget may find one"));
}

/*
 * Cut the rectangle [0, T) x [0, H) into @n pieces by random guillotine
 * cuts (in time or in address); each piece is a buffer.  Every moment is
 * covered by pieces stacking to H, so LB = H and the optimum is H.
 */
static int cut_rectangle(struct pk_item *it, int n, uint64_t t_end,
			 uint64_t h, uint64_t unit, uint64_t *seed)
{
	uint64_t off[256];
	int k = 1, tries;

	it[0] = (struct pk_item){ 0, t_end, h };
	off[0] = 0;
	for (tries = 0; k < n && tries < 100000; tries++) {
		struct pk_item *x = &it[rnd(seed) % (uint64_t)k];
		uint64_t *xo = &off[x - it];

		if (rnd(seed) % 2) {
			uint64_t d = x->hi - x->lo, c;

			if (d < 2)
				continue;
			c = x->lo + 1 + rnd(seed) % (d - 1);
			it[k] = (struct pk_item){ c, x->hi, x->size };
			off[k] = *xo;
			x->hi = c;
		} else {
			uint64_t units = x->size / unit, c;

			if (units < 2)
				continue;
			c = (1 + rnd(seed) % (units - 1)) * unit;
			it[k] = (struct pk_item){ x->lo, x->hi, x->size - c };
			off[k] = *xo + c;
			x->size = c;
		}
		k++;
	}
	return k;
}

/*
 * Instances cut from a rectangle of height h (so h is optimal) pack within
 * 5 % of it, disjoint, no item above the height reported.  Racers in
 * threads share the best height and the proven bound: each packing kept
 * must still be one of a racer's, whole.
 */
static void pack_cut_rectangles(struct __test_metadata *const _metadata,
				uint64_t seed, uint32_t threads)
{
	uint64_t h = 64 * 1024;

	for (int g = 0; g < 12; g++) {
		struct pk_item it[160];
		uint64_t off[160];
		struct pk_opts o = { .deadline_ns = ortmem__now_ns() + 3000000000ull,
				     .seed = 1 + (uint64_t)g,
				     .threads = threads ? threads + (uint32_t)(g % 3) : 0 };
		struct pk_result r = { 0 };
		int n = cut_rectangle(it, 80 + (int)(rnd(&seed) % 80), 1000, h, 1024, &seed);

		ASSERT_LT(64, n);	/* past the exact search: the race runs */
		ASSERT_EQ(h, ortmem__pk_lower_bound(it, (uint32_t)n));
		ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off, &r));
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, off, (uint32_t)n, NULL, NULL));
		EXPECT_EQ(h, r.lb);
		EXPECT_LE(h, r.height);
		EXPECT_LE(r.height, h + h / 20);
		if (r.optimal)
			EXPECT_EQ(h, r.height);
		for (int i = 0; i < n; i++)
			EXPECT_LE(off[i] + it[i].size, r.height);
	}
}

TEST_TIMEOUT(cut_rectangles_pack_within_5_percent, 300)
{
	pack_cut_rectangles(_metadata, 2024, 0);
}

TEST_TIMEOUT(threaded_race_stays_disjoint, 300)
{
	pack_cut_rectangles(_metadata, 4242, 2);
}

/* With an iteration limit the search is reproducible. */
TEST(decision_search_is_reproducible)
{
	uint64_t seed = 77, h = 32 * 1024;
	struct pk_item it[120];
	uint64_t off1[120], off2[120];
	struct pk_opts o = { .deadline_ns = UINT64_MAX, .max_iter = 20000, .seed = 5,
			     .threads = 4 };	/* ignored under a limit */
	struct pk_result r1 = { 0 }, r2 = { 0 };
	int n = cut_rectangle(it, 120, 500, h, 1024, &seed);

	ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off1, &r1));
	ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off2, &r2));
	EXPECT_EQ(r1.height, r2.height);
	EXPECT_EQ(0, memcmp(off1, off2, sizeof(off1[0]) * (size_t)n));
	EXPECT_EQ(0, ortmem__plan_check_disjoint(it, off1, (uint32_t)n, NULL, NULL));
}

/*
 * A decision (pk_opts.target): any packing at or below the target ends
 * the search.  A target any packing meets stops the search after the
 * first plan (one iteration); a target between the bound and the first
 * plan is reached, and a packing found at the target is not claimed
 * optimal unless it is at the bound.
 */
TEST(decision_target_stops_the_search)
{
	uint64_t seed = 91, h = 64 * 1024;

	for (int g = 0; g < 8; g++) {
		struct pk_item it[160];
		uint64_t off[160], first;
		struct pk_opts o = { .deadline_ns = ortmem__now_ns() + 2000000000ull,
				     .seed = 3, .target = UINT64_MAX / 2 };
		struct pk_result r = { 0 };
		int n = cut_rectangle(it, 100 + (int)(rnd(&seed) % 60), 1000, h, 1024, &seed);

		/* a target any packing meets: the first plan, one iteration,
		 * under a deadline the whole search would use */
		ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off, &r));
		EXPECT_EQ(1, r.iters);
		EXPECT_FALSE(r.optimal && r.height > h);
		first = r.height;
		/* halfway between the optimum and the first plan */
		o.target = h + (first - h) / 2;
		memset(&r, 0, sizeof(r));
		ASSERT_EQ(0, ortmem__pack(it, (uint32_t)n, &o, off, &r));
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, off, (uint32_t)n, NULL, NULL));
		EXPECT_LE(r.height, o.target);
		EXPECT_EQ(r.height == h, r.optimal);
		for (int i = 0; i < n; i++)
			EXPECT_LE(off[i] + it[i].size, r.height);
	}
}

static int random_packer(struct packer *pk, struct pk_item *it, uint64_t *seed,
			 uint64_t span)
{
	uint32_t i;
	int ret;

	for (i = 0; i < pk->n; i++) {
		it[i].lo = rnd(seed) % span;
		it[i].hi = it[i].lo + rnd(seed) % (span / 2 + 2);
		it[i].size = (rnd(seed) % 9 == 0) ? 0 : 64 * (1 + rnd(seed) % 6);
	}
	pk->it = it;
	pk->best_h = UINT64_MAX;
	ret = ortmem__pk_alloc(pk);
	return ret ? ret : ortmem__pk_build_conflicts(pk, false);
}

/*
 * A placement stopped at a height (ortmem__pk_place_from_under()) agrees
 * with the whole one: under a limit at or above the full height it is the
 * same placement; under a lower one it returns a height above the limit,
 * no more than the full height, with every item placed up to there where
 * the full placement put it.  Random orders, from every position.
 */
TEST(a_placement_stopped_at_a_height_is_the_full_one_up_to_there)
{
	uint64_t seed = 1234;

	for (int round = 0; round < 200; round++) {
		struct packer pk = { .n = 1 + (uint32_t)(rnd(&seed) % 300),
				     .opts = { .deadline_ns = UINT64_MAX } };
		struct pk_item *it = calloc(pk.n, sizeof(*it));
		uint64_t *full = malloc(sizeof(*full) * pk.n), h, limit, got;
		uint32_t i, from, p;

		ASSERT_NE(NULL, it);
		ASSERT_NE(NULL, full);
		ASSERT_EQ(0, random_packer(&pk, it, &seed, 1 + rnd(&seed) % 100));
		for (i = 0; i < pk.n; i++)
			pk.order[i] = i;
		for (i = pk.n; i > 1; i--) {
			uint32_t j = (uint32_t)(rnd(&seed) % i), t = pk.order[i - 1];

			pk.order[i - 1] = pk.order[j];
			pk.order[j] = t;
		}
		h = ortmem__pk_place_from(&pk, 0);
		memcpy(full, pk.off, sizeof(*full) * pk.n);
		from = (uint32_t)(rnd(&seed) % pk.n);
		EXPECT_EQ(h, ortmem__pk_place_from_under(&pk, from, h));
		EXPECT_TRUE(pk.placed);
		EXPECT_EQ(0, memcmp(full, pk.off, sizeof(*full) * pk.n));
		limit = h ? rnd(&seed) % h : 0;
		got = ortmem__pk_place_from_under(&pk, from, limit);
		if (got <= limit) {
			/* nothing after @from went past the limit */
			EXPECT_EQ(h, got);
			EXPECT_LE(h, limit);
		} else {
			EXPECT_FALSE(pk.placed);
			EXPECT_LE(got, h);
			for (p = from; p < pk.n && pk.hpre[p] <= limit; p++)
				EXPECT_EQ(full[pk.order[p]], pk.off[pk.order[p]]);
			ASSERT_LT(p, pk.n);
			EXPECT_EQ(got, pk.hpre[p]);
			EXPECT_EQ(full[pk.order[p]], pk.off[pk.order[p]]);
		}
		ortmem__pk_free(&pk);
		free(full);
		free(it);
	}
}

TEST(settled_packing_is_disjoint_and_never_higher)
{
	uint64_t seed = 8088;
	int fell = 0, rounds = 200;

	for (int round = 0; round < rounds; round++) {
		uint32_t n = 1 + (uint32_t)(rnd(&seed) % 300), i, m = 0, k;
		uint64_t span = 1 + rnd(&seed) % 200, h = 0, before, settled;
		struct pk_item *it = calloc(n, sizeof(*it));
		struct packer pk = { .n = n, .opts = { .deadline_ns = UINT64_MAX } };

		ASSERT_NE(NULL, it);
		ASSERT_EQ(0, random_packer(&pk, it, &seed, span));
		/* live items first, in id order, each over what came before */
		for (i = 0; i < n; i++)
			if (ortmem__pk_live(&it[i]))
				pk.order[m++] = i;
		for (i = 0, k = m; i < n; i++)
			if (!ortmem__pk_live(&it[i])) {
				pk.order[k++] = i;
				pk.off[i] = 0;
			}
		for (k = 0; k < m; k++) {
			uint32_t x = pk.order[k];
			uint64_t base = 0;

			for (uint32_t c = pk.cidx[x]; c < pk.cidx[x + 1]; c++) {
				uint32_t j = pk.conf[c];

				if (j < x && ortmem__pk_live(&it[j]) &&
				    pk.off[j] + it[j].size > base)
					base = pk.off[j] + it[j].size;
			}
			pk.off[x] = base + 64 * (rnd(&seed) % 4);
			if (pk.off[x] + it[x].size > h)
				h = pk.off[x] + it[x].size;
		}
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, pk.off, n, NULL, NULL));
		before = h;
		settled = ortmem__pk_settle(&pk, m, h);
		EXPECT_LE(settled, before);
		EXPECT_LE(ortmem__pk_lower_bound(it, n), settled);
		fell += settled < before;
		EXPECT_EQ(0, ortmem__plan_check_disjoint(it, pk.off, n, NULL, NULL));
		h = 0;
		for (i = 0; i < n; i++)
			if (pk.off[i] + it[i].size > h)
				h = pk.off[i] + it[i].size;
		EXPECT_EQ(h, settled);
		/* again, from where it stopped (it stops after a few passes) */
		EXPECT_LE(ortmem__pk_settle(&pk, m, settled), settled);
		EXPECT_EQ(0, ortmem__plan_check_disjoint(it, pk.off, n, NULL, NULL));
		ortmem__pk_free(&pk);
		free(it);
	}
	/* the gaps are slack: most packings fall */
	EXPECT_LT(rounds / 2, fell);
}

/*
 * What makes a search over orders complete (bench/plan/plan_orders.c):
 * best fit in the order of any packing's offsets (ortmem__pk_place_from())
 * raises no item, so every packing is the decoding of some order.  Each
 * item's conflicts placed before it lay wholly below its old offset and
 * only moved down, so its old range is still free.  Random packings with
 * random slack under each item; the decoding is disjoint, no item rises,
 * and it is never below the lower bound.
 */
TEST(best_fit_in_offset_order_raises_no_item)
{
	uint64_t seed = 1717;
	int lower = 0, rounds = 200;

	for (int round = 0; round < rounds; round++) {
		uint32_t n = 2 + (uint32_t)(rnd(&seed) % 300), i, k;
		uint64_t span = 1 + rnd(&seed) % 200, h = 0, *was;
		struct pk_item *it = calloc(n, sizeof(*it));
		struct packer pk = { .n = n, .opts = { .deadline_ns = UINT64_MAX } };

		ASSERT_NE(NULL, it);
		was = calloc(n, sizeof(*was));
		ASSERT_NE(NULL, was);
		ASSERT_EQ(0, random_packer(&pk, it, &seed, span));
		/* a packing, built in a random order (not the offsets'): each
		 * item on the conflicts built before it, plus slack */
		for (i = 0; i < n; i++)
			pk.t32[0][i] = i;
		for (i = n - 1; i > 0; i--) {
			uint32_t r = (uint32_t)(rnd(&seed) % (i + 1)), t = pk.t32[0][i];

			pk.t32[0][i] = pk.t32[0][r];
			pk.t32[0][r] = t;
		}
		for (k = 0; k < n; k++)
			pk.rank[pk.t32[0][k]] = k;
		for (k = 0; k < n; k++) {
			uint64_t base = 0;

			i = pk.t32[0][k];
			for (uint32_t c = pk.cidx[i]; c < pk.cidx[i + 1]; c++) {
				uint32_t j = pk.conf[c];

				if (pk.rank[j] < k && was[j] + it[j].size > base)
					base = was[j] + it[j].size;
			}
			was[i] = base + 64 * (rnd(&seed) % 4);
			if (it[i].size && it[i].hi > it[i].lo && was[i] + it[i].size > h)
				h = was[i] + it[i].size;
		}
		ASSERT_EQ(0, ortmem__plan_check_disjoint(it, was, n, NULL, NULL));
		/* decoded in the order of its offsets, ties by id */
		for (i = 0; i < n; i++) {
			pk.order[i] = i;
			pk.t64[2][i] = was[i];
		}
		ortmem__pk_sort_by(pk.order, n, pk.t64[2], pk.t32[1]);
		k = 0;
		EXPECT_LE(ortmem__pk_place_from(&pk, 0), h);
		for (i = 0; i < n; i++)
			if (ortmem__pk_live(&it[i])) {
				EXPECT_LE(pk.off[i], was[i]);
				k += pk.off[i] < was[i];
			}
		lower += k > 0;
		EXPECT_EQ(0, ortmem__plan_check_disjoint(it, pk.off, n, NULL, NULL));
		EXPECT_LE(ortmem__pk_lower_bound(it, n), pk.hpre[n - 1]);
		ortmem__pk_free(&pk);
		free(was);
		free(it);
	}
	/* the slack is taken out: most packings have an item that falls */
	EXPECT_LT(rounds / 2, lower);
}

TEST_HARNESS_MAIN
