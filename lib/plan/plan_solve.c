// SPDX-License-Identifier: MIT
/*
 * ortmem_plan_solve() and the accessors of a solved plan; ortmem_plan_pack()
 * for plain buffers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan_internal.h"

static int pl_deferred_error(const struct ortmem_plan *plan)
{
	char names[160];
	size_t pos = 0;
	uint32_t k;

	names[0] = '\0';
	for (k = 0; k < plan->n_deferred && pos + 16 < sizeof(names); k++)
		pos += (size_t)snprintf(names + pos, sizeof(names) - pos, "%s%u",
					k ? ", " : "", plan->deferred[k]);
	return ortmem__err_plain(-ORTMEM_E_PLAN_DEFERRED,
		"%u value(s) have a symbolic size (%s%s); plan again once their shapes are known, or give a size oracle that knows them",
		plan->n_deferred, names, k < plan->n_deferred ? ", ..." : "");
}

static int pl_figures(struct ortmem_plan *plan)
{
	uint64_t align = plan->o.align[ORTMEM_TIER_DEVICE], sum = 0;
	struct pk_item *it;
	uint32_t b, v;
	int t;

	for (b = 0; b < plan->n_bufs; b++)
		if (plan->bufs[b].tier != ORTMEM_TIER_DEVICE)
			break;
	/* All on the device: the device packing's bound is the same one. */
	if (b == plan->n_bufs) {
		plan->st.lower_bound = plan->st.tier_lower_bound[ORTMEM_TIER_DEVICE];
	} else {
		it = malloc(sizeof(*it) * (plan->n_bufs ? plan->n_bufs : 1));
		if (!it)
			return ortmem__err_plain(-ENOMEM, "planner: out of memory");
		for (b = 0; b < plan->n_bufs; b++)
			it[b] = (struct pk_item){ plan->bufs[b].lo, plan->bufs[b].hi,
				(plan->bufs[b].size + align - 1) & ~(align - 1) };
		plan->st.lower_bound = ortmem__pk_lower_bound(it, plan->n_bufs);
		free(it);
	}
	for (v = 0; v < plan->n_vals; v++) {
		const struct pl_value *x = &plan->vals[v];

		if (x->view_of < 0 && x->def >= 0) {
			if (__builtin_add_overflow(sum, x->rsize, &sum))
				return ortmem__err_plain(-EOVERFLOW,
					"planner: the sizes of the values overflow 64 bits");
			plan->st.n_values++;
		}
		if (x->inplace_of >= 0)
			plan->st.n_inplace++;
	}
	plan->st.naive_bytes = sum;
	plan->st.n_buffers = plan->n_bufs;
	for (sum = 0, t = 0; t < ORTMEM_TIER_COUNT; t++)
		sum += plan->st.arena[t];
	plan->st.arena_over_lb = plan->st.lower_bound ?
		(double)sum / (double)plan->st.lower_bound : 1.0;
	for (v = 0; plan->prefetch && v < (uint32_t)plan->n_nodes * ORTMEM_TIER_COUNT; v++) {
		plan->st.prefetch_bytes += plan->prefetch[v];
		plan->st.spill_bytes += plan->spill[v];
	}
	return 0;
}

/* Sizes whose aligned sum could overflow are refused up front: each
 * rounded up to the largest alignment of a tier it may take (a huge
 * alignment makes small sizes huge). */
static int pl_check_sizes(const struct ortmem_plan *plan)
{
	uint64_t sum = 0, align = 1, a;
	uint32_t b;
	int t;

	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		if ((plan->o.tiers & (1u << t)) && plan->o.align[t] > align)
			align = plan->o.align[t];
	for (b = 0; b < plan->n_bufs; b++) {
		a = plan->bufs[b].size <= (UINT64_MAX >> 2) ?
		    (plan->bufs[b].size + align - 1) & ~(align - 1) : UINT64_MAX;
		if (a > (UINT64_MAX >> 2) || __builtin_add_overflow(sum, a, &sum) ||
		    sum > (UINT64_MAX >> 2))
			return ortmem__err_plain(-EOVERFLOW,
				"planner: the buffer of value %u (%" PRIu64 " bytes, aligned to %" PRIu64 ") makes the sizes overflow; sizes and their sum, aligned, must stay below 2^62 bytes",
				plan->bufs[b].owner, plan->bufs[b].size, align);
	}
	return 0;
}

