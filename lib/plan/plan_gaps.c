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
 * budget at or above the largest one is never refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "plan_gaps.h"

/* The allocator's rules a slack sweep's plan is followed under, the most
 * often cheapest first (measured on random DAGs): how a buffer seats
 * (ortmem__plan_online()) matters more than whom it evicts. */
static const int gp_pass_rule[] = {
	ORTMEM__PLAN_ENDFIT, 0, 1 | ORTMEM__PLAN_ENDFIT, 1,	/* then their twins */
};
#define GAP_PASS_RULES ((int)(sizeof(gp_pass_rule) / sizeof(gp_pass_rule[0])))


/* The cheapest plan found so far: its off gaps, offsets, moves within the
 * arena (NULL: none allowed) and height; its cost is its tier bytes plus
 * its bytes moved within the arena >> ORTMEM__PLAN_MOVE_SHIFT. */
struct gp_win {
	uint64_t cost;
	/* windows the last pass cleared (ol_window()), 0 where its twin
	 * would clear the same ones (none, or all where this rule did);
	 * UINT32_MAX: it stopped, or none ran */
	uint32_t last_win;
	uint8_t *off;
	uint64_t *toff;
	uint32_t *mv;
	struct pk_result res;
	/* scratch for one allocator's pass */
	uint8_t *try_off;
	uint64_t *try_toff;
	uint32_t *try_mv;
	uint8_t *guide;
	uint64_t *hint;
	uint64_t deadline, retro_by;	/* for closing gaps, moving back; 0: none */
	/* the search's end (the time budget left after the first plan), the
	 * longest pass timed so far, the time kept for the winner's closing
	 * at the end */
	uint64_t end, pass_ns, close_ns;
	/* the passes' closings under w->deadline so far (budgeted work, also
	 * within the first plan's passes: at a small budget they stop) */
	uint64_t closing_ns;
	uint64_t until;		/* the current kind of pass's share ends */
	/* the first plan's work: what the end moved by, and what it made
	 * whatever the clock says within the budget */
	uint64_t first_ns;
	bool first;		/* a pass of the first plan: never stopped */
	/* what gp_alt() varies, the cheapest pass without hinted offsets
	 * or at the main guide's: its guide, rule (-1: none), second
	 * choices, windows cleared, whether at the main guide's offsets */
	uint8_t *win_guide;
	int win_rule;
	uint32_t win_alt, win_n;
	bool win_guided, win_hinted;
};

/* Is a plan of @cost and @height better than the best so far?  Fewer
 * bytes, or as few in a lower arena: where the whole graph fits, the
 * pass seating by ends (the first) seats buffers up to the budget's top,
 * and the packing, as cheap, needs only its height; a runtime sizes its
 * arena by the plan's. */
static bool gp_better(const struct gp_win *w, uint64_t cost, uint64_t height)
{
	return cost < w->cost || (cost == w->cost && height < w->res.height);
}

/* One allocator's pass (always fits), the windows of @alt taking their
 * second choice; kept when cheaper.  -ENOMEM or 0. */
static int gp_online_alt(struct gap_ctx *c, struct gp_win *w, int rule, uint32_t alt,
			 const uint8_t *guide, const uint64_t *hint)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], n_win = 0;
	uint64_t h, cost, t = ortmem__now_ns(), tc, stop = 0;
	bool twin_same = false;

	/* a dense graph's passes stop at their share's end (but the one a
	 * first plan may need): one may take several budgets */
	if (c->dense && !w->first) {
		stop = w->end > w->close_ns ? w->end - w->close_ns : 1;
		stop = stop < w->until ? stop : w->until;
	}
	h = ortmem__plan_online_mv(plan, c->asz, c->budget, rule, alt, guide, hint,
				   w->try_off, w->try_toff, w->try_mv, &n_win, &twin_same,
				   w->retro_by, stop);
	w->last_win = h == ORTMEM__PLAN_STOPPED ? UINT32_MAX : twin_same ? 0 : n_win;
	tc = ortmem__now_ns();
	if (h == ORTMEM__PLAN_STOPPED) {
		/* no plan: it needed more than its share (it stops early where
		 * its progress says it would end past it), so no other pass
		 * starts with less */
		t = stop > t ? stop - t + 1 : tc - t;
		if (t > w->pass_ns)
			w->pass_ns = t;
		return 0;
	}
	if (h == UINT64_MAX || ortmem__plan_close_gaps_mv(plan, c->asz, w->try_off, w->try_toff,
							  w->try_mv, 0, w->deadline))
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	if (w->deadline)
		w->closing_ns += ortmem__now_ns() - tc;
	/* the longest pass so far: no later one starts without that room */
	t = ortmem__now_ns() - t;
	if (t > w->pass_ns)
		w->pass_ns = t;
	cost = ortmem__plan_gap_cost(plan, w->try_off) +
	       (ortmem__plan_move_bytes(plan, w->try_off, w->try_mv) >> ORTMEM__PLAN_MOVE_SHIFT);
	if (gp_better(w, cost, h)) {
		w->cost = cost;
		memcpy(w->off, w->try_off, nt);
		memcpy(w->toff, w->try_toff, sizeof(*w->toff) * nt);
		if (w->mv)
			memcpy(w->mv, w->try_mv, sizeof(*w->mv) * nt);
		w->res.height = h;
		w->res.optimal = false;
		/* hinted offsets: only the main guide's stay (w->hint) */
		w->win_hinted = hint && hint == w->hint && guide == w->guide;
		w->win_rule = hint && !w->win_hinted ? -1 : rule;
		w->win_alt = alt;
		w->win_n = n_win;
		w->win_guided = guide;
		if (guide && (!hint || w->win_hinted) && guide != w->win_guide)
			memcpy(w->win_guide, guide, nt);
	}
	return 0;
}

