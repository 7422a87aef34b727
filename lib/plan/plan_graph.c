// SPDX-License-Identifier: MIT
/*
 * The planner's graph: values, nodes in execution order, view edges,
 * in-place hints and the size oracle.  Building a graph only records it;
 * ortmem_plan_solve() does the work.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "plan_internal.h"

/* The longest time budget a plan may take. */
#define PL_MAX_BUDGET_US (3600 * ORTMEM_USEC_PER_SEC)
/* Ids are returned as a non-negative int. */
#define PL_MAX_IDS ((uint32_t)INT32_MAX)

int ortmem__plan_grow(void **arr, size_t *cap, uint32_t need, size_t elem)
{
	if (ortmem__grow(arr, cap, need, elem, 16))
		return ortmem__err_plain(-ENOMEM,
			"planner: cannot grow a table to %u entries", need);
	return 0;
}

static uint64_t pl_default_align(int tier)
{
	static const uint64_t def[ORTMEM_TIER_COUNT] = {
		ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE, ORTMEM_PLAN_DEFAULT_ALIGN_HOST,
		ORTMEM_PLAN_DEFAULT_ALIGN_DISK,
	};

	return def[tier];
}

/* One racer per online CPU, up to the default's cap. */
static uint32_t pl_default_threads(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		return 1;
	return cpus < ORTMEM_PLAN_DEFAULT_THREADS_MAX ? (uint32_t)cpus :
		ORTMEM_PLAN_DEFAULT_THREADS_MAX;
}

/* Copy the caller's options, filling defaults and checking each field. */
static int pl_opts_fill(struct ortmem_plan_opts *o,
			const struct ortmem_plan_opts *in)
{
	const uint32_t known = ORTMEM_PLAN_F_VALIDATE | ORTMEM_PLAN_F_NO_INPLACE |
			       ORTMEM_PLAN_F_NO_MOVE | ORTMEM_PLAN_F_MOVE_APART;
	const uint32_t all_tiers = (1u << ORTMEM_TIER_COUNT) - 1;
	int ret = ORTMEM_OPTS_VALID(in, ortmem_plan_opts) ?:
		  ORTMEM_OPTS_WHOLE(in, ortmem_plan_opts,
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, time_budget_us),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, max_iterations),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, seed),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, align),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, budget),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, tiers),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, flags),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, threads),
			ORTMEM_OPTS_SPAN(ortmem_plan_opts, move_ratio));
	int t;

	if (ret)
		return ret;
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->time_budget_us = ORTMEM_OPTS_GET(in, time_budget_us, 0);
	o->max_iterations = ORTMEM_OPTS_GET(in, max_iterations, 0);
	o->seed = ORTMEM_OPTS_GET(in, seed, 0);
	o->tiers = ORTMEM_OPTS_GET(in, tiers, 0);
	o->flags = ORTMEM_OPTS_GET(in, flags, 0);
	o->threads = ORTMEM_OPTS_GET(in, threads, 0);
	o->move_ratio = ORTMEM_OPTS_GET(in, move_ratio, 0);
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		o->align[t] = ORTMEM_OPTS_HAS(in, align) ? in->align[t] : 0;
		o->budget[t] = ORTMEM_OPTS_HAS(in, budget) ? in->budget[t] : 0;
		if (!o->align[t])
			o->align[t] = pl_default_align(t);
		if (o->align[t] & (o->align[t] - 1))
			return ortmem__err_invalid(t, o->align[t],
				"ortmem_plan_opts.align[%s] = %llu is not a power of two",
				ortmem_tier_name(t), (unsigned long long)o->align[t]);
	}
	if (!o->time_budget_us)
		o->time_budget_us = ORTMEM_PLAN_DEFAULT_BUDGET_US;
	if (o->time_budget_us > PL_MAX_BUDGET_US)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.time_budget_us = %llu is over an hour",
			(unsigned long long)o->time_budget_us);
	if (o->threads > ORTMEM_PLAN_THREADS_MAX)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.threads = %u is over %u; 0 takes one per online CPU (at most %u)",
			o->threads, ORTMEM_PLAN_THREADS_MAX, ORTMEM_PLAN_DEFAULT_THREADS_MAX);
	if (!o->threads)
		o->threads = pl_default_threads();
	if (!o->move_ratio)
		o->move_ratio = ORTMEM_PLAN_DEFAULT_MOVE_RATIO;
	if (o->move_ratio > ORTMEM_PLAN_MOVE_RATIO_MAX || (o->move_ratio & (o->move_ratio - 1)))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.move_ratio = %u is not a power of two from 1 to %u (a device copy's rate over a host link's, e.g. 32; 0 takes %u)",
			o->move_ratio, ORTMEM_PLAN_MOVE_RATIO_MAX, ORTMEM_PLAN_DEFAULT_MOVE_RATIO);
	if (o->flags & ~known)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.flags has unknown bits 0x%x",
			o->flags & ~known);
	if (o->tiers & ~all_tiers)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.tiers has unknown bits 0x%x",
			o->tiers & ~all_tiers);
	if (!o->tiers)
		o->tiers = all_tiers;
	if (!(o->tiers & (1u << ORTMEM_TIER_DEVICE)))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_opts.tiers excludes the device tier, where every node runs");
	return 0;
}

