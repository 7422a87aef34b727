// SPDX-License-Identifier: MIT
/*
 * Reductions, TopK, depth/space rearrangements, Einsum, OneHot, EyeLike,
 * the random generators, and the ops whose output size depends on data
 * (their type is known, their shape is left unknown, which defers).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "shape.h"

#define T_INT64 7
#define T_FLOAT 1

static int op_reduce(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t axes[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t na = 0, k;
	bool kd = attr_i(c, "keepdims", 1) != 0, attr_axes;
	bool arg = !strncmp(c->n->p->op_type, "Arg", 3);
	int32_t r = 0, j;
	uint32_t mask = 0;
	int have;

	if (!o || !x)
		return 0;
	o->elem = arg ? T_INT64 : x->elem;
	if (x->rank < 0)
		return 0;
	attr_axes = arg || c->n->opset < (strcmp(c->n->p->op_type, "ReduceSum") ? 18 : 13);
	if (arg) {
		axes[0] = attr_i(c, "axis", 0);
		na = 1;
		have = 1;
	} else {
		have = int_list(c, attr_axes ? "axes" : NULL, 1, axes, &na, MD_MAX_RANK);
	}
	if (have < 0)
		return 0;
	if (have == 0 || !na) {
		if (!attr_axes && attr_i(c, "noop_with_empty_axes", 0)) {
			copy_type_shape(o, x);
			return 0;
		}
		mask = x->rank ? (1u << x->rank) - 1 : 0;
	}
	for (k = 0; k < na; k++) {
		int a = norm_axis(axes[k], x->rank);

		if (a < 0)
			return bad(c, "axes out of range");
		mask |= 1u << a;
	}
	for (j = 0; j < x->rank; j++)
		if (!(mask & (1u << j)))
			dims[r++] = x->dims[j];
		else if (kd)
			dims[r++] = 1;
	set_shape(o, 0, r, dims);
	/* The product or sum of a known rank-1 integer (shape arithmetic). */
	if (x->rank == 1 && x->has_data && !md_elem_is_float(x->elem) && (mask & 1) &&
	    (!strcmp(c->n->p->op_type, "ReduceProd") || !strcmp(c->n->p->op_type, "ReduceSum"))) {
		int64_t v = !strcmp(c->n->p->op_type, "ReduceProd");

		for (k = 0; k < x->n_data; k++)
			v = v ? (int64_t)((uint64_t)v * (uint64_t)x->idata[k]) : 0;
		if (strcmp(c->n->p->op_type, "ReduceProd"))
			for (v = 0, k = 0; k < x->n_data; k++)
				v = (int64_t)((uint64_t)v + (uint64_t)x->idata[k]);
		return keep(c, o, 1, &v, NULL);
	}
	return 0;
}

/* The outputs' sizes depend on the data; under upper_bounds the shapes
 * the op then sets are the most the data can make, and marked so. */
static void mark_data_dep(struct sctx *c)
{
	uint32_t k;

	for (k = 0; k < c->n->n_out; k++)
		if (sout(c, k)) {
			sout(c, k)->data_dep = true;
			sout(c, k)->bounded = c->m->upper_bounds;
		}
}

