// SPDX-License-Identifier: MIT
/*
 * In-place hints: an output takes the buffer of an input that dies at its
 * node, when that is safe (the input is no view and no graph output, the
 * output no larger).  Hints are taken in node order.
 *
 * A hint allows sharing, it does not demand it.  Where the input is the
 * larger, every later step that touches the output touches the larger
 * buffer, and the output's life holds more bytes: a budget that holds the
 * graph without the sharing could then be refused.  So under a device
 * budget a merge is not made when it would push a step over it:
 *  - with a slower tier, a step's own footprint (the aligned bytes of the
 *    buffers it touches), which the placement refuses above the budget
 *    (ortmem__plan_gap_footprint());
 *  - with the device tier alone, the bytes live at a step, which the arena
 *    must hold (plan_fit.c).
 * When every merge together keeps the figures within the budget (or the
 * graph exceeds it without any), all are made, as without a budget.
 * Otherwise they are made again one by one, each checked against the
 * figures with the merges taken before it: a budget that holds every step
 * without any merge then holds it with those taken.  (One by one alone
 * would drop a merge that only a later one's saving makes fit.)
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

#define IP_NONE UINT32_MAX

enum ip_watch { IP_OFF, IP_FOOT, IP_LIVE };

struct ip_guard {
	enum ip_watch watch;
	bool check;		/* refuse the merges that overrun the budget */
	uint64_t budget;
	/* IP_FOOT: per step its footprint; per buffer a list of the steps
	 * that touch it (first[], next[] over touches, step[] of each) */
	uint64_t *foot;
	uint32_t *first, *last, *next, *step;
	/* IP_LIVE: the aligned bytes live at each step */
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

