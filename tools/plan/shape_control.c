// SPDX-License-Identifier: MIT
/*
 * Control flow: If, Loop and Scan.  Their bodies are inferred in place (a body
 * reads outer values, whose shapes are known by then); an output takes the
 * shape both branches agree on, dim by dim.
 */
#include <errno.h>
#include <string.h>

#include "shape.h"

#define T_BOOL 9
#define T_INT64 7

/* @o becomes the shape @a and @b agree on (-1 where they differ). */
static void merge(struct md_value *o, const struct md_value *a,
		  const struct md_value *b)
{
	int32_t k;

	if (!o)
		return;
	if (!b) {
		copy_type_shape(o, a);
		return;
	}
	o->elem = a->elem ? a->elem : b->elem;
	if (a->rank != b->rank) {
		o->rank = -1;
		return;
	}
	o->rank = a->rank;
	for (k = 0; k < a->rank; k++)
		o->dims[k] = a->dims[k] == b->dims[k] ? a->dims[k] : -1;
}

static int op_if(struct sctx *c)
{
	const struct md_graph *g[2] = { NULL, NULL };
	uint32_t k;
	int ret;

	if (c->n->n_bodies != 2)
		return bad(c, "If needs a then_branch and an else_branch");
	for (k = 0; k < 2; k++) {
		ret = md_infer_graph(c->m, c->n->bodies[k], c->pins, c->n_pins);
		if (ret)
			return ret;
		g[k] = &c->m->graphs[c->n->bodies[k]];
		if (g[k]->n_outputs != c->n->n_out)
			return bad(c, "a branch has a different number of outputs than the node");
	}
	/* A condition known from shape arithmetic picks the branch whose
	 * shapes count; otherwise the two must agree. */
	if (sin_(c, 0) && sin_(c, 0)->has_data && sin_(c, 0)->n_data == 1) {
		const char *want = sin_(c, 0)->idata[0] ? "then_branch" : "else_branch";
		const struct md_graph *taken = NULL;
		size_t a;

		/* Bodies are in attribute order: find the branch by its name. */
		for (a = 0; a < c->n->p->n_attribute; a++)
			if (c->n->p->attribute[a]->name && !strcmp(c->n->p->attribute[a]->name, want))
				for (k = 0; k < 2; k++)
					if (g[k]->p == c->n->p->attribute[a]->g)
						taken = g[k];
		if (!taken)
			return bad(c, "If needs a then_branch and an else_branch");

		for (k = 0; k < c->n->n_out; k++)
			merge(sout(c, k), &c->m->values[taken->outputs[k]], NULL);
		return 0;
	}
	for (k = 0; k < c->n->n_out; k++)
		merge(sout(c, k), &c->m->values[g[0]->outputs[k]],
		      &c->m->values[g[1]->outputs[k]]);
	return 0;
}

static bool scan_rows_fit(struct sctx *c, const struct md_graph *g, uint32_t carried,
			  int64_t rows);

static int op_loop(struct sctx *c)
{
	struct md_graph *g;
	struct md_value *m_in = sin_(c, 0);
	uint32_t k, carried;
	int64_t trip = -1;
	int ret;

	if (c->n->n_bodies != 1 || c->n->n_in < 2)
		return bad(c, "Loop needs one body and the inputs M and cond");
	g = &c->m->graphs[c->n->bodies[0]];
	carried = c->n->n_in - 2;
	if (g->n_inputs != carried + 2 || g->n_outputs < carried + 1 ||
	    c->n->n_out < carried || g->n_outputs - 1 - carried != c->n->n_out - carried)
		return bad(c, "the body's inputs and outputs do not match the node's");
	set_shape(&c->m->values[g->inputs[0]], T_INT64, 0, NULL);
	set_shape(&c->m->values[g->inputs[1]], T_BOOL, 0, NULL);
	for (k = 0; k < carried; k++)
		copy_type_shape(&c->m->values[g->inputs[2 + k]], sin_(c, 2 + k));
	ret = md_infer_graph(c->m, c->n->bodies[0], c->pins, c->n_pins);
	if (ret)
		return ret;
	for (k = 0; k < carried; k++) {
		const struct md_value *in = sin_(c, 2 + k);

		merge(sout(c, k), &c->m->values[g->outputs[1 + k]], in);
	}
	/* A trip count known and no condition: scan outputs have M rows.  With
	 * a condition the loop may stop sooner: M rows at most (upper_bounds),
	 * where M rows of every scan output stay below 2^62 bytes (a "while"
	 * loop's M is often INT64_MAX). */
	if (m_in && m_in->has_data && m_in->n_data == 1 && m_in->idata[0] >= 0) {
		if (!sin_(c, 1))
			trip = m_in->idata[0];
		else if (c->m->upper_bounds && scan_rows_fit(c, g, carried, m_in->idata[0]))
			trip = m_in->idata[0];
	}
	for (k = carried; k < c->n->n_out; k++) {
		const struct md_value *b = &c->m->values[g->outputs[1 + k]];
		struct md_value *o = sout(c, k);

		if (!o)
			continue;
		o->elem = b->elem;
		if (sin_(c, 1)) {	/* the rows depend on the data */
			o->data_dep = true;
			o->bounded = trip >= 0;
		}
		if (b->rank < 0 || b->rank + 1 > MD_MAX_RANK)
			continue;
		o->rank = b->rank + 1;
		o->dims[0] = trip;
		memcpy(o->dims + 1, b->dims, sizeof(int64_t) * (size_t)b->rank);
	}
	return 0;
}

