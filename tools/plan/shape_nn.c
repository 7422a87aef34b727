// SPDX-License-Identifier: MIT
/*
 * Network ops: convolutions (float, integer, quantized, transposed),
 * pooling, Gemm and the matmuls, Resize/Upsample, and the recurrent ops.
 * Output sizes follow the ONNX operator documents (auto_pad, ceil_mode,
 * dilations, output_padding).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "shape.h"

#define T_INT32 6
#define T_INT64 7
#define T_UINT8 2

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/*
 * Spatial dims of a sliding window over x (N, C, spatial...).  @kernel
 * holds one kernel extent per spatial axis.  Returns 0 or an error.
 */
static int window(struct sctx *c, const struct md_value *x, const int64_t *kernel,
		  int32_t ns, bool transposed, bool ceil_mode, int64_t *out)
{
	size_t n_str, n_dil, n_pad, n_op, n_os;
	const int64_t *str = attr_ints(c, "strides", &n_str);
	const int64_t *dil = attr_ints(c, "dilations", &n_dil);
	const int64_t *pads = attr_ints(c, "pads", &n_pad);
	const int64_t *opad = attr_ints(c, "output_padding", &n_op);
	const int64_t *oshape = attr_ints(c, "output_shape", &n_os);
	const char *ap = attr_s(c, "auto_pad", "NOTSET");
	int32_t k;

	if ((str && n_str != (size_t)ns) || (dil && n_dil != (size_t)ns) ||
	    (pads && n_pad != 2 * (size_t)ns))
		return bad(c, "strides, dilations or pads do not match the spatial rank");
	for (k = 0; k < ns; k++) {
		int64_t in = x->dims[2 + k], s = str ? str[k] : 1, d = dil ? dil[k] : 1;
		int64_t kk = kernel[k], ek, p = pads ? pads[k] + pads[k + ns] : 0;

		if (s < 1 || d < 1 || kk < 0 || (pads && (pads[k] < 0 || pads[k + ns] < 0)) ||
		    s > INT32_MAX || d > INT32_MAX || kk > INT32_MAX)
			return bad(c, "strides, dilations, pads or kernel out of range");
		out[k] = -1;
		if (in < 0 || kk < 0)
			continue;
		ek = (kk - 1) * d + 1;
		if (transposed) {
			if (oshape && n_os >= (size_t)ns) {
				out[k] = oshape[n_os - ns + k];
				continue;
			}
			if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))
				out[k] = in * s;
			else
				out[k] = s * (in - 1) + (opad && n_op == (size_t)ns ? opad[k] : 0) + ek - p;
		} else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			out[k] = ceil_div(in, s);
		} else if (!strcmp(ap, "VALID")) {
			out[k] = ceil_div(in - ek + 1, s);
		} else {
			int64_t span = in + p - ek;

			/* As ONNX's own inference: no clamp of a last window
			 * that starts in the padding. */
			out[k] = span < 0 ? 0 : (ceil_mode ? ceil_div(span, s) : span / s) + 1;
		}
		if (out[k] < 0)
			out[k] = 0;
	}
	return 0;
}

/* Conv, ConvInteger, QLinearConv, ConvTranspose. */
int conv_like(struct sctx *c, uint32_t xi, uint32_t wi, bool transposed,
		     int32_t elem)
{
	struct md_value *x = sin_(c, xi), *w = sin_(c, wi), *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK], kernel[MD_MAX_RANK];
	size_t nk, k;
	const int64_t *ks = attr_ints(c, "kernel_shape", &nk);
	int64_t group = attr_i(c, "group", 1);
	int32_t ns;
	int ret;

	if (!o || !x)
		return 0;
	o->elem = elem ? elem : x->elem;
	if (x->rank < 3)
		return x->rank < 0 ? 0 : bad(c, "the input needs rank 3 or more (N, C, spatial...)");
	ns = x->rank - 2;
	for (k = 0; k < (size_t)ns; k++)
		kernel[k] = ks && nk == (size_t)ns ? ks[k] :
			    w && w->rank == x->rank ? w->dims[2 + k] : -1;
	ret = window(c, x, kernel, ns, transposed, false, dims + 2);
	if (ret)
		return ret;
	dims[0] = x->dims[0];
	dims[1] = -1;
	if (w && w->rank >= 2 && w->dims[0] >= 0)
		dims[1] = transposed ? (w->dims[1] >= 0 && group > 0 ? w->dims[1] * group : -1) :
			  w->dims[0];
	set_shape(o, 0, x->rank, dims);
	return 0;
}

