// SPDX-License-Identifier: MIT
/*
 * Holding a tier to its budget (the host tier under a host budget, or a
 * budgeted tier with no slower one, where it only checks) by sending whole
 * buffers down to the next allowed tier.
 *
 * One walk over the steps keeps the bytes live on the tier: where they
 * pass the cap of a step, the buffers live there go down by the victim
 * rule (the fewest uses, then the most bytes x steps), taken from a heap
 * of the buffers started so far, until they fit; then those sent down
 * come back where their whole life has room (pl_fit_restore()).  A walk
 * costs O(n_nodes + n_bufs log n_bufs); recomputing the profile and
 * scanning every buffer per demoted one was quadratic on dense graphs.
 *
 * Then the tier is packed.  A packing lost to fragmentation places some
 * buffers above the budget: cut there (those go down too, the rest keep
 * their offsets) it fits, so a plan is always at hand.  Up to
 * PL_FIT_ROUNDS more rounds lower the caps of the steps under the buffers
 * placed too high by their overshoot, walk and pack again; the plan that
 * sends the fewest bytes down wins.  A few walks and packings, never one
 * per demoted buffer, and never a refusal while a slower tier is allowed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "plan_internal.h"

/* Packings after the first that try lowered caps. */
#define PL_FIT_ROUNDS 4

struct pl_fit {
	struct ortmem_plan *plan;
	int tier, next;
	uint64_t budget;
	uint32_t steps;
	uint32_t *first;	/* [steps + 1]: by_lo[first[s]..] start at s */
	uint32_t *by_lo;	/* the tier's buffers (size > 0) by start */
	uint64_t *ends;		/* [steps + 1]: bytes whose life ends there */
	struct plan_heap heap;	/* buffers started, best victim on top */
	uint64_t *cap;		/* [steps]; NULL: the budget at every step */
	uint32_t *fill;		/* [steps + 1]: next step not lowered yet */
	uint32_t *down;		/* buffers the walks sent down, in order */
	uint32_t n_down;
	struct plan_rtree over;	/* live bytes less the cap, per step */
	int64_t *vals;		/* [steps]: scratch to start it from */
	bool have_best;		/* a packing cut to the budget is kept: */
	uint64_t best_cost;	/* the bytes it sends down */
	struct pk_result best_res;
	uint8_t *best_tier;	/* [n_bufs] */
	uint64_t *best_off;
};

static uint64_t pl_fit_size(const struct ortmem_plan *plan, int tier, uint32_t b)
{
	uint64_t a = plan->o.align[tier];

	return (plan->bufs[b].size + a - 1) & ~(a - 1);
}

/* A buffer of @tier the walk weighs: some bytes, some life. */
static bool pl_fit_has(const struct ortmem_plan *plan, int tier, uint32_t b)
{
	const struct pl_buf *pb = &plan->bufs[b];

	return pb->tier == tier && pb->hi > pb->lo && pl_fit_size(plan, tier, b);
}

/* Pack the buffers on @tier (with staging copies on the device). */
static int pl_pack_tier(struct ortmem_plan *plan, int tier, uint64_t deadline,
			struct pk_result *res)
{
	uint64_t *off = NULL, t;
	uint32_t b, n = 0, cap = 0;
	struct pk_item *it = NULL;
	struct pk_opts po = { .deadline_ns = deadline, .seed = plan->o.seed,
			      .max_iter = plan->o.max_iterations,
			      .threads = plan->o.threads };
	int ret;

	for (b = 0; b < plan->n_bufs; b++)
		cap += plan->bufs[b].tier == tier;
	it = malloc(sizeof(*it) * (cap ? cap : 1));
	off = malloc(sizeof(*off) * (cap ? cap : 1));
	if (!it || !off) {
		ret = ortmem__err_plain(-ENOMEM, "planner: cannot pack %u buffers", cap);
		goto out;
	}
	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];

		if (pb->tier == tier)
			it[n++] = (struct pk_item){ pb->lo, pb->hi, pl_fit_size(plan, tier, b) };
	}
	t = ortmem__now_ns();
	ret = ortmem__pack(it, n, &po, off, res);
	/* what the packer did after its first plan */
	plan->budgeted_ns += ret ? 0 : ortmem__now_ns() - t - res->first_ns;
	if (ret) {
		ret = ortmem__err_plain(ret, "planner: cannot pack %u buffers of the %s tier",
					n, ortmem_tier_name(tier));
		goto out;
	}
	for (b = 0, n = 0; b < plan->n_bufs; b++) {
		struct pl_buf *pb = &plan->bufs[b];

		if (pb->tier == tier)
			pb->off = off[n++];
	}
