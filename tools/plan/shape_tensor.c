// SPDX-License-Identifier: MIT
/*
 * Layout and indexing ops: Shape, Concat, Split, Slice, Gather, Transpose,
 * Pad, the Reshape family, Expand, Tile, ConstantOfShape, Constant, Range,
 * and the ops whose output size depends on data (left unknown).  Contents
 * flow through the ones shape arithmetic uses.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "shape.h"

#define T_INT64 7
#define T_FLOAT 1

/* Contents pass through unchanged (the Reshape family, Identity). */
static int pass_data(struct sctx *c, struct md_value *i, struct md_value *o)
{
	uint64_t n;

	if (!i->has_data || md_elements(o, &n) || n != i->n_data)
		return 0;
	return md_elem_is_float(i->elem) ? keep(c, o, i->n_data, NULL, i->fdata) :
	       keep(c, o, i->n_data, i->idata, NULL);
}

static int op_shape(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t start = attr_i(c, "start", 0), end, len;

	if (!o)
		return 0;
	o->elem = T_INT64;
	if (!x || x->rank < 0)
		return 0;
	end = attr_i(c, "end", x->rank);
	start = start < 0 ? start + x->rank : start;
	end = end < 0 ? end + x->rank : end;
	start = start < 0 ? 0 : start > x->rank ? x->rank : start;
	end = end < 0 ? 0 : end > x->rank ? x->rank : end;
	len = end > start ? end - start : 0;
	set_shape(o, 0, 1, &len);
	for (int64_t k = start; k < end; k++)
		if (x->dims[k] < 0)
			return 0;
	return keep(c, o, (uint32_t)len, x->dims + start, NULL);
}

static int op_size(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	uint64_t n;
	int64_t v;

	set_shape(o, T_INT64, 0, NULL);
	if (!o || !x || md_elements(x, &n) || n > INT64_MAX)
		return 0;
	v = (int64_t)n;
	return keep(c, o, 1, &v, NULL);
}

