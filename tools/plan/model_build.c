// SPDX-License-Identifier: MIT
/*
 * From the protobuf tree to struct md_model: values named per graph scope
 * (a body sees its own names first, then its ancestors'), nodes with their
 * inputs resolved, the outer values each body reads, and every graph's
 * execution order.  The order is the stored one when it is topological;
 * otherwise a stable Kahn order that takes, among the ready nodes, the one
 * stored first (which gives the stored order back when it was valid).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define MD_VALUES_MAX (1u << 26)

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, (size_t)n * elem);
	if (!q)
		return -ENOMEM;
	memset((char *)q + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
	*p = q;
	*cap = n;
	return 0;
}

/* ---- name table: (graph, name) -> value id, open addressing ---- */

struct names {
	uint32_t *slot;		/* value id + 1, 0 empty */
	uint32_t cap, used;
};

static uint64_t name_hash(uint32_t graph, const char *s)
{
	uint64_t h = 1469598103934665603ull ^ graph;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static int names_put(struct md_model *m, struct names *t, uint32_t id)
{
	const struct md_value *v = &m->values[id];
	uint32_t i;

	if ((t->used + 1) * 2 > t->cap) {
		struct names n = { calloc(t->cap ? t->cap * 2 : 1024, sizeof(uint32_t)),
				   t->cap ? t->cap * 2 : 1024, 0 };
		if (!n.slot)
			return -ENOMEM;
		for (i = 0; i < t->cap; i++)
			if (t->slot[i])
				names_put(m, &n, t->slot[i] - 1);
		free(t->slot);
		*t = n;
	}
	for (i = name_hash(v->graph, v->name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->slot[i]) {
			t->slot[i] = id + 1;
			t->used++;
			return 0;
		}
	}
}

static int names_get(const struct md_model *m, const struct names *t,
		     uint32_t graph, const char *name)
{
	uint32_t i;

	if (!t->cap)
		return -1;
	for (i = name_hash(graph, name) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		const struct md_value *v = &m->values[t->slot[i] - 1];

		if (v->graph == graph && !strcmp(v->name, name))
			return (int)t->slot[i] - 1;
	}
	return -1;
}

struct builder {
	struct md_model *m;
	struct names names;
	const Onnx__OperatorSetIdProto *const *opsets;
	size_t n_opsets;
};

static int lookup(struct builder *b, uint32_t graph, const char *name)
{
	int32_t g = (int32_t)graph;
	int id;

	for (; g >= 0; g = b->m->graphs[g].parent) {
		id = names_get(b->m, &b->names, (uint32_t)g, name);
		if (id >= 0)
			return id;
	}
	return -1;
}

const char *md_node_label(const struct md_model *m, uint32_t nid)
{
	const struct md_node *n = &m->nodes[nid];

	return n->p->name && *n->p->name ? n->p->name :
	       n->n_out && n->out[0] >= 0 ? m->values[n->out[0]].name : "";
}

int md_find(const struct md_model *m, uint32_t graph, const char *name)
{
	uint32_t v;

	for (v = 0; v < m->n_values; v++)
		if (m->values[v].graph == graph && !strcmp(m->values[v].name, name))
			return (int)v;
	return -1;
}

static int new_value(struct builder *b, uint32_t graph, const char *name,
		     enum md_kind kind, int32_t producer)
{
	struct md_model *m = b->m;
	struct md_value *v;
	int ret;

	if (!name || !*name)
		return md_err(m, -EINVAL, "a value without a name in graph %u", graph);
	if (names_get(m, &b->names, graph, name) >= 0)
		return md_err(m, -EEXIST, "value '%s' is defined twice in one graph (SSA violated)",
			      name);
	if (m->n_values >= MD_VALUES_MAX)
		return md_err(m, -E2BIG, "more than %u values", MD_VALUES_MAX);
	ret = grow((void **)&m->values, &m->cap_values, m->n_values + 1, sizeof(*v));
	if (ret)
		return md_err(m, ret, "out of memory");
	v = &m->values[m->n_values];
	memset(v, 0, sizeof(*v));
	v->name = name;
	v->graph = graph;
	v->kind = kind;
	v->producer = producer;
	v->rank = -1;
	ret = names_put(m, &b->names, m->n_values);
	if (ret)
		return md_err(m, ret, "out of memory");
	return (int)m->n_values++;
}

/* Type and shape declared by a ValueInfoProto (graph inputs). */
static int set_declared(struct md_model *m, struct md_value *v,
			const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto__Tensor *tt;
	size_t k;

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !vi->type->tensor_type)
		return 0;	/* sequences, maps, optionals: unknown */
	tt = vi->type->tensor_type;
	v->elem = tt->has_elem_type ? tt->elem_type : 0;
	if (!tt->shape)
		return 0;
	if (tt->shape->n_dim > MD_MAX_RANK)
		return md_err(m, -E2BIG, "input '%s' has rank %zu; at most %d is supported",
			      v->name, tt->shape->n_dim, MD_MAX_RANK);
	v->rank = (int32_t)tt->shape->n_dim;
	for (k = 0; k < tt->shape->n_dim; k++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];

		v->dims[k] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			     d->dim_value >= 0 ? d->dim_value : -1;
	}
	return 0;
}

