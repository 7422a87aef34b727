// SPDX-License-Identifier: MIT
/*
 * The planner through its public API: MobileNet v2 at its lower bound,
 * views, graph outputs, in-place chains, deferred plans, budgets, and
 * random graphs checked by the validator.
 */
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

static struct ortmem_plan *new_plan(void)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .flags = ORTMEM_PLAN_F_VALIDATE,
		    .time_budget_us = 200000);
	struct ortmem_plan *p = NULL;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	return p;
}

static int node1(struct ortmem_plan *p, int in, int out)
{
	uint32_t i = (uint32_t)in, o = (uint32_t)out;

	return ortmem_plan_add_node(p, in >= 0 ? &i : NULL, in >= 0, &o, 1);
}

/* MobileNet v2 1.0/224, float32, conv+ReLU6 fused; reshape is a view. */
static int mobilenet(struct ortmem_plan *p)
{
	static const int cfg[7][4] = { { 1, 16, 1, 1 }, { 6, 24, 2, 2 },
		{ 6, 32, 3, 2 }, { 6, 64, 4, 2 }, { 6, 96, 3, 1 },
		{ 6, 160, 3, 2 }, { 6, 320, 1, 1 } };
	int x = ortmem_plan_add_value(p, 224 * 224 * 3 * 4, 0), cur, H = 112, c = 32;
	int st, i, k, e, d, pr, o;

	cur = ortmem_plan_add_value(p, 112 * 112 * 32 * 4, 0);
	node1(p, x, cur);
	for (k = 0; k < 7; k++)
		for (i = 0; i < cfg[k][2]; i++) {
			int t = cfg[k][0], cc = cfg[k][1], blk_in = cur;

			st = i ? 1 : cfg[k][3];
			e = cur;
			if (t != 1) {
				e = ortmem_plan_add_value(p, (uint64_t)H * H * c * t * 4, 0);
				node1(p, cur, e);
			}
			H /= st;
			d = ortmem_plan_add_value(p, (uint64_t)H * H * c * t * 4, 0);
			node1(p, e, d);
			pr = ortmem_plan_add_value(p, (uint64_t)H * H * cc * 4, 0);
			node1(p, d, pr);
			cur = pr;
			if (st == 1 && c == cc) {
				uint32_t in[2] = { (uint32_t)blk_in, (uint32_t)pr };

				cur = ortmem_plan_add_value(p, (uint64_t)H * H * cc * 4, 0);
				o = cur;
				ortmem_plan_add_node(p, in, 2, (uint32_t *)&o, 1);
			}
			c = cc;
		}
	e = ortmem_plan_add_value(p, 7 * 7 * 1280 * 4, 0);
	node1(p, cur, e);
	d = ortmem_plan_add_value(p, 1280 * 4, 0);
	node1(p, e, d);
	pr = ortmem_plan_add_value(p, 1001 * 4, 0);
	node1(p, d, pr);
	o = ortmem_plan_add_value(p, 1001 * 4, 0);
	ortmem_plan_set_view(p, (uint32_t)o, (uint32_t)pr);
	node1(p, pr, o);
	k = ortmem_plan_add_value(p, 1001 * 4, ORTMEM_PLAN_VALUE_OUTPUT);
	node1(p, o, k);
	return x;
}

TEST(mobilenet_v2_reaches_its_lower_bound)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = new_plan();
	uint64_t off;

	ASSERT_NONNULL(p);
	mobilenet(p);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	EXPECT_EQ(65, st.n_buffers);
	EXPECT_EQ(27591112, st.naive_bytes);
	EXPECT_EQ(6021120, st.lower_bound);
	EXPECT_EQ(6021120, st.arena[ORTMEM_TIER_DEVICE]);
	EXPECT_EQ(1, st.optimal);
	EXPECT_EQ(-ENOENT, ortmem_plan_offset(p, 0, &off));
	EXPECT_EQ(0, ortmem_plan_validate(p));
	ortmem_plan_free(p);
}

