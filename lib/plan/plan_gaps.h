/* SPDX-License-Identifier: MIT */
/*
 * lib/plan/plan_gaps.h - the gap placement's context, shared by its sweep
 * and candidates (plan_gaps.c) and its branch and bound (plan_gap_exact.c);
 * Documentation/lib/placement.rst.
 */
#ifndef ORTMEM_LIB_PLAN_GAPS_H
#define ORTMEM_LIB_PLAN_GAPS_H

#include "plan_internal.h"

struct gap {
	uint32_t k;		/* touch that opens it */
	uint32_t buf;
	uint32_t first;		/* first step inside it */
	uint32_t end;		/* the next touch, or the buffer's end */
	bool tail;		/* no touch ends it: no read-back */
};

struct gap_ctx {
	struct ortmem_plan *plan;
	uint64_t budget;
	uint64_t *asz;		/* aligned size per buffer */
	struct gap *gaps;
	uint32_t n_gaps;
	uint32_t *by_first;	/* gap ids, CSR over their first step */
	uint32_t *by_first_idx;
	uint64_t *base;		/* profile with every gap kept */
	uint64_t *prof;
	uint64_t *bud;		/* budget per step */
	uint64_t *foot;		/* bytes the step itself touches */
	uint64_t max_foot;	/* the largest of them */
	int64_t *vals;		/* per step: scratch for the range tree */
	struct plan_rtree over;	/* per step: bytes kept over its budget */
	uint64_t span;		/* the gaps' steps, summed */
	bool dense;		/* span past GAP_DENSE_SPAN (plan_gap_ctx.c) */
	bool near;		/* span within GAP_NEAR_SPAN (plan_gap_ctx.c) */
	uint32_t *active;	/* live gaps; a heap under Belady's rule */
	bool *written;
	uint8_t *off;		/* per touch: the gap it opens is off */
	uint8_t *best;
	uint32_t *order;	/* evictions of one sweep, in order */
	int rule;		/* the rule of c->best */
	bool searched;		/* the last ortmem__plan_gap_pack() searched */
};

/* Victim rules of the sweeps (plan_gap_sweep.c): 0 is Belady's. */
#define GAP_RULES 4

/* plan_gap_ctx.c */
int ortmem__plan_gap_alloc(struct gap_ctx *c);
int ortmem__plan_gap_footprint(struct gap_ctx *c, uint64_t *foot);
void ortmem__plan_gap_free(struct gap_ctx *c);

/* One sweep under @rule: its plan in c->off, its cost returned. */
uint64_t ortmem__plan_gap_sweep(struct gap_ctx *c, int rule);
/* Every rule's sweep; the cheapest plan in c->best (its rule c->rule). */
void ortmem__plan_gap_place(struct gap_ctx *c);

/* Past this many device intervals the packer's search is not run. */
#define GAP_SEARCH_MAX 2048
/* Slack levels: level l sweeps under the budget less its 2^(l - 8)th:
 * levels 1 to GAP_SLACKS (1/128, 1/64, ... less) are candidates of their
 * own, the GAP_FINE_SLACKS up to 0 (1/4,096 ... 1/256 less) are followed
 * in the time the others left. */
#define GAP_SLACKS 4
#define GAP_FINE_SLACKS 5

/* Pack the resident intervals of c->best until @deadline (0: the first
 * heuristic only), as a decision at the budget where @decide; offsets to
 * plan->touch_off (plan_gap_pack.c).  0 or -ENOMEM (error set). */
int ortmem__plan_gap_pack(struct gap_ctx *c, uint64_t deadline, bool decide,
			  struct pk_result *res);

/* Improve c->best (costing @best) by branch and bound over the sweep's
 * choices, on small models, until @deadline (plan_gap_exact.c). */
void ortmem__plan_gap_exact(struct gap_ctx *c, uint64_t best, uint64_t deadline);

/* ---- the candidates' passes (plan_gap_pass.c) ---- */

/* One allocator's pass made on its own scratch: its off gaps, offsets and
 * moves, what it cost, how long it took (its closing's part apart).  The
 * passes of a batch run on several threads, each on its own. */
struct gp_try {
	uint8_t *off;
	uint64_t *toff;
	uint32_t *mv;		/* NULL: no moves allowed */
	uint64_t h;		/* arena height; ORTMEM__PLAN_STOPPED; UINT64_MAX: no memory */
	uint64_t cost;
	uint64_t done_at;	/* when it ended */
	uint64_t ns, close_ns;	/* its time, its closing's under a deadline */
	uint32_t n_win;		/* windows it cleared */
	bool twin_same;		/* its twin would make this very plan */
	bool ran;
};

