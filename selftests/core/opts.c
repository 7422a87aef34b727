// SPDX-License-Identifier: MIT
/*
 * Options structs are checked for fields this library does not know from
 * the end of their last field, not from sizeof: a field a newer caller puts
 * in trailing padding must be refused, not silently ignored.  That is how
 * struct ortmem_plan_opts grew move_ratio in 0.1's 4 bytes of padding.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* A newer caller's struct: ours, then a field we do not know. */
#define NEWER(type) struct { type o; uint64_t future; }

TEST(plan_opts_move_ratio_fills_the_0_1_padding)
{
	/* 0.1's struct ended in 4 bytes of padding, which its library
	 * refused unless zero: move_ratio took them, so an 0.1 caller (same
	 * sz, zero there) gets the default and the struct kept its size. */
	EXPECT_EQ(END_OF(struct ortmem_plan_opts, threads),
		  offsetof(struct ortmem_plan_opts, move_ratio));
	EXPECT_EQ(END_OF(struct ortmem_plan_opts, ortmem_plan_opts__last_field),
		  sizeof(struct ortmem_plan_opts));
	EXPECT_EQ(96, sizeof(struct ortmem_plan_opts));
}

TEST(plan_opts_bad_move_ratio_is_refused)
{
	const uint32_t bad[] = { 3, 24, 2 * ORTMEM_PLAN_MOVE_RATIO_MAX, 0x5a5a5a5a };
	const uint32_t good[] = { 1, 32, ORTMEM_PLAN_MOVE_RATIO_MAX };
	struct ortmem_plan *plan = NULL;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ORTMEM_OPTS(ortmem_plan_opts, opts, .move_ratio = bad[i]);

		EXPECT_EQ(-EINVAL, ortmem_plan_new(&opts, &plan));
		EXPECT_NULL(plan);
		EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, ortmem_last_error()->kind);
		EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "move_ratio"));
		EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "power of two"));
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ORTMEM_OPTS(ortmem_plan_opts, opts, .move_ratio = good[i]);

		ASSERT_EQ(0, ortmem_plan_new(&opts, &plan));
		ortmem_plan_free(plan);
		plan = NULL;
	}
}

TEST(newer_structs_with_unknown_fields_are_refused)
{
	NEWER(struct ortmem_plan_opts) plan_o = { .o = { .sz = sizeof(plan_o) }, .future = 1 };
	NEWER(struct ortmem_gov_opts) gov_o = { .o = { .sz = sizeof(gov_o) }, .future = 1 };
	NEWER(struct ortmem_host_opts) host_o = { .o = { .sz = sizeof(host_o) }, .future = 1 };
	NEWER(struct ortmem_spill_opts) spill_o = { .o = { .sz = sizeof(spill_o) }, .future = 1 };
	struct ortmem_plan *plan = NULL;
	struct ortmem_gov *gov = NULL;
	struct ortmem_host *host = NULL;
	struct ortmem_spill *spill = NULL;

	EXPECT_EQ(-EINVAL, ortmem_plan_new(&plan_o.o, &plan));
	EXPECT_EQ(-EINVAL, ortmem_gov_open(&gov_o.o, &gov));
	EXPECT_EQ(-EINVAL, ortmem_host_open(&host_o.o, &host));
	EXPECT_EQ(-EINVAL, ortmem_spill_open(&spill_o.o, &spill));
	EXPECT_NULL(plan);
	EXPECT_NULL(gov);
	EXPECT_NULL(host);
	EXPECT_NULL(spill);

	/* Zero where we do not know the field: accepted. */
	plan_o.future = 0;
	ASSERT_EQ(0, ortmem_plan_new(&plan_o.o, &plan));
	ortmem_plan_free(plan);
	gov_o.future = 0;
	ASSERT_EQ(0, ortmem_gov_open(&gov_o.o, &gov));
	ortmem_gov_close(gov);
}

/* Every sz that ends strictly inside a field is refused, for each struct;
 * every sz at a field's end (an older struct) is taken. */