TEST(views_of_views_keep_the_root_alive)
{
	struct ortmem_plan *p = new_plan();
	int a, v1, v2, b, c, out;
	uint64_t oa, ob, oc;

	ASSERT_NONNULL(p);
	a = ortmem_plan_add_value(p, 1024, 0);
	v1 = ortmem_plan_add_value(p, 1024, 0);
	v2 = ortmem_plan_add_value(p, 1024, 0);
	b = ortmem_plan_add_value(p, 1024, 0);
	c = ortmem_plan_add_value(p, 1024, 0);
	out = ortmem_plan_add_value(p, 1024, ORTMEM_PLAN_VALUE_OUTPUT);
	ASSERT_EQ(0, ortmem_plan_set_view(p, v1, a));
	ASSERT_EQ(0, ortmem_plan_set_view(p, v2, v1));
	EXPECT_EQ(-EEXIST, ortmem_plan_set_view(p, v2, a));
	EXPECT_EQ(-EINVAL, ortmem_plan_set_view(p, a, v2));	/* cycle */
	node1(p, -1, a);		/* 0 */
	node1(p, a, v1);		/* 1: view */
	node1(p, v1, v2);		/* 2: view of a view */
	node1(p, -1, b);		/* 3: a's last direct use was 2 */
	node1(p, b, c);			/* 4 */
	{
		uint32_t in[2] = { (uint32_t)v2, (uint32_t)c }, o = (uint32_t)out;

		ortmem_plan_add_node(p, in, 2, &o, 1);	/* 5: reads the view */
	}
	ASSERT_EQ(0, ortmem_plan_solve(p));
	EXPECT_EQ(0, ortmem_plan_offset(p, a, &oa));
	EXPECT_EQ(0, ortmem_plan_offset(p, v2, &ob));
	EXPECT_EQ(oa, ob);
	EXPECT_EQ(0, ortmem_plan_offset(p, b, &ob));
	EXPECT_EQ(0, ortmem_plan_offset(p, c, &oc));
	EXPECT_NE(oa, ob);	/* a is still alive through v2 */
	EXPECT_NE(oa, oc);
	ortmem_plan_free(p);
}

/*
 * A view declared larger than its source (1 MiB over 256 bytes, through a
 * view of a view): the buffer holds the largest, so nothing live beside
 * the view lies within its bytes.  Before, the buffer had the source's
 * 256 bytes and the view reached into the next buffer.
 */
