// SPDX-License-Identifier: MIT
/*
 * Shape inference driver and the helpers of the op handlers.
 *
 * Graphs are walked in execution order; each node's handler is found by
 * op_type in the tables of shape_ops_*.c.  An op none knows leaves its
 * outputs unknown and marks the node, so the plan is deferred and names
 * it.  A node is constant (folded) when none of its inputs, explicit or
 * read by a body, is anything but a constant, and it is not random.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "shape.h"

struct md_value *sin_(struct sctx *c, uint32_t k)
{
	return k < c->n->n_in && c->n->in[k] >= 0 ? &c->m->values[c->n->in[k]] : NULL;
}

struct md_value *sout(struct sctx *c, uint32_t k)
{
	return k < c->n->n_out && c->n->out[k] >= 0 ? &c->m->values[c->n->out[k]] : NULL;
}

const char *node_name(const struct sctx *c)
{
	const char *label = md_node_label(c->m, c->id);

	return *label ? label : "?";
}

int bad(struct sctx *c, const char *what)
{
	return md_err(c->m, -EINVAL, "node '%s' (%s): %s", node_name(c),
		      c->n->p->op_type, what);
}

static const Onnx__AttributeProto *attr(const struct sctx *c, const char *name)
{
	size_t k;

	for (k = 0; k < c->n->p->n_attribute; k++)
		if (c->n->p->attribute[k]->name && !strcmp(c->n->p->attribute[k]->name, name))
			return c->n->p->attribute[k];
	return NULL;
}

bool attr_has(const struct sctx *c, const char *name)
{
	return attr(c, name) != NULL;
}

int64_t attr_i(const struct sctx *c, const char *name, int64_t def)
{
	const Onnx__AttributeProto *a = attr(c, name);

	return a && a->has_i ? a->i : def;
}

double attr_f(const struct sctx *c, const char *name, double def)
{
	const Onnx__AttributeProto *a = attr(c, name);

	return a && a->has_f ? a->f : def;
}

const int64_t *attr_ints(const struct sctx *c, const char *name, size_t *n)
{
	const Onnx__AttributeProto *a = attr(c, name);

	*n = a ? a->n_ints : 0;
	return a && a->n_ints ? a->ints : NULL;
}

const float *attr_floats(const struct sctx *c, const char *name, size_t *n)
{
	const Onnx__AttributeProto *a = attr(c, name);

	*n = a ? a->n_floats : 0;
	return a && a->n_floats ? a->floats : NULL;
}

const char *attr_s(const struct sctx *c, const char *name, const char *def)
{
	const Onnx__AttributeProto *a = attr(c, name);
	static __thread char buf[64];

	if (!a || !a->has_s)
		return def;
	snprintf(buf, sizeof(buf), "%.*s", (int)(a->s.len < 63 ? a->s.len : 63),
		 (const char *)a->s.data);
	return buf;
}

const Onnx__TensorProto *attr_t(const struct sctx *c, const char *name)
{
	const Onnx__AttributeProto *a = attr(c, name);

	return a ? a->t : NULL;
}

bool shape_known(const struct md_value *v)
{
	int32_t k;

	if (!v || v->rank < 0)
		return false;
	for (k = 0; k < v->rank; k++)
		if (v->dims[k] < 0)
			return false;
	return true;
}

void set_shape(struct md_value *o, int32_t elem, int32_t rank,
	       const int64_t *dims)
{
	int32_t k;

	if (!o)
		return;
	if (elem)
		o->elem = elem;
	if (rank > MD_MAX_RANK)
		rank = -1;
	o->rank = rank;
	for (k = 0; k < rank; k++)
		o->dims[k] = dims && dims[k] >= 0 ? dims[k] : -1;
}

void copy_type_shape(struct md_value *o, const struct md_value *i)
{
	if (o && i)
		set_shape(o, i->elem, i->rank, i->dims);
}

int norm_axis(int64_t axis, int32_t rank)
{
	if (axis < 0)
		axis += rank;
	return axis < 0 || axis >= rank ? -1 : (int)axis;
}

bool bcast_shape(struct md_value *const *in, int n, int32_t *rank,
		 int64_t *dims)
{
	int32_t r = 0, k;
	int i;

	for (i = 0; i < n; i++) {
		if (!in[i] || in[i]->rank < 0)
			return false;
		if (in[i]->rank > r)
			r = in[i]->rank;
	}
	for (k = 0; k < r; k++)
		dims[k] = 1;
	for (i = 0; i < n; i++) {
		int32_t off = r - in[i]->rank;

		for (k = 0; k < in[i]->rank; k++) {
			int64_t d = in[i]->dims[k], *o = &dims[off + k];

			if (d == 1)
				continue;
			if (*o == 1 || d == *o)
				*o = d;
			else if (d < 0 || *o < 0)
				*o = *o < 0 && d > 1 ? d : (*o > 1 ? *o : -1);
			else
				return false;	/* incompatible: left unknown */
		}
	}
	*rank = r;
	return true;
}

