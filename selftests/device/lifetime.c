// SPDX-License-Identifier: MIT
/*
 * A device handle is the CUDA context (retained primary context), streams
 * and memory a governor's device tier allocates under.  The tier holds the
 * handle: closed before its governor, the handle lives on until the last
 * tier lets go, so the governor's later copies and frees never reach a
 * destroyed context ("free after context destroy").  Another handle on the
 * same GPU watches the driver's free memory to see when it really goes.
 */
#include "common.h"

#define MiB (1ull << 20)

static uint64_t gpu_free(struct ortmem_device *watch)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	return ortmem_device_stats(watch, &st) ? 0 : st.free_bytes;
}

static uint64_t tiers_of(struct ortmem_device *dev)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	return ortmem_device_stats(dev, &st) ? ~0ull : st.tiers;
}

TEST(a_device_closed_before_its_governor_lives_until_the_governor_closes)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 64 * MiB, 64 * MiB, 0 });
	size_t len = 4 * MiB;
	unsigned char *src = malloc(len);
	struct ortmem_device *dev, *watch;
	struct ortmem_handle h;
	struct ortmem_gov *gov;
	uint64_t before;
	void *p;
	size_t i;

	NEED_FAKE();
	NEED_DEVICES(1);
	ASSERT_NE(NULL, src);
	for (i = 0; i < len; i++)
		src[i] = (unsigned char)(i * 2654435761u >> 11);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &watch));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
	EXPECT_EQ(1, tiers_of(dev));
	before = gpu_free(watch);
	ASSERT_EQ(0, ortmem_gov_alloc(gov, ORTMEM_TIER_DEVICE,
				      ORTMEM_ROLE_WEIGHTS, len, 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &p));
	ASSERT_EQ(0, ortmem_device_copy_to(dev, (uintptr_t)p, src, len, NULL));
	ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
	EXPECT_GE(before - gpu_free(watch), len);

	/* The wrong order: the handle's owner closes it first. */
	ortmem_device_close(dev);
	EXPECT_GE(before - gpu_free(watch), len);
	/* The governor still moves the bytes off the GPU, intact. */
	ASSERT_EQ(0, ortmem_gov_demote(gov, h));
	ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &p));
	EXPECT_EQ(0, memcmp(src, p, len));
	ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
	ASSERT_EQ(0, ortmem_gov_release(gov, h, 0));
	/* Its last tier gone, the handle ends and gives everything back. */
	ortmem_gov_close(gov);
	EXPECT_EQ(before, gpu_free(watch));
	ortmem_device_close(watch);
	free(src);
}

/* A tier holds the handle while the handle is its backend, no longer. */
TEST(a_tier_holds_the_handle_while_it_is_its_backend)
{
	struct ortmem_device *dev;
	struct ortmem_gov *gov, *other;

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));
	ASSERT_EQ(0, ortmem_gov_open(NULL, &other));
	EXPECT_EQ(0, tiers_of(dev));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	ASSERT_EQ(0, ortmem_gov_set_backend(other, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	EXPECT_EQ(2, tiers_of(dev));
	/* Set again: the new attach, then the old one's close. */
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	EXPECT_EQ(2, tiers_of(dev));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE, NULL, NULL));
	EXPECT_EQ(1, tiers_of(dev));
	ortmem_gov_close(other);
	EXPECT_EQ(0, tiers_of(dev));
	ortmem_gov_close(gov);
	EXPECT_EQ(0, tiers_of(dev));
	ortmem_device_close(dev);
}

static char last_warning[1024];

static void keep_warning(enum ortmem_log_level level, const char *msg,
			 void *user)
{
	(void)user;
	if (level == ORTMEM_LOG_WARN)
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
}

static uint64_t prefixes_of(struct ortmem_device *dev)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	return ortmem_device_stats(dev, &st) ? ~0ull : st.prefixes;
}

/*
 * A shared prefix holds the handle its share ops were given, as a tier
 * does: here the governor's device tier is another handle, so only the
 * prefix keeps @dev alive after its close.  Its sharers still bind and
 * unbind, and its release (the last holder) gives the GPU's memory back.
 */
