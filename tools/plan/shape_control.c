// SPDX-License-Identifier: MIT
/*
 * Control flow: If and Loop.  Their bodies are inferred in place (a body
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
	/* A trip count known and no condition: scan outputs have M rows. */
	if (m_in && m_in->has_data && m_in->n_data == 1 && !sin_(c, 1))
		trip = m_in->idata[0];
	for (k = carried; k < c->n->n_out; k++) {
		const struct md_value *b = &c->m->values[g->outputs[1 + k]];
		struct md_value *o = sout(c, k);

		if (!o)
			continue;
		o->elem = b->elem;
		if (b->rank < 0 || b->rank + 1 > MD_MAX_RANK)
			continue;
		o->rank = b->rank + 1;
		o->dims[0] = trip;
		memcpy(o->dims + 1, b->dims, sizeof(int64_t) * (size_t)b->rank);
	}
	return 0;
}

const struct shape_op shape_ops_control[] = {
	{ "If", op_if }, { "Loop", op_loop },
	{ NULL, NULL }
};
