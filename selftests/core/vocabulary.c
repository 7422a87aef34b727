// SPDX-License-Identifier: MIT
/*
 * The public vocabulary: version, tiers, roles, error codes and names.
 */
#include <ortmem/ortmem.h>

#include "../harness.h"

TEST(version_matches_header)
{
	char want[32];

	ASSERT_EQ((unsigned int)ORTMEM_VERSION_NUMBER, ortmem_version());
	snprintf(want, sizeof(want), "%d.%d.%d", ORTMEM_VERSION_MAJOR,
		 ORTMEM_VERSION_MINOR, ORTMEM_VERSION_PATCH);
	ASSERT_STREQ(want, ortmem_version_string());
}

TEST(tiers_are_ordered_fastest_first_with_stable_names)
{
	EXPECT_EQ(0, ORTMEM_TIER_DEVICE);
	EXPECT_EQ(1, ORTMEM_TIER_HOST);
	EXPECT_EQ(2, ORTMEM_TIER_DISK);
	EXPECT_EQ(3, ORTMEM_TIER_COUNT);
	EXPECT_STREQ("device", ortmem_tier_name(ORTMEM_TIER_DEVICE));
	EXPECT_STREQ("host", ortmem_tier_name(ORTMEM_TIER_HOST));
	EXPECT_STREQ("disk", ortmem_tier_name(ORTMEM_TIER_DISK));
	EXPECT_NULL(ortmem_tier_name(-1));
	EXPECT_NULL(ortmem_tier_name(ORTMEM_TIER_COUNT));
}

TEST(tier_names_parse_back)
{
	int t;

	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		EXPECT_EQ(t, ortmem_tier_from_name(ortmem_tier_name(t)));
	EXPECT_EQ(-EINVAL, ortmem_tier_from_name("Device"));
	EXPECT_EQ(-EINVAL, ortmem_tier_from_name(""));
	EXPECT_EQ(-EINVAL, ortmem_tier_from_name("gpu"));
	EXPECT_EQ(-EINVAL, ortmem_tier_from_name(NULL));
}

TEST(role_names)
{
	EXPECT_STREQ("kv-cache", ortmem_role_name(ORTMEM_ROLE_KV_CACHE));
	EXPECT_STREQ("workspace", ortmem_role_name(ORTMEM_ROLE_WORKSPACE));
	EXPECT_STREQ("step-scoped workspace",
		     ortmem_role_name(ORTMEM_ROLE_WORKSPACE | ORTMEM_ROLE_STEP_SCOPED));
	EXPECT_STREQ("weights", ortmem_role_name(ORTMEM_ROLE_WEIGHTS));
	EXPECT_STREQ("activation", ortmem_role_name(ORTMEM_ROLE_ACTIVATION));
}

TEST(invalid_roles_have_no_name)
{
	EXPECT_NULL(ortmem_role_name(4));
	EXPECT_NULL(ortmem_role_name(0xff));
	/* The step-scoped flag belongs to workspaces only. */
	EXPECT_NULL(ortmem_role_name(ORTMEM_ROLE_WEIGHTS | ORTMEM_ROLE_STEP_SCOPED));
	EXPECT_NULL(ortmem_role_name(ORTMEM_ROLE_KV_CACHE | ORTMEM_ROLE_STEP_SCOPED));
	/* Unknown flag bits. */
	EXPECT_NULL(ortmem_role_name(ORTMEM_ROLE_WORKSPACE | (1u << 9)));
	EXPECT_NULL(ortmem_role_name(ORTMEM_ROLE_ACTIVATION | (1u << 31)));
}

TEST(strerror_covers_errno_in_either_sign)
{
	EXPECT_STREQ("Cannot allocate memory", ortmem_strerror(-ENOMEM));
	EXPECT_STREQ("Cannot allocate memory", ortmem_strerror(ENOMEM));
	EXPECT_STREQ("Invalid argument", ortmem_strerror(-EINVAL));
	EXPECT_STREQ("Success", ortmem_strerror(0));
}

TEST(strerror_names_every_ortmem_code)
{
	int code, other;

	for (code = ORTMEM_E_BASE; code < ORTMEM_E_MAX; code++) {
		const char *s = ortmem_strerror(-code);

		ASSERT_NONNULL(s);
		EXPECT_NULL(strstr(s, "Unknown"));
		EXPECT_STREQ(s, ortmem_strerror(code));
		for (other = ORTMEM_E_BASE; other < code; other++)
			EXPECT_STRNE(s, ortmem_strerror(other));
	}
	EXPECT_STREQ("Memory tier exhausted",
		     ortmem_strerror(-ORTMEM_E_TIER_EXHAUSTED));
	EXPECT_STREQ("Checksum mismatch", ortmem_strerror(-ORTMEM_E_CHECKSUM));
}

TEST(strerror_of_unknown_codes_says_so)
{
	EXPECT_STREQ("Unknown error 3999", ortmem_strerror(-3999));
	EXPECT_STREQ("Unknown error 4999", ortmem_strerror(4999));
	char buf[64];

	snprintf(buf, sizeof(buf), "Unknown error %d", ORTMEM_E_MAX);
	EXPECT_STREQ(buf, ortmem_strerror(-ORTMEM_E_MAX));
}

TEST(ortmem_codes_do_not_collide_with_errno)
{
	int e;

	/* Every errno glibc knows must lie below the reserved range. */
	for (e = 1; e < ORTMEM_E_BASE; e++)
		if (strerrordesc_np(e))
			EXPECT_LT(e, ORTMEM_E_BASE);
	EXPECT_NULL(strerrordesc_np(ORTMEM_E_BASE));
}

struct opts_v1 {
	size_t sz;
	int a;
};

TEST(opts_macro_zeroes_and_sets_size)
{
	ORTMEM_OPTS(opts_v1, o, .a = 7);

	EXPECT_EQ(sizeof(struct opts_v1), o.sz);
	EXPECT_EQ(7, o.a);
}

TEST_HARNESS_MAIN
