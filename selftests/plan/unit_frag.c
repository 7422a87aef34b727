// SPDX-License-Identifier: MIT
/*
 * Why a plan with device offsets cannot always match Belady's bytes
 * (Documentation/lib/placement.rst, "Where Belady cannot be matched"):
 * eight buffers whose live bytes never exceed the budget, so Belady's
 * simulation, which counts bytes and ignores offsets, moves nothing; yet
 * no offset for each buffer's whole life fits them in the budget (the
 * tests' brute-force packer says so: every order, each buffer at its
 * lowest fit), so every valid plan moves something.  The cheapest such
 * plan moves one unit within the arena; ortmem finds it, and, when told
 * not to move, evicts the least a fix can take (one unit written out and
 * read back).
 */
#include <stdlib.h>

#include <ortmem/ortmem.h>

#include "plan/plan_internal.h"
#include "../harness.h"
#define PLAN_TEST_GRAPH
#define PLAN_TEST_PACK
#include "plan_test.h"
#include "plan_belady.h"

#define UNIT (64 * ALIGN)
#define BUDGET (4 * UNIT)
#define N_BUFS 8

/*
 * In units, each buffer's size, the step that makes it and the step that
 * reads it last.  Units 0-1 and 2-3 are the arena's halves: A and B fill
 * both at step 0; B's half is the one D and E are not in (steps 2-3); C
 * and F fill B's half at steps 4-5 as D and E fill the other, so E and F
 * end in different halves; at steps 6-7, G (two units) needs one half
 * whole beside E and F.  Four units are live at every step.
 */
static const struct frag_buf {
	uint32_t size, made, last;
} frag[N_BUFS] = {
	{ 2, 0, 1 },	/* A */
	{ 2, 0, 3 },	/* B */
	{ 1, 4, 5 },	/* C */
	{ 1, 2, 5 },	/* D */
	{ 1, 2, 7 },	/* E */
	{ 1, 4, 7 },	/* F */
	{ 2, 6, 9 },	/* G */
	{ 2, 8, 9 },	/* H */
};

/*
 * One node a step: the buffers made at it, then those read last at it.
 * With @tail, four steps more, where a buffer Z (a unit, made at step 10,
 * read at 13) must leave the device for W (the whole budget, steps
 * 11-12): there Belady moves what any plan must, two units.
 */
static struct ortmem_plan *frag_plan(uint32_t flags, bool tail)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { BUDGET, 0, 0 },
		    .align = { ALIGN, 64, 4096 }, .time_budget_us = GENEROUS_BUDGET_US,
		    .max_iterations = 64, .threads = 1, .flags = flags);
	struct ortmem_plan *p = NULL;
	uint32_t b, s, in[N_BUFS], out[N_BUFS], nin, nout;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	for (b = 0; b < N_BUFS; b++)
		ortmem_plan_add_value(p, (uint64_t)frag[b].size * UNIT, 0);
	for (s = 0; s < 10; s++) {
		for (nin = nout = 0, b = 0; b < N_BUFS; b++) {
			if (frag[b].made == s)
				out[nout++] = b;
			if (frag[b].last == s)
				in[nin++] = b;
		}
		if (ortmem_plan_add_node(p, in, nin, out, nout) != (int)s)
			goto fail;
	}
	if (tail && (ortmem_plan_add_value(p, UNIT, 0) != N_BUFS ||
		     ortmem_plan_add_value(p, BUDGET, 0) != N_BUFS + 1 ||
		     ortmem_plan_add_node(p, NULL, 0, (uint32_t[]){ N_BUFS }, 1) != 10 ||
		     ortmem_plan_add_node(p, NULL, 0, (uint32_t[]){ N_BUFS + 1 }, 1) != 11 ||
		     ortmem_plan_add_node(p, (uint32_t[]){ N_BUFS + 1 }, 1, NULL, 0) != 12 ||
		     ortmem_plan_add_node(p, (uint32_t[]){ N_BUFS }, 1, NULL, 0) != 13))
		goto fail;
	return p;
fail:
	ortmem_plan_free(p);
	return NULL;
}

/* The solved plan's buffers as the packer's items, each for its life. */
static void frag_items(const struct ortmem_plan *p, struct pk_item *it)
{
	uint32_t b;

	for (b = 0; b < p->n_bufs; b++)
		it[b] = (struct pk_item){ p->bufs[b].lo, p->bufs[b].hi, asz_of(p, b) };
}

TEST(belady_counts_bytes_a_plan_must_place)
{
	struct ortmem_plan *p = frag_plan(ORTMEM_PLAN_F_VALIDATE, false);
	struct pk_item it[N_BUFS];
	uint64_t off[N_BUFS], height;
	int perm[N_BUFS], i;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(N_BUFS, p->n_bufs);
	frag_items(p, it);
	for (i = 0; i < N_BUFS; i++)
		perm[i] = i;
	height = brute(it, N_BUFS, perm, 0, off);
	EXPECT_EQ(BUDGET, ortmem__pk_lower_bound(it, N_BUFS));
	EXPECT_EQ(0, belady(p, BUDGET));
	EXPECT_LT(BUDGET, height);
	EXPECT_GE(BUDGET + UNIT, height);
	ortmem_plan_free(p);
}

/* Tier bytes and bytes moved within the arena of the plan made with
 * @flags; with @bel, Belady's bytes on its buffers. */
static void frag_solve(struct __test_metadata *_metadata, uint32_t flags, bool tail,
		       uint64_t *tier, uint64_t *moved, uint64_t *bel)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = frag_plan(ORTMEM_PLAN_F_VALIDATE | flags, tail);

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_validate(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], BUDGET);
	*tier = st.prefetch_bytes + st.spill_bytes;
	*moved = st.move_bytes;
	if (bel)
		*bel = belady(p, BUDGET);
	TH_LOG("flags %#x%s: %llu tier bytes, %llu moved within the arena", flags,
	       tail ? ", tail" : "", (unsigned long long)*tier, (unsigned long long)*moved);
	ortmem_plan_free(p);
}

/* Any fix costs at least a unit moved (a sixteenth of a tier byte each),
 * or a unit written out and read back: the smallest buffer is a unit. */
TEST(the_cheapest_fix_is_found)
{
	uint64_t tier, moved;

	frag_solve(_metadata, 0, false, &tier, &moved, NULL);
	EXPECT_EQ(0, tier);
	EXPECT_EQ(UNIT, moved);
	frag_solve(_metadata, ORTMEM_PLAN_F_NO_MOVE, false, &tier, &moved, NULL);
	EXPECT_EQ(2 * UNIT, tier);
	EXPECT_EQ(0, moved);
}

/*
 * With the tail, Belady moves two units, Z out and back, and so must any
 * plan; the eight buffers before it (all gone by step 10) add a unit's
 * move at least, so the best plan costs 2 + 1/16 units, 1.03x Belady's
 * bytes, at the default move ratio of 16.  ortmem's plan is that one.
 */
TEST(no_plan_matches_belady_here)
{
	uint64_t tier, moved, bel;

	frag_solve(_metadata, 0, true, &tier, &moved, &bel);
	EXPECT_EQ(2 * UNIT, bel);
	EXPECT_EQ(2 * UNIT, tier);
	EXPECT_EQ(UNIT, moved);
}

TEST_HARNESS_MAIN
