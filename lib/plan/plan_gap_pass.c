// SPDX-License-Identifier: MIT
/*
 * The gap placement's candidate passes (the placement is in plan_gaps.c;
 * Documentation/lib/placement.rst): one allocator's pass following a
 * plan, kept when it costs less than the best so far, and the batches of
 * them that run on several threads.
 *
 * A pass reads the plan and the placement's context and writes only its
 * own scratch (struct gp_try), so the passes of a batch run side by side
 * (ortmem__plan_gp_chains()); the cheapest is then kept on the caller's
 * thread, in the order the caller's own passes would have kept them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_gaps.h"

int ortmem__plan_gp_try_alloc(struct gp_try *t, uint32_t nt, bool moves)
{
	t->off = malloc(nt + 1);
	t->toff = malloc(sizeof(*t->toff) * (nt + 1));
	t->mv = moves ? malloc(sizeof(*t->mv) * (nt + 1)) : NULL;
	return t->off && t->toff && (!moves || t->mv) ? 0 : -ENOMEM;
}

void ortmem__plan_gp_try_free(struct gp_try *t)
{
	free(t->off);
	free(t->toff);
	free(t->mv);
	t->off = NULL;
	t->toff = NULL;
	t->mv = NULL;
}

/* The windows pass @t cleared as its twin reads them: 0 where the twin
 * would make this very plan, UINT32_MAX where it stopped. */
static uint32_t gp_try_win(const struct gp_try *t)
{
	return t->h == ORTMEM__PLAN_STOPPED ? UINT32_MAX : t->twin_same ? 0 : t->n_win;
}

/*
 * One allocator's pass on @t's scratch; reads @w only (its end, closing
 * deadline and moving back in time), so passes run side by side.  A
 * dense graph's passes stop at their share's end (but one of the first
 * plan, @first): one may take several budgets.  t->h is UINT64_MAX where
 * memory ran out.
 */
static void gp_pass(const struct gap_ctx *c, const struct gp_win *w, bool first, int rule,
		    uint32_t alt, const uint8_t *guide, const uint64_t *hint,
		    struct gp_try *t)
{
	const struct ortmem_plan *plan = c->plan;
	uint64_t t0 = ortmem__now_ns(), tc, stop = 0;

	if (c->dense && !first) {
		stop = w->end > w->close_ns ? w->end - w->close_ns : 1;
		stop = stop < w->until ? stop : w->until;
	}
	t->ran = true;
	t->n_win = 0;
	t->twin_same = false;
	t->close_ns = 0;
	t->h = ortmem__plan_online_mv(plan, c->asz, c->budget, rule, alt, guide, hint,
				      t->off, t->toff, t->mv, &t->n_win, &t->twin_same,
				      w->retro_by, stop);
	tc = ortmem__now_ns();
	if (t->h == ORTMEM__PLAN_STOPPED) {
		/* no plan: it needed more than its share (it stops early where
		 * its progress says it would end past it), so no other pass
		 * starts with less */
		t->ns = stop > t0 ? stop - t0 + 1 : tc - t0;
		t->done_at = tc;
		return;
	}
	if (t->h == UINT64_MAX ||
	    ortmem__plan_close_gaps_mv(plan, c->asz, t->off, t->toff, t->mv, 0, w->deadline)) {
		t->h = UINT64_MAX;
		return;
	}
	t->done_at = ortmem__now_ns();
	if (w->deadline)
		t->close_ns = t->done_at - tc;
	t->ns = t->done_at - t0;
	t->cost = ortmem__plan_gap_cost(plan, t->off) +
		  ortmem__plan_move_weigh(plan, ortmem__plan_move_bytes(plan, t->off, t->mv));
}

