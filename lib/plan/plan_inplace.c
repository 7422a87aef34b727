// SPDX-License-Identifier: MIT
/*
 * In-place hints: an output takes the buffer of an input that dies at its
 * node, when that is safe (the input is no view and no graph output, the
 * output no larger).  Hints are taken in node order.
 *
 * A hint allows sharing, it does not demand it.  Where the input is the
 * larger, the output's life holds the larger buffer: more bytes live at
 * each of its steps.  So a merge is not made where it would raise the
 * bytes live at a step past that step's limit, the larger of
 *  - the bytes live there without any sharing (never worse than no hint),
 *  - and a line: with a device budget and a slower tier, the budget (bytes
 *    added above it would be sent off and read back: measured on random
 *    graphs with hints, taking every safe hint moved 3-7 % more bytes than
 *    taking none); otherwise (the device alone, or no device budget), the
 *    graph's peak without sharing, the arena's lower bound, whatever the
 *    budget (a merge that raises it makes the arena larger, and with the
 *    same merges with a budget as without, a budget that holds the one
 *    plan holds the other).
 * A step's footprint (the buffers it touches) is within its live bytes, so
 * with a slower tier it stays within the budget wherever those do; where
 * it does not, the solve plans again without the hints (plan_solve.c).
 *
 * When every merge together keeps every step within its limit, all are
 * made: that round costs O(1) a merge (differences summed once).
 * Otherwise the buffers are made again (plan_live.c) and the merges one by
 * one, each checked against the steps with the merges taken before it (a
 * range tree of the bytes over the limit).  (One by one alone would drop
 * a merge that only a later one's saving makes fit.)
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

struct ip_guard {
	bool on;		/* some merge can raise the bytes live */
	bool one_by_one;	/* refuse each merge that overruns */
	int64_t line;		/* the bytes a step may reach in any case */
	/* the bytes live at each step before any merge, and the merges'
	 * changes, as differences from the step before (all together) */
	int64_t *base, *diff;
	/* one by one: the bytes live over each step's limit (<= 0) */
	struct plan_rtree over;
};

static uint64_t ip_size(const struct ortmem_plan *plan, const struct pl_buf *b)
{
	uint64_t a = plan->o.align[ORTMEM_TIER_DEVICE];

	return (b->size + a - 1) & ~(a - 1);
}

/* The buffers' aligned bytes stay below 2^62 in all, as the solve then
 * checks (pl_check_sizes()): the figures cannot overflow. */
static bool ip_sizes_sane(const struct ortmem_plan *plan)
{
	uint64_t sum = 0;
	uint32_t b;

	for (b = 0; b < plan->n_bufs; b++) {
		if (plan->bufs[b].size > (UINT64_MAX >> 2))
			return false;
		sum += ip_size(plan, &plan->bufs[b]);
		if (sum > (UINT64_MAX >> 2))
			return false;
	}
	return true;
}

/*
 * Can a merge raise the bytes live at all?  Only where an input's buffer
 * is larger, aligned, than the output's (the buffer of a chain is its
 * first input's, so equal pairs make equal chains).  Most hints are of ops
 * whose output is their input's size: then no guard is needed.
 */
static bool ip_some_larger(const struct ortmem_plan *plan)
{
	uint32_t k;

	for (k = 0; k < plan->n_hints; k++) {
		const struct pl_value *x = &plan->vals[plan->hints[k].in];
		const struct pl_value *y = &plan->vals[plan->hints[k].out];

		if (x->buf >= 0 && y->buf >= 0 &&
		    ip_size(plan, &plan->bufs[x->buf]) > ip_size(plan, &plan->bufs[y->buf]))
			return true;
	}
	return false;
}

