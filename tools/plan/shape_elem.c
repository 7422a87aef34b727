// SPDX-License-Identifier: MIT
/*
 * Elementwise ops: same shape as the first input, numpy broadcasting for
 * the binary and variadic ones, the type rules of comparisons, Cast and
 * the (de)quantizers.  Integer contents are computed, so that shape
 * arithmetic (Shape -> Mul/Add/Div -> Reshape) resolves.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "shape.h"

#define T_BOOL 9
#define T_UINT8 2
#define T_INT32 6
#define T_INT64 7
#define T_FLOAT 1

static int same(struct sctx *c)
{
	copy_type_shape(sout(c, 0), sin_(c, 0));
	return 0;
}

static int unary_data(struct sctx *c, double (*f)(double), int64_t (*g)(int64_t))
{
	struct md_value *i = sin_(c, 0), *o = sout(c, 0);
	uint32_t k;
	int ret;

	same(c);
	if (!i || !o || !i->has_data)
		return 0;
	ret = md_set_data(o, i->n_data, md_elem_is_float(i->elem) ? NULL : i->idata,
			  md_elem_is_float(i->elem) ? i->fdata : NULL);
	if (ret)
		return md_err(c->m, ret, "out of memory");
	for (k = 0; k < o->n_data; k++) {
		if (md_elem_is_float(i->elem))
			o->fdata[k] = f(o->fdata[k]);
		else
			o->idata[k] = g(o->idata[k]), o->fdata[k] = (double)o->idata[k];
	}
	return 0;
}

static double d_neg(double x) { return -x; }
static int64_t i_neg(int64_t x) { return x == INT64_MIN ? x : -x; }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static int64_t i_id(int64_t x) { return x; }
static int64_t i_not(int64_t x) { return !x; }
static double d_not(double x) { return !x; }

static int op_neg(struct sctx *c) { return unary_data(c, d_neg, i_neg); }
static int op_abs(struct sctx *c) { return unary_data(c, fabs, i_abs); }
static int op_floor(struct sctx *c) { return unary_data(c, floor, i_id); }
static int op_ceil(struct sctx *c) { return unary_data(c, ceil, i_id); }
static int op_sqrt(struct sctx *c) { return unary_data(c, sqrt, i_id); }
static int op_not(struct sctx *c) { return unary_data(c, d_not, i_not); }

static int to_bool(struct sctx *c)
{
	same(c);
	if (sout(c, 0))
		sout(c, 0)->elem = T_BOOL;
	return 0;
}

enum bop { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_MAX, B_MIN, B_POW, B_EQ, B_LT,
	   B_GT, B_LE, B_GE, B_AND, B_OR, B_XOR, B_OTHER };

static double bin_f(enum bop op, double a, double b)
{
	switch (op) {
	case B_ADD: return a + b;
	case B_SUB: return a - b;
	case B_MUL: return a * b;
	case B_DIV: return a / b;
	case B_MOD: return fmod(a, b);
	case B_MAX: return a > b ? a : b;
	case B_MIN: return a < b ? a : b;
	case B_POW: return pow(a, b);
	case B_EQ: return a == b;
	case B_LT: return a < b;
	case B_GT: return a > b;
	case B_LE: return a <= b;
	case B_GE: return a >= b;
	case B_AND: return a && b;
	case B_OR: return a || b;
	case B_XOR: return !a != !b;
	default: return 0;
	}
}

/* Integer arithmetic wraps like the runtimes' int64 (no UB here). */
static int64_t bin_i(enum bop op, int64_t a, int64_t b)
{
	uint64_t ua = (uint64_t)a, ub = (uint64_t)b;

	switch (op) {
	case B_ADD: return (int64_t)(ua + ub);
	case B_SUB: return (int64_t)(ua - ub);
	case B_MUL: return (int64_t)(ua * ub);
	case B_DIV: return b == 0 || (a == INT64_MIN && b == -1) ? 0 : a / b;
	case B_MOD: return b == 0 || b == -1 ? 0 : ((a % b) + b) % b;
	case B_POW: {
		uint64_t r = 1;

		for (; b > 0; b >>= 1, ua *= ua)	/* by squaring: b may be huge */
			if (b & 1)
				r *= ua;
		return (int64_t)r;
	}
	default: return (int64_t)bin_f(op, (double)a, (double)b);
	}
}

static enum bop bop_of(const char *op)
{
	static const char *const names[] = { "Add", "Sub", "Mul", "Div", "Mod", "Max",
		"Min", "Pow", "Equal", "Less", "Greater", "LessOrEqual",
		"GreaterOrEqual", "And", "Or", "Xor" };
	size_t k;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(op, names[k]))
			return (enum bop)k;
	if (!strcmp(op, "Sum"))
		return B_ADD;
	return B_OTHER;
}