TEST(a_device_closed_before_its_prefix_lives_until_the_prefix_is_freed)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 64 * MiB, 0, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);
	struct ortmem_device *dev, *tierdev, *watch;
	struct ortmem_handle s[2];
	struct ortmem_prefix *p;
	struct ortmem_gov *gov;
	uint64_t g, before, held, owner, at;

	NEED_FAKE();
	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &watch));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &tierdev));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	if (ortmem_device_granularity(dev, &g) || !g)
		SKIP("GPU 0 has no virtual backing");
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), tierdev));
	before = gpu_free(watch);
	ASSERT_EQ(0, ortmem_prefix_create(gov, ORTMEM_TIER_DEVICE,
					  ORTMEM_ROLE_KV_CACHE, 2 * g, 0,
					  ortmem_device_share_ops(), dev, &p,
					  (void **)&owner));
	ASSERT_EQ(0, ortmem_prefix_bind(p, 100, &s[0], (void **)&at));
	EXPECT_EQ(1, prefixes_of(dev));
	EXPECT_EQ(0, tiers_of(dev));
	EXPECT_EQ(1, tiers_of(tierdev));
	held = before - gpu_free(watch);
	EXPECT_GE(held, 2 * g);

	/* The wrong order: the handle's owner closes it first, and is told
	 * what still holds the handle. */
	last_warning[0] = 0;
	ASSERT_EQ(0, ortmem_set_log_fn(keep_warning, NULL, ORTMEM_LOG_WARN));
	ortmem_device_close(dev);
	ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_ERROR);
	EXPECT_NE(NULL, strstr(last_warning, "holds 1 shared prefix,"));
	EXPECT_NE(NULL, strstr(last_warning, "device tier of 0 governors"));
	EXPECT_EQ(held, before - gpu_free(watch));
	/* The prefix still maps through the closed handle's context. */
	ASSERT_EQ(0, ortmem_prefix_bind(p, 100, &s[1], (void **)&at));
	EXPECT_EQ(0, ortmem_prefix_unbind(gov, s[0]));
	EXPECT_EQ(1, ortmem_prefix_release(p));
	EXPECT_GE(before - gpu_free(watch), 2 * g);
	/* The last sharer frees the prefix, which ends the handle. */
	EXPECT_EQ(0, ortmem_prefix_unbind(gov, s[1]));
	EXPECT_EQ(before, gpu_free(watch));
	ortmem_gov_close(gov);
	ortmem_device_close(tierdev);
	ortmem_device_close(watch);
}

/* A prefix the governor's close frees lets go of its handle too. */
TEST(a_prefix_freed_by_its_governors_close_lets_go_of_the_handle)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 64 * MiB, 0, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);
	struct ortmem_device *dev, *watch;
	struct ortmem_prefix *p;
	struct ortmem_gov *gov;
	uint64_t g, before;

	NEED_FAKE();
	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &watch));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	if (ortmem_device_granularity(dev, &g) || !g)
		SKIP("GPU 0 has no virtual backing");
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	before = gpu_free(watch);
	ASSERT_EQ(0, ortmem_prefix_create(gov, ORTMEM_TIER_DEVICE,
					  ORTMEM_ROLE_KV_CACHE, g, 0,
					  ortmem_device_share_ops(), dev, &p,
					  NULL));
	EXPECT_EQ(1, prefixes_of(dev));
	ortmem_device_close(dev);
	EXPECT_GE(before - gpu_free(watch), g);
	ortmem_gov_close(gov);
	EXPECT_EQ(before, gpu_free(watch));
	ortmem_device_close(watch);
}

/* Share ops with only one of attach and detach would leak or drop a
 * reference: refused, naming the pair. */
TEST(share_ops_with_only_one_of_attach_and_detach_are_refused)
{
	struct ortmem_share_ops ops = *ortmem_device_share_ops();
	struct ortmem_device *dev;
	struct ortmem_prefix *p = NULL;
	struct ortmem_gov *gov;
	uint64_t g;

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	if (ortmem_device_granularity(dev, &g) || !g)
		SKIP("GPU 0 has no virtual backing");
	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));
	ops.detach = NULL;
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(gov, ORTMEM_TIER_DEVICE,
						ORTMEM_ROLE_KV_CACHE, g, 0,
						&ops, dev, &p, NULL));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "attach and detach"));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(0, prefixes_of(dev));
	ortmem_gov_close(gov);
	ortmem_device_close(dev);
}

TEST_HARNESS_MAIN