/* Pass @t (made under @rule, @alt, @guide, @hint) kept when cheaper. */
static int gp_keep(struct gap_ctx *c, struct gp_win *w, int rule, uint32_t alt,
		   const uint8_t *guide, const uint64_t *hint, const struct gp_try *t)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs];

	if (t->h == UINT64_MAX)
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	w->last_win = gp_try_win(t);
	/* the longest pass so far: no later one starts without that room */
	if (t->ns > w->pass_ns)
		w->pass_ns = t->ns;
	if (t->h == ORTMEM__PLAN_STOPPED)
		return 0;
	w->closing_ns += t->close_ns;
	if (!ortmem__plan_gp_better(w, t->cost, t->h))
		return 0;
	w->cost = t->cost;
	memcpy(w->off, t->off, nt);
	memcpy(w->toff, t->toff, sizeof(*w->toff) * nt);
	if (w->mv)
		memcpy(w->mv, t->mv, sizeof(*w->mv) * nt);
	w->res.height = t->h;
	w->res.optimal = false;
	/* hinted offsets: only the main guide's stay (w->hint) */
	w->win_hinted = hint && hint == w->hint && guide == w->guide;
	w->win_rule = hint && !w->win_hinted ? -1 : rule;
	w->win_alt = alt;
	w->win_n = t->n_win;
	w->win_guided = guide;
	if (guide && (!hint || w->win_hinted) && guide != w->win_guide)
		memcpy(w->win_guide, guide, nt);
	return 0;
}

int ortmem__plan_gp_online_alt(struct gap_ctx *c, struct gp_win *w, int rule, uint32_t alt,
			       const uint8_t *guide, const uint64_t *hint)
{
	gp_pass(c, w, w->first, rule, alt, guide, hint, &w->mine);
	return gp_keep(c, w, rule, alt, guide, hint, &w->mine);
}

/*
 * Room for one more pass before the winner's closing: the time budget
 * buys what runs after the first plan, and no pass starts that would end
 * past it (a pass is timed like the longest one so far; none can stop
 * half way).
 */
bool ortmem__plan_gp_room(const struct gp_win *w)
{
	uint64_t t = ortmem__now_ns() + w->pass_ns;

	return t + w->close_ns <= w->end && t <= w->until;
}

/* @t ns of work were part of the first plan, made whatever the clock
 * says: the end moves by it. */
static void gp_first_took(struct gp_win *w, uint64_t t)
{
	w->end += t;
	w->until += t;
	w->first_ns += t;
}

/* Work since @t0, when the closings had taken @c0, was part of the first
 * plan: all of it but the closings, which the budget pays for. */
void ortmem__plan_gp_first_done(struct gp_win *w, uint64_t t0, uint64_t c0)
{
	gp_first_took(w, ortmem__now_ns() - t0 - (w->closing_ns - c0));
}

int ortmem__plan_gp_online_first(struct gap_ctx *c, struct gp_win *w, int rule,
				 const uint8_t *guide, const uint64_t *hint)
{
	uint64_t t = ortmem__now_ns(), c0 = w->closing_ns;
	int ret;

	w->first = true;
	ret = ortmem__plan_gp_online_alt(c, w, rule, 0, guide, hint);
	w->first = false;
	ortmem__plan_gp_first_done(w, t, c0);
	return ret;
}

/* Chains enough for a batch per thread (the slack sweeps' take two a
 * guide, up to a guide per sweep rule), at most GAP_CHAINS_MAX; their
 * scratch is allocated when a batch on several threads first runs them. */
#define GAP_CHAINS_MAX 16
int ortmem__plan_gp_chains_alloc(struct gp_win *w, uint32_t nt)
{
	uint32_t n = w->threads < 4 ? 4 : w->threads + (w->threads & 1);

	n = n < GAP_CHAINS_MAX ? n : GAP_CHAINS_MAX;
	w->ch = calloc(n, sizeof(*w->ch));
	if (!w->ch)
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	w->n_ch = n;
	return 0;
}

void ortmem__plan_gp_chains_free(struct gp_win *w)
{
	uint32_t j;

	for (j = 0; j < w->n_ch; j++) {
		ortmem__plan_gp_try_free(&w->ch[j].t[0]);
		ortmem__plan_gp_try_free(&w->ch[j].t[1]);
	}
	free(w->ch);
	w->ch = NULL;
	w->n_ch = 0;
}

struct gp_batch {
	const struct gap_ctx *c;
	const struct gp_win *w;
	struct gp_chain *ch;
};