int ortmem__plan_opts(struct ortmem_plan_opts *o,
		      const struct ortmem_plan_opts *in)
{
	return pl_opts_fill(o, in);
}

ORTMEM_API int ortmem_plan_new(const struct ortmem_plan_opts *opts,
			       struct ortmem_plan **planp)
{
	struct ortmem_plan *plan;
	int ret;

	if (!planp)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_new: planp is NULL");
	*planp = NULL;
	plan = calloc(1, sizeof(*plan));
	if (!plan)
		return ortmem__err_plain(-ENOMEM, "planner: cannot allocate a plan");
	ret = pl_opts_fill(&plan->o, opts);
	if (ret) {
		free(plan);
		return ret;
	}
	*planp = plan;
	return 0;
}

void ortmem__plan_reset(struct ortmem_plan *plan)
{
	free(plan->bufs);
	free(plan->deferred);
	free(plan->prefetch);
	free(plan->spill);
	free(plan->touch_idx);
	free(plan->touch_step);
	free(plan->touch_off);
	free(plan->gap_off);
	free(plan->move_step);
	free(plan->dev_move);
	plan->gap_off = NULL;
	plan->move_step = NULL;
	plan->dev_move = NULL;
	plan->touch_idx = NULL;
	plan->touch_step = NULL;
	plan->touch_off = NULL;
	plan->bufs = NULL;
	plan->deferred = NULL;
	plan->prefetch = NULL;
	plan->spill = NULL;
	plan->n_bufs = 0;
	plan->n_deferred = 0;
	plan->solved = false;
}

ORTMEM_API void ortmem_plan_free(struct ortmem_plan *plan)
{
	if (!plan)
		return;
	ortmem__plan_reset(plan);
	free(plan->vals);
	free(plan->nodes);
	free(plan->edges);
	free(plan->hints);
	free(plan);
}

static int pl_check_plan(const struct ortmem_plan *plan, const char *fn)
{
	if (!plan)
		return ortmem__err_invalid(-1, 0, "%s: plan is NULL", fn);
	return 0;
}

static int pl_check_value(const struct ortmem_plan *plan, uint32_t v,
			  const char *fn)
{
	if (v >= plan->n_vals)
		return ortmem__err_invalid(-1, 0,
			"%s: value %u does not exist (the plan has %u values)",
			fn, v, plan->n_vals);
	return 0;
}

ORTMEM_API int ortmem_plan_add_value(struct ortmem_plan *plan, uint64_t size,
				     uint32_t flags)
{
	struct pl_value *v;
	int ret = pl_check_plan(plan, __func__);

	if (ret)
		return ret;
	if (flags & ~ORTMEM_PLAN_VALUE_OUTPUT)
		return ortmem__err_invalid(-1, size,
			"ortmem_plan_add_value: unknown flags 0x%x",
			flags & ~ORTMEM_PLAN_VALUE_OUTPUT);
	if (plan->n_vals >= PL_MAX_IDS)
		return ortmem__err_plain(-E2BIG, "planner: more than %u values", PL_MAX_IDS);
	ret = ortmem__plan_grow((void **)&plan->vals, &plan->cap_vals,
			   plan->n_vals + 1, sizeof(*plan->vals));
	if (ret)
		return ret;
	v = &plan->vals[plan->n_vals];
	memset(v, 0, sizeof(*v));
	v->size = size;
	v->flags = flags;
	v->view_of = -1;
	v->def = -1;
	plan->solved = false;
	return (int)plan->n_vals++;
}

ORTMEM_API int ortmem_plan_set_view(struct ortmem_plan *plan, uint32_t view,
				    uint32_t source)
{
	int32_t s;
	int ret = pl_check_plan(plan, __func__);

	if (!ret)
		ret = pl_check_value(plan, view, __func__);
	if (!ret)
		ret = pl_check_value(plan, source, __func__);
	if (ret)
		return ret;
	if (plan->vals[view].view_of >= 0)
		return ortmem__err_plain(-EEXIST,
			"ortmem_plan_set_view: value %u is already a view of %d",
			view, plan->vals[view].view_of);
	/* Walk the source's chain: reaching @view would close a cycle. */
	for (s = (int32_t)source; s >= 0; s = plan->vals[s].view_of)
		if ((uint32_t)s == view)
			return ortmem__err_invalid(-1, 0,
				"ortmem_plan_set_view: value %u viewing %u would make a cycle of views",
				view, source);
	plan->vals[view].view_of = (int32_t)source;
	plan->solved = false;
	return 0;
}