static int op_topk(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *kk = sin_(c, 1);
	int64_t dims[MD_MAX_RANK];
	int axis;

	if (!x || x->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", -1), x->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	memcpy(dims, x->dims, sizeof(dims));
	dims[axis] = c->n->opset < 10 ? attr_i(c, "k", -1) :
		     kk && kk->has_data && kk->n_data == 1 ? kk->idata[0] : -1;
	if (dims[axis] < 0) {
		/* k comes from data: at most the axis. */
		mark_data_dep(c);
		if (c->m->upper_bounds)
			dims[axis] = x->dims[axis];
	}
	set_shape(sout(c, 0), x->elem, x->rank, dims);
	set_shape(sout(c, 1), T_INT64, x->rank, dims);
	return 0;
}

static int op_depth_space(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t b = attr_i(c, "blocksize", 0), dims[4];
	bool d2s = !strcmp(c->n->p->op_type, "DepthToSpace");

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	if (x->rank != 4 || b < 1 || b > INT32_MAX)
		return bad(c, "needs a rank-4 input and a positive blocksize");
	dims[0] = x->dims[0];
	dims[1] = x->dims[1] < 0 ? -1 : d2s ? x->dims[1] / (b * b) : x->dims[1] * b * b;
	dims[2] = x->dims[2] < 0 ? -1 : d2s ? x->dims[2] * b : x->dims[2] / b;
	dims[3] = x->dims[3] < 0 ? -1 : d2s ? x->dims[3] * b : x->dims[3] / b;
	set_shape(o, 0, 4, dims);
	return 0;
}

/* RandomNormal, RandomUniform: shape and dtype from attributes. */
static int op_random(struct sctx *c)
{
	size_t n;
	const int64_t *shape = attr_ints(c, "shape", &n);

	if (n > MD_MAX_RANK)
		return bad(c, "shape has too many axes");
	for (size_t k = 0; k < n; k++)
		if (shape[k] < 0)
			return bad(c, "a negative dimension in shape");
	set_shape(sout(c, 0), (int32_t)attr_i(c, "dtype", T_FLOAT), shape ? (int32_t)n : -1, shape);
	return 0;
}

/* Elements of @x, or -1 when its shape is unknown or they overflow. */
static int64_t numel(const struct md_value *x)
{
	uint64_t n;

	return x && !md_elements(x, &n) && n <= INT64_MAX ? (int64_t)n : -1;
}

static int64_t min_known(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* Compress: @x's elements (or its slices along axis) that @cond selects,
 * at most as many as both hold. */
static int bound_compress(struct sctx *c, struct md_value *x, struct md_value *cond)
{
	int64_t dims[MD_MAX_RANK], n_cond = cond && cond->rank == 1 ? cond->dims[0] : -1;
	int axis;

	if (!attr_has(c, "axis")) {
		dims[0] = min_known(numel(x), n_cond);
		set_shape(sout(c, 0), x->elem, dims[0] < 0 ? -1 : 1, dims);
		return 0;
	}
	if (x->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", 0), x->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	memcpy(dims, x->dims, sizeof(dims));
	dims[axis] = min_known(x->dims[axis], n_cond);
	set_shape(sout(c, 0), x->elem, x->rank, dims);
	return 0;
}

/* Unique: at most every element (or slice along axis) distinct. */
static int bound_unique(struct sctx *c, struct md_value *x)
{
	int64_t dims[MD_MAX_RANK], n;
	int axis = -1;

	if (x->rank < 0)
		return 0;
	if (attr_has(c, "axis")) {
		axis = norm_axis(attr_i(c, "axis", 0), x->rank);
		if (axis < 0)
			return bad(c, "axis out of range");
	}
	n = axis < 0 ? numel(x) : x->dims[axis];
	if (n < 0)
		return 0;
	memcpy(dims, x->dims, sizeof(dims));
	if (axis < 0)
		set_shape(sout(c, 0), x->elem, 1, &n);
	else
		set_shape(sout(c, 0), x->elem, x->rank, dims);
	set_shape(sout(c, 1), T_INT64, 1, &n);
	dims[0] = axis < 0 ? numel(x) : x->dims[axis];
	set_shape(sout(c, 2), T_INT64, 1, dims);	/* inverse: exact */
	set_shape(sout(c, 3), T_INT64, 1, &n);
	return 0;
}

/* NonMaxSuppression: [selected, 3], at most batches x classes x the boxes
 * kept per class (max_output_boxes_per_class, or every box). */
static int bound_nms(struct sctx *c)
{
	struct md_value *boxes = sin_(c, 0), *scores = sin_(c, 1), *mx = sin_(c, 2);
	int64_t per_class, dims[2];

	if (!boxes || !scores || boxes->rank != 3 || scores->rank != 3 ||
	    boxes->dims[1] < 0 || scores->dims[0] < 0 || scores->dims[1] < 0)
		return 0;
	per_class = !mx ? 0 : mx->has_data && mx->n_data == 1 ?
		    min_known(mx->idata[0] < 0 ? 0 : mx->idata[0], boxes->dims[1]) :
		    boxes->dims[1];
	if (__builtin_mul_overflow(scores->dims[0], scores->dims[1], &dims[0]) ||
	    __builtin_mul_overflow(dims[0], per_class, &dims[0]))
		return bad(c, "its output's bound overflows");
	dims[1] = 3;
	set_shape(sout(c, 0), T_INT64, 2, dims);
	return 0;
}

/* NonZero, Unique, Compress, NonMaxSuppression: the output's size depends
 * on the data.  Its type is known; its shape is unknown (the plan defers),
 * or under upper_bounds the most the data can make. */
static int data_dependent(struct sctx *c)
{
	const char *op = c->n->p->op_type;
	struct md_value *x = sin_(c, 0);
	bool keeps_type = !strcmp(op, "Compress") || !strcmp(op, "Unique");
	uint32_t k;
	int64_t dims[2];

	for (k = 0; k < c->n->n_out; k++)
		if (sout(c, k))
			sout(c, k)->elem = keeps_type && k == 0 && x ? x->elem : T_INT64;
	mark_data_dep(c);
	if (!c->m->upper_bounds)
		return 0;
	if (!strcmp(op, "NonMaxSuppression"))
		return bound_nms(c);
	if (!x)
		return 0;
	if (!strcmp(op, "Compress"))
		return bound_compress(c, x, sin_(c, 1));
	if (!strcmp(op, "Unique"))
		return bound_unique(c, x);
	dims[0] = x->rank;	/* NonZero: [rank, nonzero elements] */
	dims[1] = numel(x);
	if (x->rank >= 0 && dims[1] >= 0)
		set_shape(sout(c, 0), T_INT64, 2, dims);
	return 0;
}

/* One Einsum term: its letters and where the ellipsis stands (-1 none). */
struct eterm {
	char letter[MD_MAX_RANK];
	int n, ellipsis;
};

static int eterm_parse(const char **p, const char *end, struct eterm *t)
{
	t->n = 0;
	t->ellipsis = -1;
	for (; *p < end && **p != ',' && **p != '-'; (*p)++) {
		if (**p == ' ')
			continue;
		if (**p == '.') {
			if (t->ellipsis >= 0 || end - *p < 3 || strncmp(*p, "...", 3))
				return -1;
			t->ellipsis = t->n;
			*p += 2;
		} else if (((**p >= 'a' && **p <= 'z') || (**p >= 'A' && **p <= 'Z')) &&
			   t->n < MD_MAX_RANK) {
			t->letter[t->n++] = **p;
		} else {
			return -1;
		}
	}
	return 0;
}

/* Einsum: each letter's extent from the inputs; the ellipsis broadcasts. */
static int op_einsum(struct sctx *c)
{
	const char *eq = attr_s(c, "equation", ""), *p = eq, *end = eq + strlen(eq);
	int64_t ext[128], edims[MD_MAX_RANK], dims[MD_MAX_RANK];
	int count[128] = { 0 }, erank = 0, r = 0, k, j;
	struct eterm t, out;
	uint32_t i;

	for (k = 0; k < 128; k++)
		ext[k] = -2;	/* not seen */
	for (i = 0; i < c->n->n_in; i++) {
		struct md_value *x = sin_(c, i);
		int ne;

		if (eterm_parse(&p, end, &t))
			return bad(c, "an equation this tool cannot read");
		if (*p == ',')
			p++;
		if (!x || x->rank < 0)
			return 0;
		ne = t.ellipsis >= 0 ? x->rank - t.n : 0;
		if (ne < 0 || (t.ellipsis < 0 && x->rank != t.n))
			return bad(c, "a term does not match its input's rank");
		for (k = 0; k < t.n; k++) {
			int64_t d = x->dims[k + (t.ellipsis >= 0 && k >= t.ellipsis ? ne : 0)];
			unsigned char l = (unsigned char)t.letter[k];

			count[l]++;
			if (ext[l] == -2 || ext[l] == 1 || ext[l] < 0)
				ext[l] = d;
		}
		for (j = 0; j < ne; j++) {	/* right-aligned broadcast */
			int64_t d = x->dims[t.ellipsis + j];
			int at = j + (erank > ne ? erank - ne : 0);

			if (ne > erank) {
				memmove(edims + (ne - erank), edims, sizeof(int64_t) * (size_t)erank);
				for (k = 0; k < ne - erank; k++)
					edims[k] = 1;
				erank = ne;
				at = j;
			}
			if (edims[at] == 1 || edims[at] < 0)
				edims[at] = d;
		}
	}
	if (sout(c, 0) && sin_(c, 0))
		sout(c, 0)->elem = sin_(c, 0)->elem;
	if (p < end && !strncmp(p, "->", 2)) {
		p += 2;
		if (eterm_parse(&p, end, &out) || p != end)
			return bad(c, "an equation this tool cannot read");
	} else {	/* implicit: the ellipsis, then letters seen once, sorted */
		out.n = 0;
		out.ellipsis = 0;
		for (k = 0; k < 128 && out.n < MD_MAX_RANK; k++)
			if (count[k] == 1)
				out.letter[out.n++] = (char)k;
	}
	if (out.n + (out.ellipsis >= 0 ? erank : 0) > MD_MAX_RANK)
		return bad(c, "the output's rank is too large");
	for (k = 0; k <= out.n; k++) {
		if (k == out.ellipsis)
			for (j = 0; j < erank; j++)
				dims[r++] = edims[j];
		if (k < out.n) {
			if (ext[(unsigned char)out.letter[k]] == -2)
				return bad(c, "an output letter no input has");
			dims[r++] = ext[(unsigned char)out.letter[k]];
		}
	}
	set_shape(sout(c, 0), 0, r, dims);
	return 0;
}

static int op_onehot(struct sctx *c)
{
	struct md_value *idx = sin_(c, 0), *depth = sin_(c, 1), *vals = sin_(c, 2), *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK];
	int32_t k, r;
	int axis;

	if (!o || !idx)
		return 0;
	if (vals)
		o->elem = vals->elem;
	if (idx->rank < 0 || idx->rank + 1 > MD_MAX_RANK)
		return 0;
	r = idx->rank + 1;
	axis = norm_axis(attr_i(c, "axis", -1), r);
	if (axis < 0)
		return bad(c, "axis out of range");
	for (k = 0; k < r; k++)
		dims[k] = k < axis ? idx->dims[k] : k > axis ? idx->dims[k - 1] :
			  depth && depth->has_data && depth->n_data == 1 &&
			  depth->fdata[0] >= 0 && depth->fdata[0] < 1e15 ? (int64_t)depth->fdata[0] : -1;
	set_shape(o, 0, r, dims);
	return 0;
}

static int op_eyelike(struct sctx *c)
{
	copy_type_shape(sout(c, 0), sin_(c, 0));
	if (sout(c, 0) && attr_has(c, "dtype"))
		sout(c, 0)->elem = (int32_t)attr_i(c, "dtype", T_FLOAT);
	return 0;
}

const struct shape_op shape_ops_misc[] = {
	{ "Einsum", op_einsum }, { "OneHot", op_onehot }, { "EyeLike", op_eyelike },
	{ "ReduceSum", op_reduce }, { "ReduceMean", op_reduce },
	{ "ReduceMax", op_reduce }, { "ReduceMin", op_reduce },
	{ "ReduceProd", op_reduce }, { "ReduceL1", op_reduce },
	{ "ReduceL2", op_reduce }, { "ReduceLogSum", op_reduce },
	{ "ReduceLogSumExp", op_reduce }, { "ReduceSumSquare", op_reduce },
	{ "ArgMax", op_reduce }, { "ArgMin", op_reduce },
	{ "TopK", op_topk },
	{ "DepthToSpace", op_depth_space }, { "SpaceToDepth", op_depth_space },
	{ "RandomNormal", op_random }, { "RandomUniform", op_random },
	{ "NonZero", data_dependent }, { "Unique", data_dependent },
	{ "Compress", data_dependent }, { "NonMaxSuppression", data_dependent },
	{ NULL, NULL }
};