out:
	free(it);
	free(off);
	return ret;
}

static int pl_refuse(struct ortmem_plan *plan, int tier, uint64_t need,
		     uint32_t step, const char *why)
{
	return ortmem__err_capacity(false, tier, ORTMEM_ROLE_ACTIVATION, need,
		plan->o.budget[tier],
		"the %s arena needs %" PRIu64 " bytes at step %u but its budget is %" PRIu64
		" (%s; budgets device %" PRIu64 ", host %" PRIu64 ", disk %" PRIu64 ", 0 = none)",
		ortmem_tier_name(tier), need, step, plan->o.budget[tier], why,
		plan->o.budget[0], plan->o.budget[1], plan->o.budget[2]);
}

/* Live bytes per step on @tier (a difference array); the peak and its
 * first step. */
static uint64_t pl_fit_profile(const struct ortmem_plan *plan, int tier,
			       uint64_t *prof, uint32_t *at)
{
	uint64_t live = 0, peak = 0;
	uint32_t b, s;

	memset(prof, 0, sizeof(*prof) * (plan->n_nodes + 1ull));
	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];

		if (pb->tier != tier)
			continue;
		prof[pb->lo] += pl_fit_size(plan, tier, b);
		prof[pb->hi] -= pl_fit_size(plan, tier, b);
	}
	*at = 0;
	for (s = 0; s < plan->n_nodes; s++) {
		live += prof[s];
		prof[s] = live;
		if (live > peak) {
			peak = live;
			*at = s;
		}
	}
	return peak;
}

/* @a goes down before @b: fewer uses, then more bytes x steps. */
static bool pl_fit_before(const void *ctx, uint32_t a, uint32_t b)
{
	const struct pl_buf *bufs = ctx, *x = &bufs[a], *y = &bufs[b];
	double wx = (double)x->size * (x->hi - x->lo);
	double wy = (double)y->size * (y->hi - y->lo);

	if (x->uses != y->uses)
		return x->uses < y->uses;
	if (wx != wy)
		return wx > wy;
	return a < b;
}

/* The best victim live at step @s, or -1; the dead leave the heap here. */
static int32_t pl_fit_victim(struct pl_fit *f, uint32_t s)
{
	while (f->heap.n) {
		uint32_t b = ortmem__heap_pop(&f->heap);

		if (f->plan->bufs[b].hi > s)
			return (int32_t)b;
	}
	return -1;
}

/* Walk the steps; where the live bytes pass the cap, demote until they
 * fit.  @prof gets the live bytes after. */
static int pl_fit_walk(struct pl_fit *f, uint64_t *prof, const char *why)
{
	struct pl_buf *bufs = f->plan->bufs;
	uint64_t live = 0, sz;
	uint32_t s, k;

	memset(f->ends, 0, sizeof(*f->ends) * (f->steps + 1ull));
	f->heap.n = 0;
	for (s = 0; s < f->steps; s++) {
		uint64_t cap = f->cap ? f->cap[s] : f->budget;

		live -= f->ends[s];
		for (k = f->first[s]; k < f->first[s + 1]; k++) {
			uint32_t b = f->by_lo[k];

			if (bufs[b].tier != f->tier)
				continue;
			sz = pl_fit_size(f->plan, f->tier, b);
			live += sz;
			f->ends[bufs[b].hi] += sz;
			ortmem__heap_push(&f->heap, b);
		}
		while (live > cap) {
			int32_t v = pl_fit_victim(f, s);

			if (v < 0)
				return pl_refuse(f->plan, f->tier, live, s, why);
			bufs[v].tier = f->next;
			f->down[f->n_down++] = (uint32_t)v;
			sz = pl_fit_size(f->plan, f->tier, (uint32_t)v);
			live -= sz;
			f->ends[bufs[v].hi] -= sz;
		}
		prof[s] = live;
	}
	return 0;
}