static int op_conv(struct sctx *c) { return conv_like(c, 0, 1, false, 0); }
static int op_convint(struct sctx *c) { return conv_like(c, 0, 1, false, T_INT32); }
static int op_convt(struct sctx *c) { return conv_like(c, 0, 1, true, 0); }

static int op_qconv(struct sctx *c)
{
	struct md_value *yzp = sin_(c, 7);

	return conv_like(c, 0, 3, false, yzp ? yzp->elem : T_UINT8);
}

static int pool(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK];
	size_t nk;
	const int64_t *ks = attr_ints(c, "kernel_shape", &nk);
	int ret;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	if (x->rank < 3 || !ks || nk != (size_t)(x->rank - 2))
		return bad(c, "kernel_shape must give one extent per spatial axis of a rank >= 3 input");
	ret = window(c, x, ks, x->rank - 2, false, attr_i(c, "ceil_mode", 0) != 0, dims + 2);
	if (ret)
		return ret;
	dims[0] = x->dims[0];
	dims[1] = x->dims[1];
	set_shape(o, 0, x->rank, dims);
	if (sout(c, 1))	/* MaxPool's indices */
		set_shape(sout(c, 1), T_INT64, x->rank, dims);
	return 0;
}

static int global_pool(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK];
	int32_t k;

	if (!o || !x || x->rank < 0)
		return 0;
	for (k = 0; k < x->rank; k++)
		dims[k] = k < 2 ? x->dims[k] : 1;
	set_shape(o, x->elem, x->rank, dims);
	return 0;
}

static int op_gemm(struct sctx *c)
{
	struct md_value *a = sin_(c, 0), *b = sin_(c, 1), *o = sout(c, 0);
	int64_t dims[2];
	bool ta = attr_i(c, "transA", 0), tb = attr_i(c, "transB", 0);

	if (!o || !a || !b)
		return 0;
	o->elem = a->elem;
	if (a->rank < 0 || b->rank < 0)
		return 0;
	if (a->rank != 2 || b->rank != 2)
		return bad(c, "Gemm takes two rank-2 inputs");
	dims[0] = a->dims[ta ? 1 : 0];
	dims[1] = b->dims[tb ? 0 : 1];
	set_shape(o, 0, 2, dims);
	return 0;
}

int matmul_like(struct sctx *c, uint32_t ai, uint32_t bi, int32_t elem)
{
	return matmul_of(c, sin_(c, ai), sin_(c, bi), elem);
}

/* numpy matmul: 1-D operands promoted, batch dims broadcast. */
int matmul_of(struct sctx *c, const struct md_value *a, const struct md_value *b,
	      int32_t elem)
{
	struct md_value *o = sout(c, 0);
	struct md_value ba, bb, *pair[2] = { &ba, &bb };
	int64_t dims[MD_MAX_RANK];
	int32_t rank, r = 0;

	if (!o || !a || !b)
		return 0;
	o->elem = elem ? elem : a->elem;
	if (a->rank < 1 || b->rank < 1)
		return a->rank == 0 || b->rank == 0 ? bad(c, "MatMul of a scalar") : 0;
	memset(&ba, 0, sizeof(ba));
	memset(&bb, 0, sizeof(bb));
	ba.rank = a->rank > 2 ? a->rank - 2 : 0;
	bb.rank = b->rank > 2 ? b->rank - 2 : 0;
	memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.rank);
	memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.rank);
	if (!bcast_shape(pair, 2, &rank, dims))
		return 0;
	r = rank;
	if (a->rank >= 2)
		dims[r++] = a->dims[a->rank - 2];
	if (b->rank >= 2)
		dims[r++] = b->dims[b->rank - 1];
	set_shape(o, 0, r, dims);
	return 0;
}

static int op_matmul(struct sctx *c) { return matmul_like(c, 0, 1, 0); }
static int op_matmulint(struct sctx *c) { return matmul_like(c, 0, 1, T_INT32); }

static int op_qmatmul(struct sctx *c)
{
	struct md_value *yzp = sin_(c, 7);

	return matmul_like(c, 0, 3, yzp ? yzp->elem : T_UINT8);
}

