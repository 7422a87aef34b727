// SPDX-License-Identifier: MIT
/*
 * Foreign handles: a governor refuses every handle another governor issued,
 * however many governors the process opened before it (one after the
 * other) or holds open beside it.  Only the public API is used: a refused
 * handle is -ORTMEM_E_STALE_HANDLE, and the governor's own lease survives
 * the attempt to release it through a foreign handle.
 */
#include <stdlib.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define SEQUENTIAL 100000
#define ALIVE 3000
#define LEASE 4096
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int open_small(struct ortmem_gov **govp)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 1 << 20 },
		    .max_handles = 4);

	return ortmem_gov_open(&o, govp);
}

/* Is @h refused by @gov for query, pin and release, with @own intact? */
static bool refuses(struct ortmem_gov *gov, struct ortmem_handle h,
		    struct ortmem_handle own)
{
	struct ortmem_alloc_info info;
	void *p;

	if (h.id == own.id)
		return false;
	if (ortmem_gov_query(gov, h, &info) != -ORTMEM_E_STALE_HANDLE ||
	    ortmem_gov_pin(gov, h, 0, &p) != -ORTMEM_E_STALE_HANDLE ||
	    ortmem_gov_release(gov, h, 0) != -ORTMEM_E_STALE_HANDLE)
		return false;
	return ortmem_gov_query(gov, own, &info) == 0 && info.size == LEASE;
}

/* Earlier governors whose handles @i checks: neighbours, every distance a
 * small tag or generation field could wrap at, and a few at random. */
static const long distances[] = { 1, 2, 127, 128, 255, 256, 257, 4095, 4096,
				  65535, 65536, 65537 };

/* Tens of thousands of open/close cycles: a sanitizer build on a shared
 * machine needs far more than the default 30 s. */
TEST_TIMEOUT(governors_one_after_another_never_share_a_handle, 180)
{
	struct ortmem_handle *first = calloc(SEQUENTIAL, sizeof(*first));
	unsigned int seed = 16;
	long i, d, accepted = 0;

	ASSERT_NONNULL(first);
	for (i = 0; i < SEQUENTIAL; i++) {
		struct ortmem_gov *gov;

		ASSERT_EQ(0, open_small(&gov));
		ASSERT_EQ(0, ortmem_gov_reserve(gov, ORTMEM_TIER_HOST,
				ORTMEM_ROLE_KV_CACHE, LEASE, &first[i]));
		for (d = 0; d < (long)ARRAY_SIZE(distances); d++)
			if (distances[d] <= i &&
			    !refuses(gov, first[i - distances[d]], first[i]))
				accepted++;
		for (d = 0; d < 3 && i; d++)
			if (!refuses(gov, first[rand_r(&seed) % i], first[i]))
				accepted++;
		ASSERT_EQ(0, ortmem_gov_release(gov, first[i], 0));
		ortmem_gov_close(gov);
	}
	EXPECT_EQ(0, accepted);
	free(first);
}

TEST_TIMEOUT(thousands_of_open_governors_never_share_a_handle, 180)
{
	struct ortmem_gov **gov = calloc(ALIVE, sizeof(*gov));
	struct ortmem_handle *h = calloc(ALIVE, sizeof(*h));
	unsigned int seed = 16;
	long i, d, accepted = 0;

	ASSERT_NONNULL(gov);
	ASSERT_NONNULL(h);
	for (i = 0; i < ALIVE; i++) {
		ASSERT_EQ(0, open_small(&gov[i]));
		ASSERT_EQ(0, ortmem_gov_reserve(gov[i], ORTMEM_TIER_HOST,
				ORTMEM_ROLE_KV_CACHE, LEASE, &h[i]));
	}
	for (i = 0; i < ALIVE; i++) {
		for (d = 0; d < (long)ARRAY_SIZE(distances); d++) {
			if (distances[d] <= i &&
			    !refuses(gov[i], h[i - distances[d]], h[i]))
				accepted++;
			if (i + distances[d] < ALIVE &&
			    !refuses(gov[i], h[i + distances[d]], h[i]))
				accepted++;
		}
		for (d = 0; d < 3; d++) {
			long j = rand_r(&seed) % ALIVE;

			if (j != i && !refuses(gov[i], h[j], h[i]))
				accepted++;
		}
	}
	EXPECT_EQ(0, accepted);
	for (i = 0; i < ALIVE; i++) {
		EXPECT_EQ(0, ortmem_gov_release(gov[i], h[i], 0));
		ortmem_gov_close(gov[i]);
	}
	free(gov);
	free(h);
}

TEST_HARNESS_MAIN