static int pl_fit_init(struct pl_fit *f)
{
	const struct ortmem_plan *plan = f->plan;
	uint32_t b, s, n = 0;

	f->steps = plan->n_nodes;
	f->first = calloc(f->steps + 2ull, sizeof(*f->first));
	f->ends = malloc(sizeof(*f->ends) * (f->steps + 1ull));
	for (b = 0; b < plan->n_bufs; b++)
		n += pl_fit_has(plan, f->tier, b);
	f->by_lo = malloc(sizeof(*f->by_lo) * (n ? n : 1));
	f->heap = (struct plan_heap){ .v = malloc(sizeof(*f->heap.v) * (n ? n : 1)),
				      .before = pl_fit_before, .ctx = plan->bufs };
	f->down = malloc(sizeof(*f->down) * (n ? n : 1));
	f->vals = malloc(sizeof(*f->vals) * (f->steps + 1ull));
	f->best_tier = malloc(plan->n_bufs ? plan->n_bufs : 1);
	f->best_off = malloc(sizeof(*f->best_off) * (plan->n_bufs ? plan->n_bufs : 1));
	if (!f->first || !f->ends || !f->by_lo || !f->heap.v || !f->down || !f->vals ||
	    ortmem__rt_init(&f->over, f->steps) || !f->best_tier || !f->best_off)
		return ortmem__err_plain(-ENOMEM, "planner: cannot fit %u buffers to the %s budget",
					 n, ortmem_tier_name(f->tier));
	/* counting sort by start: first[lo + 2] counts, then shifts down */
	for (b = 0; b < plan->n_bufs; b++)
		if (pl_fit_has(plan, f->tier, b))
			f->first[plan->bufs[b].lo + 2]++;
	for (s = 2; s <= f->steps + 1; s++)
		f->first[s] += f->first[s - 1];
	for (b = 0; b < plan->n_bufs; b++)
		if (pl_fit_has(plan, f->tier, b))
			f->by_lo[f->first[plan->bufs[b].lo + 1]++] = b;
	return 0;
}

/*
 * The walk's demotions overshoot (a big victim frees more than the step
 * needed).  A buffer sent down comes back when every step of its life has
 * room under its cap: the last the rule would pick first (the most uses,
 * then the fewest bytes x steps).  A range tree over the steps
 * (plan_range.c) keeps the live bytes less the cap, each check and each
 * return O(log n_nodes).
 */
static int64_t pl_fit_cap(const struct pl_fit *f, uint32_t s)
{
	uint64_t cap = f->cap ? f->cap[s] : f->budget;

	/* sizes and their sum stay below 2^62 (plan_solve.c) */
	return cap > 1ull << 62 ? (int64_t)(1ull << 62) : (int64_t)cap;
}

struct pl_back {
	double weight;
	uint32_t uses;
	uint32_t b;
};