TEST(a_view_larger_than_its_source_gets_a_buffer_that_holds_it)
{
	struct ortmem_plan *p = new_plan();
	ORTMEM_OPTS(ortmem_plan_stats, st);
	int a, v1, v2, b, out;
	uint64_t oa, ob, oo;

	ASSERT_NONNULL(p);
	a = ortmem_plan_add_value(p, 256, 0);
	v1 = ortmem_plan_add_value(p, 512, 0);
	v2 = ortmem_plan_add_value(p, 1 << 20, 0);
	b = ortmem_plan_add_value(p, 4096, 0);
	out = ortmem_plan_add_value(p, 256, ORTMEM_PLAN_VALUE_OUTPUT);
	ASSERT_EQ(0, ortmem_plan_set_view(p, v1, a));
	ASSERT_EQ(0, ortmem_plan_set_view(p, v2, v1));
	node1(p, -1, a);		/* 0 */
	node1(p, a, v1);		/* 1: view */
	node1(p, v1, v2);		/* 2: view of a view */
	node1(p, -1, b);		/* 3: while the view lives */
	{
		uint32_t in[2] = { (uint32_t)v2, (uint32_t)b }, o = (uint32_t)out;

		ortmem_plan_add_node(p, in, 2, &o, 1);	/* 4 */
	}
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_validate(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	ASSERT_EQ(0, ortmem_plan_offset(p, a, &oa));
	ASSERT_EQ(0, ortmem_plan_offset(p, b, &ob));
	ASSERT_EQ(0, ortmem_plan_offset(p, out, &oo));
	EXPECT_TRUE(ob + 4096 <= oa || ob >= oa + (1 << 20));
	EXPECT_TRUE(oo + 256 <= oa || oo >= oa + (1 << 20));
	EXPECT_LE((1 << 20) + 4096 + 256, st.lower_bound);
	ortmem_plan_free(p);
}

TEST(graph_outputs_are_never_reused)
{
	struct ortmem_plan *p = new_plan();
	ORTMEM_OPTS(ortmem_plan_stats, st);
	int v[6], i;

	ASSERT_NONNULL(p);
	v[0] = ortmem_plan_add_value(p, 4096, ORTMEM_PLAN_VALUE_OUTPUT);
	for (i = 1; i < 6; i++)
		v[i] = ortmem_plan_add_value(p, 4096, 0);
	node1(p, -1, v[0]);
	for (i = 1; i < 6; i++)
		node1(p, v[i - 1], v[i]);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	/* the output plus a ping-pong pair */
	EXPECT_EQ(3 * 4096, st.arena[ORTMEM_TIER_DEVICE]);
	EXPECT_EQ(3 * 4096, st.lower_bound);
	ortmem_plan_free(p);
}

TEST(inplace_chain_shares_one_buffer)
{
	struct ortmem_plan *p = new_plan();
	ORTMEM_OPTS(ortmem_plan_stats, st);
	int v[5], i, n;
	uint64_t o0, o;

	ASSERT_NONNULL(p);
	for (i = 0; i < 5; i++)
		v[i] = ortmem_plan_add_value(p, 8192 - i * 256, 0);
	node1(p, -1, v[0]);
	for (i = 1; i < 5; i++) {
		n = node1(p, v[i - 1], v[i]);
		ASSERT_EQ(0, ortmem_plan_hint_inplace(p, n, v[i], v[i - 1]));
	}
	EXPECT_EQ(-EINVAL, ortmem_plan_hint_inplace(p, 1, v[3], v[0]));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	EXPECT_EQ(1, st.n_buffers);
	EXPECT_EQ(4, st.n_inplace);
	EXPECT_EQ(8192, st.arena[ORTMEM_TIER_DEVICE]);
	ortmem_plan_offset(p, v[0], &o0);
	for (i = 1; i < 5; i++) {
		ortmem_plan_offset(p, v[i], &o);
		EXPECT_EQ(o0, o);
	}
	ortmem_plan_free(p);
}

TEST(inplace_refused_when_the_input_lives_on)
{
	struct ortmem_plan *p = new_plan();
	ORTMEM_OPTS(ortmem_plan_stats, st);
	int a, b, c, n;
	uint32_t in[2];

	ASSERT_NONNULL(p);
	a = ortmem_plan_add_value(p, 4096, 0);
	b = ortmem_plan_add_value(p, 4096, 0);
	c = ortmem_plan_add_value(p, 8192, 0);
	node1(p, -1, a);
	n = node1(p, a, b);
	ortmem_plan_hint_inplace(p, n, b, a);	/* a is read again later */
	in[0] = (uint32_t)a;
	in[1] = (uint32_t)b;
	n = ortmem_plan_add_node(p, in, 2, (uint32_t *)&c, 1);
	ortmem_plan_hint_inplace(p, n, c, a);	/* c does not fit in a */
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	EXPECT_EQ(0, st.n_inplace);
	EXPECT_EQ(3, st.n_buffers);
	ortmem_plan_free(p);
}

static int oracle(uint32_t v, uint64_t *size, void *user)
{
	(void)user;
	if (v == 2)
		return 1;
	*size = 1000 + v;
	return 0;
}

TEST(symbolic_sizes_defer_the_plan)
{
	struct ortmem_plan *p = new_plan();
	uint32_t ids[4];
	uint64_t off;
	int v[4], i;

	ASSERT_NONNULL(p);
	v[0] = ortmem_plan_add_value(p, 64, 0);
	for (i = 1; i < 4; i++)
		v[i] = ortmem_plan_add_value(p, ORTMEM_PLAN_SIZE_SYMBOLIC, 0);
	node1(p, -1, v[0]);
	for (i = 1; i < 4; i++)
		node1(p, v[i - 1], v[i]);
	EXPECT_EQ(-ORTMEM_E_PLAN_DEFERRED, ortmem_plan_solve(p));
	EXPECT_EQ(3, ortmem_plan_deferred(p, ids, 4));
	EXPECT_EQ(1, ids[0]);
	EXPECT_EQ(3, ids[2]);
	EXPECT_EQ(-ENODATA, ortmem_plan_offset(p, 1, &off));
	ortmem_plan_set_size_fn(p, oracle, NULL);
	EXPECT_EQ(-ORTMEM_E_PLAN_DEFERRED, ortmem_plan_solve(p));
	EXPECT_EQ(1, ortmem_plan_deferred(p, ids, 4));
	EXPECT_EQ(2, ids[0]);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "(2)"));
	ortmem_plan_free(p);
}

TEST(infeasible_budget_is_refused_with_figures)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 4096, 0, 0 },
		    .tiers = 1u << ORTMEM_TIER_DEVICE);
	struct ortmem_plan *p = NULL;
	const struct ortmem_error *e;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	mobilenet(p);
	ASSERT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_solve(p));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_EQ(ORTMEM_ERR_CAPACITY_UNAVAILABLE, e->kind);
	EXPECT_EQ(ORTMEM_TIER_DEVICE, e->tier);
	EXPECT_EQ(4096, e->available);
	EXPECT_GT(e->requested, 4096);
	ortmem_plan_free(p);
}

