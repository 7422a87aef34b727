// SPDX-License-Identifier: MIT
/*
 * The incremental skyline (lib/pack/pack_sky.c) against a recomputation from
 * scratch after every step of random walks: places, raises and undos.
 */
#include <stdlib.h>
#include <string.h>

#include "pack/pack_internal.h"
#include "../harness.h"

#define N 24

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static bool overlap(const struct pk_item *a, const struct pk_item *b)
{
	return a->lo < b->hi && b->lo < a->hi;
}

/* Conflict lists (CSR) the way the packer keeps them. */
static void conflicts(struct packer *pk, uint32_t *cidx, uint32_t *conf)
{
	uint32_t i, j, c = 0;

	for (i = 0; i < pk->n; i++) {
		cidx[i] = c;
		for (j = 0; j < pk->n; j++)
			if (j != i && pk->it[i].size && pk->it[j].size &&
			    overlap(&pk->it[i], &pk->it[j]))
				conf[c++] = j;
	}
	cidx[pk->n] = c;
	pk->cidx = cidx;
	pk->conf = conf;
}

/*
 * What the skyline must hold: a base at least the highest top placed in
 * conflict (raises may lift it more), each section's unplaced bytes, and
 * a floor that is exactly its unplaced members' lowest base (or the top
 * placed there when none is left, or the floor it had).
 */
static void check(struct __test_metadata *const _metadata,
		  const struct pk_sky *k, const struct pk_item *it)
{
	uint32_t s, a, b;

	for (a = 0; a < k->m; a++) {
		uint32_t i = k->ids[a];
		uint64_t top = 0;

		if (k->placed[i])
			continue;
		for (b = 0; b < k->m; b++) {
			uint32_t j = k->ids[b];

			if (k->placed[j] && overlap(&it[i], &it[j]) &&
			    k->off[j] + it[j].size > top)
				top = k->off[j] + it[j].size;
		}
		ASSERT_LE(top, k->base[i]);
	}
	for (s = 0; s < k->nsec; s++) {
		uint64_t rem = 0, low = UINT64_MAX, top = 0;

		for (a = 0; a < k->m; a++) {
			uint32_t i = k->ids[a];

			if (k->slo[i] > s || k->shi[i] <= s)
				continue;
			if (k->placed[i]) {
				if (k->off[i] + it[i].size > top)
					top = k->off[i] + it[i].size;
				continue;
			}
			rem += it[i].size;
			if (k->base[i] < low)
				low = k->base[i];
		}
		ASSERT_EQ(rem, k->rem[s]);
		ASSERT_LE(top, k->floor[s]);
		if (low != UINT64_MAX)
			ASSERT_EQ(low, k->floor[s]);
	}
}

struct step {
	uint32_t mark;
	uint32_t item;		/* UINT32_MAX: a raise */
};

TEST_TIMEOUT(skyline_matches_recomputation, 60)
{
	uint64_t seed = 99;

	for (int walk = 0; walk < 300; walk++) {
		struct pk_item it[N];
		uint32_t cidx[N + 1], conf[N * N];
		struct packer pk = { .n = N, .it = it };
		struct pk_sky k;
		struct step st[4 * N];
		uint32_t depth = 0, i;

		for (i = 0; i < N; i++) {
			it[i].lo = rnd(&seed) % 20;
			it[i].hi = it[i].lo + 1 + rnd(&seed) % 8;
			it[i].size = (i % 7) ? 1 + rnd(&seed) % 9 : 0;	/* some empty */
		}
		conflicts(&pk, cidx, conf);
		ASSERT_EQ(0, ortmem__sky_init(&k, &pk));
		ortmem__sky_reset(&k, UINT64_MAX / 4);
		/* Every other walk goes past the step count's wrap. */
		if (walk & 1)
			k.now = UINT32_MAX - 100;
		for (int n = 0; n < 200; n++) {
			uint64_t r = rnd(&seed) % 10;

			if ((r < 3 && depth) || depth == 4 * N) {
				struct step *x = &st[--depth];

				if (x->item == UINT32_MAX)
					ortmem__sky_undo(&k, x->mark);
				else
					ortmem__sky_unplace(&k, x->item, x->mark);
			} else if (r < 8) {
				uint32_t j = k.ids[rnd(&seed) % k.m];

				if (k.placed[j])
					continue;
				st[depth] = (struct step){ k.nundo, j };
				ASSERT_LE(0, ortmem__sky_place(&k, j));
				depth++;
			} else if (k.nsec) {
				uint32_t s = (uint32_t)(rnd(&seed) % k.nsec);

				st[depth] = (struct step){ k.nundo, UINT32_MAX };
				ASSERT_EQ(0, ortmem__sky_raise(&k, s, k.floor[s] + 1 + rnd(&seed) % 5));
				depth++;
			}
			check(_metadata, &k, it);
		}
		while (depth) {
			struct step *x = &st[--depth];

			if (x->item == UINT32_MAX)
				ortmem__sky_undo(&k, x->mark);
			else
				ortmem__sky_unplace(&k, x->item, x->mark);
		}
		for (i = 0; i < k.nsec; i++) {
			ASSERT_EQ(0, k.floor[i]);
			ASSERT_EQ(k.rem0[i], k.rem[i]);
		}
		for (i = 0; i < k.m; i++)
			ASSERT_EQ(0, k.base[k.ids[i]]);
		ortmem__sky_fini(&k);
	}
}

/*
 * The step count wraps: a section stamped 0 (never touched) must not read
 * as touched by the step after the wrap.  Item 1 alone lives in section 1,
 * at its floor; placing item 0 lifts it, and section 1's floor with it.
 */
TEST(skyline_steps_past_the_wrap)
{
	struct pk_item it[2] = { { 0, 1, 4 }, { 0, 2, 3 } };
	uint32_t cidx[3], conf[4];
	struct packer pk = { .n = 2, .it = it };
	struct pk_sky k;

	conflicts(&pk, cidx, conf);
	ASSERT_EQ(0, ortmem__sky_init(&k, &pk));
	ortmem__sky_reset(&k, 100);
	k.now = UINT32_MAX;
	ASSERT_EQ(1, ortmem__sky_place(&k, 0));
	EXPECT_EQ(4, k.base[1]);
	EXPECT_EQ(4, k.floor[1]);
	ortmem__sky_fini(&k);
}

/* The dead flag: a section's bytes over h, from the start or after a step. */
TEST(skyline_sees_what_cannot_fit)
{
	struct pk_item it[3] = { { 0, 4, 5 }, { 2, 6, 5 }, { 5, 8, 3 } };
	uint32_t cidx[4], conf[9];
	struct packer pk = { .n = 3, .it = it };
	struct pk_sky k;

	conflicts(&pk, cidx, conf);
	ASSERT_EQ(0, ortmem__sky_init(&k, &pk));
	ortmem__sky_reset(&k, 9);		/* items 0 and 1 need 10 */
	EXPECT_TRUE(k.dead);
	ortmem__sky_reset(&k, 10);
	EXPECT_FALSE(k.dead);
	ASSERT_EQ(1, ortmem__sky_place(&k, 0));
	EXPECT_FALSE(k.dead);
	EXPECT_EQ(5, k.base[1]);
	ASSERT_EQ(0, ortmem__sky_raise(&k, k.slo[1], 6));	/* 6 + 5 > 10 */
	EXPECT_TRUE(k.dead);
	ortmem__sky_fini(&k);
}

TEST_HARNESS_MAIN