/* The bytes live before any merge, as differences; their peak. */
static int64_t ip_base(struct ip_guard *g, const struct ortmem_plan *plan)
{
	int64_t live = 0, peak = 0;
	uint32_t b, s;

	for (b = 0; b < plan->n_bufs; b++) {
		g->base[plan->bufs[b].lo] += (int64_t)ip_size(plan, &plan->bufs[b]);
		g->base[plan->bufs[b].hi] -= (int64_t)ip_size(plan, &plan->bufs[b]);
	}
	for (s = 0; s < plan->n_nodes; s++) {
		live += g->base[s];
		if (live > peak)
			peak = live;
	}
	return peak;
}

static int ip_guard_init(struct ip_guard *g, const struct ortmem_plan *plan, bool one_by_one)
{
	uint64_t budget = plan->o.budget[ORTMEM_TIER_DEVICE];
	int64_t peak, live = 0, *over;
	uint32_t s;

	*g = (struct ip_guard){ .one_by_one = one_by_one };
	/* sizes past what the solve accepts: it refuses them after the
	 * merges, with or without a guard */
	if (!plan->n_nodes || !ip_sizes_sane(plan) || !ip_some_larger(plan))
		return 0;
	g->on = true;
	g->base = calloc(plan->n_nodes + 1, sizeof(*g->base));
	g->diff = calloc(plan->n_nodes + 1, sizeof(*g->diff));
	if (!g->base || !g->diff)
		return -ENOMEM;
	peak = ip_base(g, plan);
	g->line = budget && (plan->o.tiers & ~(1u << ORTMEM_TIER_DEVICE)) ?
		  (int64_t)ortmem__plan_dev_budget(plan) : peak;
	if (!one_by_one)
		return 0;
	if (ortmem__rt_init(&g->over, plan->n_nodes))
		return -ENOMEM;
	/* the bytes over each step's limit: min(live - line, 0) */
	over = g->diff;
	for (s = 0; s < plan->n_nodes; s++) {
		live += g->base[s];
		over[s] = live > g->line ? 0 : live - g->line;
	}
	ortmem__rt_set(&g->over, over);
	return 0;
}

static void ip_guard_free(struct ip_guard *g)
{
	free(g->base);
	free(g->diff);
	ortmem__rt_free(&g->over);
}

/* All together: does every step stay within its limit? */
static bool ip_guard_holds(const struct ip_guard *g, const struct ortmem_plan *plan)
{
	int64_t live = 0, added = 0;
	uint32_t s;

	for (s = 0; s < plan->n_nodes; s++) {
		live += g->base[s];
		added += g->diff[s];
		if (added > 0 && live + added > (live > g->line ? live : g->line))
			return false;
	}
	return true;
}

/*
 * Output buffer @by joins input buffer @bx at step @s, unless one by one
 * it would raise a step past its limit; the figures follow.  True when it
 * may.  At @s both were live, after it the larger one is.
 */
static bool ip_guard_merge(struct ip_guard *g, const struct ortmem_plan *plan,
			   uint32_t bx, uint32_t by, uint32_t s)
{
	const struct pl_buf *y = &plan->bufs[by];
	int64_t ay = (int64_t)ip_size(plan, y);
	int64_t d = (int64_t)ip_size(plan, &plan->bufs[bx]) - ay;

	if (!g->on)
		return true;
	if (!g->one_by_one) {
		g->diff[s] -= ay;
		g->diff[s + 1] += ay + d;
		g->diff[y->hi] -= d;
		return true;
	}
	if (d && y->hi > s + 1 && ortmem__rt_max(&g->over, s + 1, y->hi) + d > 0)
		return false;
	ortmem__rt_add(&g->over, s, s + 1, -ay);
	ortmem__rt_add(&g->over, s + 1, y->hi, d);
	return true;
}

