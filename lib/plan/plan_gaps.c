// SPDX-License-Identifier: MIT
/*
 * Device residency per gap (Documentation/lib/placement.rst).
 *
 * A buffer's life is split at the steps that touch it (read or write it):
 * gap k runs from its k-th touch to the next one (the last gap of a graph
 * output runs to the end of the plan).  Every touch is on the device.  In a
 * gap the buffer is either kept on the device or sent off it: values are
 * immutable once produced, so a buffer is written out once per value it
 * holds (once in its life unless an in-place chain writes it again), the
 * first time a gap of that value goes off, and read back once before the
 * touch that ends each off gap (a trailing gap needs no read-back).
 *
 * The placement is a sweep over the steps, as Belady's rule would run it:
 * at a step where the bytes kept on the device exceed the budget, send off
 * a gap live there until it fits.  Which gap is the only choice, and the
 * sweep is run under a few rules (furthest next use; furthest next use per
 * byte of transfer it costs; useful bytes freed per byte of transfer), the
 * cheapest result kept: plain furthest-next-use is one of the rules, so
 * the plan never moves more than Belady's.  A last pass takes back onto the
 * device every off gap that fits again (a later eviction may have made the
 * room).  Under Belady's rule a sweep is O(g log g) for g gaps (a heap and
 * a range tree, plan_gap_sweep.c); the other rules scan the gaps live at
 * each eviction.
 *
 * Offsets: each resident interval (a run of touches joined by kept gaps)
 * is one packing item.  The profile fitting the budget does not promise
 * the packing does (fragmentation), so the sweep's plan is one candidate
 * among allocator passes (plan_online.c) that always fit: one follows the
 * sweep's plan and takes the packer's offsets where they still fit,
 * sending off more only where the packing overran; one is the allocator
 * on its own; then, while time is left, ones following sweeps asked for a
 * little less than the budget, under each rule.  Each pass then keeps on
 * the device the off gaps whose range stayed free (plan_close.c).  The
 * cheapest is kept, and its off gaps that any free range holds across are
 * closed too.
 * Since an allocator pass fits whenever each step's own footprint does, a
 * budget at or above the largest one is never refused.  With the plan's
 * threads, the passes after the first plan run in batches side by side
 * (plan_gap_pass.c, plan_gap_slack.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "plan_gaps.h"

/* One allocator's pass (plan_gap_pass.c), kept when cheaper. */
static int gp_online(struct gap_ctx *c, struct gp_win *w, int rule,
		     const uint8_t *guide, const uint64_t *hint)
{
	return ortmem__plan_gp_online_alt(c, w, rule, 0, guide, hint);
}

/*
 * The cheapest pass without hinted offsets again, with one window
 * clearing at a time taking its second cheapest window instead, kept
 * where it costs less, in order of the clearings (greedy), until the
 * deadline.  The passes are chaotic (a different window changes every
 * seat after it), so a different choice at one clearing often ends
 * cheaper: on random DAGs it saves 0-5 % per budget.
 */
static int gp_alt(struct gap_ctx *c, struct gp_win *w)
{
	uint32_t j = 0, n, batch = w->threads < w->n_ch ? w->threads : w->n_ch;
	int ret = 0;

	if (w->win_rule < 0)
		return 0;
	/* with threads, a batch of second choices at once, each from the
	 * cheapest so far (greedy from batch to batch) */
	while (!ret && j < w->win_n && j < 32 && ortmem__plan_gp_room(w)) {
		for (n = 0; n < batch && j < w->win_n && j < 32; j++)
			if (!(w->win_alt & 1u << j))
				ortmem__plan_gp_chain_set(&w->ch[n++],
					w->win_guided ? w->win_guide : NULL,
					w->win_hinted ? w->hint : NULL, w->win_rule, -1,
					w->win_alt | 1u << j);
		ret = ortmem__plan_gp_chains(c, w, w->ch, n);
	}
	return ret;
}


/* The sweep's plan at the packer's offsets (c->best, plan->touch_off; no
 * moves), kept when it fits and costs less. */