static int gp_online(struct gap_ctx *c, struct gp_win *w, int rule,
		     const uint8_t *guide, const uint64_t *hint)
{
	return gp_online_alt(c, w, rule, 0, guide, hint);
}

/*
 * The pass under the other eviction rule (1 for 0, 0 for 1), given @twin,
 * the windows its twin (the same guide, hint, seating and second choices)
 * cleared, its windows in *@win.  The rules differ only in whom a pass
 * sends off from a window it clears (ol_window()): a twin that cleared
 * none, or whose every window this rule would have picked too, made this
 * very plan, so it is not run again (on a 300-node DAG at 70 % half the
 * slack sweeps' passes were twins that cleared none, and of the rest all
 * but one picked the same windows under both rules; the time goes to the
 * next candidates).
 */
static int gp_online_twin(struct gap_ctx *c, struct gp_win *w, uint32_t twin, int rule,
			  const uint8_t *guide, const uint64_t *hint, uint32_t *win)
{
	int ret;

	*win = twin;
	if (!twin)
		return 0;
	ret = gp_online(c, w, rule, guide, hint);
	*win = w->last_win;
	return ret;
}

/*
 * Room for one more pass before the winner's closing: the time budget
 * buys what runs after the first plan, and no pass starts that would end
 * past it (a pass is timed like the longest one so far; none can stop
 * half way).
 */
static bool gp_room(const struct gp_win *w)
{
	uint64_t t = ortmem__now_ns() + w->pass_ns;

	return t + w->close_ns <= w->end && t <= w->until;
}

/* Work since @t0, when the closings had taken @c0, was part of the first
 * plan, made whatever the clock says: the end moves by its time, but for
 * the closings, which the budget pays for. */
static void gp_first_done(struct gp_win *w, uint64_t t0, uint64_t c0)
{
	uint64_t t = ortmem__now_ns() - t0 - (w->closing_ns - c0);

	w->end += t;
	w->until += t;
	w->first_ns += t;
}

static int gp_online_first(struct gap_ctx *c, struct gp_win *w, int rule,
			   const uint8_t *guide, const uint64_t *hint)
{
	uint64_t t = ortmem__now_ns(), c0 = w->closing_ns;
	int ret;

	w->first = true;
	ret = gp_online(c, w, rule, guide, hint);
	w->first = false;
	gp_first_done(w, t, c0);
	return ret;
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
	int ret = 0;
	uint32_t j;

	if (w->win_rule < 0)
		return 0;
	for (j = 0; !ret && j < w->win_n && j < 32 && gp_room(w); j++)
		if (!(w->win_alt & 1u << j))
			ret = gp_online_alt(c, w, w->win_rule, w->win_alt | 1u << j,
					    w->win_guided ? w->win_guide : NULL,
					    w->win_hinted ? w->hint : NULL);
	return ret;
}

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

/* Allocator passes following sweeps asked for a little less than the
 * budget (room for fragmentation), under each of the sweep's rules (which
 * rule leaves the most packable plan is not the one that moves least
 * before offsets); stops when no sweep alone costs less than the best
 * plan. */
static int gp_slack(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], n_seen = 0;
	/* the plans followed (without room for them, a plan is followed
	 * again: it costs time, not bytes) */
	uint8_t *seen = malloc((size_t)nt * GAP_SLACKS * (c->dense ? 1 : GAP_RULES) + 1);
	int ret = 0, rule, slack, sweep;
	uint32_t s, win[GAP_PASS_RULES];

	/* On random DAGs they are where most of the room for fragmentation
	 * is found.  The first (the least slack, Belady's rule, its first
	 * way of seating) is part of the first plan, made whatever the
	 * clock says: on random DAGs it is the one that pays most often. */
	for (slack = 1; slack <= GAP_SLACKS && !ret &&
	     ((slack == 1 && !c->dense) || gp_room(w)); slack++) {
		bool cheaper = false;

		for (s = 0; s < plan->n_nodes; s++)
			c->bud[s] = c->budget - (c->budget >> (8 - slack));
		for (sweep = 0; sweep < (c->dense ? 1 : GAP_RULES) && !ret &&
		     ((slack == 1 && !sweep && !c->dense) || gp_room(w)); sweep++) {
			bool first = slack == 1 && !sweep && !c->dense;
			uint64_t t = ortmem__now_ns(), c0 = w->closing_ns;

			ortmem__plan_gap_sweep(c, sweep);
			memcpy(c->best, c->off, nt);
			if (gp_seen(seen, &n_seen, c->best, nt) ||
			    ortmem__plan_gap_cost(plan, c->best) >= w->cost) {
				if (first)
					gp_first_done(w, t, c0);
				continue;	/* followed already, or less room only costs more */
			}
			cheaper = true;
			for (rule = 0; rule < GAP_PASS_RULES && !ret &&
			     ((first && !rule) || gp_room(w)); rule++) {
				/* the rules' second half is the first's twins */
				if (rule < GAP_PASS_RULES / 2) {
					ret = gp_online(c, w, gp_pass_rule[rule], c->best, NULL);
					win[rule] = w->last_win;
				} else {
					ret = gp_online_twin(c, w, win[rule - GAP_PASS_RULES / 2],
							     gp_pass_rule[rule], c->best, NULL,
							     &win[rule]);
				}
				if (first && !rule)
					gp_first_done(w, t, c0);
			}
		}
		if (!cheaper)
			break;
	}
	free(seen);
	return ret;
}

