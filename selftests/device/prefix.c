// SPDX-License-Identifier: MIT
/*
 * Shared prefixes on the device tier: one physical handle (cuMemCreate)
 * mapped at several device addresses (cuMemMap), each sharer's range
 * reserved whole with the prefix at its start and a private tail after
 * it.  Against the fake driver, whose physical handles are memfds, the
 * mappings really alias: the same bytes are read back through each
 * address, and the prefix is charged once, to the governor's device tier
 * and to the device handle's own budget.
 */
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

#define MIB (1024ull * 1024)

FIXTURE(dpfx) {
	struct ortmem_device *dev;
	struct ortmem_gov *gov;
	uint64_t g;
};

FIXTURE_SETUP(dpfx)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 128 * MIB, 0, 0 },
		    .flags = ORTMEM_GOV_NO_PUBLISH);

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &self->dev));
	if (ortmem_device_granularity(self->dev, &self->g) || !self->g)
		SKIP("GPU 0 has no virtual backing");
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), self->dev));
}

FIXTURE_TEARDOWN(dpfx)
{
	if (self->gov)
		ortmem_gov_close(self->gov);
	if (self->dev)
		ortmem_device_close(self->dev);
}

static uint64_t dev_used(struct ortmem_device *dev)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	ortmem_device_stats(dev, &st);
	return st.used_bytes;
}

static uint64_t tier_used(struct ortmem_gov *gov)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };

	ortmem_gov_stats(gov, &st);
	return st.tier[ORTMEM_TIER_DEVICE].used;
}

TEST_F(dpfx, one_handle_mapped_at_several_addresses_charged_once)
{
	uint64_t plen = 2 * self->g, tail = 1000, owner, at[3];
	struct ortmem_mechanism m[ORTMEM_TIER_COUNT];
	struct ortmem_commit_range r[2];
	struct ortmem_handle s[3];
	struct ortmem_prefix *p;
	unsigned char *buf;
	uint64_t before = dev_used(self->dev);
	int i;

	buf = malloc(plen);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE,
					  plen, 0, ortmem_device_share_ops(), self->dev, &p,
					  (void **)&owner));
	fill(buf, plen, 7);
	ASSERT_EQ(0, ortmem_device_copy_to(self->dev, owner, buf, plen, NULL));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_prefix_bind(p, tail, &s[i], (void **)&at[i]));
		EXPECT_NE(owner, at[i]);
	}
	/* The same physical bytes through every address. */
	for (i = 0; i < 3; i++) {
		memset(buf, 0, plen);
		ASSERT_EQ(0, ortmem_device_copy_from(self->dev, buf, at[i], plen, NULL));
		EXPECT_TRUE(filled(buf, plen, 7));
	}
	/* A write through the owner's address is seen through a sharer's. */
	fill(buf, 64, 9);
	ASSERT_EQ(0, ortmem_device_copy_to(self->dev, owner + self->g, buf, 64, NULL));
	memset(buf, 0, 64);
	ASSERT_EQ(0, ortmem_device_copy_from(self->dev, buf, at[2] + self->g, 64, NULL));
	EXPECT_TRUE(filled(buf, 64, 9));
	/* Each tail is private: writing one leaves the others alone. */
	fill(buf, tail, 1);
	ASSERT_EQ(0, ortmem_device_copy_to(self->dev, at[0] + plen, buf, tail, NULL));
	fill(buf, tail, 2);
	ASSERT_EQ(0, ortmem_device_copy_to(self->dev, at[1] + plen, buf, tail, NULL));
	ASSERT_EQ(0, ortmem_device_copy_from(self->dev, buf, at[0] + plen, tail, NULL));
	EXPECT_TRUE(filled(buf, tail, 1));
	/* Charged once: to the tier, and to the handle's budget (whose
	 * tails are whole granules). */
	EXPECT_EQ(plen + 3 * tail, tier_used(self->gov));
	EXPECT_EQ(before + plen + 3 * self->g, dev_used(self->dev));
	ASSERT_EQ(ORTMEM_TIER_COUNT, ortmem_gov_mechanisms(self->gov, m, ORTMEM_TIER_COUNT));
	EXPECT_EQ(plen, m[ORTMEM_TIER_DEVICE].shared_bytes);
	EXPECT_EQ(3 * tail, m[ORTMEM_TIER_DEVICE].private_bytes);
	EXPECT_EQ(ORTMEM_COHERENCE_DEVICE_ONLY, m[ORTMEM_TIER_DEVICE].coherence);
	ASSERT_EQ(2, ortmem_prefix_ranges(self->gov, s[0], r, 2));
	EXPECT_EQ(0, r[0].writable);
	/* The mapping is the prefix's: the device call refuses to free it. */
	EXPECT_EQ(-EINVAL, ortmem_device_free(self->dev, at[0]));
	/* The owner lets go first; the last sharer frees it. */
	EXPECT_EQ(1, ortmem_prefix_release(p));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s[i]));
	EXPECT_EQ(0, tier_used(self->gov));
	EXPECT_EQ(before, dev_used(self->dev));
	EXPECT_EQ(-EINVAL, ortmem_device_copy_from(self->dev, buf, at[0], 16, NULL));
	free(buf);
}

