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

/* Larger is a better victim: the rules the sweep is run under (rule 0
 * chooses by gp_belady_before(), exactly). */
static double gp_score(const struct gap_ctx *c, const struct gap *g, uint32_t s,
		       uint64_t need, int rule)
{
	double units = (g->tail ? 0 : 1) + (c->written[g->buf] ? 0 : 1);
	double dist = (double)(g->tail ? c->plan->n_nodes + 1u : g->end) - s;
	double useful = (double)(c->asz[g->buf] < need ? c->asz[g->buf] : need);

	if (rule == 0)		/* Belady: furthest next use, larger first */
		return dist * 4.0 + (double)c->asz[g->buf] / (double)(c->asz[g->buf] + need);
	if (units == 0)
		return 1e300;	/* already written, never read again: free */
	if (rule == 1)
		return dist / units;
	if (rule == 2)
		return useful * dist / (units * (double)c->asz[g->buf]);
	return useful / (units * (double)c->asz[g->buf]) * 1e6 + dist;
}

static void gp_evict(struct gap_ctx *c, const struct gap *g, uint32_t from)
{
	uint32_t t;

	c->off[g->k] = 1;
	c->written[g->buf] = true;
	for (t = from; t < g->end; t++)
		c->prof[t] -= c->asz[g->buf];
}

/* One sweep under @rule; the off gaps land in c->off, the cost returned. */
uint64_t ortmem__plan_gap_sweep(struct gap_ctx *c, int rule)
{
	uint32_t n = c->plan->n_nodes, s, i, na = 0, ne = 0;

	memcpy(c->prof, c->base, sizeof(*c->prof) * n);
	memset(c->off, 0, c->plan->touch_idx[c->plan->n_bufs]);
	memset(c->written, 0, sizeof(*c->written) * c->plan->n_bufs);
	for (s = 0; s < n; s++) {
		for (i = c->by_first_idx[s]; i < c->by_first_idx[s + 1]; i++)
			c->active[na++] = c->by_first[i];
		while (c->prof[s] > c->bud[s]) {
			double best = -1.0, sc;
			uint32_t at = 0, j;

			for (j = 0; j < na;) {
				const struct gap *g = &c->gaps[c->active[j]];

				if (g->end <= s || c->off[g->k]) {
					c->active[j] = c->active[--na];
					continue;
				}
				sc = gp_score(c, g, s, c->prof[s] - c->bud[s], rule);
				if (best < 0 || (rule ? sc > best :
				    gp_belady_before(c, g, &c->gaps[c->active[at]]))) {
					best = sc;
					at = j;
				}
				j++;
			}
			if (best < 0)
				break;	/* only touches left: the step's own footprint */
			c->order[ne++] = c->active[at];
			gp_evict(c, &c->gaps[c->active[at]], s);
		}
	}
	/* Take back what fits again, latest eviction first. */
	memcpy(c->prof, c->base, sizeof(*c->prof) * n);
	for (i = 0; i < c->n_gaps; i++)
		if (c->off[c->gaps[i].k])
			for (s = c->gaps[i].first; s < c->gaps[i].end; s++)
				c->prof[s] -= c->asz[c->gaps[i].buf];
	while (ne--) {
		const struct gap *g = &c->gaps[c->order[ne]];
		bool fits = true;

		for (s = g->first; s < g->end && fits; s++)
			fits = c->prof[s] + c->asz[g->buf] <= c->bud[s];
		if (!fits)
			continue;
		c->off[g->k] = 0;
		for (s = g->first; s < g->end; s++)
			c->prof[s] += c->asz[g->buf];
	}
	return ortmem__plan_gap_cost(c->plan, c->off);
}

/* The cheapest of the rules under c->bud, into c->best. */
void ortmem__plan_gap_place(struct gap_ctx *c)
{
	uint64_t best = UINT64_MAX, cost;
	uint32_t nt = c->plan->touch_idx[c->plan->n_bufs];
	int rule;

	for (rule = 0; rule < GAP_RULES; rule++) {
		cost = ortmem__plan_gap_sweep(c, rule);
		if (cost < best) {
			best = cost;
			c->rule = rule;
			memcpy(c->best, c->off, nt);
		}
	}
}
