// SPDX-License-Identifier: MIT
/*
 * The whole transfer schedule played on the device arena's bytes, as a
 * runtime would run it (ortmem_plan_transfers(3)): before step s, its
 * moves, then every read-back whose earliest step is s (those of later
 * steps included: they may land that early); the step reads its inputs
 * and writes its outputs where the plan puts them; after it, its
 * write-outs.  The arena is modelled in ALIGN-byte granules, each naming
 * the value whose bytes it holds.  Every input must find its own value's
 * bytes (a view: its root's), every write-out must read the same bytes at
 * its earliest step as at its step (it may run any time between), and
 * every read-back must have a copy off the device to read.  Random graphs
 * with the inputs a runtime gives: empty values, views (also larger than
 * their source), in-place hints, repeated inputs, host budgets from none
 * to tiny, with and without moves within the arena.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#define PLAN_TEST_GRAPH
#include "plan_test.h"

#define NONE UINT32_MAX
#define XMAX 256

struct pg {
	uint32_t nv, nn;
	uint64_t size[1024];
	uint32_t view[1024];	/* its source, or NONE */
	bool output[1024];
	uint32_t in[256][4], n_in[256], out[256][2], n_out[256];
	int hint[256];		/* the input whose buffer output 0 may take, or -1 */
};

static uint32_t root_of(const struct pg *g, uint32_t v)
{
	while (g->view[v] != NONE)
		v = g->view[v];
	return v;
}

/* Node i reads 1-4 values (near ones, or any earlier: shape 0 or 1) and
 * makes one or two; a quarter of the sizes 0, one in twenty outputs a
 * view of the node's first input, a fifth of the nodes hinted in place. */
static void pg_random(struct pg *g, uint32_t n, int shape, uint64_t *seed)
{
	uint32_t s, k;

	memset(g, 0, sizeof(*g));
	g->nn = n;
	g->size[g->nv] = ALIGN * (1 + rnd(seed) % 64);
	g->view[g->nv++] = NONE;
	for (s = 0; s < n; s++) {
		g->n_in[s] = 1 + (uint32_t)(rnd(seed) % 4);
		for (k = 0; k < g->n_in[s]; k++) {
			uint32_t back = shape ? g->nv : (g->nv < 6 ? g->nv : 6);

			g->in[s][k] = g->nv - 1 - (uint32_t)(rnd(seed) % back);
		}
		g->n_out[s] = 1 + (rnd(seed) % 5 == 0);
		for (k = 0; k < g->n_out[s]; k++) {
			uint32_t v = g->nv++;

			g->size[v] = rnd(seed) % 4 ? 1 + rnd(seed) % (64 * ALIGN) : 0;
			g->output[v] = rnd(seed) % 40 == 0;
			g->view[v] = k == 0 && rnd(seed) % 20 == 0 ? g->in[s][0] : NONE;
			g->out[s][k] = v;
		}
		g->hint[s] = rnd(seed) % 5 == 0 ? (int)g->in[s][0] : -1;
	}
}

/* The largest step's buffers, aligned: each root at its largest view. */
static uint64_t pg_footprint(const struct pg *g)
{
	uint64_t foot = 0, buf[1024];
	uint32_t s, k, j, v;

	for (v = 0; v < g->nv; v++)
		buf[v] = g->size[v];
	for (v = 0; v < g->nv; v++)
		if (g->view[v] != NONE && g->size[v] > buf[root_of(g, v)])
			buf[root_of(g, v)] = g->size[v];
	for (s = 0; s < g->nn; s++) {
		uint32_t seen[6], ns = 0;
		uint64_t f = 0;

		for (k = 0; k < g->n_in[s] + g->n_out[s]; k++) {
			v = root_of(g, k < g->n_in[s] ? g->in[s][k] : g->out[s][k - g->n_in[s]]);
			for (j = 0; j < ns && seen[j] != v; j++)
				;
			if (j == ns && v) {	/* value 0 is a graph input */
				seen[ns++] = v;
				f += (buf[v] + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
			}
		}
		foot = f > foot ? f : foot;
	}
	return foot;
}

static struct ortmem_plan *pg_plan(const struct pg *g, uint64_t dev, uint64_t host,
				   uint32_t flags, uint32_t ratio)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { dev, host, 0 },
		    .align = { ALIGN, 64, 4096 }, .max_iterations = 20,
		    .time_budget_us = GENEROUS_BUDGET_US, .flags = flags, .move_ratio = ratio);
	struct ortmem_plan *p = NULL;
	uint32_t v, s;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	for (v = 0; v < g->nv; v++)
		ortmem_plan_add_value(p, g->size[v], g->output[v] ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
	for (v = 0; v < g->nv; v++)
		if (g->view[v] != NONE)
			ortmem_plan_set_view(p, v, g->view[v]);
	for (s = 0; s < g->nn; s++) {
		ortmem_plan_add_node(p, g->in[s], g->n_in[s], g->out[s], g->n_out[s]);
		if (g->hint[s] >= 0)
			ortmem_plan_hint_inplace(p, s, g->out[s][0], (uint32_t)g->hint[s]);
	}
	return p;
}