/*
 * One chain: its pass, where there is room (the first plan's always),
 * then its twin, the pass under the other eviction rule (1 for 0, 0 for
 * 1; the same guide, hint and seating).  The rules differ only in whom a
 * pass sends off from a window it clears (ol_window()): a pass that
 * cleared none, or whose every window the twin's rule would have picked
 * too, made the twin's very plan, so the twin is not run (on a 300-node
 * DAG at 70 % half the slack sweeps' twins would have cleared none, and
 * of the rest all but one picked the same windows under both rules; the
 * time goes to the next candidates).
 */
static void gp_chain_run(void *arg, uint32_t j)
{
	const struct gp_batch *b = arg;
	struct gp_chain *ch = &b->ch[j];

	ch->t[0].ran = ch->t[1].ran = false;
	if (!ch->first && !ortmem__plan_gp_room(b->w))
		return;
	gp_pass(b->c, b->w, ch->first, ch->rule, ch->alt, ch->guide, ch->hint, &ch->t[0]);
	if (ch->twin_rule < 0 || ch->t[0].h == UINT64_MAX || !gp_try_win(&ch->t[0]) ||
	    !ortmem__plan_gp_room(b->w))
		return;
	gp_pass(b->c, b->w, false, ch->twin_rule, 0, ch->guide, ch->hint, &ch->t[1]);
}

/*
 * One thread: each pass kept as it ends, on the caller's own scratch (the
 * memory a serial placement needs), the next chain's pass then timed
 * against the longest so far.
 */
static int gp_chains_serial(struct gap_ctx *c, struct gp_win *w, struct gp_chain *ch,
			    uint32_t n)
{
	struct gp_try *t = &w->mine;
	uint32_t j;
	int ret = 0;

	for (j = 0; j < n && !ret; j++) {
		if (!ch[j].first && !ortmem__plan_gp_room(w))
			break;
		gp_pass(c, w, ch[j].first, ch[j].rule, ch[j].alt, ch[j].guide, ch[j].hint, t);
		ret = gp_keep(c, w, ch[j].rule, ch[j].alt, ch[j].guide, ch[j].hint, t);
		if (!ret && ch[j].first)
			gp_first_took(w, t->done_at - ch[j].since - t->close_ns);
		if (ret || ch[j].twin_rule < 0 || !gp_try_win(t) || !ortmem__plan_gp_room(w))
			continue;
		gp_pass(c, w, false, ch[j].twin_rule, 0, ch[j].guide, ch[j].hint, t);
		ret = gp_keep(c, w, ch[j].twin_rule, 0, ch[j].guide, ch[j].hint, t);
	}
	return ret;
}

/*
 * The chains side by side, then kept: every chain's pass in order, then
 * the twins (a serial run keeps a guide's passes, then their twins; ties
 * go to the first kept).  A first plan's pass moves the end by its own
 * time since ch->since (the others ran beside it).  Without a pool, one
 * chain after the other (gp_chains_serial()).
 */
int ortmem__plan_gp_chains(struct gap_ctx *c, struct gp_win *w, struct gp_chain *ch,
			   uint32_t n)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], j, i;
	struct gp_batch b = { c, w, ch };
	int ret = 0;

	if (!w->pool)
		return gp_chains_serial(c, w, ch, n);
	for (j = 0; j < n; j++)
		if ((!ch[j].t[0].off && ortmem__plan_gp_try_alloc(&ch[j].t[0], nt, w->mv)) ||
		    (ch[j].twin_rule >= 0 && !ch[j].t[1].off &&
		     ortmem__plan_gp_try_alloc(&ch[j].t[1], nt, w->mv)))
			return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	ortmem__pool_run(w->pool, n, gp_chain_run, &b);
	for (i = 0; i < 2; i++)
		for (j = 0; j < n && !ret; j++) {
			struct gp_try *t = &ch[j].t[i];

			if (!t->ran)
				continue;
			ret = gp_keep(c, w, i ? ch[j].twin_rule : ch[j].rule,
				      i ? 0 : ch[j].alt, ch[j].guide, ch[j].hint, t);
			if (!ret && !i && ch[j].first)
				gp_first_took(w, t->done_at - ch[j].since - t->close_ns);
		}
	return ret;
}