static int op_concat(struct sctx *c)
{
	struct md_value *o = sout(c, 0), *first = sin_(c, 0);
	int64_t dims[MD_MAX_RANK], iv[MD_DATA_MAX];
	double fv[MD_DATA_MAX];
	uint32_t k, nd = 0;
	int axis;
	bool data = true;

	if (!o || !first)
		return 0;
	o->elem = first->elem;
	if (first->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", 0), first->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	memcpy(dims, first->dims, sizeof(dims));
	dims[axis] = 0;
	for (k = 0; k < c->n->n_in; k++) {
		struct md_value *x = sin_(c, k);

		if (!x)
			continue;
		if (x->rank != first->rank)
			return x->rank < 0 ? 0 : bad(c, "inputs of different ranks");
		dims[axis] = dims[axis] < 0 || x->dims[axis] < 0 ? -1 : dims[axis] + x->dims[axis];
		if (!x->has_data || first->rank != 1 || nd + x->n_data > MD_DATA_MAX) {
			data = false;
			continue;
		}
		memcpy(iv + nd, x->idata, sizeof(int64_t) * x->n_data);
		memcpy(fv + nd, x->fdata, sizeof(double) * x->n_data);
		nd += x->n_data;
	}
	set_shape(o, 0, first->rank, dims);
	if (!data || (int64_t)nd != dims[0])
		return 0;
	return md_elem_is_float(o->elem) ? keep(c, o, nd, NULL, fv) : keep(c, o, nd, iv, NULL);
}

static int op_split(struct sctx *c)
{
	struct md_value *x = sin_(c, 0);
	int64_t split[MD_DATA_MAX > 64 ? 64 : 1], dims[MD_MAX_RANK], at = 0;
	size_t n = 0, k;
	int axis, have;

	if (!x || x->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", 0), x->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	have = int_list(c, c->n->opset < 13 ? "split" : NULL, 1, split, &n, 64);
	if (have == 1 && n != c->n->n_out)
		return bad(c, "split lists a different number of parts than outputs");
	for (k = 0; k < c->n->n_out; k++) {
		struct md_value *o = sout(c, k);
		int64_t len = x->dims[axis], parts = (int64_t)c->n->n_out;

		memcpy(dims, x->dims, sizeof(dims));
		if (have == 1)
			dims[axis] = split[k];
		else if (have < 0 || len < 0)
			dims[axis] = -1;
		else	/* equal parts, the last one smaller (opset 18) */
			dims[axis] = k + 1 < (size_t)parts ? (len + parts - 1) / parts :
				     len - (len + parts - 1) / parts * (parts - 1);
		if (o) {
			set_shape(o, x->elem, x->rank, dims);
			if (x->has_data && x->rank == 1 && dims[0] >= 0 && at + dims[0] <= x->n_data &&
			    keep(c, o, (uint32_t)dims[0], md_elem_is_float(x->elem) ? NULL : x->idata + at,
				 md_elem_is_float(x->elem) ? x->fdata + at : NULL))
				return -ENOMEM;
		}
		at += dims[axis] > 0 ? dims[axis] : 0;
	}
	return 0;
}

/*
 * Contents of an output that picks input elements axis by axis: output
 * index i along output axis k reads input axis map[k] at first[k] +
 * i * step[k].  Slice (map the identity) and Transpose (map the perm).
 */
static int pick_data(struct sctx *c, const struct md_value *x, struct md_value *o,
		     const int *map, const int64_t *first, const int64_t *step)
{
	int64_t iv[MD_DATA_MAX], stride[MD_MAX_RANK];
	double fv[MD_DATA_MAX];
	uint64_t n, f, xn;
	int32_t k;

	if (!x->has_data || md_elements(o, &n) || n > MD_DATA_MAX ||
	    md_elements(x, &xn) || xn != x->n_data)
		return 0;
	for (k = x->rank - 1; k >= 0; k--)
		stride[k] = k == x->rank - 1 ? 1 : stride[k + 1] * x->dims[k + 1];
	for (f = 0; f < n; f++) {
		uint64_t rest = f;
		int64_t src = 0;

		for (k = o->rank - 1; k >= 0; k--) {
			int64_t i = (int64_t)(rest % (uint64_t)o->dims[k]), at;

			rest /= (uint64_t)o->dims[k];
			at = first[k] + i * step[k];
			if (at < 0 || at >= x->dims[map[k]])
				return 0;
			src += at * stride[map[k]];
		}
		iv[f] = x->idata[src];
		fv[f] = x->fdata[src];
	}
	return md_elem_is_float(x->elem) ? keep(c, o, (uint32_t)n, NULL, fv) :
	       keep(c, o, (uint32_t)n, iv, NULL);
}

/* Clamp a Slice bound the way the ONNX document says. */
static int64_t clamp_bound(int64_t v, int64_t dim, bool neg_step, bool is_end)
{
	if (v < 0)
		v = v < -dim ? (neg_step && is_end ? -1 : 0) : v + dim;
	else if (v >= dim)
		v = neg_step ? dim - 1 : dim;
	if (neg_step && !is_end && v > dim - 1)
		v = dim - 1;
	return v;
}

static int op_slice(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t st[MD_MAX_RANK], en[MD_MAX_RANK], ax[MD_MAX_RANK], sp[MD_MAX_RANK];
	int64_t dims[MD_MAX_RANK], first[MD_MAX_RANK], step[MD_MAX_RANK];
	size_t ns = 0, ne = 0, na = 0, np = 0, k;
	bool old = c->n->opset < 10;
	int r1, r2, r3, r4;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	r1 = int_list(c, old ? "starts" : NULL, 1, st, &ns, MD_MAX_RANK);
	r2 = int_list(c, old ? "ends" : NULL, 2, en, &ne, MD_MAX_RANK);
	r3 = int_list(c, old ? "axes" : NULL, 3, ax, &na, MD_MAX_RANK);
	r4 = old ? 0 : int_list(c, NULL, 4, sp, &np, MD_MAX_RANK);
	for (int32_t j = 0; j < x->rank; j++) {
		dims[j] = x->dims[j];
		first[j] = 0;
		step[j] = 1;
	}
	if (r1 < 0 || r2 < 0 || r3 < 0 || r4 < 0 || r1 == 0 || r2 == 0) {
		/* Bounds unknown: the sliced axes are unknown. */
		for (k = 0; r3 == 1 && k < na; k++)
			if (norm_axis(ax[k], x->rank) >= 0)
				dims[norm_axis(ax[k], x->rank)] = -1;
		if (r3 != 1)
			for (int32_t j = 0; j < x->rank; j++)
				dims[j] = -1;
		set_shape(o, 0, x->rank, dims);
		return 0;
	}
	if (ns != ne || (r3 == 1 && na != ns) || (r4 == 1 && np != ns))
		return bad(c, "starts, ends, axes and steps differ in length");
	for (k = 0; k < ns; k++) {
		int a = norm_axis(r3 == 1 ? ax[k] : (int64_t)k, x->rank);
		int64_t s = r4 == 1 ? sp[k] : 1, d = x->dims[a < 0 ? 0 : a], b, e;

		if (a < 0 || s == 0)
			return bad(c, "an axis out of range or a zero step");
		if (d < 0) {
			dims[a] = -1;
			continue;
		}
		b = clamp_bound(st[k], d, s < 0, false);
		e = clamp_bound(en[k], d, s < 0, true);
		dims[a] = s > 0 ? (e > b ? (e - b + s - 1) / s : 0) :
			  (b > e ? (b - e + (-s) - 1) / (-s) : 0);
		first[a] = b;
		step[a] = s;
	}
	set_shape(o, 0, x->rank, dims);
	{
		int map[MD_MAX_RANK];

		for (int32_t j = 0; j < x->rank; j++)
			map[j] = j;
		return pick_data(c, x, o, map, first, step);
	}
}

static int op_gather(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *idx = sin_(c, 1), *o = sout(c, 0);
	int64_t dims[2 * MD_MAX_RANK];
	int32_t r = 0, j;
	int axis;

	if (!o || !x || !idx)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0 || idx->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", 0), x->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	if (x->rank - 1 + idx->rank > MD_MAX_RANK)
		return bad(c, "the output's rank is too large");
	for (j = 0; j < axis; j++)
		dims[r++] = x->dims[j];
	for (j = 0; j < idx->rank; j++)
		dims[r++] = idx->dims[j];
	for (j = axis + 1; j < x->rank; j++)
		dims[r++] = x->dims[j];
	set_shape(o, 0, r, dims);
	/* Contents: a rank-1 source gathered by known indices. */
	if (x->rank == 1 && x->has_data && idx->has_data && x->dims[0] >= 0) {
		int64_t iv[MD_DATA_MAX];
		double fv[MD_DATA_MAX];
		uint32_t k;

		for (k = 0; k < idx->n_data; k++) {
			int64_t i = idx->idata[k] < 0 ? idx->idata[k] + x->dims[0] : idx->idata[k];

			if (i < 0 || i >= (int64_t)x->n_data)
				return bad(c, "an index out of range");
			iv[k] = x->idata[i];
			fv[k] = x->fdata[i];
		}
		return md_elem_is_float(x->elem) ? keep(c, o, idx->n_data, NULL, fv) :
		       keep(c, o, idx->n_data, iv, NULL);
	}
	return 0;
}

static int op_gather_elements(struct sctx *c)
{
	copy_type_shape(sout(c, 0), sin_(c, 1));
	if (sout(c, 0) && sin_(c, 0))
		sout(c, 0)->elem = sin_(c, 0)->elem;
	return 0;
}

static int op_gather_nd(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *idx = sin_(c, 1), *o = sout(c, 0);
	int64_t dims[2 * MD_MAX_RANK], b = attr_i(c, "batch_dims", 0), last;
	int32_t r = 0, j;

	if (!o || !x || !idx)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0 || idx->rank < 1 || idx->dims[idx->rank - 1] < 0)
		return 0;
	last = idx->dims[idx->rank - 1];
	if (b < 0 || b + last > x->rank || idx->rank - 1 + x->rank - b - last > MD_MAX_RANK)
		return bad(c, "indices do not fit the data's rank");
	for (j = 0; j < idx->rank - 1; j++)
		dims[r++] = idx->dims[j];
	for (j = (int32_t)(b + last); j < x->rank; j++)
		dims[r++] = x->dims[j];
	set_shape(o, 0, r, dims);
	return 0;
}

static int op_transpose(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK];
	size_t n, k;
	const int64_t *perm = attr_ints(c, "perm", &n);
	uint32_t seen = 0;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	if (perm && n != (size_t)x->rank)
		return bad(c, "perm does not match the input's rank");
	int map[MD_MAX_RANK];
	int64_t zero[MD_MAX_RANK], one[MD_MAX_RANK];

	for (k = 0; k < (size_t)x->rank; k++) {
		int64_t p = perm ? perm[k] : x->rank - 1 - (int64_t)k;

		if (p < 0 || p >= x->rank || (seen & (1u << p)))
			return bad(c, "perm is not a permutation");
		seen |= 1u << p;
		dims[k] = x->dims[p];
		map[k] = (int)p;
		zero[k] = 0;
		one[k] = 1;
	}
	set_shape(o, 0, x->rank, dims);
	return pick_data(c, x, o, map, zero, one);
}