/* Broadcast over every present input; contents for the known ops. */
static int broadcast(struct sctx *c)
{
	struct md_value *in[8] = { 0 }, *o = sout(c, 0);
	enum bop op = bop_of(c->n->p->op_type);
	int64_t dims[MD_MAX_RANK], iv[MD_DATA_MAX];
	double fv[MD_DATA_MAX];
	uint64_t n, k;
	int32_t rank;
	uint32_t i, cnt = 0;
	bool isf;

	for (i = 0; i < c->n->n_in && cnt < 8; i++)
		if (sin_(c, i))
			in[cnt++] = sin_(c, i);
	if (!o || !cnt)
		return 0;
	o->elem = in[0]->elem;
	if (op >= B_EQ && op <= B_XOR)
		o->elem = T_BOOL;
	if (!bcast_shape(in, (int)cnt, &rank, dims))
		return 0;
	set_shape(o, 0, rank, dims);
	if (op == B_OTHER || elems_of(rank, dims, &n) || n > MD_DATA_MAX)
		return 0;
	for (i = 0; i < cnt; i++)
		if (!in[i]->has_data || in[i]->n_data != (uint32_t)(elems_of(in[i]->rank, in[i]->dims, &k) ? 0 : k))
			return 0;
	isf = md_elem_is_float(in[0]->elem);
	for (k = 0; k < n; k++) {
		uint64_t s = bcast_src(dims, rank, in[0], k);

		iv[k] = in[0]->idata[s];
		fv[k] = in[0]->fdata[s];
		for (i = 1; i < cnt; i++) {
			uint64_t t = bcast_src(dims, rank, in[i], k);

			iv[k] = bin_i(op, iv[k], in[i]->idata[t]);
			fv[k] = bin_f(op, fv[k], in[i]->fdata[t]);
		}
	}
	return md_set_data(o, (uint32_t)n, isf && o->elem != T_BOOL ? NULL : iv,
			   isf && o->elem != T_BOOL ? fv : NULL) ? md_err(c->m, -ENOMEM, "out of memory") : 0;
}

static int op_where(struct sctx *c)
{
	struct md_value *in[3] = { sin_(c, 0), sin_(c, 1), sin_(c, 2) }, *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK], iv[MD_DATA_MAX];
	double fv[MD_DATA_MAX];
	uint64_t n, k;
	int32_t rank;

	if (!o || !in[1])
		return 0;
	o->elem = in[1]->elem;
	if (!bcast_shape(in, 3, &rank, dims))
		return 0;
	set_shape(o, 0, rank, dims);
	if (elems_of(rank, dims, &n) || n > MD_DATA_MAX ||
	    !in[0]->has_data || !in[1]->has_data || !in[2]->has_data)
		return 0;
	for (k = 0; k < n; k++) {
		const struct md_value *s = in[0]->idata[bcast_src(dims, rank, in[0], k)] ? in[1] : in[2];
		uint64_t j = bcast_src(dims, rank, s, k);

		if (j >= s->n_data)
			return 0;
		iv[k] = s->idata[j];
		fv[k] = s->fdata[j];
	}
	return md_set_data(o, (uint32_t)n, md_elem_is_float(o->elem) ? NULL : iv,
			   md_elem_is_float(o->elem) ? fv : NULL) ? md_err(c->m, -ENOMEM, "out of memory") : 0;
}

static int cast_to(struct sctx *c, int32_t to)
{
	struct md_value *i = sin_(c, 0), *o = sout(c, 0);
	uint32_t k;

	same(c);
	if (!o)
		return 0;
	o->elem = to;
	if (!i || !i->has_data)
		return 0;
	if (md_set_data(o, i->n_data, NULL, i->fdata))
		return md_err(c->m, -ENOMEM, "out of memory");
	if (!md_elem_is_float(i->elem))	/* keep int64 exact */
		for (k = 0; k < o->n_data; k++)
			o->idata[k] = to == T_BOOL ? i->idata[k] != 0 : i->idata[k];
	return 0;
}

static int op_cast(struct sctx *c)
{
	return cast_to(c, (int32_t)attr_i(c, "to", 0));
}

static int op_castlike(struct sctx *c)
{
	return cast_to(c, sin_(c, 1) ? sin_(c, 1)->elem : 0);
}

static int op_dropout(struct sctx *c)
{
	same(c);
	/* The mask: typed from opset 12; before, ONNX infers no shape for it. */
	if (c->n->opset >= 12 && sout(c, 1)) {
		copy_type_shape(sout(c, 1), sin_(c, 0));
		sout(c, 1)->elem = T_BOOL;
	}
	return 0;
}

/* Outputs after the first shaped like input @from (statistics). */
static int op_batchnorm(struct sctx *c)
{
	uint32_t k;

	same(c);
	for (k = 1; k < c->n->n_out; k++)
		copy_type_shape(sout(c, k), sin_(c, k == 1 || k == 3 ? 3 : 4));
	return 0;
}