static int64_t opset_of(const struct builder *b, const char *domain)
{
	size_t k;

	if (!domain || !strcmp(domain, "ai.onnx"))
		domain = "";
	for (k = 0; k < b->n_opsets; k++) {
		const char *d = b->opsets[k]->domain ? b->opsets[k]->domain : "";

		if (!strcmp(d, "ai.onnx"))
			d = "";
		if (!strcmp(d, domain))
			return b->opsets[k]->version;
	}
	return 1;
}

static int build_graph(struct builder *b, const Onnx__GraphProto *gp,
		       int32_t parent, int32_t owner, int depth);

/* A node by its name, or its first output when it has none. */
static const char *nlabel(const Onnx__NodeProto *p)
{
	if (p->name && *p->name)
		return p->name;
	return p->n_output && p->output[0][0] ? p->output[0] : "(unnamed)";
}

/* Outer values the node's bodies read, each once. */
static int collect_implicit(struct md_model *m, uint32_t nid)
{
	struct md_node *n = &m->nodes[nid];
	uint32_t k, j, i, cap = 0;
	int ret;

	for (k = 0; k < n->n_bodies; k++) {
		const struct md_graph *g = &m->graphs[n->bodies[k]];

		for (j = 0; j < g->n_nodes; j++) {
			const struct md_node *bn = &m->nodes[g->order[j]];
			uint32_t total = bn->n_in + bn->n_implicit;

			for (i = 0; i < total; i++) {
				int32_t v = i < bn->n_in ? bn->in[i] : (int32_t)bn->implicit[i - bn->n_in];
				uint32_t q;
				int32_t vg;

				if (v < 0)
					continue;
				/* Outer: the value's graph is not this body nor inside it. */
				for (vg = (int32_t)m->values[v].graph; vg >= 0 && vg != (int32_t)n->bodies[k];
				     vg = m->graphs[vg].parent)
					;
				if (vg >= 0)
					continue;
				for (q = 0; q < n->n_implicit && n->implicit[q] != (uint32_t)v; q++)
					;
				if (q < n->n_implicit)
					continue;
				ret = grow((void **)&n->implicit, &cap, n->n_implicit + 1, sizeof(uint32_t));
				if (ret)
					return md_err(m, ret, "out of memory");
				n->implicit[n->n_implicit++] = (uint32_t)v;
				m->values[v].n_readers++;
			}
		}
	}
	return 0;
}

