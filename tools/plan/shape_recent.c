// SPDX-License-Identifier: MIT
/*
 * ONNX operators of opsets 18 to 23 that need more than the elementwise
 * rule: Col2Im, CenterCropPad, DeformConv, AffineGrid and Attention.
 * Debian's python3-onnx (1.12, opset 17) cannot infer them, so their
 * tests spell the shapes of the operator documents out.
 */
#include <errno.h>
#include <string.h>

#include "shape.h"

/* Col2Im: [N, C x prod(block_shape), L] back to [N, C, image_shape...]. */
static int op_col2im(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *img = sin_(c, 1), *blk = sin_(c, 2);
	int64_t dims[MD_MAX_RANK], block = 1;
	uint32_t k;

	if (!x || !img || !blk || !img->has_data || !blk->has_data || x->rank != 3 ||
	    img->n_data + 2 > MD_MAX_RANK || img->n_data != blk->n_data)
		return 0;
	for (k = 0; k < blk->n_data; k++) {
		if (blk->idata[k] <= 0 || __builtin_mul_overflow(block, blk->idata[k], &block))
			return bad(c, "block_shape needs positive sizes");
	}
	dims[0] = x->dims[0];
	dims[1] = x->dims[1] < 0 ? -1 : x->dims[1] / block;
	for (k = 0; k < img->n_data; k++)
		dims[2 + k] = img->idata[k];
	set_shape(sout(c, 0), x->elem, (int32_t)img->n_data + 2, dims);
	return 0;
}

/* CenterCropPad: the input with its axes (all, or attribute axes) set to
 * input 1's contents. */
static int op_center_crop_pad(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *shape = sin_(c, 1);
	int64_t dims[MD_MAX_RANK];
	size_t na, k;
	const int64_t *axes = attr_ints(c, "axes", &na);

	if (!x || x->rank < 0 || !shape || !shape->has_data)
		return 0;
	if (!axes)
		na = (size_t)x->rank;
	if (na != shape->n_data)
		return bad(c, "shape needs one size per axis");
	memcpy(dims, x->dims, sizeof(dims));
	for (k = 0; k < na; k++) {
		int a = norm_axis(axes ? axes[k] : (int64_t)k, x->rank);

		if (a < 0 || shape->idata[k] < 0)
			return bad(c, "an axis out of range or a negative size");
		dims[a] = shape->idata[k];
	}
	set_shape(sout(c, 0), x->elem, x->rank, dims);
	return 0;
}

static int op_deform_conv(struct sctx *c) { return conv_like(c, 0, 1, false, 0); }

/* AffineGrid: theta [N, 2, 3] and size [N, C, H, W] give [N, H, W, 2];
 * [N, 3, 4] and [N, C, D, H, W] give [N, D, H, W, 3]. */
static int op_affine_grid(struct sctx *c)
{
	struct md_value *theta = sin_(c, 0), *size = sin_(c, 1);
	int64_t dims[5];
	uint32_t k;

	if (!theta || !size || !size->has_data || (size->n_data != 4 && size->n_data != 5))
		return 0;
	dims[0] = size->idata[0];
	for (k = 2; k < size->n_data; k++)
		dims[k - 1] = size->idata[k];
	dims[size->n_data - 1] = (int64_t)size->n_data - 2;
	set_shape(sout(c, 0), theta->elem, (int32_t)size->n_data, dims);
	return 0;
}

/* Heads of a 3-D attention input from attribute @attr, or -1. */
static int64_t heads_of(const struct sctx *c, const char *attr)
{
	int64_t h = attr_i(c, attr, 0);

	return h > 0 ? h : -1;
}

/* A [B, heads, S, head] shape of @x: itself when 4-D, split when 3-D. */
static bool bnsh(const struct md_value *x, int64_t heads, int64_t *dims)
{
	if (x->rank == 4) {
		memcpy(dims, x->dims, sizeof(int64_t) * 4);
		return true;
	}
	if (x->rank != 3 || heads < 0 || x->dims[2] < 0 || x->dims[2] % heads)
		return false;
	dims[0] = x->dims[0];
	dims[1] = heads;
	dims[2] = x->dims[1];
	dims[3] = x->dims[2] / heads;
	return true;
}

/* Attention (opset 23): Y in Q's layout with V's head size; present key
 * and value [B, kv heads, past + S_kv, head]; the QK product [B, q heads,
 * S_q, past + S_kv]. */
static int op_attention(struct sctx *c)
{
	struct md_value *q = sin_(c, 0), *k = sin_(c, 1), *v = sin_(c, 2);
	struct md_value *past[2] = { sin_(c, 4), sin_(c, 5) };
	int64_t qd[4], kd[4], vd[4], dims[4], total;
	int64_t qh = heads_of(c, "q_num_heads"), kvh = heads_of(c, "kv_num_heads");
	uint32_t j;

	if (!q || !k || !v || !bnsh(q, qh, qd) || !bnsh(k, kvh, kd) || !bnsh(v, kvh, vd))
		return 0;
	dims[0] = qd[0];
	if (q->rank == 4) {
		memcpy(dims, qd, sizeof(qd));
		dims[3] = vd[3];
		set_shape(sout(c, 0), q->elem, 4, dims);
	} else {
		dims[1] = q->dims[1];
		dims[2] = vd[3] < 0 ? -1 : qd[1] * vd[3];
		set_shape(sout(c, 0), q->elem, 3, dims);
	}
	total = kd[2];
	if (past[0] && (past[0]->rank != 4 || past[0]->dims[2] < 0 || kd[2] < 0))
		return 0;	/* a past of unknown length */
	if (past[0])
		total = past[0]->dims[2] + kd[2];
	for (j = 0; j < 2; j++) {
		memcpy(dims, j ? vd : kd, sizeof(kd));
		dims[2] = total;
		set_shape(sout(c, 1 + j), (j ? v : k)->elem, 4, dims);
	}
	dims[0] = qd[0];
	dims[1] = qd[1];
	dims[2] = qd[2];
	dims[3] = total;
	set_shape(sout(c, 3), q->elem, 4, dims);
	return 0;
}

const struct shape_op shape_ops_recent[] = {
	{ "Col2Im", op_col2im }, { "CenterCropPad", op_center_crop_pad },
	{ "DeformConv", op_deform_conv }, { "AffineGrid", op_affine_grid },
	{ "Attention", op_attention },
	{ NULL, NULL }
};
