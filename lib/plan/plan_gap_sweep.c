// SPDX-License-Identifier: MIT
/*
 * The gap placement's sweeps (plan_gaps.c has the rest; the method is in
 * Documentation/lib/placement.rst): walking the steps, wherever the bytes
 * kept on the device exceed the step's budget, a gap live there goes off
 * until it fits, the victim chosen by one of GAP_RULES rules; the
 * cheapest result is kept.
 */
#include "plan_gaps.h"

/*
 * Belady's victim order (rule 0), exact: is @g a better victim than @h?
 * The furthest next use first (a trailing gap's never comes), then the
 * larger, then the lower buffer index.  The order is total, so the choice
 * depends on no iteration order (the active list's is arbitrary: on a tie
 * it picked whichever came first, a plan another tie-break could beat) and
 * no rounding (a score mixing distance and size would round): the sweep
 * makes, step by step, the choices of the simulations the placement is
 * measured against (selftests/plan/plan_belady.h, bench/place), so what it
 * keeps is never dearer than theirs.
 */
static bool gp_belady_before(const struct gap_ctx *c, const struct gap *g,
			     const struct gap *h)
{
	uint32_t dg = g->tail ? UINT32_MAX : g->end, dh = h->tail ? UINT32_MAX : h->end;

	if (dg != dh)
		return dg > dh;
	if (c->asz[g->buf] != c->asz[h->buf])
		return c->asz[g->buf] > c->asz[h->buf];
	return g->buf < h->buf;
}

/* Larger is a better victim: the rules the sweep is run under but the
 * first (rule 0 chooses by gp_belady_before(), exactly). */
static double gp_score(const struct gap_ctx *c, const struct gap *g, uint32_t s,
		       uint64_t need, int rule)
{
	double units = (g->tail ? 0 : 1) + (c->written[g->buf] ? 0 : 1);
	double dist = (double)(g->tail ? c->plan->n_nodes + 1u : g->end) - s;
	double useful = (double)(c->asz[g->buf] < need ? c->asz[g->buf] : need);

	if (units == 0)
		return 1e300;	/* already written, never read again: free */
	if (rule == 1)
		return dist / units;
	if (rule == 2)
		return useful * dist / (units * (double)c->asz[g->buf]);
	return useful / (units * (double)c->asz[g->buf]) * 1e6 + dist;
}

/* A budget as the range tree holds it: the sizes and their sum stay below
 * 2^62 (plan_solve.c), so a larger budget compares the same. */
static int64_t gp_cap(uint64_t bud)
{
	return bud > 1ull << 62 ? (int64_t)(1ull << 62) : (int64_t)bud;
}

/* The tree from the profile with every gap kept, less each step's budget. */
static void gp_over_reset(struct gap_ctx *c)
{
	uint32_t s;

	for (s = 0; s < c->plan->n_nodes; s++)
		c->vals[s] = (int64_t)c->base[s] - gp_cap(c->bud[s]);
	ortmem__rt_set(&c->over, c->vals);
}

static void gp_evict(struct gap_ctx *c, const struct gap *g, uint32_t from)
{
	c->off[g->k] = 1;
	c->written[g->buf] = true;
	ortmem__rt_add(&c->over, from, g->end, -(int64_t)c->asz[g->buf]);
}

/* Belady's order by gap id, for the heap of victims (c->active). */
static bool gp_belady_first(const void *ctx, uint32_t a, uint32_t b)
{
	const struct gap_ctx *c = ctx;

	return gp_belady_before(c, &c->gaps[a], &c->gaps[b]);
}

/*
 * Belady's victim at step @s: the heap's top once the gaps that ended are
 * gone from it (a gap leaves only so, or when sent off).  The order puts
 * trailing gaps first, then by end, so below a top that is still live
 * nothing needs looking at: O(log gaps) per eviction, the choice the scan
 * below makes.
 */
static int64_t gp_belady_victim(struct gap_ctx *c, struct plan_heap *h, uint32_t s)
{
	while (h->n && c->gaps[h->v[0]].end <= s)
		ortmem__heap_pop(h);
	return h->n ? (int64_t)h->v[0] : -1;
}