static int pl_back_order(const void *pa, const void *pb)
{
	const struct pl_back *x = pa, *y = pb;

	if (x->uses != y->uses)
		return x->uses > y->uses ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight < y->weight ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

static int pl_fit_restore(struct pl_fit *f, uint64_t *prof)
{
	struct pl_buf *bufs = f->plan->bufs;
	uint64_t room;
	struct pl_back *o;
	uint32_t i, n = 0, s;

	o = malloc(sizeof(*o) * (f->n_down ? f->n_down : 1));
	if (!o)
		return ortmem__err_plain(-ENOMEM, "planner: cannot weigh %u buffers sent down",
					 f->n_down);
	for (i = 0; i < f->n_down; i++) {
		const struct pl_buf *pb = &bufs[f->down[i]];

		if (pb->tier == f->next)
			o[n++] = (struct pl_back){ (double)pb->size * (pb->hi - pb->lo),
						   pb->uses, f->down[i] };
	}
	qsort(o, n, sizeof(*o), pl_back_order);
	for (s = 0; s < f->steps; s++)
		f->vals[s] = (int64_t)prof[s] - pl_fit_cap(f, s);
	ortmem__rt_set(&f->over, f->vals);
	memset(f->ends, 0, sizeof(*f->ends) * (f->steps + 1ull));
	for (i = 0, f->n_down = 0; i < n; i++) {
		const struct pl_buf *pb = &bufs[o[i].b];
		uint64_t sz = pl_fit_size(f->plan, f->tier, o[i].b);

		if (pb->lo < f->steps &&
		    ortmem__rt_max(&f->over, pb->lo, pb->hi) + (int64_t)sz > 0) {
			f->down[f->n_down++] = o[i].b;
			continue;
		}
		bufs[o[i].b].tier = f->tier;
		ortmem__rt_add(&f->over, pb->lo, pb->hi, (int64_t)sz);
		f->ends[pb->lo] += sz;
		f->ends[pb->hi] -= sz;
	}
	/* @prof: the live bytes with the returned (difference array) */
	for (s = 0, room = 0; s < f->steps; s++) {
		room += f->ends[s];
		prof[s] += room;
	}
	free(o);
	return 0;
}

static uint32_t pl_fill_next(uint32_t *fill, uint32_t s)
{
	while (fill[s] != s) {
		fill[s] = fill[fill[s]];
		s = fill[s];
	}
	return s;
}

static int pl_by_top(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? 1 : x[0] > y[0] ? -1 : 0;
}

/*
 * The packing rose above the budget: under each buffer placed above it
 * (the highest first, so a step takes the largest overshoot over it), the
 * cap drops to the live bytes less the overshoot.
 */
static int pl_fit_lower(struct pl_fit *f, const uint64_t *prof)
{
	const struct ortmem_plan *plan = f->plan;
	uint64_t (*over)[2] = NULL;
	uint32_t b, s, n = 0;

	if (!f->cap) {
		f->cap = malloc(sizeof(*f->cap) * (f->steps ? f->steps : 1));
		f->fill = malloc(sizeof(*f->fill) * (f->steps + 1ull));
		if (!f->cap || !f->fill)
			goto nomem;
		for (s = 0; s < f->steps; s++)
			f->cap[s] = f->budget;
	}
	for (s = 0; s <= f->steps; s++)
		f->fill[s] = s;
	for (b = 0; b < plan->n_bufs; b++)
		n += plan->bufs[b].tier == f->tier &&
		     plan->bufs[b].off + pl_fit_size(plan, f->tier, b) > f->budget;
	over = malloc(sizeof(*over) * (n ? n : 1));
	if (!over)
		goto nomem;
	for (b = 0, n = 0; b < plan->n_bufs; b++) {
		uint64_t top = plan->bufs[b].off + pl_fit_size(plan, f->tier, b);

		if (plan->bufs[b].tier == f->tier && top > f->budget) {
			over[n][0] = top;
			over[n++][1] = b;
		}
	}
	qsort(over, n, sizeof(*over), pl_by_top);
	for (b = 0; b < n; b++) {
		const struct pl_buf *pb = &plan->bufs[over[b][1]];
		uint64_t d = over[b][0] - f->budget;

		for (s = pl_fill_next(f->fill, pb->lo); s < pb->hi;
		     s = pl_fill_next(f->fill, s)) {
			f->cap[s] = prof[s] > d ? prof[s] - d : 0;
			f->fill[s] = s + 1;
		}
	}
	free(over);
	return 0;
nomem:
	return ortmem__err_plain(-ENOMEM, "planner: cannot refit the %s arena over %u steps",
				 ortmem_tier_name(f->tier), f->steps);
}

/* The first step under the highest buffer of the packed @tier. */
static uint32_t pl_fit_top_step(const struct ortmem_plan *plan, int tier)
{
	uint64_t top = 0;
	uint32_t b, at = 0;

	for (b = 0; b < plan->n_bufs; b++)
		if (plan->bufs[b].tier == tier &&
		    plan->bufs[b].off + pl_fit_size(plan, tier, b) > top) {
			top = plan->bufs[b].off + pl_fit_size(plan, tier, b);
			at = plan->bufs[b].lo;
		}
	return at;
}

/* With nothing to move: check the profile, pack, check the packing. */
static int pl_fit_check(struct ortmem_plan *plan, int tier, uint64_t *prof,
			uint64_t deadline, struct pk_result *res)
{
	uint64_t budget = plan->o.budget[tier], peak;
	uint32_t at;
	int ret;

	peak = budget ? pl_fit_profile(plan, tier, prof, &at) : 0;
	if (peak > budget)
		return pl_refuse(plan, tier, peak, at, "no slower tier is allowed");
	ret = pl_pack_tier(plan, tier, deadline, res);
	if (ret || !budget || res->height <= budget)
		return ret;
	return pl_refuse(plan, tier, res->height, pl_fit_top_step(plan, tier),
			 "the packing cannot fit it and nothing more can move down");
}

/* Bytes the walks keep sent down (what a runtime writes to @next). */
static uint64_t pl_fit_down_bytes(const struct pl_fit *f)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < f->n_down; i++)
		sum += f->plan->bufs[f->down[i]].size;
	return sum;
}

/*
 * A packing above the budget, cut: the buffers placed above it go down
 * too, and what is left keeps its offsets, all under the budget.  Kept
 * in @f->best (tiers and offsets of every buffer) when it sends fewer
 * bytes down than the best so far.
 */