static int op_pad(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t pads[2 * MD_MAX_RANK], axes[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t np = 0, na = 0, k;
	int have, hax;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	have = int_list(c, c->n->opset < 11 ? (attr_has(c, "pads") ? "pads" : "paddings") : NULL,
			1, pads, &np, 2 * MD_MAX_RANK);
	hax = int_list(c, NULL, 3, axes, &na, MD_MAX_RANK);
	if (hax == 0) {
		na = (size_t)x->rank;
		for (k = 0; k < na; k++)
			axes[k] = (int64_t)k;
	}
	memcpy(dims, x->dims, sizeof(dims));
	if (have != 1 || hax < 0) {
		for (k = 0; k < (size_t)x->rank; k++)
			dims[k] = -1;
		set_shape(o, 0, x->rank, dims);
		return 0;
	}
	if (np != 2 * na)
		return bad(c, "pads must hold two entries per padded axis");
	for (k = 0; k < na; k++) {
		int a = norm_axis(axes[k], x->rank);

		if (a < 0)
			return bad(c, "axes out of range");
		if (dims[a] >= 0) {
			dims[a] += pads[k] + pads[k + na];
			if (dims[a] < 0)
				return bad(c, "negative pads remove more than the axis holds");
		}
	}
	set_shape(o, 0, x->rank, dims);
	return 0;
}

static int op_reshape(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t sh[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t n = 0, k;
	uint64_t total = 0, known = 1;
	int have = int_list(c, c->n->opset < 5 ? "shape" : NULL, 1, sh, &n, MD_MAX_RANK);
	int minus = -1;
	bool allow0 = attr_i(c, "allowzero", 0) != 0, whole;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (have != 1) {
		struct md_value *s = sin_(c, 1);

		if (s && s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= MD_MAX_RANK)
			set_shape(o, 0, (int32_t)s->dims[0], NULL);
		return 0;
	}
	whole = md_elements(x, &total) == 0;
	for (k = 0; k < n; k++) {
		dims[k] = sh[k];
		if (sh[k] == 0 && !allow0)
			dims[k] = (int32_t)k < x->rank ? x->dims[k] : -2;
		if (dims[k] == -2)
			return bad(c, "a 0 in shape copies an axis the input lacks");
		if (sh[k] == -1) {
			if (minus >= 0)
				return bad(c, "shape has two -1 entries");
			minus = (int)k;
			continue;
		}
		if (dims[k] < -1 || sh[k] < -1)
			return bad(c, "shape holds a negative entry other than -1");
		if (dims[k] < 0 || __builtin_mul_overflow(known, (uint64_t)dims[k], &known))
			whole = false;
	}
	if (minus >= 0) {
		dims[minus] = -1;
		if (whole) {
			if (known == 0 || total % known)
				return bad(c, "the input's elements do not divide into shape");
			dims[minus] = (int64_t)(total / known);
		}
	} else if (whole && known != total) {
		return bad(c, "shape holds a different number of elements than the input");
	}
	set_shape(o, 0, (int32_t)n, dims);
	return pass_data(c, x, o);
}

static int op_flatten(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t dims[2] = { 1, 1 }, axis = attr_i(c, "axis", 1);
	int32_t k;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return bad(c, "axis out of range");
	for (k = 0; k < x->rank; k++) {
		int64_t *d = &dims[k < axis ? 0 : 1];

		*d = *d < 0 || x->dims[k] < 0 ? -1 : *d * x->dims[k];
	}
	set_shape(o, 0, 2, dims);
	return pass_data(c, x, o);
}

static int op_squeeze(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t axes[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t na = 0, k;
	int32_t r = 0, j;
	uint32_t drop = 0;
	int have;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	have = int_list(c, c->n->opset < 13 ? "axes" : NULL, 1, axes, &na, MD_MAX_RANK);
	if (have < 0)
		return 0;
	for (k = 0; have == 1 && k < na; k++) {
		int a = norm_axis(axes[k], x->rank);

		if (a < 0)
			return bad(c, "axes out of range");
		drop |= 1u << a;
	}
	for (j = 0; j < x->rank; j++) {
		if (have != 1 && x->dims[j] < 0)
			return 0;	/* which axes are 1 is unknown */
		if (have == 1 ? !(drop & (1u << j)) : x->dims[j] != 1)
			dims[r++] = x->dims[j];
	}
	set_shape(o, 0, r, dims);
	return pass_data(c, x, o);
}

static int op_unsqueeze(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t axes[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t na = 0, k;
	int32_t r, j, src = 0;
	uint32_t add = 0;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0 || int_list(c, c->n->opset < 13 ? "axes" : NULL, 1, axes, &na, MD_MAX_RANK) != 1)
		return 0;
	r = x->rank + (int32_t)na;
	if (r > MD_MAX_RANK)
		return bad(c, "the output's rank is too large");
	for (k = 0; k < na; k++) {
		int a = norm_axis(axes[k], r);

		if (a < 0 || (add & (1u << a)))
			return bad(c, "axes out of range or repeated");
		add |= 1u << a;
	}
	for (j = 0; j < r; j++)
		dims[j] = (add & (1u << j)) ? 1 : x->dims[src++];
	set_shape(o, 0, r, dims);
	return pass_data(c, x, o);
}

static int op_identity(struct sctx *c)
{
	copy_type_shape(sout(c, 0), sin_(c, 0));
	return sout(c, 0) && sin_(c, 0) ? pass_data(c, sin_(c, 0), sout(c, 0)) : 0;
}

static int op_expand(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *s = sin_(c, 1), *o = sout(c, 0);
	struct md_value shp, *pair[2] = { x, &shp };
	int64_t dims[MD_MAX_RANK];
	int32_t rank;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (!s || !s->has_data || s->n_data > MD_MAX_RANK)
		return 0;
	memset(&shp, 0, sizeof(shp));
	shp.rank = (int32_t)s->n_data;
	memcpy(shp.dims, s->idata, sizeof(int64_t) * s->n_data);
	for (int32_t k = 0; k < shp.rank; k++)
		if (shp.dims[k] < 0)
			return bad(c, "a negative dimension in shape");
	if (!bcast_shape(pair, 2, &rank, dims))
		return x->rank < 0 ? 0 : bad(c, "shape does not broadcast with the input");
	set_shape(o, 0, rank, dims);
	return 0;
}

static int op_tile(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t rep[MD_MAX_RANK], dims[MD_MAX_RANK];
	size_t n = 0;
	int32_t k;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0 || int_list(c, NULL, 1, rep, &n, MD_MAX_RANK) != 1)
		return 0;
	if (n != (size_t)x->rank)
		return bad(c, "repeats must hold one entry per axis");
	for (k = 0; k < x->rank; k++) {
		if (rep[k] < 0)
			return bad(c, "a negative repeat");
		dims[k] = x->dims[k] < 0 || __builtin_mul_overflow(x->dims[k], rep[k], &dims[k]) ? -1 : dims[k];
	}
	set_shape(o, 0, x->rank, dims);
	return 0;
}

/* Constant and ConstantOfShape: type, shape, and contents when small. */
static int op_constant(struct sctx *c)
{
	struct md_value *o = sout(c, 0);
	const Onnx__TensorProto *t = attr_t(c, "value");
	size_t n;
	const int64_t *ints = attr_ints(c, "value_ints", &n);
	const float *fl;
	int64_t len, one;
	double f;

	if (!o)
		return 0;
	if (t)
		return md_set_from_tensor(c->m, o, t);
	if (ints || attr_has(c, "value_ints")) {
		len = (int64_t)n;
		set_shape(o, T_INT64, 1, &len);
		return keep(c, o, (uint32_t)n, ints ? ints : &len, NULL);
	}
	if (attr_has(c, "value_int")) {
		one = attr_i(c, "value_int", 0);
		set_shape(o, T_INT64, 0, NULL);
		return keep(c, o, 1, &one, NULL);
	}
	if (attr_has(c, "value_float")) {
		f = attr_f(c, "value_float", 0);
		set_shape(o, T_FLOAT, 0, NULL);
		return keep(c, o, 1, NULL, &f);
	}
	fl = attr_floats(c, "value_floats", &n);
	if (fl || attr_has(c, "value_floats")) {
		double fv[MD_DATA_MAX];

		len = (int64_t)n;
		set_shape(o, T_FLOAT, 1, &len);
		if (n > MD_DATA_MAX)
			return 0;
		for (size_t k = 0; k < n; k++)
			fv[k] = fl[k];
		return keep(c, o, (uint32_t)n, NULL, fv);
	}
	return 0;	/* strings, sparse: the size stays unknown */
}

static int op_constant_of_shape(struct sctx *c)
{
	struct md_value *s = sin_(c, 0), *o = sout(c, 0), val;
	const Onnx__TensorProto *t = attr_t(c, "value");
	int64_t iv[MD_DATA_MAX];
	double fv[MD_DATA_MAX];
	uint64_t n;
	uint32_t k;

	if (!o)
		return 0;
	memset(&val, 0, sizeof(val));
	val.name = o->name;
	val.elem = T_FLOAT;
	if (t && md_set_from_tensor(c->m, &val, t))
		return -EINVAL;
	o->elem = val.elem;
	if (!s || !s->has_data || s->n_data > MD_MAX_RANK) {
		md_drop_data(&val);
		return 0;
	}
	for (k = 0; k < s->n_data; k++)
		if (s->idata[k] < 0) {
			md_drop_data(&val);
			return bad(c, "a negative dimension in the shape input");
		}
	set_shape(o, 0, (int32_t)s->n_data, s->idata);
	if (!elems_of(o->rank, o->dims, &n) && n <= MD_DATA_MAX) {
		for (k = 0; k < n; k++) {
			iv[k] = val.has_data && val.n_data ? val.idata[0] : 0;
			fv[k] = val.has_data && val.n_data ? val.fdata[0] : 0;
		}
		md_drop_data(&val);
		return keep(c, o, (uint32_t)n, md_elem_is_float(o->elem) ? NULL : iv,
			    md_elem_is_float(o->elem) ? fv : NULL);
	}
	md_drop_data(&val);
	return 0;
}

static int op_range(struct sctx *c)
{
	struct md_value *a = sin_(c, 0), *l = sin_(c, 1), *d = sin_(c, 2), *o = sout(c, 0);
	int64_t n, iv[MD_DATA_MAX];
	double fv[MD_DATA_MAX], x;

	if (!o || !a)
		return 0;
	o->elem = a->elem;
	set_shape(o, 0, 1, NULL);
	if (!l || !d || !a->has_data || !l->has_data || !d->has_data ||
	    !a->n_data || !l->n_data || !d->n_data || d->fdata[0] == 0)
		return 0;
	x = ceil((l->fdata[0] - a->fdata[0]) / d->fdata[0]);
	if (!(x < 1e15))
		return bad(c, "the range holds too many elements");
	n = x > 0 ? (int64_t)x : 0;
	set_shape(o, 0, 1, &n);
	if (n > MD_DATA_MAX)
		return 0;
	for (int64_t k = 0; k < n; k++) {
		fv[k] = a->fdata[0] + (double)k * d->fdata[0];
		iv[k] = a->idata[0] + k * d->idata[0];
	}
	return keep(c, o, (uint32_t)n, md_elem_is_float(o->elem) ? NULL : iv,
		    md_elem_is_float(o->elem) ? fv : NULL);
}

const struct shape_op shape_ops_tensor[] = {
	{ "Shape", op_shape }, { "Size", op_size }, { "Concat", op_concat },
	{ "Split", op_split }, { "Slice", op_slice }, { "Gather", op_gather },
	{ "GatherElements", op_gather_elements }, { "GatherND", op_gather_nd },
	{ "Transpose", op_transpose }, { "Pad", op_pad },
	{ "Reshape", op_reshape }, { "Flatten", op_flatten },
	{ "Squeeze", op_squeeze }, { "Unsqueeze", op_unsqueeze },
	{ "Identity", op_identity }, { "Expand", op_expand }, { "Tile", op_tile },
	{ "Constant", op_constant }, { "ConstantOfShape", op_constant_of_shape },
	{ "Range", op_range },
	{ NULL, NULL }
};