#define EACH_CUT(type, open_call, close_call)                                \
	do {                                                                 \
		type o_;                                                     \
		size_t sz_;                                                  \
		for (sz_ = sizeof(size_t); sz_ <= sizeof(o_); sz_++) {       \
			int ret_;                                            \
			memset(&o_, 0, sizeof(o_));                          \
			o_.sz = sz_;                                         \
			ret_ = open_call;                                    \
			if (ret_ == 0) {                                     \
				close_call;                                  \
				accepted[sz_] = 1;                           \
			} else if (ret_ == -EINVAL &&                        \
				   strstr(ortmem_last_error_message(),       \
					  "ends inside one of its fields")) { \
				cut[sz_] = 1;                                \
			}                                                    \
		}                                                            \
	} while (0)

TEST(a_sz_that_cuts_a_field_is_refused)
{
	char accepted[256], cut[256];
	struct ortmem_gov *gov;
	struct ortmem_plan *plan;

	memset(accepted, 0, sizeof(accepted));
	memset(cut, 0, sizeof(cut));
	/* The case: sz ends inside limit[]: every tier would close. */
	EACH_CUT(struct ortmem_gov_opts, ortmem_gov_open(&o_, &gov),
		 ortmem_gov_close(gov));
	EXPECT_TRUE(cut[END_OF(struct ortmem_gov_opts, limit) - 8]);
	EXPECT_TRUE(cut[offsetof(struct ortmem_gov_opts, limit) + 1]);
	EXPECT_TRUE(cut[END_OF(struct ortmem_gov_opts, driver_reserve) - 1]);
	EXPECT_TRUE(accepted[sizeof(size_t)]);
	EXPECT_TRUE(accepted[END_OF(struct ortmem_gov_opts, limit)]);
	EXPECT_TRUE(accepted[END_OF(struct ortmem_gov_opts, driver_reserve)]);
	EXPECT_TRUE(accepted[sizeof(struct ortmem_gov_opts)]);

	memset(accepted, 0, sizeof(accepted));
	memset(cut, 0, sizeof(cut));
	EACH_CUT(struct ortmem_plan_opts, ortmem_plan_new(&o_, &plan),
		 ortmem_plan_free(plan));
	EXPECT_TRUE(cut[offsetof(struct ortmem_plan_opts, budget) + 8]);
	EXPECT_TRUE(cut[offsetof(struct ortmem_plan_opts, align) + 16]);
	EXPECT_TRUE(accepted[END_OF(struct ortmem_plan_opts, budget)]);
	EXPECT_TRUE(accepted[sizeof(struct ortmem_plan_opts)]);
}

TEST(limits_above_2_62_are_refused_at_open_as_at_set_limit)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = (1ull << 62) + 1 });
	struct ortmem_gov *gov = NULL;
	int t;

	EXPECT_EQ(-EINVAL, ortmem_gov_open(&o, &gov));
	EXPECT_NULL(gov);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "2^62"));
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		memset(o.limit, 0, sizeof(o.limit));
		o.limit[t] = UINT64_MAX;
		EXPECT_EQ(-EINVAL, ortmem_gov_open(&o, &gov));
		o.limit[t] = 1ull << 62;
		ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
		EXPECT_EQ(-EINVAL, ortmem_gov_set_limit(gov, t, (1ull << 62) + 1));
		EXPECT_EQ(0, ortmem_gov_set_limit(gov, t, 1ull << 62));
		ortmem_gov_close(gov);
		gov = NULL;
	}
}

static int nop_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	(void)ctx;
	*bhp = size;
	return 0;
}

static int nop_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	(void)ctx;
	(void)bh;
	*freedp = size;
	return 0;
}

TEST(newer_backend_ops_with_unknown_hooks_are_refused)
{
	NEWER(struct ortmem_backend_ops) ops = {
		.o = { .sz = sizeof(ops), .name = "newer", .alloc = nop_alloc,
		       .free = nop_free },
		.future = 1,
	};
	struct ortmem_gov *gov = NULL;

	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &ops.o, NULL));
	ops.future = 0;
	EXPECT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &ops.o, NULL));
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