/* Did the in-place hints merge any buffers? */
static bool pl_shared_inplace(const struct ortmem_plan *plan)
{
	uint32_t v;

	for (v = 0; v < plan->n_vals; v++)
		if (plan->vals[v].inplace_of >= 0)
			return true;
	return false;
}

/* Buffers, then tiers and offsets; 0 or an error. */
static int pl_plan(struct ortmem_plan *plan)
{
	int ret;

	ortmem__plan_reset(plan);
	memset(&plan->st, 0, sizeof(plan->st));
	plan->st.sz = sizeof(plan->st);
	ret = ortmem__plan_liveness(plan);
	if (!ret && plan->n_deferred)
		return pl_deferred_error(plan);	/* the plan stays deferred */
	if (!ret)
		ret = pl_check_sizes(plan);
	if (!ret)
		ret = ortmem__plan_place(plan);
	return ret;
}

/*
 * A plan with in-place merges was refused.  The merges taken keep the
 * figures plan_inplace.c watches within their limits, but a larger buffer
 * can still leave a packing no room where the buffers apart had it (the
 * device alone), or a slower tier's budget short.  A hint allows sharing,
 * it does not demand it: plan without the hints, within the same time
 * budget, and refuse only what that cannot hold either, naming the
 * smaller need of the two (this plan makes a first plan only, the one
 * with the hints searched).
 */
static int pl_plan_without_hints(struct ortmem_plan *plan)
{
	const struct ortmem_error *e = ortmem_last_error();
	struct ortmem_error with_hints = e ? *e : (struct ortmem_error){ 0 };
	int ret;

	plan->o.flags |= ORTMEM_PLAN_F_NO_INPLACE;
	ret = pl_plan(plan);
	plan->o.flags &= ~ORTMEM_PLAN_F_NO_INPLACE;
	if (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE && e && ortmem_last_error() &&
	    with_hints.requested < ortmem_last_error()->requested)
		ret = ortmem__err_restore(&with_hints, ret);
	return ret;
}

ORTMEM_API int ortmem_plan_solve(struct ortmem_plan *plan)
{
	uint64_t t0 = ortmem__now_ns();
	int ret;

	if (!plan)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_solve: plan is NULL");
	plan->deadline_ns = t0 + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC;
	plan->budgeted_ns = 0;	/* both plans', where one is refused */
	ret = pl_plan(plan);
	if (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE &&
	    !(plan->o.flags & ORTMEM_PLAN_F_NO_INPLACE) && pl_shared_inplace(plan))
		ret = pl_plan_without_hints(plan);
	plan->deadline_ns = 0;
	if (ret == -ORTMEM_E_PLAN_DEFERRED && plan->n_deferred)
		return ret;
	if (!ret)
		ret = pl_figures(plan);
	if (ret) {
		ortmem__plan_reset(plan);
		return ret;
	}
	plan->st.solve_ns = ortmem__now_ns() - t0;
	plan->st.first_plan_ns = plan->st.solve_ns -
		(plan->budgeted_ns < plan->st.solve_ns ? plan->budgeted_ns : plan->st.solve_ns);
	plan->solved = true;
#ifndef ORTMEM_DEBUG
	if (!(plan->o.flags & ORTMEM_PLAN_F_VALIDATE))
		return 0;
#endif
	ret = ortmem_plan_validate(plan);
	if (ret) {
		char why[256];

		snprintf(why, sizeof(why), "%s", ortmem_last_error_message());
		pr_err("planner: the plan failed validation: %s", why);
		ret = ortmem__err_plain(ret,
			"planner: the plan it made breaks a rule, a planner bug: %s; report it with the graph and options (ORTMEM_PLAN_F_NO_MOVE plans without moves within the arena, if a move broke it)",
			why);
		plan->solved = false;
	}
	return ret;
}