static int ip_hint_cmp(const void *a, const void *b)
{
	const struct pl_hint *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

/* Merge @y's buffer into @x's when the hint at @s is safe and the guard
 * lets it. */
static void ip_try(struct ortmem_plan *plan, struct ip_guard *g, uint32_t s,
		   uint32_t y, uint32_t x, bool *out_buf)
{
	struct pl_value *vx = &plan->vals[x], *vy = &plan->vals[y];
	struct pl_buf *bx, *by;

	if (vx->view_of >= 0 || vx->def < 0 || vy->view_of >= 0 ||
	    vy->inplace_of >= 0 || vy->buf < 0 || vx->buf < 0)
		return;
	bx = &plan->bufs[vx->buf];
	by = &plan->bufs[vy->buf];
	if (out_buf[vx->buf] || bx->hi != s + 1 || by->lo != s ||
	    by->size > bx->size || bx == by ||
	    !ip_guard_merge(g, plan, (uint32_t)vx->buf, (uint32_t)vy->buf, s))
		return;
	bx->hi = by->hi;
	bx->uses += by->uses;
	out_buf[vx->buf] = out_buf[vy->buf];
	by->size = 0;
	by->hi = by->lo;	/* dead: dropped by ip_compact() */
	vy->buf = vx->buf;
	vy->inplace_of = (int32_t)x;
}

static void ip_compact(struct ortmem_plan *plan)
{
	uint32_t b, nb = 0, v;
	int32_t *map = malloc(sizeof(*map) * (plan->n_bufs ? plan->n_bufs : 1));

	if (!map)
		return;	/* dead buffers stay: size 0, harmless */
	for (b = 0; b < plan->n_bufs; b++) {
		bool dead = plan->bufs[b].hi == plan->bufs[b].lo;

		map[b] = dead ? -1 : (int32_t)nb;
		if (!dead)
			plan->bufs[nb++] = plan->bufs[b];
	}
	for (v = 0; v < plan->n_vals; v++)
		if (plan->vals[v].buf >= 0)
			plan->vals[v].buf = map[plan->vals[v].buf];
	plan->n_bufs = nb;
	free(map);
}

/*
 * Every hint in node order, the merges the guard lets through.  All
 * together (@g->one_by_one false): 1 when they raise a step past its
 * limit, the buffers then merged (the caller makes them again and asks one
 * by one); else 0.
 */
static int ip_merge_all(struct ortmem_plan *plan, struct ip_guard *g,
			const struct pl_hint *h, bool *out_buf)
{
	uint32_t k, v;

	for (v = 0; v < plan->n_vals; v++)
		if ((plan->vals[v].flags & ORTMEM_PLAN_VALUE_OUTPUT) && ortmem__plan_planned(plan, v))
			out_buf[plan->vals[plan->vals[v].root].buf] = true;
	for (k = 0; k < plan->n_hints; k++)
		ip_try(plan, g, h[k].node, h[k].out, h[k].in, out_buf);
	return g->on && !g->one_by_one && !ip_guard_holds(g, plan);
}

int ortmem__plan_inplace(struct ortmem_plan *plan, bool one_by_one)
{
	struct ip_guard g = { .on = false };
	struct pl_hint *h;
	bool *out_buf;
	int ret;

	if (!plan->n_hints || (plan->o.flags & ORTMEM_PLAN_F_NO_INPLACE))
		return 0;
	h = malloc(sizeof(*h) * plan->n_hints);
	out_buf = calloc(plan->n_bufs ? plan->n_bufs : 1, sizeof(*out_buf));
	ret = h && out_buf ? ip_guard_init(&g, plan, one_by_one) : -ENOMEM;
	if (!ret) {
		memcpy(h, plan->hints, sizeof(*h) * plan->n_hints);
		qsort(h, plan->n_hints, sizeof(*h), ip_hint_cmp);
		ret = ip_merge_all(plan, &g, h, out_buf);
	}
	if (ret < 0)
		ret = ortmem__err_plain(ret, "planner: cannot take %u in-place hints", plan->n_hints);
	else if (!ret)
		ip_compact(plan);
	ip_guard_free(&g);
	free(h);
	free(out_buf);
	return ret;
}