static int pl_check_node_values(struct ortmem_plan *plan, const uint32_t *in,
				uint32_t n_in, const uint32_t *out,
				uint32_t n_out)
{
	uint32_t k, j;
	int ret;

	if ((n_in && !in) || (n_out && !out))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_add_node: a NULL array with a non-zero count");
	for (k = 0; k < n_in; k++)
		if ((ret = pl_check_value(plan, in[k], "ortmem_plan_add_node")))
			return ret;
	for (k = 0; k < n_out; k++) {
		if ((ret = pl_check_value(plan, out[k], "ortmem_plan_add_node")))
			return ret;
		if (plan->vals[out[k]].def >= 0)
			return ortmem__err_invalid(-1, 0,
				"ortmem_plan_add_node: value %u is already produced by node %d",
				out[k], plan->vals[out[k]].def);
		for (j = 0; j < n_in; j++)
			if (in[j] == out[k])
				return ortmem__err_invalid(-1, 0,
					"ortmem_plan_add_node: value %u is both an input and an output",
					out[k]);
		for (j = 0; j < k; j++)
			if (out[j] == out[k])
				return ortmem__err_invalid(-1, 0,
					"ortmem_plan_add_node: value %u is listed twice as an output",
					out[k]);
	}
	return 0;
}

ORTMEM_API int ortmem_plan_add_node(struct ortmem_plan *plan,
				    const uint32_t *inputs, uint32_t n_inputs,
				    const uint32_t *outputs, uint32_t n_outputs)
{
	struct pl_node *nd;
	uint64_t need;
	uint32_t k;
	int ret = pl_check_plan(plan, __func__);

	if (ret)
		return ret;
	ret = pl_check_node_values(plan, inputs, n_inputs, outputs, n_outputs);
	if (ret)
		return ret;
	need = (uint64_t)plan->n_edges + n_inputs + n_outputs;
	if (plan->n_nodes >= PL_MAX_IDS - 1 || need > PL_MAX_IDS)
		return ortmem__err_plain(-E2BIG, "planner: more than %u nodes or edges", PL_MAX_IDS);
	ret = ortmem__plan_grow((void **)&plan->nodes, &plan->cap_nodes,
			   plan->n_nodes + 1, sizeof(*plan->nodes));
	if (!ret)
		ret = ortmem__plan_grow((void **)&plan->edges, &plan->cap_edges,
				   (uint32_t)need, sizeof(*plan->edges));
	if (ret)
		return ret;
	nd = &plan->nodes[plan->n_nodes];
	nd->in = plan->n_edges;
	nd->n_in = n_inputs;
	if (n_inputs)
		memcpy(&plan->edges[plan->n_edges], inputs, sizeof(*inputs) * n_inputs);
	plan->n_edges += n_inputs;
	nd->out = plan->n_edges;
	nd->n_out = n_outputs;
	if (n_outputs)
		memcpy(&plan->edges[plan->n_edges], outputs, sizeof(*outputs) * n_outputs);
	plan->n_edges += n_outputs;
	for (k = 0; k < n_outputs; k++)
		plan->vals[outputs[k]].def = (int32_t)plan->n_nodes;
	plan->solved = false;
	return (int)plan->n_nodes++;
}

static bool pl_node_has(const struct ortmem_plan *plan, uint32_t first,
			uint32_t n, uint32_t v)
{
	uint32_t k;

	for (k = 0; k < n; k++)
		if (plan->edges[first + k] == v)
			return true;
	return false;
}

ORTMEM_API int ortmem_plan_hint_inplace(struct ortmem_plan *plan,
					uint32_t node, uint32_t output,
					uint32_t input)
{
	const struct pl_node *nd;
	int ret = pl_check_plan(plan, __func__);

	if (ret)
		return ret;
	if (node >= plan->n_nodes)
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_hint_inplace: node %u does not exist (the plan has %u nodes)",
			node, plan->n_nodes);
	nd = &plan->nodes[node];
	if (!pl_node_has(plan, nd->out, nd->n_out, output) ||
	    !pl_node_has(plan, nd->in, nd->n_in, input))
		return ortmem__err_invalid(-1, 0,
			"ortmem_plan_hint_inplace: node %u does not read value %u and produce value %u",
			node, input, output);
	ret = ortmem__plan_grow((void **)&plan->hints, &plan->cap_hints,
			   plan->n_hints + 1, sizeof(*plan->hints));
	if (ret)
		return ret;
	plan->hints[plan->n_hints++] = (struct pl_hint){ node, output, input };
	plan->solved = false;
	return 0;
}

ORTMEM_API int ortmem_plan_set_size_fn(struct ortmem_plan *plan,
				       ortmem_plan_size_fn fn, void *user)
{
	int ret = pl_check_plan(plan, __func__);

	if (ret)
		return ret;
	plan->size_fn = fn;
	plan->size_user = user;
	plan->solved = false;
	return 0;
}
