// SPDX-License-Identifier: MIT
/*
 * In-place hints: an output takes the buffer of an input that dies at its
 * node, when that is safe (the input is no view and no graph output, the
 * output no larger).  Hints are taken in node order.
 *
 * A hint allows sharing, it does not demand it.  Where the input is the
 * larger, every later step that touches the output touches the larger
 * buffer, and the output's life holds more bytes.  So a merge is not made
 * when it would raise one of these figures past its limit:
 *  - with a device budget and a slower tier, a step's own footprint (the
 *    aligned bytes of the buffers it touches), which the placement refuses
 *    above the budget (ortmem__plan_gap_footprint());
 *  - otherwise (the device alone, or no device budget), the bytes live at
 *    a step, within the graph's own peak without sharing (the arena's
 *    lower bound, whatever the budget): a merge that raises it makes the
 *    arena larger, the opposite of what a hint is for, and with the same
 *    merges with a budget as without, a budget that holds the one plan
 *    holds the other.
 * When every merge together keeps the figures within the limit (or the
 * graph exceeds it without any), all are made: that round costs O(1) a
 * merge (differences summed once), plus the touches of the merged buffers
 * with a slower tier.  Otherwise the buffers are made again (plan_live.c)
 * and the merges one by one, each checked against the figures with the
 * merges taken before it (a range tree of the bytes live): a limit that
 * holds every step without any merge then holds it with those taken.
 * (One by one alone would drop a merge that only a later one's saving
 * makes fit.)
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

#define IP_NONE UINT32_MAX

enum ip_watch { IP_OFF, IP_FOOT, IP_LIVE };

struct ip_guard {
	enum ip_watch watch;
	bool one_by_one;	/* refuse each merge that overruns the budget */
	uint64_t budget;
	/* IP_FOOT: per step its footprint; per buffer a list of the steps
	 * that touch it (first[], next[] over touches, step[] of each) */
	uint64_t *foot;
	uint32_t *first, *last, *next, *step;
	/* IP_LIVE: the aligned bytes live at each step as differences from
	 * the step before, the merges' changes added (all together), or a
	 * range tree of the bytes (one by one) */
	int64_t *diff;
	struct plan_rtree live;
};

static bool ip_planned(const struct ortmem_plan *plan, uint32_t v)
{
	return plan->vals[plan->vals[v].root].def >= 0;
}

static uint64_t ip_size(const struct ortmem_plan *plan, const struct pl_buf *b)
{
	uint64_t a = plan->o.align[ORTMEM_TIER_DEVICE];

	return (b->size + a - 1) & ~(a - 1);
}

/* Each step's footprint and each buffer's touches, before any merge. */
static int ip_foot_init(struct ip_guard *g, const struct ortmem_plan *plan)
{
	uint32_t nb = plan->n_bufs, s, k, b, nt = 0;

	g->foot = calloc(plan->n_nodes + 1, sizeof(*g->foot));
	g->first = malloc(sizeof(*g->first) * (nb + 1));
	g->last = malloc(sizeof(*g->last) * (nb + 1));
	g->next = malloc(sizeof(*g->next) * (plan->n_edges + 1));
	g->step = malloc(sizeof(*g->step) * (plan->n_edges + 1));
	if (!g->foot || !g->first || !g->last || !g->next || !g->step)
		return -ENOMEM;
	for (b = 0; b < nb; b++)
		g->first[b] = g->last[b] = IP_NONE;
	for (s = 0; s < plan->n_nodes; s++) {
		const struct pl_node *nd = &plan->nodes[s];

		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			uint32_t v = plan->edges[nd->in + k];
			int32_t bb = ip_planned(plan, v) ? plan->vals[plan->vals[v].root].buf : -1;

			/* a buffer touched twice at a step counts once */
			if (bb < 0 || (g->last[bb] != IP_NONE && g->step[g->last[bb]] == s))
				continue;
			g->step[nt] = s;
			g->next[nt] = IP_NONE;
			if (g->last[bb] == IP_NONE)
				g->first[bb] = nt;
			else
				g->next[g->last[bb]] = nt;
			g->last[bb] = nt++;
			g->foot[s] += ip_size(plan, &plan->bufs[bb]);
		}
	}
	return 0;
}

/* The largest figure over the steps, with the merges made so far (all
 * together). */
static uint64_t ip_guard_peak(const struct ip_guard *g, const struct ortmem_plan *plan)
{
	int64_t peak = 0, live = 0;
	uint32_t s;

	for (s = 0; g->watch == IP_FOOT && s < plan->n_nodes; s++)
		if ((int64_t)g->foot[s] > peak)
			peak = (int64_t)g->foot[s];
	for (s = 0; g->watch == IP_LIVE && s < plan->n_nodes; s++) {
		live += g->diff[s];
		if (live > peak)
			peak = live;
	}
	return (uint64_t)peak;
}