/* The aligned bytes live at each step, before any merge. */
static int ip_live_init(struct ip_guard *g, const struct ortmem_plan *plan)
{
	int64_t *v = calloc(plan->n_nodes + 1, sizeof(*v)), live = 0;
	uint32_t b, s;

	if (!v || ortmem__rt_init(&g->live, plan->n_nodes)) {
		free(v);
		return -ENOMEM;
	}
	for (b = 0; b < plan->n_bufs; b++) {
		v[plan->bufs[b].lo] += (int64_t)ip_size(plan, &plan->bufs[b]);
		v[plan->bufs[b].hi] -= (int64_t)ip_size(plan, &plan->bufs[b]);
	}
	for (s = 0; s < plan->n_nodes; s++) {
		live += v[s];
		v[s] = live;
	}
	ortmem__rt_set(&g->live, v);
	free(v);
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

static int ip_guard_init(struct ip_guard *g, const struct ortmem_plan *plan)
{
	uint64_t budget = plan->o.budget[ORTMEM_TIER_DEVICE];

	/* sizes past what the solve accepts: it refuses them after the
	 * merges, with or without a guard */
	if (!budget || !plan->n_nodes || !ip_sizes_sane(plan))
		return 0;
	if (plan->o.tiers & ~(1u << ORTMEM_TIER_DEVICE)) {
		g->watch = IP_FOOT;
		g->budget = ortmem__plan_dev_budget(plan);
		return ip_foot_init(g, plan);
	}
	g->watch = IP_LIVE;
	g->budget = budget;
	return ip_live_init(g, plan);
}

/* The largest figure over the steps. */
static uint64_t ip_guard_peak(const struct ip_guard *g, const struct ortmem_plan *plan)
{
	uint64_t peak = 0;
	uint32_t s;

	if (g->watch == IP_LIVE)
		return (uint64_t)ortmem__rt_max(&g->live, 0, plan->n_nodes);
	for (s = 0; g->watch == IP_FOOT && s < plan->n_nodes; s++)
		if (g->foot[s] > peak)
			peak = g->foot[s];
	return peak;
}

static void ip_guard_free(struct ip_guard *g)
{
	free(g->foot);
	free(g->first);
	free(g->last);
	free(g->next);
	free(g->step);
	ortmem__rt_free(&g->live);
}

/*
 * Output buffer @by joins input buffer @bx at step @s when the budget
 * stays kept; then the figures follow.  True when it may.
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
		for (t = g->first[by]; g->check && d && t != IP_NONE; t = g->next[t])
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
		if (g->check && d && y->hi > s + 1 &&
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

/* Merge @y's buffer into @x's when the hint at @s is safe and keeps the
 * budget. */
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

/* Every hint in node order, the merges the guard lets through. */
static void ip_merge_all(struct ortmem_plan *plan, struct ip_guard *g,
			 const struct pl_hint *h, bool *out_buf)
{
	uint32_t k, v;

	memset(out_buf, 0, sizeof(*out_buf) * (plan->n_bufs ? plan->n_bufs : 1));
	for (v = 0; v < plan->n_vals; v++)
		if ((plan->vals[v].flags & ORTMEM_PLAN_VALUE_OUTPUT) && ip_planned(plan, v))
			out_buf[plan->vals[plan->vals[v].root].buf] = true;
	for (k = 0; k < plan->n_hints; k++)
		ip_try(plan, g, h[k].node, h[k].out, h[k].in, out_buf);
}

/*
 * All merges, as without a budget, unless together they overrun a budget
 * the graph keeps without them: then one by one, each checked.  The
 * buffers and values before the merges are kept in @bufs and @vals for
 * that second round.
 */
static int ip_merge(struct ortmem_plan *plan, struct ip_guard *g,
		    const struct pl_hint *h, bool *out_buf)
{
	struct pl_buf *bufs = NULL;
	struct pl_value *vals = NULL;
	uint64_t before = ip_guard_peak(g, plan);
	int ret = 0;

	if (g->watch != IP_OFF) {
		bufs = malloc(sizeof(*bufs) * (plan->n_bufs ? plan->n_bufs : 1));
		vals = malloc(sizeof(*vals) * (plan->n_vals ? plan->n_vals : 1));
		if (!bufs || !vals) {
			ret = -ENOMEM;
			goto out;
		}
		memcpy(bufs, plan->bufs, sizeof(*bufs) * plan->n_bufs);
		memcpy(vals, plan->vals, sizeof(*vals) * plan->n_vals);
	}
	ip_merge_all(plan, g, h, out_buf);
	if (g->watch == IP_OFF || before > g->budget || ip_guard_peak(g, plan) <= g->budget)
		goto out;
	memcpy(plan->bufs, bufs, sizeof(*bufs) * plan->n_bufs);
	memcpy(plan->vals, vals, sizeof(*vals) * plan->n_vals);
	ip_guard_free(g);
	*g = (struct ip_guard){ .check = true };
	ret = ip_guard_init(g, plan);
	if (!ret)
		ip_merge_all(plan, g, h, out_buf);
out:
	free(bufs);
	free(vals);
	return ret;
}

int ortmem__plan_inplace(struct ortmem_plan *plan)
{
	struct ip_guard g = { .watch = IP_OFF };
	struct pl_hint *h;
	bool *out_buf;
	int ret;

	if (!plan->n_hints || (plan->o.flags & ORTMEM_PLAN_F_NO_INPLACE))
		return 0;
	h = malloc(sizeof(*h) * plan->n_hints);
	out_buf = calloc(plan->n_bufs ? plan->n_bufs : 1, sizeof(*out_buf));
	ret = h && out_buf ? ip_guard_init(&g, plan) : -ENOMEM;
	if (!ret) {
		memcpy(h, plan->hints, sizeof(*h) * plan->n_hints);
		qsort(h, plan->n_hints, sizeof(*h), ip_hint_cmp);
		ret = ip_merge(plan, &g, h, out_buf);
	}
	if (ret)
		ret = ortmem__err_plain(ret, "planner: cannot take %u in-place hints", plan->n_hints);
	else
		ip_compact(plan);
	ip_guard_free(&g);
	free(h);
	free(out_buf);
	return ret;
}