static void gp_keep_packed(struct gap_ctx *c, struct gp_win *w, const struct pk_result *pres)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs];

	if (pres->height > c->budget ||
	    !ortmem__plan_gp_better(w, ortmem__plan_gap_cost(plan, c->best), pres->height))
		return;
	w->cost = ortmem__plan_gap_cost(plan, c->best);
	memcpy(w->off, c->best, nt);
	memcpy(w->toff, plan->touch_off, sizeof(*w->toff) * nt);
	if (w->mv)
		memset(w->mv, 0, sizeof(*w->mv) * nt);
	w->res = *pres;
}

/*
 * The search's plan, when cheaper than the sweep's (in w->guide): packed
 * by the packer's first heuristic (it stands when that fits), and followed
 * by the allocator at those offsets and seating by ends.  It does not
 * replace the sweep's plan: fewer bytes before offsets can pack worse (on
 * random DAGs at the largest step's budget it did, by 7-9 %).
 */
static int gp_exact_candidates(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs];
	uint64_t cost = ortmem__plan_gap_cost(plan, c->best), t = ortmem__now_ns();
	struct pk_result pres = { 0 };
	int ret;

	ortmem__plan_gap_exact(c, cost, t + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC / 64);
	/* the search stops at its share: the rest is first plan (counted as
	 * such in ortmem_plan_stats' first_plan_ns, the end kept) */
	t = ortmem__now_ns();
	if (ortmem__plan_gap_cost(plan, c->best) >= cost)
		return 0;
	ret = ortmem__plan_gap_pack(c, 0, false, &pres);
	if (!ret) {
		gp_keep_packed(c, w, &pres);
		memcpy(w->hint, plan->touch_off, sizeof(*w->hint) * nt);
		ret = gp_online(c, w, 1, c->best, w->hint);
	}
	if (!ret)
		ret = gp_online(c, w, ORTMEM__PLAN_ENDFIT, c->best, NULL);
	memcpy(c->best, w->guide, nt);
	w->first_ns += ortmem__now_ns() - t;
	return ret;
}

/*
 * The slack sweeps' plans (1/128 of the budget left free, then 1/64, ...)
 * packed as a decision: does any packing fit the budget (pk_opts.target)?
 * The packer's race then probes at the budget alone.  The first that
 * fits stands as it is (more slack only costs more), as does any level
 * whose sweep already costs the best plan or more.  Only where the
 * largest step's footprint exceeds the level's sweep budget (below), and
 * on small graphs: on a big one the packer has no time for its search
 * (see ortmem__plan_gap_pack(), plan_gap_pack.c).  The levels share the
 * time gp_candidates() gives them (half of what is left after the first
 * plan, first): the race needs 5-10 ms where it succeeds, at load 3-5
 * on a shared 2-core machine, so under the default budget it often
 * finds nothing (it once had two time budgets of its own, and found the
 * 300-node DAG's packing in 15 of 15 solves; with one, 13 of 15).
 * Why: at the largest step's budget that step's own buffers pin the
 * bound to the budget, so the guide's packing (searched at the bound, the
 * race's probes below the best in vain) overruns; a slack sweep leaves
 * room everywhere else, and the race at the budget alone finds a packing
 * (the 300-node DAG: 744.4 MiB where the allocator's passes move 786.9).
 */
static int gp_slack_decide(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	/* a packing's first plan costs about a pass: the search ends so */
	uint64_t end = w->end > w->close_ns ? w->end - w->close_ns : 0;
	int slack, ret = 0;
	uint32_t s;

	if (end > w->until)
		end = w->until;
	end = end > w->pass_ns ? end - w->pass_ns : 0;
	for (slack = 1; slack <= GAP_SLACKS && !ret && ortmem__now_ns() < end; slack++) {
		struct pk_result pres = { 0 };

		for (s = 0; s < plan->n_nodes; s++)
			c->bud[s] = c->budget - (c->budget >> (8 - slack));
		if (c->max_foot <= c->bud[0])
			break;	/* the bound is not pinned to the budget */
		ortmem__plan_gap_place(c);
		if (ortmem__plan_gap_cost(plan, c->best) >= w->cost)
			break;
		ret = ortmem__plan_gap_pack(c, end, true, &pres);
		if (!ret)
			gp_keep_packed(c, w, &pres);
		if (pres.height <= c->budget)
			break;
	}
	for (s = 0; s < plan->n_nodes; s++)
		c->bud[s] = c->budget;
	return ret;
}