int op_layernorm(struct sctx *c)
{
	struct md_value *x = sin_(c, 0);
	int64_t dims[MD_MAX_RANK];
	int32_t k;
	int axis;

	same(c);
	if (!x || x->rank < 0)
		return 0;
	axis = norm_axis(attr_i(c, "axis", -1), x->rank);
	if (axis < 0)
		return bad(c, "axis out of range");
	for (k = 0; k < x->rank; k++)
		dims[k] = k < axis ? x->dims[k] : 1;
	set_shape(sout(c, 1), T_FLOAT, x->rank, dims);
	set_shape(sout(c, 2), T_FLOAT, x->rank, dims);
	if (sin_(c, 1) && sout(c, 1))
		sout(c, 1)->elem = sin_(c, 1)->elem == 10 || sin_(c, 1)->elem == 16 ? T_FLOAT : x->elem;
	return 0;
}

static int op_quantize(struct sctx *c)
{
	struct md_value *zp = sin_(c, 2), *o = sout(c, 0);
	int64_t dt = attr_i(c, "output_dtype", 0);

	same(c);
	if (o)
		o->elem = zp ? zp->elem : dt ? (int32_t)dt : T_UINT8;
	return 0;
}

static int op_dequantize(struct sctx *c)
{
	struct md_value *scale = sin_(c, 1), *o = sout(c, 0);
	int64_t dt = attr_i(c, "output_dtype", 0);

	same(c);
	if (o)
		o->elem = dt ? (int32_t)dt : scale ? scale->elem : T_FLOAT;
	return 0;
}

static int op_dynquant(struct sctx *c)
{
	same(c);
	if (sout(c, 0))
		sout(c, 0)->elem = T_UINT8;
	set_shape(sout(c, 1), T_FLOAT, 0, NULL);
	set_shape(sout(c, 2), T_UINT8, 0, NULL);
	return 0;
}

static int op_random_like(struct sctx *c)
{
	same(c);
	if (sout(c, 0) && attr_has(c, "dtype"))
		sout(c, 0)->elem = (int32_t)attr_i(c, "dtype", T_FLOAT);
	return 0;
}

const struct shape_op shape_ops_elem[] = {
	/* Same shape and type as the first input. */
	{ "Relu", same }, { "LeakyRelu", same }, { "PRelu", broadcast },
	{ "Sigmoid", same }, { "HardSigmoid", same }, { "HardSwish", same },
	{ "Tanh", same }, { "Exp", same }, { "Log", same }, { "Sqrt", op_sqrt },
	{ "Neg", op_neg }, { "Abs", op_abs }, { "Reciprocal", same },
	{ "Floor", op_floor }, { "Ceil", op_ceil }, { "Round", same },
	{ "Erf", same }, { "Sin", same }, { "Cos", same }, { "Tan", same },
	{ "Asin", same }, { "Acos", same }, { "Atan", same }, { "Sinh", same },
	{ "Cosh", same }, { "Asinh", same }, { "Acosh", same }, { "Atanh", same },
	{ "Softplus", same }, { "Softsign", same }, { "Elu", same },
	{ "Selu", same }, { "Celu", same }, { "Gelu", same }, { "Mish", same },
	{ "ThresholdedRelu", same }, { "Sign", same }, { "Clip", same },
	{ "Softmax", same }, { "LogSoftmax", same }, { "Hardmax", same },
	{ "Shrink", same }, { "LRN", same }, { "InstanceNormalization", same },
	{ "MeanVarianceNormalization", same }, { "LpNormalization", same },
	{ "GroupNormalization", same }, { "CumSum", same }, { "Trilu", same },
	{ "ReverseSequence", same }, { "ScatterElements", same },
	{ "ScatterND", same }, { "Scatter", same }, { "BitwiseNot", same },
	{ "Not", op_not }, { "IsNaN", to_bool }, { "IsInf", to_bool },
	{ "Dropout", op_dropout },
	{ "BatchNormalization", op_batchnorm },
	{ "LayerNormalization", op_layernorm },
	/* onnxruntime's, registered in the ONNX domain; inv_std_var second. */
	{ "SimplifiedLayerNormalization", op_layernorm },
	{ "RMSNormalization", same }, { "RotaryEmbedding", same },
	/* Broadcasting. */
	{ "Add", broadcast }, { "Sub", broadcast }, { "Mul", broadcast },
	{ "Div", broadcast }, { "Mod", broadcast }, { "Pow", broadcast },
	{ "Max", broadcast }, { "Min", broadcast }, { "Sum", broadcast },
	{ "Mean", broadcast }, { "And", broadcast }, { "Or", broadcast },
	{ "Xor", broadcast }, { "Equal", broadcast }, { "Less", broadcast },
	{ "Greater", broadcast }, { "LessOrEqual", broadcast },
	{ "GreaterOrEqual", broadcast }, { "BitShift", broadcast },
	{ "BitwiseAnd", broadcast }, { "BitwiseOr", broadcast },
	{ "BitwiseXor", broadcast }, { "Where", op_where },
	/* Types. */
	{ "Cast", op_cast }, { "CastLike", op_castlike },
	{ "QuantizeLinear", op_quantize }, { "DequantizeLinear", op_dequantize },
	{ "DynamicQuantizeLinear", op_dynquant },
	{ "RandomNormalLike", op_random_like }, { "RandomUniformLike", op_random_like },
	{ "Bernoulli", op_random_like },
	{ NULL, NULL }
};
