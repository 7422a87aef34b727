// SPDX-License-Identifier: MIT
/*
 * A reclaim callback that reserves on the tier it is asked to free, when
 * that reserve needs reclaim too, is refused (-EDEADLK, saying why) instead
 * of re-entering reclaim without bound; reserving on another tier, or
 * releasing, from a callback still works.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define KIB 1024ull
#define MIB_1 (1024 * KIB)

struct greedy {
	int depth, max_depth, calls;
	int inner_ret;
	int inner_tier;
	char inner_msg[512];
	struct ortmem_handle held;
	bool release_held;
};

static int greedy_reclaim(struct ortmem_gov *gov, int tier, uint64_t want,
			  void *arg)
{
	struct greedy *g = arg;
	struct ortmem_handle h;

	(void)tier;
	(void)want;
	g->calls++;
	if (++g->depth > g->max_depth)
		g->max_depth = g->depth;
	if (g->depth > 50)	/* the old unbounded recursion: stop it here */
		return -ELOOP;
	g->inner_ret = ortmem_gov_reserve(gov, g->inner_tier,
					  ORTMEM_ROLE_ACTIVATION, 512 * KIB, &h);
	snprintf(g->inner_msg, sizeof(g->inner_msg), "%s",
		 ortmem_last_error_message());
	if (!g->inner_ret)
		ortmem_gov_release(gov, h, 0);
	if (g->release_held)
		ortmem_gov_release(gov, g->held, 0);
	g->depth--;
	return g->inner_ret < 0 ? g->inner_ret : 0;
}

static struct ortmem_gov *open_full(struct greedy *g)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = MIB_1,
						   [ORTMEM_TIER_DISK] = 4 * MIB_1 });
	struct ortmem_gov *gov;

	if (ortmem_gov_open(&o, &gov))
		return NULL;
	if (ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
			       MIB_1, &g->held) ||
	    ortmem_gov_add_reclaim(gov, ORTMEM_TIER_HOST, 0, "greedy",
				   greedy_reclaim, g) <= 0) {
		ortmem_gov_close(gov);
		return NULL;
	}
	return gov;
}

TEST(a_callback_cannot_reclaim_its_own_tier_again)
{
	struct greedy g = { .inner_tier = ORTMEM_TIER_HOST };
	struct ortmem_gov *gov = open_full(&g);
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h;
	int ret;

	ASSERT_NONNULL(gov);
	ret = ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_ACTIVATION,
				 4 * KIB, &h);
	EXPECT_NE(0, ret);
	EXPECT_EQ(1, g.max_depth);
	EXPECT_EQ(1, g.calls);
	EXPECT_EQ(-EDEADLK, g.inner_ret);
	EXPECT_NONNULL(strstr(g.inner_msg, "does not re-enter"));
	/* The governor is intact: the lease is there, and freeing it works. */
	ASSERT_EQ(0, ortmem_gov_stats(gov, &st));
	EXPECT_EQ(MIB_1, st.tier[ORTMEM_TIER_HOST].used);
	ASSERT_EQ(0, ortmem_gov_release(gov, g.held, 0));
	ASSERT_EQ(0, ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_ACTIVATION,
					4 * KIB, &h));
	ortmem_gov_close(gov);
}

TEST(a_callback_may_release_or_use_another_tier)
{
	struct greedy g = { .inner_tier = ORTMEM_TIER_DISK, .release_held = true };
	struct ortmem_gov *gov = open_full(&g);
	struct ortmem_handle h;

	ASSERT_NONNULL(gov);
	ASSERT_EQ(0, ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_ACTIVATION,
					4 * KIB, &h));
	EXPECT_EQ(1, g.calls);
	EXPECT_EQ(0, g.inner_ret);
	EXPECT_EQ(0, ortmem_gov_release(gov, h, 0));
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