/* Resize (opset 10+: X, roi, scales, sizes; 10: X, scales) and Upsample. */
static int op_resize(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *o = sout(c, 0), *scales, *sizes;
	int64_t dims[MD_MAX_RANK], axes_all[MD_MAX_RANK];
	size_t nax, nsc, k;
	const int64_t *axes = attr_ints(c, "axes", &nax);
	const float *sattr = attr_floats(c, "scales", &nsc);
	bool old = !strcmp(c->n->p->op_type, "Upsample") || c->n->opset < 11;
	int32_t j;

	if (!o || !x)
		return 0;
	o->elem = x->elem;
	if (x->rank < 0)
		return 0;
	scales = sin_(c, old ? 1 : 2);
	sizes = old ? NULL : sin_(c, 3);
	if (strcmp(attr_s(c, "keep_aspect_ratio_policy", "stretch"), "stretch"))
		return 0;	/* sizes adjusted per axis: left unknown */
	if (!axes) {
		for (j = 0; j < x->rank; j++)
			axes_all[j] = j;
		axes = axes_all;
		nax = (size_t)x->rank;
	}
	for (j = 0; j < x->rank; j++)
		dims[j] = x->dims[j];
	for (k = 0; k < nax; k++) {
		int a = norm_axis(axes[k], x->rank);

		if (a < 0)
			return bad(c, "axes out of range");
		if (sizes && sizes->n_data) {
			if (!sizes->has_data || sizes->n_data != nax)
				dims[a] = -1;
			else
				dims[a] = sizes->idata[k];
		} else if (scales && scales->has_data && scales->n_data == nax) {
			dims[a] = x->dims[a] < 0 ? -1 : (int64_t)floor((double)x->dims[a] * scales->fdata[k]);
		} else if (sattr && nsc == nax) {
			dims[a] = x->dims[a] < 0 ? -1 : (int64_t)floor((double)x->dims[a] * sattr[k]);
		} else {
			dims[a] = -1;
		}
		if (sizes && !sizes->has_data && sizes->rank == 1 && sizes->dims[0] == 0)
			dims[a] = -1;
	}
	set_shape(o, 0, x->rank, dims);
	return 0;
}

/* LSTM, GRU, RNN: Y, Y_h (and Y_c), by layout. */
static int op_rnn(struct sctx *c)
{
	struct md_value *x = sin_(c, 0);
	int64_t hs = attr_i(c, "hidden_size", -1), layout = attr_i(c, "layout", 0);
	int64_t dirs = !strcmp(attr_s(c, "direction", "forward"), "bidirectional") ? 2 : 1;
	int64_t seq, batch, y[4], yh[3];
	uint32_t k;

	if (!x)
		return 0;
	for (k = 0; k < c->n->n_out; k++)
		if (sout(c, k))
			sout(c, k)->elem = x->elem;
	if (x->rank < 0)
		return 0;
	if (x->rank != 3)
		return bad(c, "the input X must have rank 3");
	/* R is [dirs, gates * hidden, hidden]: its last dim is the hidden size. */
	if (hs < 0 && sin_(c, 2) && sin_(c, 2)->rank == 3)
		hs = sin_(c, 2)->dims[2];
	seq = x->dims[layout ? 1 : 0];
	batch = x->dims[layout ? 0 : 1];
	if (layout) {
		y[0] = batch, y[1] = seq, y[2] = dirs, y[3] = hs;
		yh[0] = batch, yh[1] = dirs, yh[2] = hs;
	} else {
		y[0] = seq, y[1] = dirs, y[2] = batch, y[3] = hs;
		yh[0] = dirs, yh[1] = batch, yh[2] = hs;
	}
	set_shape(sout(c, 0), 0, 4, y);
	set_shape(sout(c, 1), 0, 3, yh);
	set_shape(sout(c, 2), 0, 3, yh);
	return 0;
}

const struct shape_op shape_ops_nn[] = {
	{ "Conv", op_conv }, { "ConvInteger", op_convint },
	{ "QLinearConv", op_qconv }, { "ConvTranspose", op_convt },
	{ "MaxPool", pool }, { "AveragePool", pool }, { "LpPool", pool },
	{ "GlobalAveragePool", global_pool }, { "GlobalMaxPool", global_pool },
	{ "GlobalLpPool", global_pool },
	{ "Gemm", op_gemm }, { "MatMul", op_matmul },
	{ "MatMulInteger", op_matmulint }, { "QLinearMatMul", op_qmatmul },
	{ "Resize", op_resize }, { "Upsample", op_resize },
	{ "LSTM", op_rnn }, { "GRU", op_rnn }, { "RNN", op_rnn },
	{ NULL, NULL }
};