/*
 * A dense graph's first plan, where the sweep's packing overran the
 * budget (@pres): the sweep again under a budget lowered by the overrun
 * (at least 1/128 of the budget, the first slack level's room), packed,
 * until a packing fits, GAP_LOWER_ROUNDS times at most; where none fits,
 * the allocator following the sweep's plan (it always fits, however long
 * it takes).  Each round is O(g log g) and a packing's first heuristic.
 */
#define GAP_LOWER_ROUNDS 4
static int gp_first_dense(struct gap_ctx *c, struct gp_win *w, struct pk_result *pres)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], s;
	uint64_t low = c->budget, t = ortmem__now_ns();
	int r, ret = 0;

	for (r = 0; r < GAP_LOWER_ROUNDS && !ret && w->cost == UINT64_MAX; r++) {
		uint64_t over = pres->height > c->budget ? pres->height - c->budget : 0;

		if (over < c->budget >> 7)
			over = c->budget >> 7;
		low = low > over ? low - over : 0;
		for (s = 0; s < plan->n_nodes; s++)
			c->bud[s] = low;
		ortmem__plan_gap_sweep(c, 0);
		memcpy(c->best, c->off, nt);
		ret = ortmem__plan_gap_pack(c, 0, false, pres);
		if (!ret)
			gp_keep_packed(c, w, pres);
	}
	for (s = 0; s < plan->n_nodes; s++)
		c->bud[s] = c->budget;
	memcpy(c->best, w->guide, nt);
	ortmem__plan_gp_first_done(w, t, w->closing_ns);
	if (!ret && w->cost == UINT64_MAX)
		ret = ortmem__plan_gp_online_first(c, w, 1, w->guide, w->hint);
	return ret;
}

/*
 * Is a dense graph's first plan so far more than 8/7 of its guide's bytes,
 * on a graph whose passes cost four budgets at most (c->near)?  Then the
 * pass seating by ends that follows the guide is part of the first plan:
 * at 90 % of the bound the sweep lowered until its packing fits moves
 * 1.3-1.7x Belady's bytes, that pass 1.1x, but on such a graph it takes
 * about the whole default budget (2,760 nodes at 90 %: 9.5-10 ms, its
 * share 9.1), and its pace, slow at first, stopped it within 4 ms.
 */
#define GAP_FAR_SHIFT 3
static bool gp_first_far(const struct gap_ctx *c, const struct gp_win *w)
{
	return c->near && w->cost != UINT64_MAX &&
	       w->cost - (w->cost >> GAP_FAR_SHIFT) >
	       ortmem__plan_gap_cost(c->plan, w->guide);
}

/*
 * The packer's search's share of the time budget @tb: what GAP_PASSES
 * more passes as long as the longest so far (the first plan's pass
 * seating by ends) would leave, at least an eighth and at most half of
 * it.  The passes and the search compete for the budget, and which pays
 * more depends on how many passes the rest holds: on small graphs (100-250
 * nodes, a pass 0.05-0.15 ms) all of them run in half the budget and the
 * search's offsets are worth the other half; on 300-800 nodes (0.2-0.5 ms
 * a pass) half the budget ran 13-16 of them, and this rule moves 0.2-0.5 %
 * fewer bytes in the geometric mean over 45 random DAGs, where a fixed
 * eighth lost on the small ones (placement-history-2.rst, eighteenth
 * session).
 */
#define GAP_PASSES 48
static uint64_t gp_search_share(const struct gp_win *w, uint64_t tb)
{
	uint64_t passes = w->pass_ns * GAP_PASSES;
	uint64_t share = tb > passes ? tb - passes : 0;

	if (share > tb / 2)
		return tb / 2;
	return share > tb / 8 ? share : tb / 8;
}