ORTMEM_API int ortmem_plan_deferred(const struct ortmem_plan *plan,
				    uint32_t *ids, size_t cap)
{
	if (!plan || (cap && !ids))
		return ortmem__err_invalid(-1, 0, "ortmem_plan_deferred: NULL plan or ids");
	if (plan->n_deferred && cap)	/* ids may be NULL when cap is 0 */
		memcpy(ids, plan->deferred, sizeof(*ids) *
		       (cap < plan->n_deferred ? cap : plan->n_deferred));
	return (int)plan->n_deferred;
}

static int pl_check_solved(const struct ortmem_plan *plan, const char *fn)
{
	if (!plan)
		return ortmem__err_invalid(-1, 0, "%s: plan is NULL", fn);
	if (!plan->solved)
		return ortmem__err_plain(-ENODATA,
			"%s: the plan has no solution; call ortmem_plan_solve() after the last change", fn);
	return 0;
}

ORTMEM_API int ortmem_plan_offset(const struct ortmem_plan *plan,
				  uint32_t value, uint64_t *offset)
{
	const struct pl_value *x;
	const struct pl_buf *b;
	int ret = pl_check_solved(plan, __func__);

	if (ret)
		return ret;
	if (value >= plan->n_vals || !offset)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_offset: value %u does not exist or offset is NULL", value);
	x = &plan->vals[value];
	if (plan->vals[x->root].def < 0)
		return ortmem__err_plain(-ENOENT,
			"ortmem_plan_offset: value %u is a graph input (or a view of one): the caller owns its memory",
			value);
	b = &plan->bufs[x->inplace_of >= 0 ? x->buf : plan->vals[x->root].buf];
	*offset = b->off;
	return b->tier;
}

/* Does node @step read or write @value, itself or through a view of the
 * same root?  (Another value of its in-place chain shares the buffer, and
 * so its steps, but is not @value.) */
static bool pl_step_uses(const struct ortmem_plan *plan, uint32_t step,
			 uint32_t value)
{
	const struct pl_node *n = &plan->nodes[step];
	int32_t root = plan->vals[value].root;
	uint32_t i;

	for (i = 0; i < n->n_in; i++)
		if (plan->vals[plan->edges[n->in + i]].root == root)
			return true;
	for (i = 0; i < n->n_out; i++)
		if (plan->vals[plan->edges[n->out + i]].root == root)
			return true;
	return false;
}

ORTMEM_API int ortmem_plan_staging_offset(const struct ortmem_plan *plan,
					  uint32_t value, uint32_t step,
					  uint64_t *offset)
{
	const struct pl_value *x;
	uint32_t b, lo;
	int ret = pl_check_solved(plan, __func__);

	if (ret)
		return ret;
	if (value >= plan->n_vals || step >= plan->n_nodes || !offset)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_staging_offset: value %u of %u or step %u of %u does not exist, or offset is NULL",
			value, plan->n_vals, step, plan->n_nodes);
	x = &plan->vals[value];
	if (plan->vals[x->root].def < 0)
		return ortmem__err_plain(-ENOENT,
			"ortmem_plan_staging_offset: value %u is a graph input (or a view of one)", value);
	b = (uint32_t)(x->inplace_of >= 0 ? x->buf : plan->vals[x->root].buf);
	/* a buffer that stays on the device has one offset, unless it moves */
	if (plan->bufs[b].tier == ORTMEM_TIER_DEVICE && !ortmem__plan_buf_moves(plan, b))
		return ortmem__err_plain(-ENOENT,
			"ortmem_plan_staging_offset: value %u lives on the device at one offset; ortmem_plan_offset() gives it",
			value);
	lo = ortmem__plan_touch_from(plan, b, step);
	if (lo == plan->touch_idx[b + 1] || plan->touch_step[lo] != step ||
	    !pl_step_uses(plan, step, value))
		return ortmem__err_plain(-ENOENT,
			"ortmem_plan_staging_offset: step %u neither reads nor writes value %u, so it is not staged there",
			step, value);
	*offset = plan->touch_off[lo];
	return 0;
}

