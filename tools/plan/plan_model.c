// SPDX-License-Identifier: MIT
/*
 * Graph building: the inferred model as an ortmem plan.
 *
 * One step per node of the main graph in execution order; with folding,
 * constant nodes run at load time and are not steps, and their outputs are
 * weights.  A node with bodies (If, Loop) reads the outer values its
 * bodies read, so they stay live across it, and produces one more buffer,
 * live at its step only: the peak of its largest body, each body planned
 * the same way on its own.  Layout ops that alias become view edges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_model.h"

static const char *const view_ops[] = {
	"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", NULL
};

bool pm_is_view_op(const char *op)
{
	const char *const *v;

	for (v = view_ops; *v; v++)
		if (!strcmp(*v, op))
			return true;
	return false;
}

struct gb {
	const struct md_model *m;
	const struct pm_opts *o;
	struct pm_result *r;
	uint32_t graph;
	struct ortmem_plan *plan;
	int32_t *pid;		/* per md value: plan id, -1 none yet */
	uint32_t *outs, *ins;	/* scratch */
	bool top;
};

static int add_deferred(struct pm_result *r, int64_t v)
{
	int64_t *d = realloc(r->deferred, sizeof(*d) * (r->n_deferred + 1));

	if (!d)
		return -ENOMEM;
	r->deferred = d;
	d[r->n_deferred++] = v;
	return 0;
}

static bool folded(const struct gb *b, uint32_t v)
{
	return b->o->fold && b->m->values[v].is_const;
}

/* What plan value @id of the main graph stands for. */
static int note_pval(struct pm_result *r, uint32_t id, int64_t value, int32_t node,
		     uint64_t size)
{
	uint64_t *ps;
	size_t n = (size_t)id + 1;
	int64_t *pv = realloc(r->pval_value, sizeof(*pv) * n);
	int32_t *pn;
	uint32_t *pr;

	if (pv)
		r->pval_value = pv;
	pn = realloc(r->pval_node, sizeof(*pn) * n);
	if (pn)
		r->pval_node = pn;
	pr = realloc(r->pval_root, sizeof(*pr) * n);
	if (pr)
		r->pval_root = pr;
	ps = realloc(r->pval_size, sizeof(*ps) * n);
	if (ps)
		r->pval_size = ps;
	if (!pv || !pn || !pr || !ps)
		return -ENOMEM;
	ps[id] = size == ORTMEM_PLAN_SIZE_SYMBOLIC ? 0 : size;
	pv[id] = value;
	pn[id] = node;
	pr[id] = id;
	r->n_pvals = id + 1;
	return 0;
}