TEST(device_budget_spills_to_host)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 5 * 1024 * 1024, 0, 0 },
		    .flags = ORTMEM_PLAN_F_VALIDATE);
	ORTMEM_OPTS(ortmem_plan_stats, st);
	ORTMEM_OPTS(ortmem_plan_moves, m);
	struct ortmem_plan *p = NULL;
	uint64_t moved = 0;
	uint32_t s;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	mobilenet(p);
	/* The widest step needs 6021120 bytes on the device at once. */
	ASSERT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE, ortmem_plan_solve(p));
	ortmem_plan_free(p);

	o.budget[ORTMEM_TIER_DEVICE] = 7 * 1024 * 1024;
	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	mobilenet(p);
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	EXPECT_LE(st.arena[ORTMEM_TIER_DEVICE], 7 * 1024 * 1024);
	for (s = 0; ortmem_plan_step_moves(p, s, &m) == 0; s++)
		moved += m.prefetch[1] + m.spill[1] + m.prefetch[2] + m.spill[2];
	EXPECT_EQ(st.prefetch_bytes + st.spill_bytes, moved);
	EXPECT_EQ(0, ortmem_plan_validate(p));
	ortmem_plan_free(p);
}

/*
 * v0 (2 KiB) is read at steps 1 and 3; steps 1 and 2 produce 4 KiB values
 * read at the next step, step 3 a 1 KiB one.  With a 9 KiB device budget
 * v0 cannot stay on the device over step 2 (10 KiB), so it goes to the host, and is staged on the
 * device where it is used: steps 0 (written), 1 and 3 (read).
 */
TEST(host_buffers_have_staging_offsets)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 9 * 1024, 0, 0 }, .align = { 1024, 1024, 1024 },
		    .flags = ORTMEM_PLAN_F_VALIDATE);
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = NULL;
	uint32_t v[5], in[2], s;
	uint64_t off, soff[4];
	int k;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	v[0] = (uint32_t)ortmem_plan_add_value(p, 2048, 0);
	v[1] = (uint32_t)ortmem_plan_add_value(p, 4096, 0);
	v[2] = (uint32_t)ortmem_plan_add_value(p, 4096, 0);
	v[3] = (uint32_t)ortmem_plan_add_value(p, 1024, 0);
	v[4] = (uint32_t)ortmem_plan_add_value(p, 1024, ORTMEM_PLAN_VALUE_OUTPUT);
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &v[0], 1));
	ASSERT_EQ(1, ortmem_plan_add_node(p, &v[0], 1, &v[1], 1));
	ASSERT_EQ(2, ortmem_plan_add_node(p, &v[1], 1, &v[2], 1));
	in[0] = v[0];
	in[1] = v[2];
	ASSERT_EQ(3, ortmem_plan_add_node(p, in, 2, &v[3], 1));
	ASSERT_EQ(4, ortmem_plan_add_node(p, &v[3], 1, &v[4], 1));
	ASSERT_EQ(0, ortmem_plan_solve(p));
	ASSERT_EQ(0, ortmem_plan_stats(p, &st));
	ASSERT_EQ(ORTMEM_TIER_HOST, ortmem_plan_offset(p, v[0], &off));
	for (s = 0; s < 4; s++) {
		k = ortmem_plan_staging_offset(p, v[0], s, &soff[s]);
		if (s == 2) {
			EXPECT_EQ(-ENOENT, k);
			continue;
		}
		ASSERT_EQ(0, k);
		EXPECT_EQ(0, soff[s] % 1024);
		EXPECT_LE(soff[s] + 2048, st.arena[ORTMEM_TIER_DEVICE]);
	}
	/* At step 3 the copy of v0 must not overlap v2 (read) or v3 (written). */
	ASSERT_EQ(ORTMEM_TIER_DEVICE, ortmem_plan_offset(p, v[2], &off));
	EXPECT_TRUE(soff[3] + 2048 <= off || off + 4096 <= soff[3]);
	ASSERT_EQ(ORTMEM_TIER_DEVICE, ortmem_plan_offset(p, v[3], &off));
	EXPECT_TRUE(soff[3] + 2048 <= off || off + 1024 <= soff[3]);
	EXPECT_EQ(-ENOENT, ortmem_plan_staging_offset(p, v[2], 2, &off));
	EXPECT_EQ(-EINVAL, ortmem_plan_staging_offset(p, v[0], 5, &off));
	EXPECT_EQ(-EINVAL, ortmem_plan_staging_offset(p, 99, 1, &off));
	EXPECT_EQ(-EINVAL, ortmem_plan_staging_offset(p, v[0], 1, NULL));
	EXPECT_EQ(-EINVAL, ortmem_plan_staging_offset(NULL, v[0], 1, &off));
	ortmem_plan_free(p);
}