TEST_F(dpfx, a_read_only_prefix_is_mapped_read_only)
{
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	struct ortmem_view v;
	uint64_t at;

	NEED_FAKE();	/* the fake's device memory is host memory */
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, 0, self->g, 0,
					  ortmem_device_share_ops(), self->dev, &p, NULL));
	ASSERT_EQ(0, ortmem_prefix_bind(p, self->g, &s, (void **)&at));
	/* The device's share ops map only into ranges they reserve. */
	{
		struct ortmem_handle none;

		EXPECT_EQ(-EOPNOTSUPP, ortmem_prefix_bind_at(p, self->g, (void *)(uintptr_t)at, &none));
		EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "map_at"));
	}
	EXPECT_EQ(-EACCES, ortmem_view_make(self->gov, s, 0, 8, ORTMEM_VIEW_WRITE, &v));
	EXPECT_EQ(0, ortmem_view_make(self->gov, s, self->g, 8, ORTMEM_VIEW_WRITE, &v));
	{
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			signal(SIGSEGV, SIG_DFL);	/* not a sanitizer's */
			*(volatile char *)(uintptr_t)at = 1;
			_exit(0);
		}
		waitpid(pid, &status, 0);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	}
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s));
	EXPECT_EQ(0, ortmem_prefix_release(p));
}

TEST_F(dpfx, refusals)
{
	struct ortmem_prefix *p;

	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, 0, self->g + 1, 0,
						ortmem_device_share_ops(), self->dev, &p, NULL));
	EXPECT_TRUE(strstr(ortmem_last_error_message(), "granularity") != NULL);
	EXPECT_EQ(0, tier_used(self->gov));
	EXPECT_EQ(-EINVAL, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, 0, self->g, 0,
						NULL, NULL, &p, NULL));
}

TEST_F(dpfx, a_driver_failure_loses_nothing)
{
	struct ortmem_handle s;
	struct ortmem_prefix *p;
	uint64_t before = dev_used(self->dev);

	NEED_FAKE();
	ASSERT_EQ(0, ortmem_prefix_create(self->gov, ORTMEM_TIER_DEVICE, 0, self->g, 0,
					  ortmem_device_share_ops(), self->dev, &p, NULL));
	setenv("FAKECUDA_FAULTS", "cuMemAddressReserve:1:2", 1);
	EXPECT_EQ(-ENOMEM, ortmem_prefix_bind(p, 10, &s, NULL));
	EXPECT_TRUE(strstr(ortmem_last_error_message(), "cuMemAddressReserve") != NULL);
	unsetenv("FAKECUDA_FAULTS");
	EXPECT_EQ(self->g, tier_used(self->gov));
	EXPECT_EQ(before + self->g, dev_used(self->dev));
	EXPECT_EQ(0, ortmem_prefix_bind(p, 10, &s, NULL));
	EXPECT_EQ(0, ortmem_prefix_unbind(self->gov, s));
	EXPECT_EQ(0, ortmem_prefix_release(p));
	EXPECT_EQ(before, dev_used(self->dev));
}

TEST_HARNESS_MAIN