/* The sweep's plan at the packer's offsets (c->best, plan->touch_off; no
 * moves), kept when it fits and costs less. */
static void gp_keep_packed(struct gap_ctx *c, struct gp_win *w, const struct pk_result *pres)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs];

	if (pres->height > c->budget ||
	    !gp_better(w, ortmem__plan_gap_cost(plan, c->best), pres->height))
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
	gp_first_done(w, t, w->closing_ns);
	if (!ret && w->cost == UINT64_MAX)
		ret = gp_online_first(c, w, 1, w->guide, w->hint);
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
	/* windows cleared by the pass at the packer's offsets, by the last
	 * one on its own (UINT32_MAX: not run, or stopped) */
	uint32_t win_hinted = UINT32_MAX, win_own = UINT32_MAX;
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
	gp_first_done(w, t, w->closing_ns);
	ret = gp_exact_candidates(c, w);
	if (ret)
		return ret;
	/* The allocator following the sweep's plan seating by ends (below),
	 * first: it always fits, so every budget gets a plan, and its time
	 * sizes the packer's search. */
	if (!c->dense) {
		ret = gp_online_first(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
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
		gp_first_done(w, t, w->closing_ns);	/* the first heuristic alone */
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
			ret = gp_online_first(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
		else if (!ret && gp_room(w))
			ret = gp_online(c, w, ORTMEM__PLAN_ENDFIT, w->guide, NULL);
		if (!ret && gp_room(w)) {
			ret = gp_online(c, w, 1, w->guide, w->hint);
			win_hinted = w->last_win;
		}
	} else {
		ret = gp_online_first(c, w, 1, w->guide, w->hint);
		win_hinted = w->last_win;
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
		ret = gp_slack(c, w);
	if (!ret && gp_room(w)) {
		ret = gp_online(c, w, 0, NULL, NULL);
		win_own = w->last_win;
	}
	if (!ret && gp_room(w))
		ret = gp_online_twin(c, w, win_hinted, 0, w->guide, w->hint, &win_hinted);
	if (!ret && gp_room(w))
		ret = gp_online_twin(c, w, win_own, 1, NULL, NULL, &win_own);
	if (!ret && gp_room(w)) {
		ret = gp_online(c, w, ORTMEM__PLAN_ENDFIT, NULL, NULL);
		win_own = w->last_win;
	}
	if (!ret && gp_room(w))
		ret = gp_online_twin(c, w, win_own, 1 | ORTMEM__PLAN_ENDFIT, NULL, NULL, &win_own);
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
	if (!ret && w->win_rule >= 0 && gp_room(w))
		ret = gp_online_alt(c, w, w->win_rule | ORTMEM__PLAN_RETRO, w->win_alt,
				    w->win_guided ? w->win_guide : NULL,
				    w->win_hinted ? w->hint : NULL);
	w->res.lb = pres.lb;
	w->res.iters = pres.iters;
	return ret;
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
	w.try_off = malloc(nt + 1);
	w.try_toff = malloc(sizeof(*w.try_toff) * (nt + 1));
	w.guide = malloc(nt + 1);
	w.hint = malloc(sizeof(*w.hint) * (nt + 1));
	w.win_guide = malloc(nt + 1);
	w.win_rule = -1;
	if (!(plan->o.flags & ORTMEM_PLAN_F_NO_MOVE)) {
		w.mv = calloc(nt + 1, sizeof(*w.mv));
		w.try_mv = malloc(sizeof(*w.try_mv) * (nt + 1));
	}
	ret = w.off && w.toff && w.try_off && w.try_toff && w.guide && w.hint && w.win_guide &&
	      (plan->o.flags & ORTMEM_PLAN_F_NO_MOVE || (w.mv && w.try_mv)) ?
	      ortmem__plan_gap_alloc(&c) :
	      ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
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
	if (!ret) {
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
	free(w.try_off);
	free(w.try_toff);
	free(w.guide);
	free(w.hint);
	free(w.win_guide);
	free(w.mv);
	free(w.try_mv);
	free(c.best);
	ortmem__plan_gap_free(&c);
	return ret;
}