/* A pass and, where it cleared windows its twin would not, its twin: one
 * job of a batch (ortmem__plan_gp_chains()). */
struct gp_chain {
	const uint8_t *guide;
	const uint64_t *hint;
	int rule, twin_rule;	/* twin_rule < 0: no twin */
	uint32_t alt;		/* the pass's second choices (ortmem__plan_online_alt()) */
	bool first;		/* the first plan's pass: made whatever the clock says */
	uint64_t since;		/* for the first: when the first plan's work began */
	struct gp_try t[2];
};

static inline void ortmem__plan_gp_chain_set(struct gp_chain *ch, const uint8_t *guide,
					     const uint64_t *hint, int rule, int twin_rule,
					     uint32_t alt)
{
	ch->guide = guide;
	ch->hint = hint;
	ch->rule = rule;
	ch->twin_rule = twin_rule;
	ch->alt = alt;
	ch->first = false;
	ch->since = 0;
}

/* The cheapest plan found so far: its off gaps, offsets, moves within the
 * arena (NULL: none allowed) and height; its cost is its tier bytes plus
 * its bytes moved within the arena, weighed (ortmem__plan_move_weigh()). */
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
	struct gp_try mine;	/* scratch for the caller's own passes */
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
	/* threads the passes of a batch may run on, the caller's included;
	 * their pool, started when a batch first has work for two */
	uint32_t threads;
	struct plan_pool *pool;
	struct gp_chain *ch;	/* the batches' chains, with their scratch */
	uint32_t n_ch;
	/* the guide laid out by compaction (plan_compact.c; cp.toff NULL:
	 * none), on its own copy of the guide */
	struct ortmem__plan_compacted cp;
	uint8_t *cp_off;
};

/* Is a plan of @cost and @height better than the best so far?  Fewer
 * bytes, or as few in a lower arena: where the whole graph fits, the
 * pass seating by ends (the first) seats buffers up to the budget's top,
 * and the packing, as cheap, needs only its height; a runtime sizes its
 * arena by the plan's. */
static inline bool ortmem__plan_gp_better(const struct gp_win *w, uint64_t cost,
					  uint64_t height)
{
	return cost < w->cost || (cost == w->cost && height < w->res.height);
}

/* Scratch for a pass over @nt touches (@moves: room for moves); 0 or
 * -ENOMEM (no error set).  gp_try_free() frees it. */
int ortmem__plan_gp_try_alloc(struct gp_try *t, uint32_t nt, bool moves);
void ortmem__plan_gp_try_free(struct gp_try *t);
/* One allocator's pass (always fits), the windows of @alt taking their
 * second choice; kept when cheaper.  -ENOMEM or 0. */
int ortmem__plan_gp_online_alt(struct gap_ctx *c, struct gp_win *w, int rule, uint32_t alt,
			       const uint8_t *guide, const uint64_t *hint);
/* A pass of the first plan, made whatever the clock says. */
int ortmem__plan_gp_online_first(struct gap_ctx *c, struct gp_win *w, int rule,
				 const uint8_t *guide, const uint64_t *hint);
/* Room for one more pass before the winner's closing? */
bool ortmem__plan_gp_room(const struct gp_win *w);
/* Work since @t0, when the closings had taken @c0, was first plan. */
void ortmem__plan_gp_first_done(struct gp_win *w, uint64_t t0, uint64_t c0);

/* The batches' chains: w->n_ch for w->threads threads; 0 or -ENOMEM
 * (error set).  Freed, with any scratch the batches gave them, by
 * ortmem__plan_gp_chains_free(). */
int ortmem__plan_gp_chains_alloc(struct gp_win *w, uint32_t nt);
void ortmem__plan_gp_chains_free(struct gp_win *w);
/* Run @n chains, on the pool's threads where there are several, then
 * keep their plans in order (the pass of each, then the twins) as the
 * caller's own passes would be.  -ENOMEM or 0. */
int ortmem__plan_gp_chains(struct gap_ctx *c, struct gp_win *w, struct gp_chain *ch,
			   uint32_t n);

/* The slack sweeps of levels @from to @to and their passes, with @rule_or
 * added to the passes' rules (plan_gap_slack.c); the budget per step is
 * the budget again after. */
int ortmem__plan_gp_slack(struct gap_ctx *c, struct gp_win *w, int from, int to, int rule_or);

/* The best plan closed, then passes following it with a few gaps
 * flipped, until no room is left, 256 passes in a row find nothing
 * cheaper, or max_iterations passes ran (plan_gap_local.c).  -ENOMEM
 * or 0. */
int ortmem__plan_gp_local(struct gap_ctx *c, struct gp_win *w);

#endif /* ORTMEM_LIB_PLAN_GAPS_H */