struct play {
	uint32_t *mem;		/* per granule: the value whose bytes it holds */
	uint32_t **copy;	/* per buffer owner: its bytes off the device */
	uint32_t **at_start;	/* per step and write-out: the bytes at its earliest */
	uint64_t in_bytes, out_bytes, move_bytes;
	char why[200];
};

static uint64_t granules(uint64_t bytes)
{
	return (bytes + ALIGN - 1) / ALIGN;
}

/* Where step @s finds value @v on the device. */
static int pg_where(const struct ortmem_plan *p, uint32_t v, uint32_t s, uint64_t *off)
{
	int r = ortmem_plan_staging_offset(p, v, s, off);

	if (r == -ENOENT)
		r = ortmem_plan_offset(p, v, off) == ORTMEM_TIER_DEVICE ? 0 : -1;
	return r;
}

/* Step @s of @g under plan @p, with its transfers @x (@n): 0, or -1 with
 * the reason in pl->why. */
static int play_step(const struct ortmem_plan *p, const struct pg *g, struct play *pl,
		     uint32_t s, const struct ortmem_plan_transfer (*all)[XMAX],
		     const int *n_all)
{
	const struct ortmem_plan_transfer *x = all[s];
	uint32_t k, t, q;
	uint64_t off;
	int i;

	for (i = 0; i < n_all[s]; i++)
		if (x[i].dir == ORTMEM_PLAN_XFER_MOVE) {
			uint32_t *tmp = malloc(sizeof(*tmp) * (granules(x[i].bytes) + 1));

			for (q = 0; q < granules(x[i].bytes); q++)
				tmp[q] = pl->mem[x[i].src_offset / ALIGN + q];
			memcpy(&pl->mem[x[i].device_offset / ALIGN], tmp,
			       sizeof(*tmp) * granules(x[i].bytes));
			free(tmp);
			pl->move_bytes += x[i].bytes;
		}
	for (t = s; t < g->nn; t++)	/* every read-back that may land now */
		for (i = 0; i < n_all[t]; i++) {
			const struct ortmem_plan_transfer *r = &all[t][i];

			if (r->dir != ORTMEM_PLAN_XFER_IN || r->earliest != s)
				continue;
			if (!pl->copy[r->value]) {
				snprintf(pl->why, sizeof(pl->why),
					 "the read-back of %u for step %u has no copy to read", r->value, t);
				return -1;
			}
			memcpy(&pl->mem[r->device_offset / ALIGN], pl->copy[r->value],
			       sizeof(uint32_t) * granules(r->bytes));
			pl->in_bytes += r->bytes;
		}
	for (k = 0; k < g->n_in[s]; k++) {
		uint32_t v = g->in[s][k], root = root_of(g, v);
		uint64_t sz = g->size[v] < g->size[root] ? g->size[v] : g->size[root];

		if (!root || !sz)
			continue;	/* a graph input, or nothing to read */
		if (pg_where(p, v, s, &off)) {
			snprintf(pl->why, sizeof(pl->why), "step %u: input %u has no device offset", s, v);
			return -1;
		}
		for (q = 0; q < granules(sz); q++)
			if (pl->mem[off / ALIGN + q] != root) {
				snprintf(pl->why, sizeof(pl->why),
					 "step %u reads value %u at %llu: its granule %u holds %d",
					 s, v, (unsigned long long)off, q, (int)pl->mem[off / ALIGN + q]);
				return -1;
			}
	}
	for (k = 0; k < g->n_out[s]; k++) {
		uint32_t v = g->out[s][k];

		if (g->view[v] != NONE || !g->size[v])
			continue;	/* a view writes nothing */
		if (pg_where(p, v, s, &off)) {
			snprintf(pl->why, sizeof(pl->why), "step %u: output %u has no device offset", s, v);
			return -1;
		}
		for (q = 0; q < granules(g->size[v]); q++)
			pl->mem[off / ALIGN + q] = v;
	}
	return 0;
}