static int build_node(struct builder *b, uint32_t graph, uint32_t nid,
		      int depth)
{
	struct md_model *m = b->m;
	const Onnx__NodeProto *p = m->nodes[nid].p;
	size_t k, j;
	int ret;

	m->nodes[nid].in = calloc(p->n_input ? p->n_input : 1, sizeof(int32_t));
	if (!m->nodes[nid].in)
		return md_err(m, -ENOMEM, "out of memory");
	for (k = 0; k < p->n_input; k++) {
		int id = -1;

		if (p->input[k][0]) {
			id = lookup(b, graph, p->input[k]);
			if (id < 0)
				return md_err(m, -ENOENT,
					"node '%s' (%s) reads '%s', which no node, graph input or initializer defines",
					nlabel(p), p->op_type ? p->op_type : "?", p->input[k]);
			m->values[id].n_readers++;
		}
		m->nodes[nid].in[k] = id;
	}
	m->nodes[nid].n_in = (uint32_t)p->n_input;
	for (k = 0; k < p->n_attribute; k++) {
		const Onnx__AttributeProto *a = p->attribute[k];
		const Onnx__GraphProto *one[1] = { a->g };
		const Onnx__GraphProto *const *gs = a->g ? one : (const Onnx__GraphProto *const *)a->graphs;
		size_t ng = a->g ? 1 : a->n_graphs;

		for (j = 0; j < ng; j++) {
			uint32_t bcap = m->nodes[nid].n_bodies;
			int gi = build_graph(b, gs[j], (int32_t)graph, (int32_t)nid, depth + 1);

			if (gi < 0)
				return gi;
			ret = grow((void **)&m->nodes[nid].bodies, &bcap,
				   m->nodes[nid].n_bodies + 1, sizeof(uint32_t));
			if (ret)
				return md_err(m, ret, "out of memory");
			m->nodes[nid].bodies[m->nodes[nid].n_bodies++] = (uint32_t)gi;
		}
	}
	return collect_implicit(m, nid);
}

/* ---- stable Kahn order: a binary min-heap of ready stored positions ---- */

static void heap_push(uint32_t *h, uint32_t *n, uint32_t x)
{
	uint32_t i = (*n)++;

	while (i && h[(i - 1) / 2] > x) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static uint32_t heap_pop(uint32_t *h, uint32_t *n)
{
	uint32_t top = h[0], x = h[--(*n)], i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= x)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
	return top;
}

/* Nodes first..first+n of graph @graph, stored order, into g->order. */
static int sort_graph(struct md_model *m, uint32_t graph, uint32_t first,
		      uint32_t n)
{
	struct md_graph *g = &m->graphs[graph];
	uint32_t *indeg = calloc(n ? n : 1, sizeof(*indeg));
	uint32_t *heap = calloc(n ? n : 1, sizeof(*heap));
	uint32_t *users_at = calloc(n + 1, sizeof(*users_at));
	uint32_t *users = NULL, nh = 0, i, k, done = 0, total = 0;
	int ret = -ENOMEM;

	g->order = calloc(n ? n : 1, sizeof(uint32_t));
	if (!indeg || !heap || !users_at || !g->order)
		goto out;
	/* Edges producer -> reader within this graph, as a CSR by producer. */
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			const struct md_node *nd = &m->nodes[first + i];

			for (k = 0; k < nd->n_in + nd->n_implicit; k++) {
				int32_t v = k < nd->n_in ? nd->in[k] : (int32_t)nd->implicit[k - nd->n_in];
				int32_t p;

				if (v < 0 || m->values[v].graph != graph || m->values[v].producer < 0)
					continue;
				p = m->values[v].producer - (int32_t)first;
				if (pass == 0) {
					users_at[p + 1]++;
					total++;
				} else {
					users[users_at[p]++] = i;
					indeg[i]++;
				}
			}
		}
		if (pass == 0) {
			for (i = 0; i < n; i++)
				users_at[i + 1] += users_at[i];
			users = malloc(sizeof(*users) * (total ? total : 1));
			if (!users)
				goto out;
		}
	}
	/* users_at[p] now points past p's list; p's list starts at users_at[p-1]. */
	for (i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(heap, &nh, i);
	while (nh) {
		uint32_t x = heap_pop(heap, &nh), from = x ? users_at[x - 1] : 0;

		g->order[done++] = first + x;
		for (k = from; k < users_at[x]; k++)
			if (!--indeg[users[k]])
				heap_push(heap, &nh, users[k]);
	}
	if (done < n) {
		for (i = 0; i < n && !indeg[i]; i++)
			;
		ret = md_err(m, -ELOOP,
			"the graph has a cycle through node '%s' (%s); ONNX graphs must be acyclic",
			nlabel(m->nodes[first + i].p),
			m->nodes[first + i].p->op_type ? m->nodes[first + i].p->op_type : "?");
		goto out;
	}
	g->n_nodes = n;
	ret = 0;
out:
	free(indeg);
	free(heap);
	free(users_at);
	free(users);
	return ret;
}