TEST(hostile_input_is_refused)
{
	ORTMEM_OPTS(ortmem_plan_opts, bad, .flags = 0x80);
	ORTMEM_OPTS(ortmem_plan_opts, align, .align = { 3, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_opts, threads, .threads = ORTMEM_PLAN_THREADS_MAX + 1);
	struct ortmem_plan *p = NULL;
	uint32_t x = 99, a;

	EXPECT_EQ(-EINVAL, ortmem_plan_new(&bad, &p));
	EXPECT_EQ(-EINVAL, ortmem_plan_new(&align, &p));
	EXPECT_EQ(-EINVAL, ortmem_plan_new(&threads, &p));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "threads = 65"));
	EXPECT_EQ(-EINVAL, ortmem_plan_new(NULL, NULL));
	ASSERT_EQ(0, ortmem_plan_new(NULL, &p));
	EXPECT_EQ(-EINVAL, ortmem_plan_add_value(p, 1, 0x10));
	a = (uint32_t)ortmem_plan_add_value(p, 1, 0);
	EXPECT_EQ(-EINVAL, ortmem_plan_add_node(p, &x, 1, &a, 1));
	EXPECT_EQ(-EINVAL, ortmem_plan_add_node(p, &a, 1, &a, 1));
	EXPECT_EQ(-EINVAL, ortmem_plan_add_node(p, NULL, 1, &a, 1));
	EXPECT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &a, 1));
	EXPECT_EQ(-EINVAL, ortmem_plan_add_node(p, NULL, 0, &a, 1));
	EXPECT_EQ(-EINVAL, ortmem_plan_set_view(p, a, 7));
	EXPECT_EQ(-EINVAL, ortmem_plan_set_view(p, a, a));
	EXPECT_EQ(-ENODATA, ortmem_plan_validate(p));
	/* a node reading a value produced later */
	{
		uint32_t b = (uint32_t)ortmem_plan_add_value(p, 8, 0);
		uint32_t c = (uint32_t)ortmem_plan_add_value(p, 8, 0);

		ortmem_plan_add_node(p, &b, 1, &c, 1);
		ortmem_plan_add_node(p, NULL, 0, &b, 1);
		EXPECT_EQ(-EINVAL, ortmem_plan_solve(p));
	}
	ortmem_plan_free(p);
	ortmem_plan_free(NULL);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

TEST_TIMEOUT(random_graphs_pass_the_validator, 120)
{
	uint64_t seed = 42;
	int g;

	for (g = 0; g < 2000; g++) {
		ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = 50,
			    .flags = ORTMEM_PLAN_F_VALIDATE);
		struct ortmem_plan *p = NULL;
		int nv = 2 + (int)(rnd(&seed) % 30), i, k;

		if (g % 3 == 0)
			o.budget[ORTMEM_TIER_DEVICE] = 64 * 1024 * (1 + rnd(&seed) % 8);
		ASSERT_EQ(0, ortmem_plan_new(&o, &p));
		for (i = 0; i < nv; i++)
			ortmem_plan_add_value(p, 1 + rnd(&seed) % 20000,
					      rnd(&seed) % 8 ? 0 : ORTMEM_PLAN_VALUE_OUTPUT);
		for (i = 1; i < nv; i++) {
			uint32_t in[3], out = (uint32_t)i, nin = 1 + rnd(&seed) % 3;

			for (k = 0; k < (int)nin; k++)
				in[k] = (uint32_t)(rnd(&seed) % i);
			if (rnd(&seed) % 6 == 0 && ortmem_plan_set_view(p, out, in[0]) == 0) {
				ortmem_plan_add_node(p, in, 1, &out, 1);
				continue;
			}
			k = ortmem_plan_add_node(p, in, nin, &out, 1);
			if (rnd(&seed) % 3 == 0)
				ortmem_plan_hint_inplace(p, (uint32_t)k, out, in[0]);
		}
		k = ortmem_plan_solve(p);
		ASSERT_TRUE(k == 0 || k == -ORTMEM_E_CAPACITY_UNAVAILABLE);
		if (!k)
			ASSERT_EQ(0, ortmem_plan_validate(p));
		ortmem_plan_free(p);
	}
}

TEST_HARNESS_MAIN