/* After step @s: the write-outs that may start now take the bytes they
 * would read; those listed at @s compare them with the bytes now and
 * keep them as the copy off the device. */
static int play_outs(const struct pg *g, struct play *pl, uint32_t s,
		     const struct ortmem_plan_transfer (*all)[XMAX], const int *n_all)
{
	uint32_t t, q;
	int i;

	for (t = s; t < g->nn; t++)
		for (i = 0; i < n_all[t]; i++) {
			const struct ortmem_plan_transfer *w = &all[t][i];
			uint32_t **snap = &pl->at_start[t * XMAX + (uint32_t)i];

			if (w->dir != ORTMEM_PLAN_XFER_OUT || w->earliest != s)
				continue;
			*snap = malloc(sizeof(uint32_t) * (granules(w->bytes) + 1));
			memcpy(*snap, &pl->mem[w->device_offset / ALIGN],
			       sizeof(uint32_t) * granules(w->bytes));
		}
	for (i = 0; i < n_all[s]; i++) {
		const struct ortmem_plan_transfer *w = &all[s][i];
		uint32_t *snap = pl->at_start[s * XMAX + (uint32_t)i];

		if (w->dir != ORTMEM_PLAN_XFER_OUT)
			continue;
		for (q = 0; snap && q < granules(w->bytes); q++)
			if (snap[q] != pl->mem[w->device_offset / ALIGN + q])
				break;
		if (!snap || q < granules(w->bytes)) {
			snprintf(pl->why, sizeof(pl->why),
				 "the write-out of %u after step %u reads other bytes after step %u",
				 w->value, s, w->earliest);
			return -1;
		}
		free(pl->copy[w->value]);
		pl->copy[w->value] = snap;
		pl->at_start[s * XMAX + (uint32_t)i] = NULL;
		pl->out_bytes += w->bytes;
	}
	return 0;
}

/* Does step @s use buffer owner @v (a value whose root it is, read or
 * written)? */
static bool pg_uses(const struct pg *g, uint32_t s, uint32_t v)
{
	uint32_t i;

	for (i = 0; i < g->n_in[s]; i++)
		if (root_of(g, g->in[s][i]) == v)
			return true;
	for (i = 0; i < g->n_out[s]; i++)
		if (root_of(g, g->out[s][i]) == v)
			return true;
	return false;
}

/* May an in-place hint write another value into @v's buffer (whose uses
 * pg_uses() then does not see)? */
static bool pg_chained(const struct pg *g, uint32_t v)
{
	uint32_t s;

	for (s = 0; s < g->nn; s++)
		if (g->hint[s] >= 0 && root_of(g, (uint32_t)g->hint[s]) == v)
			return true;
	return false;
}

/* Moves of a value after an earlier one with no use of it in between:
 * two moves in one gap (the layout by compaction's waypoints). */
static uint32_t second_moves(const struct pg *g, struct ortmem_plan_transfer (*all)[XMAX],
			     const int *n_all)
{
	uint32_t s, t, u, prev, n = 0;

	for (s = 0; s < g->nn; s++)
		for (t = 0; t < (uint32_t)n_all[s]; t++) {
			uint32_t v = all[s][t].value;

			if (all[s][t].dir != ORTMEM_PLAN_XFER_MOVE || pg_chained(g, v))
				continue;
			for (prev = s; prev-- > 0;) {
				for (u = 0; u < (uint32_t)n_all[prev]; u++)
					if (all[prev][u].dir == ORTMEM_PLAN_XFER_MOVE &&
					    all[prev][u].value == v)
						break;
				if (u < (uint32_t)n_all[prev] || pg_uses(g, prev, v))
					break;
			}
			/* stopped at a move, not at a use */
			n += prev != UINT32_MAX && !pg_uses(g, prev, v);
		}
	return n;
}

