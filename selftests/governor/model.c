// SPDX-License-Identifier: MIT
/*
 * Model-based random test: random sequences of reserve, alloc, release
 * (deferred or not), pin, unpin, stale use and limit changes, each checked
 * against a simple reference model of budgets and ownership.
 */
#include "../harness.h"
#include <ortmem/ortmem.h>

#define OPS 20000
#define MAXH 128

struct model_h {
	struct ortmem_handle h;
	int tier;
	uint64_t size;
	int pins;
	int live;		/* 0: released (a stale handle to try) */
	int pending;		/* released with DEFER while pinned */
};

struct model {
	uint64_t used[ORTMEM_TIER_COUNT], limit[ORTMEM_TIER_COUNT];
	struct model_h h[MAXH];
	int n;
};

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static int check_stats(struct __test_metadata *_metadata,
		       struct ortmem_gov *gov, struct model *m)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	uint64_t leases[ORTMEM_TIER_COUNT] = { 0 };
	int i, t;

	for (i = 0; i < m->n; i++)
		if (m->h[i].live || m->h[i].pending)
			leases[m->h[i].tier]++;
	ASSERT_EQ(0, ortmem_gov_stats(gov, &st));
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		ASSERT_EQ(m->used[t], st.tier[t].used);
		ASSERT_EQ(leases[t], st.tier[t].leases);
	}
	return 0;
}

static void op_new(struct __test_metadata *_metadata, struct ortmem_gov *gov,
		   struct model *m, unsigned int *s)
{
	int tier = ORTMEM_TIER_HOST + rnd(s) % 2, ret;
	int alloc = tier == ORTMEM_TIER_HOST && rnd(s) % 3 == 0;
	uint64_t size = 1 + rnd(s) % 3000;
	struct model_h *mh;
	struct ortmem_handle h;
	bool fits = m->used[tier] + size <= m->limit[tier];

	if (m->n == MAXH)
		return;
	ret = alloc ? ortmem_gov_alloc(gov, tier, ORTMEM_ROLE_KV_CACHE, size, 0, &h) :
		      ortmem_gov_reserve(gov, tier, ORTMEM_ROLE_KV_CACHE, size, &h);
	if (!fits) {
		ASSERT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ret);
		ASSERT_EQ(m->used[tier], ortmem_last_error()->used);
		ASSERT_EQ(m->limit[tier], ortmem_last_error()->limit);
		return;
	}
	ASSERT_EQ(0, ret);
	m->used[tier] += size;
	mh = &m->h[m->n++];
	memset(mh, 0, sizeof(*mh));
	mh->h = h;
	mh->tier = tier;
	mh->size = size;
	mh->live = 1;
}

static void op_release(struct __test_metadata *_metadata,
		       struct ortmem_gov *gov, struct model *m, unsigned int *s)
{
	struct model_h *mh = &m->h[rnd(s) % m->n];
	uint32_t flags = rnd(s) % 2 ? ORTMEM_RELEASE_DEFER : 0;
	int ret = ortmem_gov_release(gov, mh->h, flags);

	if (!mh->live) {
		ASSERT_EQ(-ORTMEM_E_STALE_HANDLE, ret);
	} else if (mh->pins && !flags) {
		ASSERT_EQ(-EBUSY, ret);
	} else if (mh->pins) {
		ASSERT_EQ(1, ret);
		mh->live = 0;
		mh->pending = 1;
	} else {
		ASSERT_EQ(0, ret);
		mh->live = 0;
		m->used[mh->tier] -= mh->size;
	}
}

static void op_pin(struct __test_metadata *_metadata, struct ortmem_gov *gov,
		   struct model *m, unsigned int *s)
{
	struct model_h *mh = &m->h[rnd(s) % m->n];

	if (rnd(s) % 2) {
		int ret = ortmem_gov_pin(gov, mh->h, 0, NULL);

		ASSERT_EQ(mh->live ? 0 : -ORTMEM_E_STALE_HANDLE, ret);
		mh->pins += mh->live;
		return;
	}
	if (!mh->pins) {
		ASSERT_NE(0, ortmem_gov_unpin(gov, mh->h));
		return;
	}
	ASSERT_EQ(0, ortmem_gov_unpin(gov, mh->h));
	if (!--mh->pins && mh->pending) {
		mh->pending = 0;
		m->used[mh->tier] -= mh->size;
	}
}

static void compact(struct model *m)
{
	int i, j = 0;

	for (i = 0; i < m->n; i++)
		if (m->h[i].live || m->h[i].pending || i % 4 == 0)
			m->h[j++] = m->h[i];
	m->n = j;
}

TEST_TIMEOUT(random_sequences_match_the_model, 120)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 40000, [ORTMEM_TIER_DISK] = 20000 },
		    .max_handles = 512);
	struct model m = { .limit = { [ORTMEM_TIER_HOST] = 40000, [ORTMEM_TIER_DISK] = 20000 } };
	struct ortmem_gov *gov;
	unsigned int seed = 12345;
	int i, k;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE, ortmem_backend_heap(), NULL));
	for (i = 0; i < OPS; i++) {
		k = rnd(&seed) % 10;
		if (k < 4 || !m.n)
			op_new(_metadata, gov, &m, &seed);
		else if (k < 7)
			op_release(_metadata, gov, &m, &seed);
		else if (k < 9)
			op_pin(_metadata, gov, &m, &seed);
		else {
			int t = 1 + rnd(&seed) % 2;

			m.limit[t] = 10000 + rnd(&seed) % 40000;
			ASSERT_EQ(0, ortmem_gov_set_limit(gov, t, m.limit[t]));
		}
		if (m.n == MAXH)
			compact(&m);
		if (i % 64 == 0)
			check_stats(_metadata, gov, &m);
	}
	check_stats(_metadata, gov, &m);
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