/* The best victim at step @s under @rule (1 to GAP_RULES - 1), a scan of
 * the live gaps (ended ones dropped on the way), or -1. */
static int64_t gp_scan_victim(struct gap_ctx *c, uint32_t *na, uint32_t s,
			      uint64_t need, int rule)
{
	double best = -1.0, sc;
	uint32_t at = 0, j;

	for (j = 0; j < *na;) {
		const struct gap *g = &c->gaps[c->active[j]];

		if (g->end <= s || c->off[g->k]) {
			c->active[j] = c->active[--*na];
			continue;
		}
		sc = gp_score(c, g, s, need, rule);
		if (best < 0 || sc > best) {
			best = sc;
			at = j;
		}
		j++;
	}
	return best < 0 ? -1 : (int64_t)c->active[at];
}

/* Take back what fits again, latest eviction first (@ne of them). */
static void gp_take_back(struct gap_ctx *c, uint32_t ne)
{
	uint32_t i;

	gp_over_reset(c);
	for (i = 0; i < c->n_gaps; i++)
		if (c->off[c->gaps[i].k])
			ortmem__rt_add(&c->over, c->gaps[i].first, c->gaps[i].end,
				       -(int64_t)c->asz[c->gaps[i].buf]);
	while (ne--) {
		const struct gap *g = &c->gaps[c->order[ne]];
		int64_t sz = (int64_t)c->asz[g->buf];

		if (ortmem__rt_max(&c->over, g->first, g->end) + sz > 0)
			continue;
		c->off[g->k] = 0;
		ortmem__rt_add(&c->over, g->first, g->end, sz);
	}
}

/*
 * One sweep under @rule; the off gaps land in c->off, the cost returned.
 * The bytes over each step's budget are a range tree, so that sending a
 * gap off costs O(log steps), not its length; Belady's rule takes its
 * victims from a heap; the other rules scan the live gaps per eviction
 * (on a dense graph too slow for a first plan: see GAP_DENSE_SPAN).
 */
uint64_t ortmem__plan_gap_sweep(struct gap_ctx *c, int rule)
{
	uint32_t n = c->plan->n_nodes, s, i, na = 0, ne = 0;
	struct plan_heap h = { .v = c->active, .before = gp_belady_first, .ctx = c };
	int64_t over, v;

	memset(c->off, 0, c->plan->touch_idx[c->plan->n_bufs]);
	memset(c->written, 0, sizeof(*c->written) * c->plan->n_bufs);
	gp_over_reset(c);
	for (s = 0; s < n; s++) {
		for (i = c->by_first_idx[s]; i < c->by_first_idx[s + 1]; i++) {
			if (rule)
				c->active[na++] = c->by_first[i];
			else
				ortmem__heap_push(&h, c->by_first[i]);
		}
		while ((over = ortmem__rt_max(&c->over, s, s + 1)) > 0) {
			v = rule ? gp_scan_victim(c, &na, s, (uint64_t)over, rule) :
				   gp_belady_victim(c, &h, s);
			if (v < 0)
				break;	/* only touches left: the step's own footprint */
			if (!rule)
				ortmem__heap_pop(&h);
			c->order[ne++] = (uint32_t)v;
			gp_evict(c, &c->gaps[v], s);
		}
	}
	gp_take_back(c, ne);
	return ortmem__plan_gap_cost(c->plan, c->off);
}

/* The cheapest of the rules under c->bud, into c->best. */
void ortmem__plan_gap_place(struct gap_ctx *c)
{
	uint64_t best = UINT64_MAX, cost;
	uint32_t nt = c->plan->touch_idx[c->plan->n_bufs];
	int rule;

	/* a dense graph's first plan: Belady's rule alone (the others scan) */
	for (rule = 0; rule < (c->dense ? 1 : GAP_RULES); rule++) {
		cost = ortmem__plan_gap_sweep(c, rule);
		if (cost < best) {
			best = cost;
			c->rule = rule;
			memcpy(c->best, c->off, nt);
		}
	}
}
