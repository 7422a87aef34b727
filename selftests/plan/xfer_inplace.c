// SPDX-License-Identifier: MIT
/*
 * The transfer schedule of buffers shared by in-place chains
 * (ortmem_plan_hint_inplace()): a chain's buffer holds one value after
 * another, so a runtime that follows ortmem_plan_transfers() to the letter
 * must write out the bytes of the value that the off gap holds, and read
 * back the value the step reads.  The test plays each schedule on a model
 * of the buffers' contents: a write-out may start any time after its
 * earliest step, so the buffer must hold the same value from then until
 * its step; a read-back must find that value in the buffer's home.
 */
#include <stdlib.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"

#define NMAX 48
#define XMAX 256

struct chains {
	uint32_t n;
	uint32_t root[NMAX];	/* first value of its chain (its buffer's owner) */
	uint32_t n_hints;
};

/*
 * Node i produces value i and reads 1-3 earlier values; about a third of
 * the nodes take one of their inputs' buffers in place.  Every hint meets
 * ortmem_plan_hint_inplace()'s rules, so the planner takes them all: the
 * input is read by no later node (it is dead from then on), is no graph
 * output, and the output has its size.  Returns the largest step's
 * footprint (each value apart: at least what the plan needs).
 */
static uint64_t chain_graph(struct ortmem_plan *p, struct chains *c, uint64_t *seed)
{
	uint64_t size[NMAX], foot = 0, sum;
	bool dead[NMAX] = { false }, out[NMAX];
	uint32_t i, k, in[3];

	c->n_hints = 0;
	for (i = 0; i < c->n; i++) {
		uint32_t nin = 1 + (uint32_t)(rnd(seed) % 3), x = UINT32_MAX;

		c->root[i] = i;
		size[i] = ALIGN * (1 + rnd(seed) % 16);
		out[i] = rnd(seed) % 12 == 0;
		for (k = 0; i && k < nin; k++) {
			do
				in[k] = (uint32_t)(rnd(seed) % i);
			while (dead[in[k]]);
		}
		if (i && rnd(seed) % 3 == 0 && !out[in[0]]) {
			x = in[0];
			size[i] = size[c->root[x]];
			c->root[i] = c->root[x];
		}
		for (sum = size[i], k = 0; i && k < nin; k++)
			sum += size[in[k]];
		if (sum > foot)
			foot = sum;
		ortmem_plan_add_value(p, size[i], out[i] ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		ortmem_plan_add_node(p, i ? in : NULL, i ? nin : 0, &i, 1);
		if (x != UINT32_MAX) {
			ortmem_plan_hint_inplace(p, i, i, x);
			dead[x] = true;
			c->n_hints++;
		}
	}
	return foot;
}

/* The value of @owner's chain its buffer holds after step @s (node i
 * produces value i), or UINT32_MAX before the chain starts. */
static uint32_t holds(const struct chains *c, uint32_t owner, uint32_t s)
{
	uint32_t v, got = UINT32_MAX;

	for (v = 0; v <= s && v < c->n; v++)
		if (c->root[v] == owner)
			got = v;
	return got;
}

TEST_TIMEOUT(inplace_chains_write_out_and_read_back_the_right_value, 120)
{
	uint64_t seed = 0x1a9ace;
	int g, chained_outs = 0;

	for (g = 0; g < 300; g++) {
		ORTMEM_OPTS(ortmem_plan_stats, st);
		struct ortmem_plan_transfer x[XMAX];
		struct ortmem_plan *p = NULL;
		struct chains c = { .n = 8 + (uint32_t)(rnd(&seed) % (NMAX - 8)) };
		uint32_t home[NMAX], s, v;
		uint64_t s2 = seed, budget, spilled = 0, read = 0, off;
		int n, i;

		budget = ALIGN * (rnd(&seed) % 32);
		{
			struct ortmem_plan *q = NULL;

			ASSERT_EQ(0, ortmem_plan_new(NULL, &q));
			budget += chain_graph(q, &c, &(uint64_t){ s2 });
			ortmem_plan_free(q);
		}
		{
			ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
				    .align = { ALIGN, 64, 4096 }, .max_iterations = 20,
				    .flags = ORTMEM_PLAN_F_VALIDATE);
			ASSERT_EQ(0, ortmem_plan_new(&o, &p));
		}
		chain_graph(p, &c, &s2);
		ASSERT_EQ(0, ortmem_plan_solve(p));
		ASSERT_EQ(0, ortmem_plan_stats(p, &st));
		ASSERT_EQ(c.n_hints, st.n_inplace);
		for (v = 0; v < NMAX; v++)
			home[v] = UINT32_MAX;
		for (s = 0; s < c.n; s++) {
			n = ortmem_plan_transfers(p, s, x, XMAX, NULL);
			ASSERT_LE(0, n);
			ASSERT_GE(XMAX, n);
			/* read-backs before the step: the value the step reads */
			for (i = 0; i < n; i++) {
				uint32_t o = x[i].value, want;

				if (x[i].dir != ORTMEM_PLAN_XFER_IN)
					continue;
				ASSERT_LT(0, s);
				want = holds(&c, o, s - 1);
				ASSERT_NE(UINT32_MAX, want);
				if (home[o] != want)
					TH_LOG("graph %d: step %u reads back value %u of chain %u; its home holds %d",
					       g, s, want, o, (int)home[o]);
				ASSERT_EQ(want, home[o]);
				ASSERT_EQ(0, ortmem_plan_staging_offset(p, want, s, &off));
				EXPECT_EQ(off, x[i].device_offset);
				read += x[i].bytes;
			}
			/* write-outs after it: the buffer holds one value from
			 * their earliest step to their step */
			for (i = 0; i < n; i++) {
				uint32_t o = x[i].value, now = holds(&c, o, s);

				if (x[i].dir != ORTMEM_PLAN_XFER_OUT)
					continue;
				ASSERT_LE(x[i].earliest, s);
				if (holds(&c, o, x[i].earliest) != now)
					TH_LOG("graph %d: the write-out of chain %u after step %u may start after step %u, when the buffer holds value %d, not %u",
					       g, o, s, x[i].earliest,
					       (int)holds(&c, o, x[i].earliest), now);
				ASSERT_EQ(now, holds(&c, o, x[i].earliest));
				chained_outs += now != o;
				home[o] = now;
				spilled += x[i].bytes;
			}
		}
		EXPECT_EQ(st.spill_bytes, spilled);
		EXPECT_EQ(st.prefetch_bytes, read);
		ortmem_plan_free(p);
	}
	/* the graphs did write out values after the first of their chain */
	EXPECT_LT(20, chained_outs);
}

TEST_HARNESS_MAIN