static int add_inputs(struct builder *b, uint32_t gi, const Onnx__GraphProto *gp)
{
	struct md_model *m = b->m;
	uint32_t cap = 0;
	size_t k;
	int id, ret;

	for (k = 0; k < gp->n_initializer; k++) {
		id = new_value(b, gi, gp->initializer[k]->name, MD_INIT, -1);
		if (id < 0)
			return id;
		m->values[id].is_const = true;
		ret = md_set_from_tensor(m, &m->values[id], gp->initializer[k]);
		if (ret)
			return ret;
	}
	for (k = 0; k < gp->n_sparse_initializer; k++) {
		const Onnx__SparseTensorProto *s = gp->sparse_initializer[k];
		Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;

		if (!s->values)
			return md_err(m, -EINVAL, "a sparse initializer without values");
		t.n_dims = s->n_dims;
		t.dims = s->dims;
		t.data_type = s->values->data_type;
		id = new_value(b, gi, s->values->name, MD_INIT, -1);
		if (id < 0)
			return id;
		m->values[id].is_const = true;
		ret = md_set_from_tensor(m, &m->values[id], &t);
		if (ret)
			return ret;
	}
	for (k = 0; k < gp->n_input; k++) {
		/* IR 3 lists the initializers among the inputs: not inputs. */
		if (!gp->input[k]->name || names_get(m, &b->names, gi, gp->input[k]->name) >= 0)
			continue;
		id = new_value(b, gi, gp->input[k]->name,
			       m->graphs[gi].parent < 0 ? MD_INPUT : MD_BODY_INPUT, -1);
		if (id < 0)
			return id;
		ret = set_declared(m, &m->values[id], gp->input[k]);
		if (!ret)
			ret = grow((void **)&m->graphs[gi].inputs, &cap,
				   m->graphs[gi].n_inputs + 1, sizeof(uint32_t));
		if (ret)
			return ret == -ENOMEM ? md_err(m, ret, "out of memory") : ret;
		m->graphs[gi].inputs[m->graphs[gi].n_inputs++] = (uint32_t)id;
	}
	return 0;
}

static int add_outputs(struct builder *b, uint32_t gi, const Onnx__GraphProto *gp)
{
	struct md_model *m = b->m;
	struct md_graph *g = &m->graphs[gi];
	size_t k;

	g->outputs = calloc(gp->n_output ? gp->n_output : 1, sizeof(uint32_t));
	if (!g->outputs)
		return md_err(m, -ENOMEM, "out of memory");
	for (k = 0; k < gp->n_output; k++) {
		const char *name = gp->output[k]->name ? gp->output[k]->name : "";
		int id = lookup(b, gi, name);

		if (id < 0)
			return md_err(m, -ENOENT, "graph output '%s' is not defined by any node, input or initializer",
				      name);
		if (m->values[id].graph == gi)
			m->values[id].is_output = true;
		m->values[id].n_readers++;
		g->outputs[g->n_outputs++] = (uint32_t)id;
	}
	return 0;
}

