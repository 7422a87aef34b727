// SPDX-License-Identifier: MIT
/*
 * The planner's answers to hostile figures: sizes whose sum overflows are
 * -EOVERFLOW (as plan.h promises, and as ortmem_plan_pack() answers), sizes
 * too once a huge alignment rounds them up, and a
 * size oracle that returns anything but 0, 1 or a negative code is refused.
 */
#include <errno.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

static struct ortmem_plan *new_plan(void)
{
	struct ortmem_plan *p = NULL;

	return ortmem_plan_new(NULL, &p) ? NULL : p;
}

/* @n values of @size, all alive at the last node. */
static int chain_all_alive(struct ortmem_plan *p, int n, uint64_t size)
{
	uint32_t in[16], out;
	int i, v;

	for (i = 0; i < n; i++) {
		v = ortmem_plan_add_value(p, size, 0);
		if (v < 0)
			return v;
		out = (uint32_t)v;
		if (ortmem_plan_add_node(p, NULL, 0, &out, 1) < 0)
			return -1;
		in[i] = out;
	}
	v = ortmem_plan_add_value(p, 64, ORTMEM_PLAN_VALUE_OUTPUT);
	if (v < 0)
		return v;
	out = (uint32_t)v;
	return ortmem_plan_add_node(p, in, (uint32_t)n, &out, 1) < 0 ? -1 : 0;
}

TEST(sizes_whose_sum_overflows_are_eoverflow)
{
	static const uint64_t sizes[] = { 1ull << 61, 1ull << 62, (1ull << 63) + 5,
					  UINT64_MAX - 1 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ortmem_plan *p = new_plan();
		int ret;

		ASSERT_NONNULL(p);
		ASSERT_EQ(0, chain_all_alive(p, 5, sizes[i]));
		ret = ortmem_plan_solve(p);
		TH_LOG("5 x %llu bytes: %d (%s)", (unsigned long long)sizes[i],
		       ret, ortmem_last_error_message());
		EXPECT_EQ(-EOVERFLOW, ret);
		ortmem_plan_free(p);
	}
}

/*
 * Small sizes under a huge alignment: each rounds up to 2^62 or 2^63, and
 * three or four live at once overflowed the arena (offsets past 2^64
 * wrapped to overlap, and the validator failed the plan, or passed an
 * overlapping packing).  Both are -EOVERFLOW now, like the sizes above.
 */
TEST(sizes_whose_aligned_sum_overflows_are_eoverflow)
{
	static const struct ortmem_plan_buffer b[4] = {
		{ 0, 2, 1 }, { 0, 2, 1 }, { 1, 3, 1 }, { 0, 3, 1 } };
	int sh;

	for (sh = 61; sh <= 63; sh++) {
		ORTMEM_OPTS(ortmem_plan_opts, o, .align = { 1ull << sh, 1ull << sh, 1ull << sh });
		struct ortmem_plan *p = NULL;
		uint64_t off[4];
		int ret;

		ret = ortmem_plan_pack(b, 4, &o, off, NULL);
		TH_LOG("pack, align 2^%d: %d (%s)", sh, ret, ortmem_last_error_message());
		EXPECT_EQ(-EOVERFLOW, ret);
		ASSERT_EQ(0, ortmem_plan_new(&o, &p));
		ASSERT_EQ(0, chain_all_alive(p, 3, 1));
		ret = ortmem_plan_solve(p);
		TH_LOG("solve, align 2^%d: %d (%s)", sh, ret, ortmem_last_error_message());
		EXPECT_EQ(-EOVERFLOW, ret);
		ortmem_plan_free(p);
	}
}

struct oracle {
	int ret;
	uint64_t size;
};

static int oracle(uint32_t value, uint64_t *size, void *user)
{
	const struct oracle *o = user;

	(void)value;
	*size = o->size;
	return o->ret;
}