/* The aligned bytes live at each step before any merge. */
static int ip_live_init(struct ip_guard *g, const struct ortmem_plan *plan)
{
	uint32_t b, s;

	g->diff = calloc(plan->n_nodes + 1, sizeof(*g->diff));
	if (!g->diff)
		return -ENOMEM;
	for (b = 0; b < plan->n_bufs; b++) {
		g->diff[plan->bufs[b].lo] += (int64_t)ip_size(plan, &plan->bufs[b]);
		g->diff[plan->bufs[b].hi] -= (int64_t)ip_size(plan, &plan->bufs[b]);
	}
	/* the peak without sharing is the one to keep, the arena's lower
	 * bound, whatever the budget: a merge that raises it makes the arena
	 * larger, and with the same merges with a budget as without, a budget
	 * that holds the one plan holds the other */
	g->budget = ip_guard_peak(g, plan);
	if (!g->one_by_one)
		return 0;
	if (ortmem__rt_init(&g->live, plan->n_nodes))
		return -ENOMEM;
	for (s = 1; s < plan->n_nodes; s++)
		g->diff[s] += g->diff[s - 1];	/* the bytes themselves */
	ortmem__rt_set(&g->live, g->diff);
	return 0;
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
 * Can a merge raise a figure at all?  Only where an input's buffer is
 * larger, aligned, than the output's (the buffer of a chain is its first
 * input's, so equal pairs make equal chains).  Most hints are of ops whose
 * output is their input's size: then no guard is needed.
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

static int ip_guard_init(struct ip_guard *g, const struct ortmem_plan *plan, bool one_by_one)
{
	uint64_t budget = plan->o.budget[ORTMEM_TIER_DEVICE];

	*g = (struct ip_guard){ .watch = IP_OFF, .one_by_one = one_by_one };
	/* sizes past what the solve accepts: it refuses them after the
	 * merges, with or without a guard */
	if (!plan->n_nodes || !ip_sizes_sane(plan) || !ip_some_larger(plan))
		return 0;
	if (budget && (plan->o.tiers & ~(1u << ORTMEM_TIER_DEVICE))) {
		g->watch = IP_FOOT;
		g->budget = ortmem__plan_dev_budget(plan);
		return ip_foot_init(g, plan);
	}
	g->watch = IP_LIVE;
	return ip_live_init(g, plan);
}

static void ip_guard_free(struct ip_guard *g)
{
	free(g->foot);
	free(g->first);
	free(g->last);
	free(g->next);
	free(g->step);
	free(g->diff);
	ortmem__rt_free(&g->live);
}

/*
 * Output buffer @by joins input buffer @bx at step @s, unless one by one
 * it would overrun the budget; the figures follow.  True when it may.
 */
static bool ip_guard_merge(struct ip_guard *g, const struct ortmem_plan *plan,
			   uint32_t bx, uint32_t by, uint32_t s)
{
	const struct pl_buf *x = &plan->bufs[bx], *y = &plan->bufs[by];
	uint64_t ax = ip_size(plan, x), ay = ip_size(plan, y), d = ax - ay;
	uint32_t t;

	switch (g->watch) {
	case IP_OFF:
		return true;
	case IP_FOOT:
		/* at @s both were touched, after it the larger one is */
		for (t = g->first[by]; g->one_by_one && d && t != IP_NONE; t = g->next[t])
			if (g->step[t] > s && g->foot[g->step[t]] + d > g->budget)
				return false;
		for (t = g->first[by]; t != IP_NONE; t = g->next[t]) {
			if (g->step[t] > s)
				g->foot[g->step[t]] += d;
			else
				g->foot[s] -= ay;	/* one buffer there now */
		}
		g->next[g->last[bx]] = g->first[by];
		g->last[bx] = g->last[by];
		return true;
	case IP_LIVE:
		/* at @s both were live, after it the larger one is */
		if (!g->one_by_one) {
			g->diff[s] -= (int64_t)ay;
			g->diff[s + 1] += (int64_t)(ay + d);
			g->diff[y->hi] -= (int64_t)d;
			return true;
		}
		if (d && y->hi > s + 1 &&
		    (uint64_t)ortmem__rt_max(&g->live, s + 1, y->hi) + d > g->budget)
			return false;
		ortmem__rt_add(&g->live, s, s + 1, -(int64_t)ay);
		ortmem__rt_add(&g->live, s + 1, y->hi, (int64_t)d);
		return true;
	}
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
 * together (@one_by_one false): 1 when they overrun a budget the graph
 * keeps without them, the buffers then merged in part (the caller makes
 * them again and asks one by one); else 0.
 */
static int ip_merge_all(struct ortmem_plan *plan, struct ip_guard *g,
			const struct pl_hint *h, bool *out_buf)
{
	uint64_t before = g->one_by_one ? 0 : ip_guard_peak(g, plan);
	uint32_t k, v;

	for (v = 0; v < plan->n_vals; v++)
		if ((plan->vals[v].flags & ORTMEM_PLAN_VALUE_OUTPUT) && ip_planned(plan, v))
			out_buf[plan->vals[plan->vals[v].root].buf] = true;
	for (k = 0; k < plan->n_hints; k++)
		ip_try(plan, g, h[k].node, h[k].out, h[k].in, out_buf);
	return g->watch != IP_OFF && !g->one_by_one && before <= g->budget &&
	       ip_guard_peak(g, plan) > g->budget;
}

int ortmem__plan_inplace(struct ortmem_plan *plan, bool one_by_one)
{
	struct ip_guard g = { .watch = IP_OFF };
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