static void pl_fit_cut(struct pl_fit *f, const struct pk_result *res)
{
	struct ortmem_plan *plan = f->plan;
	uint64_t cost = pl_fit_down_bytes(f), top, height = 0;
	uint32_t b;

	for (b = 0; b < plan->n_bufs; b++)
		if (plan->bufs[b].tier == f->tier &&
		    plan->bufs[b].off + pl_fit_size(plan, f->tier, b) > f->budget)
			cost += plan->bufs[b].size;
	if (f->have_best && cost >= f->best_cost)
		return;
	f->have_best = true;
	f->best_cost = cost;
	f->best_res = *res;
	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];

		f->best_tier[b] = (uint8_t)pb->tier;
		f->best_off[b] = pb->off;
		top = pb->off + pl_fit_size(plan, f->tier, b);
		if (pb->tier != f->tier)
			continue;
		if (top > f->budget)
			f->best_tier[b] = (uint8_t)f->next;
		else if (top > height)
			height = top;
	}
	f->best_res.height = height;
}

/* Take the best packing back: its tiers, offsets, height, lower bound. */
static void pl_fit_take_best(struct pl_fit *f, uint64_t *prof, struct pk_result *res)
{
	struct ortmem_plan *plan = f->plan;
	uint32_t b, at;

	for (b = 0; b < plan->n_bufs; b++) {
		plan->bufs[b].tier = f->best_tier[b];
		plan->bufs[b].off = f->best_off[b];
	}
	*res = f->best_res;
	res->lb = pl_fit_profile(plan, f->tier, prof, &at);
	res->optimal = res->height <= res->lb;
}

/*
 * Every buffer on the device, packed whole as without a budget, where that
 * fits the device budget: no byte moves, and the packer's search lowers
 * the arena as it does without a budget (the gap placement runs only its
 * first heuristic past GAP_SEARCH_MAX intervals: a 4,600-step transformer
 * whose 5 MiB fit a 20 MiB budget got a 1.10x arena in 7.8 ms, against
 * the bound in 0.6 ms without the budget).  1 when it fits (tiers and
 * offsets set), 0 when the live bytes or the packing exceed the budget,
 * or a negative error.
 */
int ortmem__plan_fit_whole(struct ortmem_plan *plan, uint64_t *prof, uint64_t deadline,
			   struct pk_result *res)
{
	uint64_t budget = plan->o.budget[ORTMEM_TIER_DEVICE];
	uint32_t at;
	int ret;

	if (pl_fit_profile(plan, ORTMEM_TIER_DEVICE, prof, &at) > budget)
		return 0;
	ret = pl_pack_tier(plan, ORTMEM_TIER_DEVICE, deadline, res);
	return ret ? ret : res->height <= budget;
}

/*
 * Demote from @tier to @next (-1: none) until its packed arena fits: walk,
 * pack; a packing above the budget is cut to it (pl_fit_cut()), and a few
 * rounds try lowered caps for one that sends fewer bytes down.
 */
int ortmem__plan_fit_tier(struct ortmem_plan *plan, int tier, int next,
			  uint64_t *prof, uint64_t deadline, struct pk_result *res)
{
	struct pl_fit f = { .plan = plan, .tier = tier, .next = next,
			    .budget = plan->o.budget[tier] };
	uint32_t round;
	int ret;

	if (next < 0 || !f.budget)
		return pl_fit_check(plan, tier, prof, deadline, res);
	ret = pl_fit_init(&f);
	if (!ret)
		ret = pl_fit_walk(&f, prof, "every buffer live there is used there");
	if (!ret)
		ret = pl_fit_restore(&f, prof);
	for (round = 0; !ret; round++) {
		ret = pl_pack_tier(plan, tier, deadline, res);
		if (ret)
			break;
		if (res->height <= f.budget && (!f.have_best || pl_fit_down_bytes(&f) < f.best_cost))
			goto out;
		pl_fit_cut(&f, res);
		if (res->height <= f.budget || round == PL_FIT_ROUNDS)
			break;
		ret = pl_fit_lower(&f, prof);
		if (!ret)
			ret = pl_fit_walk(&f, prof,
				"the packing cannot fit it and nothing more can move down");
		if (!ret)
			ret = pl_fit_restore(&f, prof);
		/* the time went to the first packing: the rest take first plans */
		deadline = ortmem__now_ns();
	}
	if (!ret)
		pl_fit_take_best(&f, prof, res);
out:
	free(f.first);
	free(f.by_lo);
	free(f.ends);
	free(f.heap.v);
	free(f.down);
	free(f.vals);
	ortmem__rt_free(&f.over);
	free(f.cap);
	free(f.fill);
	free(f.best_tier);
	free(f.best_off);
	return ret;
}