TEST(an_oracle_answer_outside_the_contract_is_refused)
{
	static const int bad[] = { 2, 7, 1000, 0x7fffffff };
	struct oracle o = { .size = 4096 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ortmem_plan *p = new_plan();

		ASSERT_NONNULL(p);
		ASSERT_EQ(0, chain_all_alive(p, 2, ORTMEM_PLAN_SIZE_SYMBOLIC));
		o.ret = bad[i];
		ASSERT_EQ(0, ortmem_plan_set_size_fn(p, oracle, &o));
		EXPECT_EQ(-EINVAL, ortmem_plan_solve(p));
		EXPECT_NONNULL(strstr(ortmem_last_error_message(), "size oracle returned"));
		ortmem_plan_free(p);
	}
	/* The contract's answers still work: 0 sizes it, 1 defers. */
	for (o.ret = 0; o.ret <= 1; o.ret++) {
		struct ortmem_plan *p = new_plan();

		ASSERT_NONNULL(p);
		ASSERT_EQ(0, chain_all_alive(p, 2, ORTMEM_PLAN_SIZE_SYMBOLIC));
		ASSERT_EQ(0, ortmem_plan_set_size_fn(p, oracle, &o));
		EXPECT_EQ(o.ret ? -ORTMEM_E_PLAN_DEFERRED : 0, ortmem_plan_solve(p));
		ortmem_plan_free(p);
	}
}

/*
 * An in-place chain a -> b -> c shares one buffer, which a 9 KiB device
 * budget sends to the host (b is live over steps 2-3, beside 4 KiB x and
 * y).  A staging offset is given exactly for the steps that read or write
 * the value asked about, not for every step of the chain's buffer.
 */
TEST(staging_offsets_only_where_the_value_itself_is_used)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 9 * 1024, 0, 0 },
		    .align = { 1024, 1024, 1024 }, .flags = ORTMEM_PLAN_F_VALIDATE);
	enum { A, B, C, X, Y, OUT, NV };
	static const uint64_t size[NV] = { 2048, 2048, 2048, 4096, 4096, 1024 };
	/* uses[v] has bit s when step s reads or writes v */
	static const unsigned int uses[NV] = {
		[A] = 1u << 0 | 1u << 1, [B] = 1u << 1 | 1u << 2 | 1u << 4,
		[C] = 1u << 4 | 1u << 5,
	};
	struct ortmem_plan *p = NULL;
	uint32_t v[NV], in[2];
	uint64_t off;
	int i, s, staged = 0;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	for (i = 0; i < NV; i++)
		v[i] = (uint32_t)ortmem_plan_add_value(p, size[i],
				i == OUT ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &v[A], 1));
	ASSERT_EQ(1, ortmem_plan_add_node(p, &v[A], 1, &v[B], 1));
	ASSERT_EQ(0, ortmem_plan_hint_inplace(p, 1, v[B], v[A]));
	ASSERT_EQ(2, ortmem_plan_add_node(p, &v[B], 1, &v[X], 1));
	ASSERT_EQ(3, ortmem_plan_add_node(p, &v[X], 1, &v[Y], 1));
	in[0] = v[B];
	in[1] = v[Y];
	ASSERT_EQ(4, ortmem_plan_add_node(p, in, 2, &v[C], 1));
	ASSERT_EQ(0, ortmem_plan_hint_inplace(p, 4, v[C], v[B]));
	ASSERT_EQ(5, ortmem_plan_add_node(p, &v[C], 1, &v[OUT], 1));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	for (i = A; i <= C; i++) {
		if (ortmem_plan_offset(p, v[i], &off) == ORTMEM_TIER_DEVICE)
			continue;
		for (s = 0; s < 6; s++) {
			int ret = ortmem_plan_staging_offset(p, v[i], (uint32_t)s, &off);

			if (uses[i] >> s & 1) {
				EXPECT_EQ(0, ret);
				staged++;
			} else {
				EXPECT_EQ(-ENOENT, ret);
			}
		}
	}
	TH_LOG("%d staging copies checked", staged);
	EXPECT_LT(0, staged);
	ortmem_plan_free(p);
}

TEST_HARNESS_MAIN