/*
 * In the time every other candidate left (small graphs), the first plan's
 * passes following the sweep and the slack sweeps' passes again, with
 * slides changed by @slides (plan_move.c): ORTMEM__PLAN_NOSLIDE, none at
 * all (a slide is taken where it costs least at its step, and a pass is
 * chaotic, so now and then one without ends cheaper: a 50-node DAG at
 * 70 % of its bound, 1.37x Belady's bytes with slides, 1.16x without), or
 * ORTMEM__PLAN_PINSLIDE, where they may also take residents the step
 * touches (more slides open the room; on 16 DAGs of 30-70 nodes every
 * pass so moved 1.8 % less in the geometric mean, but the 300-node DAG
 * of make bench-place 2.4 % more at 90 %: a rule, not the default).
 * Those without slides run first: run after, they found no time on that
 * DAG at 50 %, which moved 1.9 % more.
 */
static int gp_slides_twin(struct gap_ctx *c, struct gp_win *w, int slides)
{
	int ret;

	ortmem__plan_gp_chain_set(&w->ch[0], w->guide, w->hint, 1 | slides, -1, 0);
	ortmem__plan_gp_chain_set(&w->ch[1], w->guide, NULL, ORTMEM__PLAN_ENDFIT | slides,
				  1 | ORTMEM__PLAN_ENDFIT | slides, 0);
	ret = ortmem__plan_gp_chains(c, w, w->ch, 2);	/* w->n_ch >= 4 */
	if (!ret && ortmem__plan_gp_room(w))
		ret = ortmem__plan_gp_slack(c, w, 1, GAP_SLACKS, slides);
	return ret;
}

/*
 * The guide as it is, laid out by compaction (plan_compact.c), where its
 * tier bytes leave room under the first plan's cost for the bytes it moves
 * within the arena: part of the first plan, on its own copy of the guide,
 * for up to a time budget.  Not on dense graphs (each compaction walks the
 * residents per window), nor where a move weighs more than 1/64 of a tier
 * byte: on make bench-place's random DAGs the compaction moves 4-20 times
 * the tier bytes it saves, so at 16 and 32 it lost every budget (and took
 * 1.5-4 ms of a 1,500-node DAG's first plan); placement-history-3.rst.
 */
#define GAP_COMPACT_RATIO 64
static int gp_compact(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	uint64_t t = ortmem__now_ns(), tier;
	int ret;

	if (!w->cp_off || c->dense || plan->o.move_ratio < GAP_COMPACT_RATIO ||
	    w->cost == UINT64_MAX)
		return 0;
	tier = ortmem__plan_gap_cost(plan, w->guide);
	if (tier >= w->cost)
		return 0;
	memcpy(w->cp_off, w->guide, plan->touch_idx[plan->n_bufs]);
	ret = ortmem__plan_compact(plan, c->asz, c->budget, w->cp_off, w->cost - tier,
				   t + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC, &w->cp);
	ortmem__plan_gp_first_done(w, t, w->closing_ns);
	return ret < 0 ? ret : 0;
}

/*
 * The candidates, cheapest kept: the sweep's plan, packed (it stands when
 * the packing fits); the allocator following it at the packer's offsets;
 * the slack sweeps; the allocator on its own; second choices; the cheapest
 * pass again, moving residents back in time.
 *
 * The time budget is the search's: the first plan (the sweep, the
 * packer's first heuristic, the two passes following the sweep and the
 * first slack sweep's pass) is made whatever the clock says, and
 * everything else (the packer's search, the other passes, the closing
 * that moves intervals) shares one budget, so that a solve returns within
 * the budget plus the first plan (ortmem_plan_new(3)).  The packer's
 * search gets an eighth to a half of it where it searches at all
 * (ortmem__plan_gap_pack(), gp_search_share()), the passes the rest.
 * Before, the passes of a small graph all ran whatever the clock said and a big
 * graph's ran up to two budgets past the deadline: 2.7 time budgets past
 * the first plan on make bench-place's workloads, against about one now.
 */