/* Do @rows rows of every scan output of Loop body @g (its outputs past the
 * condition and the @carried values) stay below 2^62 bytes? */
static bool scan_rows_fit(struct sctx *c, const struct md_graph *g, uint32_t carried,
			  int64_t rows)
{
	uint32_t k;
	uint64_t b, total;

	for (k = 1 + carried; k < g->n_outputs; k++)
		if (md_value_bytes(&c->m->values[g->outputs[k]], &b) ||
		    __builtin_mul_overflow(b, (uint64_t)rows, &total) || total >= 1ull << 62)
			return false;
	return true;
}

/*
 * Scan (opset 9 on): N state values, then num_scan_inputs sequences
 * sliced along their scan_input_axes; the body sees a state and one slice
 * of each, and returns the next state and one slice of each scan output,
 * stacked along its scan_output_axes.  Opset 8's batched form is left
 * unknown.
 */
static int op_scan(struct sctx *c)
{
	int64_t m = attr_i(c, "num_scan_inputs", -1), len = -1;
	size_t n_in_axes, n_out_axes;
	const int64_t *in_axes = attr_ints(c, "scan_input_axes", &n_in_axes);
	const int64_t *out_axes = attr_ints(c, "scan_output_axes", &n_out_axes);
	struct md_graph *g;
	uint32_t n, k;
	int ret;

	if (c->n->n_bodies != 1 || m < 1 || (uint64_t)m > c->n->n_in)
		return bad(c, "Scan needs one body and num_scan_inputs between 1 and its inputs");
	if (c->n->opset < 9)
		return 0;
	g = &c->m->graphs[c->n->bodies[0]];
	n = c->n->n_in - (uint32_t)m;
	if (g->n_inputs != c->n->n_in || g->n_outputs != c->n->n_out || c->n->n_out < n)
		return bad(c, "the body's inputs and outputs do not match the node's");
	for (k = 0; k < n; k++)
		copy_type_shape(&c->m->values[g->inputs[k]], sin_(c, k));
	for (k = n; k < c->n->n_in; k++) {
		const struct md_value *x = sin_(c, k);
		struct md_value *slice = &c->m->values[g->inputs[k]];
		int axis = x && x->rank > 0 ? norm_axis(in_axes && n_in_axes == (size_t)m ?
						      in_axes[k - n] : 0, x->rank) : -1;

		slice->rank = -1;
		if (!x || axis < 0)
			continue;
		slice->elem = x->elem;
		slice->rank = x->rank - 1;
		memcpy(slice->dims, x->dims, sizeof(int64_t) * (size_t)axis);
		memcpy(slice->dims + axis, x->dims + axis + 1,
		       sizeof(int64_t) * (size_t)(x->rank - 1 - axis));
		if (len < 0)
			len = x->dims[axis];
	}
	ret = md_infer_graph(c->m, c->n->bodies[0], c->pins, c->n_pins);
	if (ret)
		return ret;
	for (k = 0; k < n; k++)
		merge(sout(c, k), &c->m->values[g->outputs[k]], sin_(c, k));
	for (k = n; k < c->n->n_out; k++) {
		const struct md_value *b = &c->m->values[g->outputs[k]];
		struct md_value *o = sout(c, k);
		int axis;

		if (!o || b->rank < 0 || b->rank + 1 > MD_MAX_RANK) {
			if (o)
				o->elem = b->elem;
			continue;
		}
		axis = norm_axis(out_axes && n_out_axes == c->n->n_out - n ? out_axes[k - n] : 0,
				 b->rank + 1);
		if (axis < 0)
			return bad(c, "a scan_output_axes entry is out of range");
		o->elem = b->elem;
		o->rank = b->rank + 1;
		memcpy(o->dims, b->dims, sizeof(int64_t) * (size_t)axis);
		o->dims[axis] = len;
		memcpy(o->dims + axis + 1, b->dims + axis, sizeof(int64_t) * (size_t)(b->rank - axis));
	}
	return 0;
}

const struct shape_op shape_ops_control[] = {
	{ "If", op_if }, { "Loop", op_loop }, { "Scan", op_scan },
	{ NULL, NULL }
};