static int build_graph(struct builder *b, const Onnx__GraphProto *gp,
		       int32_t parent, int32_t owner, int depth)
{
	struct md_model *m = b->m;
	uint32_t gi, first, k;
	size_t j;
	int ret;

	if (!gp)
		return md_err(m, -EINVAL, "a graph attribute without a graph");
	if (depth > MD_MAX_DEPTH)
		return md_err(m, -ELOOP, "If/Loop bodies nested deeper than %d", MD_MAX_DEPTH);
	ret = grow((void **)&m->graphs, &m->cap_graphs, m->n_graphs + 1, sizeof(*m->graphs));
	if (ret)
		return md_err(m, ret, "out of memory");
	gi = m->n_graphs++;
	m->graphs[gi].p = gp;
	m->graphs[gi].parent = parent;
	m->graphs[gi].owner = owner;
	ret = add_inputs(b, gi, gp);
	if (ret)
		return ret;
	/* Outputs of every node first: a body may read a value stored later. */
	first = m->n_nodes;
	if (gp->n_node > MD_VALUES_MAX - m->n_nodes)
		return md_err(m, -E2BIG, "too many nodes");
	ret = grow((void **)&m->nodes, &m->cap_nodes, m->n_nodes + (uint32_t)gp->n_node,
		   sizeof(*m->nodes));
	if (ret)
		return md_err(m, ret, "out of memory");
	for (j = 0; j < gp->n_node; j++) {
		const Onnx__NodeProto *p = gp->node[j];
		uint32_t nid = m->n_nodes;
		struct md_node *n = &m->nodes[nid];

		if (!p->op_type || !*p->op_type)
			return md_err(m, -EINVAL, "node %zu ('%s') has no op_type", j,
				      p->name ? p->name : "");
		n->p = p;
		n->graph = gi;
		n->opset = opset_of(b, p->domain);
		n->out = calloc(p->n_output ? p->n_output : 1, sizeof(int32_t));
		if (!n->out)
			return md_err(m, -ENOMEM, "out of memory");
		n->n_out = (uint32_t)p->n_output;
		memset(n->out, 0xff, sizeof(int32_t) * n->n_out);
		m->n_nodes++;	/* counted now, so md_free() frees it on error */
		for (k = 0; k < p->n_output; k++) {
			int id = -1;

			if (p->output[k][0]) {
				id = new_value(b, gi, p->output[k], MD_NODE, (int32_t)nid);
				if (id < 0)
					return id;
			}
			m->nodes[nid].out[k] = id;
		}
	}
	for (k = 0; k < gp->n_node; k++) {
		ret = build_node(b, gi, first + k, depth);
		if (ret)
			return ret;
	}
	ret = add_outputs(b, gi, gp);
	if (!ret)
		ret = sort_graph(m, gi, first, (uint32_t)gp->n_node);
	if (ret)
		return ret == -ENOMEM ? md_err(m, ret, "out of memory") : ret;
	return (int)gi;
}

int md_build(struct md_model *m, Onnx__ModelProto *proto)
{
	struct builder b = { .m = m };
	int ret;

	memset(m, 0, sizeof(*m));
	m->proto = proto;
	m->ir_version = proto->has_ir_version ? proto->ir_version : 0;
	if (!proto->graph)
		return md_err(m, -EINVAL, "the model has no graph");
	if (m->ir_version < 3 || m->ir_version > 10)
		return md_err(m, -ENOTSUP, "IR version %lld; this tool reads IR 3 to IR 10",
			      (long long)m->ir_version);
	b.opsets = (const Onnx__OperatorSetIdProto *const *)proto->opset_import;
	b.n_opsets = proto->n_opset_import;
	ret = build_graph(&b, proto->graph, -1, -1, 0);
	free(b.names.slot);
	return ret < 0 ? ret : 0;
}

void md_free(struct md_model *m)
{
	uint32_t k;

	for (k = 0; k < m->n_values; k++)
		md_drop_data(&m->values[k]);
	for (k = 0; k < m->n_nodes; k++) {
		free(m->nodes[k].in);
		free(m->nodes[k].out);
		free(m->nodes[k].implicit);
		free(m->nodes[k].bodies);
	}
	for (k = 0; k < m->n_graphs; k++) {
		free(m->graphs[k].order);
		free(m->graphs[k].inputs);
		free(m->graphs[k].outputs);
	}
	free(m->values);
	free(m->nodes);
	free(m->graphs);
	memset(m, 0, sizeof(*m));
}