int elems_of(int32_t rank, const int64_t *dims, uint64_t *n)
{
	uint64_t x = 1;
	int32_t k;

	for (k = 0; k < rank; k++) {
		if (dims[k] < 0 || __builtin_mul_overflow(x, (uint64_t)dims[k], &x))
			return -1;
	}
	*n = x;
	return 0;
}

uint64_t bcast_src(const int64_t *odims, int32_t rank, const struct md_value *v,
		   uint64_t flat)
{
	uint64_t src = 0, stride = 1;
	int32_t k;

	for (k = rank - 1; k >= 0; k--) {
		uint64_t i = flat % (uint64_t)odims[k];
		int32_t vk = k - (rank - v->rank);

		flat /= (uint64_t)odims[k];
		if (vk < 0)
			continue;
		if (v->dims[vk] != 1)
			src += i * stride;
		stride *= (uint64_t)v->dims[vk];
	}
	return src;
}

/*
 * A list of integers from attribute @attr (older opsets) or from input @in
 * (newer ones).  Returns 1 and fills @v/@n, 0 when neither is given, -1
 * when the input is given but its contents are unknown.
 */
int int_list(struct sctx *c, const char *attr, uint32_t in, int64_t *v,
		    size_t *n, size_t max)
{
	const int64_t *a = attr ? attr_ints(c, attr, n) : NULL;
	struct md_value *x = sin_(c, in);

	if (a && *n <= max) {
		memcpy(v, a, sizeof(*v) * *n);
		return 1;
	}
	if (attr && attr_has(c, attr) && !*n)
		return 1;	/* an empty list */
	if (!x)
		return 0;
	if (!x->has_data || x->n_data > max)
		return -1;
	memcpy(v, x->idata, sizeof(*v) * x->n_data);
	*n = x->n_data;
	return 1;
}

int keep(struct sctx *c, struct md_value *o, uint32_t n, const int64_t *iv,
		const double *fv)
{
	if (md_set_data(o, n, iv, fv))
		return md_err(c->m, -ENOMEM, "out of memory");
	return 0;
}

static shape_fn find_onnx_op(const char *op)
{
	const struct shape_op *const tabs[] = { shape_ops_elem, shape_ops_nn,
						shape_ops_tensor, shape_ops_misc,
						shape_ops_control, shape_ops_recent };
	size_t t;
	const struct shape_op *o;

	for (t = 0; t < sizeof(tabs) / sizeof(tabs[0]); t++)
		for (o = tabs[t]; o->name; o++)
			if (!strcmp(o->name, op))
				return o->fn;
	return NULL;
}

static bool is_random(const char *op)
{
	return !strncmp(op, "Random", 6) || !strcmp(op, "Multinomial") ||
	       !strcmp(op, "Bernoulli");
}

static bool is_ms_domain(const char *d)
{
	return d && !strcmp(d, "com.microsoft");
}

/* The rule of @op in domain @d, or NULL when inference does not know it. */
static shape_fn find_op(const char *d, const char *op)
{
	const struct shape_op *o;

	if (!d || !*d || !strcmp(d, "ai.onnx"))
		return find_onnx_op(op);
	if (!is_ms_domain(d))
		return NULL;
	for (o = shape_ops_ms; o->name; o++)
		if (!strcmp(o->name, op))
			return o->fn ? o->fn : find_onnx_op(op);
	return NULL;
}

/*
 * What reads a value sized from an upper bound is sized from it too, and
 * is marked so; its contents (a Shape or Size of it) are dropped, so that
 * shape arithmetic on a bound, which need not grow with it, leaves sizes
 * unknown instead of guessing them.
 */
static void bounds_follow(struct sctx *c)
{
	bool bounded = false;
	uint32_t i;

	for (i = 0; i < c->n->n_in + c->n->n_implicit; i++) {
		int32_t v = i < c->n->n_in ? c->n->in[i] : (int32_t)c->n->implicit[i - c->n->n_in];

		if (v >= 0 && c->m->values[v].bounded)
			bounded = true;
	}
	for (i = 0; i < c->n->n_out; i++) {
		struct md_value *o = sout(c, i);

		if (o && (bounded || o->bounded)) {
			o->bounded = true;
			md_drop_data(o);
		}
	}
}