ORTMEM_API int ortmem_plan_stats(const struct ortmem_plan *plan,
				 struct ortmem_plan_stats *stats)
{
	int ret = pl_check_solved(plan, __func__);

	if (ret)
		return ret;
	if (!stats)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_stats: stats is NULL");
	if (stats->sz < sizeof(size_t))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_stats: stats->sz is %zu; declare it with ORTMEM_OPTS()", stats->sz);
	memcpy((char *)stats + sizeof(size_t), (const char *)&plan->st + sizeof(size_t),
	       (stats->sz < sizeof(plan->st) ? stats->sz : sizeof(plan->st)) - sizeof(size_t));
	return 0;
}

ORTMEM_API int ortmem_plan_step_moves(const struct ortmem_plan *plan,
				      uint32_t step,
				      struct ortmem_plan_moves *moves)
{
	int ret = pl_check_solved(plan, __func__);
	int t;

	if (ret)
		return ret;
	/* A caller built before device_move existed passes a shorter struct. */
	if (!moves || moves->sz < offsetof(struct ortmem_plan_moves, device_move) ||
	    step >= plan->n_nodes)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_step_moves: step %u of %u, or moves NULL or too small",
			step, plan->n_nodes);
	if (moves->sz >= sizeof(*moves))
		moves->device_move = plan->dev_move ? plan->dev_move[step] : 0;
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		/* No moves recorded: every buffer is on the device. */
		moves->prefetch[t] = plan->prefetch ?
			plan->prefetch[(size_t)step * ORTMEM_TIER_COUNT + t] : 0;
		moves->spill[t] = plan->spill ?
			plan->spill[(size_t)step * ORTMEM_TIER_COUNT + t] : 0;
	}
	return 0;
}

static int pk_check_input(const struct ortmem_plan_buffer *bufs, size_t n,
			  uint64_t align, struct pk_item *it)
{
	size_t i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++) {
		uint64_t s = bufs[i].size;

		if (s && bufs[i].upper <= bufs[i].lower)
			return ortmem__err_invalid(-1, s,
				"ortmem_plan_pack: buffer %zu lives over [%llu, %llu), which is empty",
				i, (unsigned long long)bufs[i].lower,
				(unsigned long long)bufs[i].upper);
		/* aligned: a huge alignment makes small sizes huge */
		if (s <= (UINT64_MAX >> 2))
			s = (s + align - 1) & ~(align - 1);
		if (s > (UINT64_MAX >> 2) || __builtin_add_overflow(sum, s, &sum) ||
		    sum > (UINT64_MAX >> 2))
			return ortmem__err_plain(-EOVERFLOW,
				"ortmem_plan_pack: the sizes overflow at buffer %zu (sizes and their sum, aligned to %llu, must stay below 2^62)",
				i, (unsigned long long)align);
		it[i] = (struct pk_item){ bufs[i].lower, bufs[i].upper, s };
	}
	return 0;
}

/*
 * The packing is over the device budget.  Say whether none can fit (the
 * lower bound alone is over it, or the search proved its packing
 * optimal), or the search ran out of time: MiniMalloc's instances D, E
 * and F fit 1 MiB only given 14-1000 ms, against the default 10 ms.
 */
