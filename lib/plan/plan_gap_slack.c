// SPDX-License-Identifier: MIT
/*
 * The gap placement's slack sweeps (the placement is in plan_gaps.c;
 * Documentation/lib/placement.rst): sweeps asked for a little less than
 * the budget, each plan followed by allocator passes, which run side by
 * side where the plan has threads (plan_gap_pass.c).
 */
#include <stdlib.h>
#include <string.h>

#include "plan_gaps.h"

/* The allocator's rules a slack sweep's plan is followed under, the most
 * often cheapest first (measured on random DAGs): how a buffer seats
 * (ortmem__plan_online()) matters more than whom it evicts.  Each pass
 * is followed by its twin (the other eviction rule, ORTMEM__PLAN_ENDFIT
 * kept) where that would make another plan. */
static const int gp_pass_rule[] = { ORTMEM__PLAN_ENDFIT, 0 };
#define GAP_CHAINS ((uint32_t)(sizeof(gp_pass_rule) / sizeof(gp_pass_rule[0])))

/*
 * Was the plan @off (of @nt touches) followed already?  Else it joins the
 * @n_seen kept in @seen.  Two victim rules often evict the same gaps, at
 * one slack level or at two, and a pass following the same plan makes the
 * same plan again: on a 520-node DAG at 90 %, a level's second sweep was
 * its first's plan, 1.4 ms of a 10 ms budget spent on passes already run.
 */
static bool gp_seen(uint8_t *seen, uint32_t *n_seen, const uint8_t *off, uint32_t nt)
{
	uint32_t k;

	if (!seen)
		return false;
	for (k = 0; k < *n_seen; k++)
		if (!memcmp(seen + (size_t)k * nt, off, nt))
			return true;
	memcpy(seen + (size_t)(*n_seen)++ * nt, off, nt);
	return false;
}

/* The slack phase's state: the plans followed, the batch being filled
 * (w->ch). */
struct gp_slack {
	uint8_t *seen;		/* the plans followed, kept as the guides */
	uint32_t n_seen;
	uint32_t per_batch;	/* guides a batch follows at once */
	uint32_t n;		/* chains in the batch */
	int rule_or;		/* flags the passes add to their rules */
};

/* The chains following @guide join the batch; the first plan's pass is
 * the first chain's (its work began at @since). */
static void gs_follow(struct gp_win *w, struct gp_slack *s, const uint8_t *guide,
		      bool first, uint64_t since)
{
	uint32_t r;

	for (r = 0; r < GAP_CHAINS; r++) {
		struct gp_chain *ch = &w->ch[s->n++];

		ortmem__plan_gp_chain_set(ch, guide, NULL, gp_pass_rule[r] | s->rule_or,
					  (gp_pass_rule[r] ^ 1) | s->rule_or, 0);
		ch->first = first && !r;
		ch->since = since;
	}
}

static int gs_run(struct gap_ctx *c, struct gp_win *w, struct gp_slack *s)
{
	int ret;

	/* the helpers start when a batch first has work beside the first
	 * plan's pass (a thread costs 20-100 us to start) */
	if (!w->pool && w->threads > 1 && s->n > 1 && ortmem__plan_gp_room(w))
		w->pool = ortmem__pool_start(w->threads);
	ret = ortmem__plan_gp_chains(c, w, w->ch, s->n);
	s->n = 0;
	return ret;
}

/*
 * Allocator passes following sweeps asked for a little less than the
 * budget (room for fragmentation), under each of the sweep's rules (which
 * rule leaves the most packable plan is not the one that moves least
 * before offsets); stops when no sweep alone costs less than the best
 * plan.  With threads, the passes following a plan run side by side, and
 * with four or more the plans of a level's sweeps too (the sweeps run
 * first, then their passes: a sweep is a tenth of a pass's time).
 */
int ortmem__plan_gp_slack(struct gap_ctx *c, struct gp_win *w, int from, int to, int rule_or)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], rules = c->dense ? 1 : GAP_RULES;
	uint32_t per_batch = (w->threads + GAP_CHAINS - 1) / GAP_CHAINS;
	struct gp_slack s = { .n = 0, .rule_or = rule_or };
	int ret = 0, slack, sweep;
	uint32_t k;

	/* the plans followed (without room for them, a plan is followed
	 * again: it costs time, not bytes; and they are the guides of a
	 * batch, without them one guide, c->best, at a time) */
	s.seen = malloc((size_t)nt * (uint32_t)(to - from + 1) * rules + 1);
	s.per_batch = s.seen ? (per_batch < rules ? per_batch : rules) : 1;
	if (s.per_batch * GAP_CHAINS > w->n_ch)
		s.per_batch = w->n_ch / GAP_CHAINS;
	/* On random DAGs they are where most of the room for fragmentation
	 * is found.  The first (the least slack, Belady's rule, its first
	 * way of seating) is part of the first plan, made whatever the
	 * clock says: on random DAGs it is the one that pays most often. */
	for (slack = from; slack <= to && !ret &&
	     ((slack == 1 && !c->dense) || ortmem__plan_gp_room(w)); slack++) {
		bool cheaper = false;

		for (k = 0; k < plan->n_nodes; k++)
			c->bud[k] = c->budget - (c->budget >> (8 - slack));
		for (sweep = 0; sweep < (int)rules && !ret &&
		     ((slack == 1 && !sweep && !c->dense) || ortmem__plan_gp_room(w)); sweep++) {
			bool first = slack == 1 && !sweep && !c->dense;
			uint64_t t = ortmem__now_ns(), c0 = w->closing_ns;

			ortmem__plan_gap_sweep(c, sweep);
			memcpy(c->best, c->off, nt);
			if (gp_seen(s.seen, &s.n_seen, c->best, nt) ||
			    ortmem__plan_gap_cost(plan, c->best) >= w->cost) {
				if (first)
					ortmem__plan_gp_first_done(w, t, c0);
				continue;	/* followed already, or less room only costs more */
			}
			cheaper = true;
			gs_follow(w, &s, s.seen ? s.seen + (size_t)(s.n_seen - 1) * nt : c->best,
				  first, t);
			if (s.n == s.per_batch * GAP_CHAINS)
				ret = gs_run(c, w, &s);
		}
		if (!ret && s.n)
			ret = gs_run(c, w, &s);
		if (!cheaper)
			break;
	}
	for (k = 0; k < plan->n_nodes; k++)
		c->bud[k] = c->budget;
	free(s.seen);
	return ret;
}