/* Plan id of md value @v, created on first use. */
static int pid_of(struct gb *b, uint32_t v)
{
	const struct md_value *x = &b->m->values[v];
	uint64_t size = ORTMEM_PLAN_SIZE_SYMBOLIC;
	int id;

	if (b->pid[v] >= 0)
		return b->pid[v];
	if (x->kind == MD_NODE && md_value_bytes(x, &size))
		size = ORTMEM_PLAN_SIZE_SYMBOLIC;
	id = ortmem_plan_add_value(b->plan, size,
				   x->is_output && x->graph == b->graph ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
	if (id < 0)
		return id;
	b->pid[v] = id;
	if (b->top) {
		int ret = note_pval(b->r, (uint32_t)id, v, x->producer, size);

		if (ret)
			return ret;
	}
	return id;
}

static int plan_graph(const struct md_model *m, const struct pm_opts *o,
		      struct pm_result *r, uint32_t graph, bool top,
		      struct ortmem_plan **planp, uint64_t *peak);

/* The peak of the largest body of node @n; 1 when a body is deferred. */
static int body_peak(struct gb *b, const struct md_node *n, uint64_t *peak)
{
	uint32_t k;
	int ret, deferred = 0;

	*peak = 0;
	for (k = 0; k < n->n_bodies; k++) {
		struct ortmem_plan *p = NULL;
		uint64_t pk = 0;

		ret = plan_graph(b->m, b->o, b->r, n->bodies[k], false, &p, &pk);
		ortmem_plan_free(p);
		if (ret == -ORTMEM_E_PLAN_DEFERRED)
			deferred = 1;
		else if (ret)
			return ret;
		if (pk > *peak)
			*peak = pk;
	}
	return deferred;
}

static int add_node(struct gb *b, uint32_t nid)
{
	const struct md_node *n = &b->m->nodes[nid];
	uint32_t ni = 0, no = 0, k;
	uint64_t peak;
	int id, ret;

	for (k = 0; k < n->n_in + n->n_implicit; k++) {
		int32_t v = k < n->n_in ? n->in[k] : (int32_t)n->implicit[k - n->n_in];

		if (v < 0 || folded(b, (uint32_t)v) || b->m->values[v].graph != b->graph)
			continue;
		id = pid_of(b, (uint32_t)v);
		if (id < 0)
			return id;
		b->ins[ni++] = (uint32_t)id;
	}
	for (k = 0; k < n->n_out; k++) {
		if (n->out[k] < 0)
			continue;
		id = pid_of(b, (uint32_t)n->out[k]);
		if (id < 0)
			return id;
		b->outs[no++] = (uint32_t)id;
	}
	if (n->n_bodies) {
		ret = body_peak(b, n, &peak);
		if (ret < 0)
			return ret;
		id = ortmem_plan_add_value(b->plan, ret ? ORTMEM_PLAN_SIZE_SYMBOLIC : peak, 0);
		if (id < 0)
			return id;
		if (b->top) {
			ret = note_pval(b->r, (uint32_t)id, -1, (int32_t)nid, peak);
			if (ret)
				return ret;
		}
		b->outs[no++] = (uint32_t)id;
	}
	/* Views: the output aliases the data input's buffer. */
	if (b->o->views && pm_is_view_op(n->p->op_type) && n->n_in && n->n_out &&
	    n->in[0] >= 0 && n->out[0] >= 0 && !folded(b, (uint32_t)n->in[0]) &&
	    b->m->values[n->in[0]].graph == b->graph) {
		ret = ortmem_plan_set_view(b->plan, (uint32_t)b->pid[n->out[0]],
					   (uint32_t)b->pid[n->in[0]]);
		if (ret)
			return ret;
		if (b->top)
			b->r->pval_root[b->pid[n->out[0]]] = b->r->pval_root[b->pid[n->in[0]]];
	}
	ret = ortmem_plan_add_node(b->plan, b->ins, ni, b->outs, no);
	return ret < 0 ? ret : 0;
}

static int collect_deferred(struct gb *b)
{
	uint32_t n = (uint32_t)ortmem_plan_deferred(b->plan, NULL, 0), k, v, top = 0;
	uint32_t *ids = calloc(n ? n : 1, sizeof(*ids));
	int64_t *value_of;
	int ret = 0;

	for (v = 0; v < b->m->n_values; v++)
		if (b->pid[v] >= 0 && (uint32_t)b->pid[v] + 1 > top)
			top = (uint32_t)b->pid[v] + 1;
	value_of = malloc(sizeof(*value_of) * (top ? top : 1));
	if (!ids || !value_of) {
		ret = -ENOMEM;
		goto out;
	}
	memset(value_of, 0xff, sizeof(*value_of) * top);
	for (v = 0; v < b->m->n_values; v++)
		if (b->pid[v] >= 0)
			value_of[b->pid[v]] = v;
	ortmem_plan_deferred(b->plan, ids, n);
	for (k = 0; k < n && !ret; k++)
		if (ids[k] < top && value_of[ids[k]] >= 0)
			ret = add_deferred(b->r, value_of[ids[k]]);
out:
	free(ids);
	free(value_of);
	return ret;
}

static int plan_graph(const struct md_model *m, const struct pm_opts *o,
		      struct pm_result *r, uint32_t graph, bool top,
		      struct ortmem_plan **planp, uint64_t *peak)
{
	const struct md_graph *g = &m->graphs[graph];
	struct ortmem_plan_opts po = o->plan;
	struct gb b = { m, o, r, graph, NULL, NULL, NULL, NULL, top };
	uint32_t k, cap = 1;
	int ret;

	if (!top) {	/* a body: only its peak matters */
		po.align[ORTMEM_TIER_DEVICE] = 1;
		memset(po.budget, 0, sizeof(po.budget));
		po.time_budget_us = 1;
	}
	for (k = 0; k < g->n_nodes; k++) {
		const struct md_node *n = &m->nodes[g->order[k]];

		if (n->n_in + n->n_implicit + 1 > cap)
			cap = n->n_in + n->n_implicit + 1;
		if (n->n_out + 1 > cap)
			cap = n->n_out + 1;
	}
	b.pid = malloc(sizeof(int32_t) * (m->n_values ? m->n_values : 1));
	b.ins = malloc(sizeof(uint32_t) * cap);
	b.outs = malloc(sizeof(uint32_t) * cap);
	ret = ortmem_plan_new(&po, &b.plan);
	if (ret || !b.pid || !b.ins || !b.outs) {
		ret = ret ? ret : -ENOMEM;
		goto out;
	}
	memset(b.pid, 0xff, sizeof(int32_t) * m->n_values);
	for (k = 0; k < g->n_nodes; k++) {
		uint32_t nid = g->order[k];

		if (o->fold && m->nodes[nid].is_const)
			continue;
		ret = add_node(&b, nid);
		if (ret)
			goto out;
		if (top) {
			uint32_t *s = realloc(r->step_node, sizeof(*s) * (r->n_steps + 1));

			if (!s) {
				ret = -ENOMEM;
				goto out;
			}
			r->step_node = s;
			s[r->n_steps++] = nid;
		}
	}
	/* Graph outputs no node of this graph produces still hold a value. */
	ret = ortmem_plan_solve(b.plan);
	r->top_refused = top && ret && ret != -ORTMEM_E_PLAN_DEFERRED;
	if (ret == -ORTMEM_E_PLAN_DEFERRED) {
		int r2 = collect_deferred(&b);

		if (r2)
			ret = r2;
	} else if (!ret) {
		struct ortmem_plan_stats st;

		st.sz = sizeof(st);
		ret = ortmem_plan_stats(b.plan, &st);
		if (!ret && peak)
			*peak = st.lower_bound;
	}
out:
	free(b.pid);
	free(b.ins);
	free(b.outs);
	*planp = b.plan;
	return ret;
}

/* Naive and weights bytes over every graph, bodies included. */
static void totals(const struct md_model *m, const struct pm_opts *o,
		   struct pm_result *r)
{
	uint32_t v;
	uint64_t b;

	for (v = 0; v < m->n_values; v++) {
		const struct md_value *x = &m->values[v];
		bool view = false;

		if (md_value_bytes(x, &b))
			continue;
		if (x->kind == MD_INIT || (x->kind == MD_NODE && o->fold && x->is_const)) {
			r->weights_bytes += b;
			continue;
		}
		if (x->kind != MD_NODE)
			continue;
		if (o->views) {
			const struct md_node *n = &m->nodes[x->producer];

			view = pm_is_view_op(n->p->op_type) && n->n_out && n->out[0] == (int32_t)v &&
			       n->n_in && n->in[0] >= 0 && !(o->fold && m->values[n->in[0]].is_const) &&
			       m->values[n->in[0]].graph == x->graph;
		}
		if (!view)
			r->naive_bytes += b;
	}
}

/* The library's refusal names a step by its index ("step 12 alone needs
 * ..."): say which node of the model that is, after the index. */
static void name_step(const struct md_model *m, struct pm_result *r)
{
	const char *at = strstr(r->err, "step ");
	const struct md_node *n;
	char rest[MD_ERR_LEN];
	unsigned long s;
	char *end;

	if (!at || at[5] < '0' || at[5] > '9')
		return;
	s = strtoul(at + 5, &end, 10);
	if (s >= r->n_steps)
		return;
	n = &m->nodes[r->step_node[s]];
	snprintf(rest, sizeof(rest), "%s", end);
	snprintf(end, sizeof(r->err) - (size_t)(end - r->err), " (node '%s', %s)%s",
		 md_node_label(m, r->step_node[s]), n->p->op_type, rest);
}

int pm_build(const struct md_model *m, const struct pm_opts *o,
	     struct pm_result *r)
{
	uint32_t k;
	int ret;

	memset(r, 0, sizeof(*r));
	for (k = 0; k < m->n_nodes; k++) {
		uint32_t *u;

		if (!m->nodes[k].unknown_op || (o->fold && m->nodes[k].is_const))
			continue;
		u = realloc(r->unknown_ops, sizeof(*u) * (r->n_unknown_ops + 1));
		if (!u)
			return -ENOMEM;
		r->unknown_ops = u;
		u[r->n_unknown_ops++] = k;
	}
	totals(m, o, r);
	ret = plan_graph(m, o, r, 0, true, &r->plan, &r->peak_live);
	r->status = ret;
	if (!ret) {
		r->st.sz = sizeof(r->st);
		ret = ortmem_plan_stats(r->plan, &r->st);
		/* a plan that fails the validator is not solved at all */
		r->validated = !ret && (o->plan.flags & ORTMEM_PLAN_F_VALIDATE);
	}
	if (ret && ret != -ORTMEM_E_PLAN_DEFERRED) {
		const char *msg = ortmem_last_error_message();

		snprintf(r->err, sizeof(r->err), "%s", msg && *msg ? msg : ortmem_strerror(ret));
		if (r->top_refused)
			name_step(m, r);
	}
	return ret;
}

void pm_free(struct pm_result *r)
{
	ortmem_plan_free(r->plan);
	free(r->step_node);
	free(r->pval_value);
	free(r->pval_node);
	free(r->pval_root);
	free(r->pval_size);
	free(r->deferred);
	free(r->unknown_ops);
	memset(r, 0, sizeof(*r));
}

static void touch(int64_t *lo, int64_t *hi, uint32_t p, int64_t s)
{
	if (lo[p] < 0 || s < lo[p])
		lo[p] = s;
	if (s > hi[p])
		hi[p] = s;
}

int pm_intervals(const struct md_model *m, const struct pm_result *r,
		 int64_t *lo, int64_t *hi)
{
	int32_t *pid = malloc(sizeof(int32_t) * (m->n_values ? m->n_values : 1));
	uint32_t p, s, k;

	if (!pid)
		return -ENOMEM;
	memset(pid, 0xff, sizeof(int32_t) * m->n_values);
	for (p = 0; p < r->n_pvals; p++) {
		lo[p] = hi[p] = -1;
		if (r->pval_value[p] >= 0)
			pid[r->pval_value[p]] = (int32_t)p;
	}
	for (s = 0; s < r->n_steps; s++) {
		const struct md_node *n = &m->nodes[r->step_node[s]];

		for (k = 0; k < n->n_in + n->n_out + n->n_implicit; k++) {
			int32_t v = k < n->n_in ? n->in[k] : k < n->n_in + n->n_out ?
				    n->out[k - n->n_in] : (int32_t)n->implicit[k - n->n_in - n->n_out];

			if (v >= 0 && pid[v] >= 0)
				touch(lo, hi, r->pval_root[pid[v]], s);
		}
	}
	for (p = 0; p < r->n_pvals; p++) {
		if (r->pval_value[p] < 0) {
			for (s = 0; s < r->n_steps; s++)
				if (r->step_node[s] == (uint32_t)r->pval_node[p])
					touch(lo, hi, p, s);
		} else if (m->values[r->pval_value[p]].is_output && lo[r->pval_root[p]] >= 0) {
			touch(lo, hi, r->pval_root[p], (int64_t)r->n_steps - 1);
		}
	}
	free(pid);
	return 0;
}