static int pk_over_budget(const struct ortmem_plan_opts *o, const struct pk_result *res,
			  size_t n)
{
	uint64_t budget = o->budget[ORTMEM_TIER_DEVICE];
	char why[160];

	/* short: the whole reason must fit ORTMEM_ERROR_REASON_MAX with
	 * 20-digit figures */
	if (res->lb > budget)
		snprintf(why, sizeof(why), "no packing fits: the bytes live at one time (%llu) exceed it",
			 (unsigned long long)res->lb);
	else if (res->optimal)
		snprintf(why, sizeof(why), "no packing fits: that height is proven optimal");
	else if (o->max_iterations)
		snprintf(why, sizeof(why), "lower bound of %llu fits; none found in %llu "
			 "iterations (max_iterations) or %llu us; more may find one",
			 (unsigned long long)res->lb, (unsigned long long)o->max_iterations,
			 (unsigned long long)o->time_budget_us);
	else
		snprintf(why, sizeof(why), "lower bound of %llu fits; none found in %llu us "
			 "(time_budget_us); a longer time budget may find one",
			 (unsigned long long)res->lb, (unsigned long long)o->time_budget_us);
	return ortmem__err_capacity(false, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_ACTIVATION,
		res->height, budget, "%zu buffers pack %llu bytes high over a budget of %llu: %s",
		n, (unsigned long long)res->height, (unsigned long long)budget, why);
}

ORTMEM_API int ortmem_plan_pack(const struct ortmem_plan_buffer *bufs,
				size_t n, const struct ortmem_plan_opts *opts,
				uint64_t *offsets,
				struct ortmem_plan_stats *stats)
{
	struct ortmem_plan_opts o;
	struct pk_result res = { 0 };
	struct pk_opts po;
	struct pk_item *it;
	uint64_t t0 = ortmem__now_ns(), t_pack;
	int ret = ortmem__plan_opts(&o, opts);

	if (ret)
		return ret;
	if ((n && (!bufs || !offsets)) || n > INT32_MAX)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_pack: NULL arrays or %zu buffers", n);
	if (stats && stats->sz < sizeof(size_t))
		return ortmem__err_invalid(-1, 0, "ortmem_plan_pack: stats->sz is %zu", stats->sz);
	it = malloc(sizeof(*it) * (n ? n : 1));
	if (!it)
		return ortmem__err_plain(-ENOMEM, "ortmem_plan_pack: cannot copy %zu buffers", n);
	ret = pk_check_input(bufs, n, o.align[ORTMEM_TIER_DEVICE], it);
	po = (struct pk_opts){ .deadline_ns = t0 + o.time_budget_us * ORTMEM_NSEC_PER_USEC,
			       .max_iter = o.max_iterations, .seed = o.seed,
			       .threads = o.threads };
	t_pack = ortmem__now_ns();
	if (!ret)
		ret = ortmem__pack(it, (uint32_t)n, &po, offsets, &res);
	t_pack = ortmem__now_ns() - t_pack;	/* its time, first plan and search */
	if (!ret && (o.flags & ORTMEM_PLAN_F_VALIDATE))
		ret = ortmem__plan_check_disjoint(it, offsets, (uint32_t)n, NULL, NULL);
	free(it);
	if (ret)
		return ret < 0 && ortmem_last_error() ? ret :
			ortmem__err_plain(ret, "ortmem_plan_pack failed");
	if (o.budget[ORTMEM_TIER_DEVICE] && res.height > o.budget[ORTMEM_TIER_DEVICE])
		return pk_over_budget(&o, &res, n);
	if (stats) {
		struct ortmem_plan_stats st = { .sz = sizeof(st) };

		st.lower_bound = res.lb;
		st.tier_lower_bound[ORTMEM_TIER_DEVICE] = res.lb;
		st.arena[ORTMEM_TIER_DEVICE] = res.height;
		st.arena_over_lb = res.lb ? (double)res.height / (double)res.lb : 1.0;
		st.optimal = res.optimal;
		st.iterations = res.iters;
		st.n_buffers = n;
		st.solve_ns = ortmem__now_ns() - t0;
		/* all but the packer's search */
		st.first_plan_ns = st.solve_ns - (t_pack - res.first_ns);
		memcpy((char *)stats + sizeof(size_t), (char *)&st + sizeof(size_t),
		       (stats->sz < sizeof(st) ? stats->sz : sizeof(st)) - sizeof(size_t));
	}
	return 0;
}
