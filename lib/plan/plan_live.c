// SPDX-License-Identifier: MIT
/*
 * Liveness: resolve sizes (the oracle; symbolic sizes defer the plan),
 * fold views into their root buffer, compute each buffer's live steps
 * [def, last use + 1) (graph outputs to the end), then apply the in-place
 * hints that are safe (plan_inplace.c).  The result is plan->bufs.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

static int32_t pl_root(struct ortmem_plan *plan, uint32_t v)
{
	int32_t r = (int32_t)v;

	while (plan->vals[r].view_of >= 0)
		r = plan->vals[r].view_of;
	return r;
}

/* Sizes of the buffer owners; collect the symbolic ones. */
static int pl_resolve_sizes(struct ortmem_plan *plan)
{
	uint32_t v;
	size_t nd = 0;
	int ret;

	for (v = 0; v < plan->n_vals; v++) {
		struct pl_value *x = &plan->vals[v];

		x->rsize = x->size;
		if (x->view_of >= 0 || x->def < 0 || x->size != ORTMEM_PLAN_SIZE_SYMBOLIC)
			continue;
		ret = plan->size_fn ? plan->size_fn(v, &x->rsize, plan->size_user) : 1;
		if (ret < 0)
			return ortmem__err_plain(ret,
				"planner: the size oracle failed for value %u", v);
		if (ret > 1)
			return ortmem__err_invalid(-1, 0,
				"planner: the size oracle returned %d for value %u; it must return 0 (size set), 1 (size still symbolic) or a negative error",
				ret, v);
		if (ret == 0 && x->rsize != ORTMEM_PLAN_SIZE_SYMBOLIC)
			continue;
		ret = ortmem__plan_grow((void **)&plan->deferred, &nd,
					plan->n_deferred + 1,
					sizeof(*plan->deferred));
		if (ret)
			return ret;
		plan->deferred[plan->n_deferred++] = v;
	}
	return 0;
}

/* Roots, topological order, and each root's last step. */
static int pl_fold(struct ortmem_plan *plan)
{
	uint32_t v, s, k;

	for (v = 0; v < plan->n_vals; v++) {
		plan->vals[v].root = pl_root(plan, v);
		plan->vals[v].last = -1;
		plan->vals[v].buf = -1;
		plan->vals[v].inplace_of = -1;
	}
	for (v = 0; v < plan->n_vals; v++) {
		struct pl_value *x = &plan->vals[v], *r = &plan->vals[x->root];

		if (x->view_of >= 0 && x->def >= 0 && r->def > x->def)
			return ortmem__err_invalid(-1, 0,
				"planner: view %u is produced at node %d, before node %d produces its source %d",
				v, x->def, r->def, x->root);
		if (x->view_of >= 0 && x->def > r->last)
			r->last = x->def;
	}
	for (s = 0; s < plan->n_nodes; s++) {
		const struct pl_node *nd = &plan->nodes[s];

		for (k = 0; k < nd->n_in; k++) {
			struct pl_value *x = &plan->vals[plan->edges[nd->in + k]];
			struct pl_value *r = &plan->vals[x->root];

			if (x->def >= (int32_t)s || r->def >= (int32_t)s)
				return ortmem__err_invalid(-1, 0,
					"planner: node %u reads value %u before node %d produces it; add nodes in execution order",
					s, plan->edges[nd->in + k],
					x->def >= (int32_t)s ? x->def : r->def);
			if ((int32_t)s > r->last)
				r->last = (int32_t)s;
			if ((int32_t)s > x->last)
				x->last = (int32_t)s;
		}
	}
	return 0;
}

static int pl_make_bufs(struct ortmem_plan *plan)
{
	uint32_t v, s, k, nb = 0, steps = plan->n_nodes;

	plan->bufs = calloc(plan->n_vals ? plan->n_vals : 1, sizeof(*plan->bufs));
	if (!plan->bufs)
		return ortmem__err_plain(-ENOMEM, "planner: cannot allocate %u buffers", plan->n_vals);
	for (v = 0; v < plan->n_vals; v++) {
		struct pl_value *x = &plan->vals[v];
		struct pl_buf *b;

		if (x->view_of >= 0 || x->def < 0)
			continue;
		b = &plan->bufs[nb];
		b->size = x->rsize;
		b->lo = (uint32_t)x->def;
		b->hi = (uint32_t)(x->last > x->def ? x->last : x->def) + 1;
		b->owner = v;
		x->buf = (int32_t)nb++;
	}
	/* A view reads within the buffer it aliases: one declared larger than
	 * its source gets a buffer that holds it (else it would reach into
	 * whatever the packing put next to it). */
	for (v = 0; v < plan->n_vals; v++) {
		const struct pl_value *x = &plan->vals[v];
		int32_t rb = plan->vals[x->root].buf;

		if (x->view_of >= 0 && rb >= 0 && x->size != ORTMEM_PLAN_SIZE_SYMBOLIC &&
		    x->size > plan->bufs[rb].size)
			plan->bufs[rb].size = x->size;
	}
	/* Graph outputs (or views of them) keep their buffer to the end. */
	for (v = 0; v < plan->n_vals; v++)
		if ((plan->vals[v].flags & ORTMEM_PLAN_VALUE_OUTPUT) && ortmem__plan_planned(plan, v))
			plan->bufs[plan->vals[plan->vals[v].root].buf].hi = steps;
	for (s = 0; s < plan->n_nodes; s++)
		for (k = 0; k < plan->nodes[s].n_in + plan->nodes[s].n_out; k++) {
			uint32_t x = plan->edges[plan->nodes[s].in + k];

			if (ortmem__plan_planned(plan, x))
				plan->bufs[plan->vals[plan->vals[x].root].buf].uses++;
		}
	plan->n_bufs = nb;
	return 0;
}

int ortmem__plan_liveness(struct ortmem_plan *plan)
{
	int ret = pl_fold(plan);

	if (!ret)
		ret = pl_resolve_sizes(plan);
	if (ret || plan->n_deferred)
		return ret;
	ret = pl_make_bufs(plan);
	if (!ret)
		ret = ortmem__plan_inplace(plan, false);
	if (ret == 1) {
		/* the merges together overran the budget: the buffers as they
		 * were, and the merges one by one */
		free(plan->bufs);
		plan->bufs = NULL;
		ret = pl_fold(plan);
		if (!ret)
			ret = pl_make_bufs(plan);
		if (!ret)
			ret = ortmem__plan_inplace(plan, true);
	}
	return ret;
}