int md_infer_graph(struct md_model *m, uint32_t graph, const struct md_pin *pins,
		   size_t n_pins)
{
	const struct md_graph *g = &m->graphs[graph];
	uint32_t k, i;
	int ret;

	for (k = 0; k < g->n_nodes; k++) {
		struct sctx c = { m, &m->nodes[g->order[k]], g->order[k], pins, n_pins };
		shape_fn fn = find_op(c.n->p->domain, c.n->p->op_type);
		bool konst = !is_random(c.n->p->op_type);

		if (!fn) {
			c.n->unknown_op = true;
		} else {
			ret = fn(&c);
			if (ret)
				return ret;
		}
		for (i = 0; i < c.n->n_in + c.n->n_implicit && konst; i++) {
			int32_t v = i < c.n->n_in ? c.n->in[i] : (int32_t)c.n->implicit[i - c.n->n_in];

			if (v >= 0 && !m->values[v].is_const)
				konst = false;
		}
		c.n->is_const = konst;
		bounds_follow(&c);
		for (i = 0; i < c.n->n_out; i++) {
			struct md_value *o = sout(&c, i);

			if (o)
				o->is_const = konst;
		}
	}
	return 0;
}

static int apply_pins(struct md_model *m, const struct md_pin *pins, size_t n)
{
	const struct md_graph *g = &m->graphs[0];
	size_t k;
	uint32_t i;

	for (k = 0; k < n; k++) {
		struct md_value *v = NULL;

		for (i = 0; i < g->n_inputs; i++)
			if (!strcmp(m->values[g->inputs[i]].name, pins[k].input))
				v = &m->values[g->inputs[i]];
		if (!v)
			return md_err(m, -ENOENT, "--dim %s:%d: the model has no graph input '%s'",
				      pins[k].input, pins[k].axis, pins[k].input);
		if (v->rank < 0)
			return md_err(m, -EINVAL, "--dim %s:%d: the input declares no shape; its rank is unknown",
				      pins[k].input, pins[k].axis);
		if (pins[k].axis < 0 || pins[k].axis >= v->rank)
			return md_err(m, -EINVAL, "--dim %s:%d: input '%s' has rank %d (axes 0..%d)",
				      pins[k].input, pins[k].axis, v->name, v->rank, v->rank - 1);
		if (pins[k].value < 0)
			return md_err(m, -EINVAL, "--dim %s:%d: a dimension cannot be negative",
				      pins[k].input, pins[k].axis);
		v->dims[pins[k].axis] = pins[k].value;
	}
	return 0;
}

/* Refuse value @x, whose size does not fit in 64 bits: no --dim can fix
 * that, so it is an error, not a deferred size. */
static int too_large(struct md_model *m, const struct md_value *x)
{
	char shape[160] = "";
	size_t len = 0;
	int32_t k;

	for (k = 0; k < x->rank && len < sizeof(shape) - 24; k++)
		len += (size_t)snprintf(shape + len, sizeof(shape) - len, "%s%" PRId64,
					k ? ", " : "", x->dims[k]);
	if (k < x->rank)
		snprintf(shape + len, sizeof(shape) - len, ", ...");
	if (x->kind == MD_NODE)
		return md_err(m, -EOVERFLOW, "value '%s' (output of %s node '%s') has shape [%s] "
			      "of %d-bit elements: its size does not fit in 64 bits; check the "
			      "model's shapes and any --dim", x->name, m->nodes[x->producer].p->op_type,
			      md_node_label(m, (uint32_t)x->producer), shape, md_elem_bits(x->elem));
	return md_err(m, -EOVERFLOW, "%s '%s' has shape [%s] of %d-bit elements: its size "
		      "does not fit in 64 bits; check the model's shapes and any --dim",
		      x->kind == MD_INIT ? "initializer" : "input", x->name, shape,
		      md_elem_bits(x->elem));
}

int md_infer(struct md_model *m, const struct md_pin *pins, size_t n_pins)
{
	uint32_t v;
	uint64_t b;
	int ret;

	if (!m->n_graphs)
		return md_err(m, -EINVAL, "no graph");
	ret = apply_pins(m, pins, n_pins);
	if (!ret)
		ret = md_infer_graph(m, 0, pins, n_pins);
	if (ret)
		return ret;
	/* A declared output nobody reads and no rule sizes counts 0 bytes. */
	for (v = 0; v < m->n_values; v++) {
		struct md_value *x = &m->values[v];
		int sized = md_value_bytes(x, &b);

		if (sized == -EOVERFLOW)
			return too_large(m, x);
		if (x->kind == MD_NODE && !x->n_readers &&
		    sized == -ENODATA && !m->nodes[x->producer].unknown_op)
			x->sized_zero = true;
	}
	return 0;
}