static int gp_candidates(struct gap_ctx *c, struct gp_win *w, uint64_t deadline)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], s;
	uint64_t tb = plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC, t, left, share;
	struct pk_result pres = { 0 };
	bool small = nt <= GAP_SEARCH_MAX;
	/* the largest step pins the packing's bound to the budget: there the
	 * search for the lowest packing is mostly in vain, a decision is not
	 * (see gp_slack_decide()), so the decisions get the time left first */
	bool pinned = small && c->max_foot > c->budget - (c->budget >> 7);
	/* windows cleared by the pass at the packer's offsets (UINT32_MAX:
	 * not run, or stopped) */
	uint32_t win_hinted = UINT32_MAX;
	int ret;

	/* until the first passes are timed, the budget's end */
	t = ortmem__now_ns();
	w->end = w->until = deadline;
	/* the closing's moves search on a big graph; a small one's are cheap.
	 * A dense graph's closing wins 1-5 % of its first plan's bytes (the
	 * sweep lowered: it has few free ranges to close into), a pass that
	 * completes 20-30 %: its passes get that time too */
	w->close_ns = small || c->dense ? 0 : tb / 4;
	w->deadline = small ? 0 : deadline;
	for (s = 0; s < plan->n_nodes; s++)
		c->bud[s] = c->budget;
	ortmem__plan_gap_place(c);
	memcpy(w->guide, c->best, nt);
	ortmem__plan_gp_first_done(w, t, w->closing_ns);
	ret = gp_exact_candidates(c, w);
	if (ret)
		return ret;
	/* The allocator following the sweep's plan seating by ends (below),
	 * first: it always fits, so every budget gets a plan, and its time
	 * sizes the packer's search. */
	if (!c->dense) {
		ret = ortmem__plan_gp_online_first(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
		if (ret)
			return ret;
	}
	/* The sweep's plan as it is, when its packing fits. */
	t = ortmem__now_ns();
	share = gp_search_share(w, tb);
	ret = ortmem__plan_gap_pack(c, t + share < w->end ? t + share : w->end, false, &pres);
	if (ret)
		return ret;
	if (!c->searched)
		ortmem__plan_gp_first_done(w, t, w->closing_ns);	/* the first heuristic alone */
	else	/* made whatever the clock says, within the budget */
		w->first_ns += pres.first_ns;
	memcpy(w->hint, plan->touch_off, sizeof(*w->hint) * nt);
	gp_keep_packed(c, w, &pres);
	/* The allocator following the sweep's plan at the packer's offsets,
	 * and following it seating by ends.  Seating by ends follows the
	 * sweep's plan without the packer's offsets: where the packing overruns (on big graphs, 8-20 %
	 * over the budget) its offsets mislead more than they help (on 10
	 * random DAGs it moved less than the pass at the offsets at 6 of 8
	 * budgets of the 1,500-node one); it took the place of the allocator
	 * on its own, which never won there. */
	if (c->dense) {
		ret = w->cost == UINT64_MAX ? gp_first_dense(c, w, &pres) : 0;
		/* then, budgeted, the passes the others' first plan has, seating
		 * by ends first: it has no look-ahead at the packer's offsets,
		 * which on these graphs overrun by 4-8 % and cost the hinted
		 * pass half as much time again (3,000 values: 7-8 ms against
		 * 11-20 ms), and it moves as little or less (placement.rst,
		 * "Dense graphs"), so it is the one that can end within the
		 * budget; where the first plan is far above the guide, that
		 * one is part of the first plan instead (gp_first_far()) */
		if (!ret && gp_first_far(c, w))
			ret = ortmem__plan_gp_online_first(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
		else if (!ret && ortmem__plan_gp_room(w))
			ret = gp_online(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
		if (!ret && ortmem__plan_gp_room(w)) {
			ret = gp_online(c, w, 1, w->guide, w->hint);
			win_hinted = w->last_win;
		}
	} else {
		ret = ortmem__plan_gp_online_first(c, w, 1, w->guide, w->hint);
		win_hinted = w->last_win;
		if (!ret)
			ret = gp_compact(c, w);
	}
	/* The time left: where the largest step pins the bound to the
	 * budget, half of it to the decisions first; then half to the
	 * slack sweeps and the allocator on its own, the rest to second
	 * choices and moving back in time. */
	t = ortmem__now_ns();
	left = w->end > t + w->close_ns ? w->end - t - w->close_ns : 0;
	if (pinned) {
		w->until = t + left / 2;
		ret = ret ? ret : gp_slack_decide(c, w);
		t = ortmem__now_ns();
		left = w->end > t + w->close_ns ? w->end - t - w->close_ns : 0;
	}
	w->until = t + left / 2;
	/* the slack sweeps' passes first: at the default budget they win
	 * more often than the allocator on its own, which may not run */
	if (!ret)
		ret = ortmem__plan_gp_slack(c, w, 1, GAP_SLACKS, 0);
	/* the allocator on its own, under both seatings, and the twin of the
	 * pass at the packer's offsets: side by side where there are threads */
	if (!ret && ortmem__plan_gp_room(w)) {
		uint32_t n = 0;

		ortmem__plan_gp_chain_set(&w->ch[n++], NULL, NULL, 0, 1, 0);
		ortmem__plan_gp_chain_set(&w->ch[n++], NULL, NULL, ORTMEM__PLAN_ENDFIT,
					  1 | ORTMEM__PLAN_ENDFIT, 0);
		if (win_hinted)
			ortmem__plan_gp_chain_set(&w->ch[n++], w->guide, w->hint, 0, -1, 0);
		ret = ortmem__plan_gp_chains(c, w, w->ch, n);
	}
	/* second choices up to a pass before the closing's time: one more
	 * pass, moving back in time, then */
	w->until = w->end > w->close_ns + 2 * w->pass_ns ?
		   w->end - w->close_ns - w->pass_ns : 0;
	if (!ret)
		ret = gp_alt(c, w);
	w->until = w->end;
	/* the cheapest pass again, moving residents back in time first; its
	 * moves stop at the closing's time (the rest of the pass then runs
	 * as a plain one) */
	w->retro_by = w->end > w->close_ns ? w->end - w->close_ns : 1;
	if (!ret && w->win_rule >= 0 && ortmem__plan_gp_room(w))
		ret = ortmem__plan_gp_online_alt(c, w, w->win_rule | ORTMEM__PLAN_RETRO, w->win_alt,
				    w->win_guided ? w->win_guide : NULL,
				    w->win_hinted ? w->hint : NULL);
	/* in the time every other candidate left (small graphs), slack
	 * levels finer than the first: where the guide's layout all but
	 * fits, less slack evicts less (placement-history-2.rst) */
	if (!ret && ortmem__plan_gp_room(w))
		ret = ortmem__plan_gp_slack(c, w, 1 - GAP_FINE_SLACKS, 0, 0);
	if (w->mv && !(plan->o.flags & ORTMEM_PLAN_F_MOVE_APART)) {	/* slides exist */
		if (!ret && ortmem__plan_gp_room(w))
			ret = gp_slides_twin(c, w, ORTMEM__PLAN_NOSLIDE);
		if (!ret && ortmem__plan_gp_room(w))
			ret = gp_slides_twin(c, w, ORTMEM__PLAN_PINSLIDE);
	}
	/* and in the time still left, a local search around the best plan
	 * (plan_gap_local.c) */
	if (!ret && ortmem__plan_gp_room(w))
		ret = ortmem__plan_gp_local(c, w);
	w->res.lb = pres.lb;
	w->res.iters = pres.iters;
	return ret;
}

/* Does the guide laid out by compaction cost less than the winner, closed? */
static bool gp_compacted_wins(const struct ortmem_plan *plan, const struct gp_win *w)
{
	uint64_t mine, theirs;

	if (!w->cp.toff)
		return false;
	mine = ortmem__plan_gap_cost(plan, w->off) +
	       ortmem__plan_move_weigh(plan, ortmem__plan_move_bytes(plan, w->off, w->mv));
	theirs = ortmem__plan_gap_cost(plan, w->cp.off) + ortmem__plan_move_weigh(plan, w->cp.moved);
	return theirs < mine;
}

int ortmem__plan_gaps(struct ortmem_plan *plan, int home, uint64_t deadline,
		      struct pk_result *res)
{
	struct gap_ctx c = { .plan = plan, .budget = ortmem__plan_dev_budget(plan) };
	uint32_t nt = plan->touch_idx[plan->n_bufs], b, k;
	struct gp_win w = { .cost = UINT64_MAX };
	uint64_t foot, t0;
	int ret;

	w.off = malloc(nt + 1);
	w.toff = malloc(sizeof(*w.toff) * (nt + 1));
	w.guide = malloc(nt + 1);
	w.hint = malloc(sizeof(*w.hint) * (nt + 1));
	w.win_guide = malloc(nt + 1);
	w.win_rule = -1;
	/* a search bounded by iterations runs on one thread: the same plan
	 * on every run */
	w.threads = plan->o.max_iterations ? 1 : plan->o.threads;
	if (!(plan->o.flags & ORTMEM_PLAN_F_NO_MOVE)) {
		w.mv = calloc(nt + 1, sizeof(*w.mv));
		w.cp_off = malloc(nt + 1);
	}
	ret = w.off && w.toff && w.guide && w.hint && w.win_guide &&
	      !ortmem__plan_gp_try_alloc(&w.mine, nt, !(plan->o.flags & ORTMEM_PLAN_F_NO_MOVE)) &&
	      (plan->o.flags & ORTMEM_PLAN_F_NO_MOVE || (w.mv && w.cp_off)) ?
	      ortmem__plan_gap_alloc(&c) :
	      ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	if (!ret)
		ret = ortmem__plan_gp_chains_alloc(&w, nt);
	if (!ret)
		ret = ortmem__plan_gap_footprint(&c, &foot);
	t0 = ortmem__now_ns();
	if (!ret)
		ret = gp_candidates(&c, &w, deadline);
	/* The winner's off gaps that some free range holds across, or one the
	 * intervals in the way move out of, are kept on the device (once: too
	 * dear for every candidate), until the search's end (on a big graph a
	 * quarter of the time budget is kept for it). */
	if (!ret && ortmem__plan_close_gaps_mv(plan, c.asz, w.off, w.toff, w.mv,
			ORTMEM__PLAN_CLOSE_MOVE, w.end > ortmem__now_ns() ? w.end : 1))
		ret = ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	if (!ret && ortmem__plan_height(plan, c.asz, w.toff) != w.res.height) {
		w.res.height = ortmem__plan_height(plan, c.asz, w.toff);
		w.res.optimal = false;
	}
	/* the candidates past the first plan, and the winner's closing */
	plan->budgeted_ns += ortmem__now_ns() - t0 - w.first_ns;
	if (!ret && gp_compacted_wins(plan, &w)) {
		*res = w.res;
		res->height = w.cp.height;
		res->optimal = false;
		ret = ortmem__plan_compact_apply(plan, &w.cp, home);
		if (!ret)
			ret = ortmem__plan_move_record(plan);
	} else if (!ret) {
		*res = w.res;
		memcpy(plan->touch_off, w.toff, sizeof(*w.toff) * nt);
		for (b = 0; b < plan->n_bufs; b++) {
			struct pl_buf *pb = &plan->bufs[b];

			pb->tier = ORTMEM_TIER_DEVICE;
			for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
				if (w.off[k])
					pb->tier = home;
			if (pb->tier == ORTMEM_TIER_DEVICE)
				pb->off = plan->touch_idx[b] < plan->touch_idx[b + 1] ?
					  plan->touch_off[plan->touch_idx[b]] : 0;
		}
		plan->gap_off = w.off;
		w.off = NULL;
		plan->move_step = w.mv;
		w.mv = NULL;
		ret = ortmem__plan_move_record(plan);
	}
	free(w.off);
	free(w.toff);
	ortmem__pool_stop(w.pool);
	ortmem__plan_gp_chains_free(&w);
	ortmem__plan_gp_try_free(&w.mine);
	free(w.guide);
	free(w.hint);
	free(w.win_guide);
	free(w.mv);
	free(w.cp_off);
	ortmem__plan_compacted_free(&w.cp);
	free(c.best);
	ortmem__plan_gap_free(&c);
	return ret;
}