TEST_TIMEOUT(schedules_play_on_the_arena_bytes, 300)
{
	static struct ortmem_plan_transfer all[256][XMAX];
	static int n_all[256];
	uint64_t seed = 0x9a7e;
	uint32_t g_i, played = 0, moved = 0, early = 0, at_use = 0, second = 0;
	uint32_t graphs = TEST_ROUNDS(120);

	TSAN_SKIP_ONE_THREAD();
	for (g_i = 0; g_i < graphs; g_i++) {
		struct pg g;
		uint32_t n = 20 + (uint32_t)(rnd(&seed) % 200), b;
		uint64_t foot, lb;

		pg_random(&g, n, (int)(rnd(&seed) % 2), &seed);
		foot = pg_footprint(&g);
		{
			ORTMEM_OPTS(ortmem_plan_stats, st);
			struct ortmem_plan *p = pg_plan(&g, 0, 0, 0, 0);

			ASSERT_NONNULL(p);
			ASSERT_EQ(0, ortmem_plan_solve(p));
			ASSERT_EQ(0, ortmem_plan_stats(p, &st));
			lb = st.lower_bound;
			ortmem_plan_free(p);
		}
		for (b = 0; b < 4; b++) {
			ORTMEM_OPTS(ortmem_plan_stats, st);
			uint64_t dev = b ? lb / 10 * (3 * b) : foot;
			uint64_t host = rnd(&seed) % 3 ? 0 : ALIGN * (1 + rnd(&seed) % 64);
			uint32_t flags = rnd(&seed) % 3 ? 0 : ORTMEM_PLAN_F_NO_MOVE, s, t;
			/* a move nearly free: the layout by compaction, which may
			 * move a value twice between two of its uses, wins more */
			uint32_t ratio = rnd(&seed) % 2 ? 0 : ORTMEM_PLAN_MOVE_RATIO_MAX;
			struct play pl = { 0 };
			struct ortmem_plan *p;
			int ret = 0;

			dev = dev > foot ? dev : foot;
			p = pg_plan(&g, dev, host, flags | ORTMEM_PLAN_F_VALIDATE, ratio);
			ASSERT_NONNULL(p);
			if (ortmem_plan_solve(p))
				TH_LOG("graph %u budget %llu: %s", g_i, (unsigned long long)dev,
				       ortmem_last_error_message());
			ASSERT_EQ(0, ortmem_plan_stats(p, &st));
			pl.mem = malloc(sizeof(*pl.mem) * (granules(dev) + 1));
			pl.copy = calloc(g.nv, sizeof(*pl.copy));
			pl.at_start = calloc((size_t)n * XMAX, sizeof(*pl.at_start));
			ASSERT_TRUE(pl.mem && pl.copy && pl.at_start);
			for (s = 0; s <= granules(dev); s++)
				pl.mem[s] = NONE;
			for (s = 0; s < n; s++) {
				n_all[s] = ortmem_plan_transfers(p, s, all[s], XMAX, NULL);
				ASSERT_LE(0, n_all[s]);
				ASSERT_GE(XMAX, n_all[s]);
				for (t = 0; t < (uint32_t)n_all[s]; t++) {
					uint64_t off;

					early += all[s][t].dir == ORTMEM_PLAN_XFER_IN &&
						 all[s][t].earliest < s;
					/* a move right before a step that uses the value
					 * (a pin slide, placement.rst) */
					at_use += all[s][t].dir == ORTMEM_PLAN_XFER_MOVE &&
						  !ortmem_plan_staging_offset(p, all[s][t].value, s, &off);
				}
			}
			for (s = 0; s < n && !ret; s++)
				ret = play_step(p, &g, &pl, s, all, n_all) ||
				      play_outs(&g, &pl, s, all, n_all);
			if (ret)
				TH_LOG("graph %u, device %llu, host %llu, flags %u: %s", g_i,
				       (unsigned long long)dev, (unsigned long long)host, flags,
				       pl.why);
			EXPECT_EQ(0, ret);
			if (!ret) {
				EXPECT_EQ(st.prefetch_bytes, pl.in_bytes);
				EXPECT_EQ(st.spill_bytes, pl.out_bytes);
				EXPECT_EQ(st.move_bytes, pl.move_bytes);
			}
			second += second_moves(&g, all, n_all);
			played += st.spill_bytes != 0;
			moved += st.move_bytes != 0;
			for (s = 0; s < g.nv; s++)
				free(pl.copy[s]);
			for (s = 0; s < (uint32_t)n * XMAX; s++)
				free(pl.at_start[s]);
			free(pl.mem);
			free(pl.copy);
			free(pl.at_start);
			ortmem_plan_free(p);
		}
	}
	TH_LOG("%u schedules with write-outs played, %u with moves (%u moves right before a step that uses the value, %u a value's second between two of its uses), %u read-backs ahead of their step",
	       played, moved, at_use, second, early);
	/* the cases the model is for were there (in 120 graphs: 100, 10,
	 * 1 and 100 at least) */
	EXPECT_LT(graphs * 100 / 120, played);
	EXPECT_LT(graphs * 10 / 120, moved);
	EXPECT_LT(0, second);
	EXPECT_LT(graphs * 100 / 120, early);
}

TEST_HARNESS_MAIN
