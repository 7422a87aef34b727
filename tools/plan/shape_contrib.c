// SPDX-License-Identifier: MIT
/*
 * The com.microsoft domain: onnxruntime's contrib ops, which its
 * optimizer and quantization tools write into transformer and quantized
 * models (fused attention, skip layer norms, 4-bit matmuls, QLinear ops).
 * Shapes follow onnxruntime's own inference for each op's outputs; an
 * output whose size depends on runtime data (a KV cache grown by a
 * sequence length given as a tensor) is left unknown, which defers.
 */
#include <errno.h>
#include <string.h>

#include "shape.h"

#define T_INT32 6
#define T_FLOAT 1

/* Inputs that do not match the layout a rule expects: the outputs stay
 * unknown (the plan defers, naming them) instead of failing the model, as
 * ONNX-domain rules do.  These rules are onnxruntime's as documented; a
 * variant they miss is likelier than a broken model. */
static int as_unknown(struct sctx *c, const char *why)
{
	(void)c;
	(void)why;
	return 0;
}

static int same(struct sctx *c)
{
	copy_type_shape(sout(c, 0), sin_(c, 0));
	return 0;
}

/* @x's shape with its last axis set to @last. */
static void last_axis(struct md_value *o, int32_t elem, const struct md_value *x, int64_t last)
{
	int64_t dims[MD_MAX_RANK];

	if (!x || x->rank < 1)
		return;
	memcpy(dims, x->dims, sizeof(dims));
	dims[x->rank - 1] = last;
	set_shape(o, elem, x->rank, dims);
}

/* SkipLayerNormalization, SkipSimplifiedLayerNormalization (whose mean
 * slot is kept, unused): output, mean and inv_std_var ([..., 1], float),
 * input + skip + bias. */
static int op_skip_ln(struct sctx *c)
{
	struct md_value *x = sin_(c, 0);

	same(c);
	last_axis(sout(c, 1), T_FLOAT, x, 1);
	last_axis(sout(c, 2), T_FLOAT, x, 1);
	copy_type_shape(sout(c, 3), x);
	return 0;
}

/* BiasDropout and the like: output as the input, then a bool mask. */
static int op_bias_dropout(struct sctx *c)
{
	same(c);
	copy_type_shape(sout(c, 1), sin_(c, 0));
	if (sout(c, 1))
		sout(c, 1)->elem = 9;
	return 0;
}

/* FusedMatMul: MatMul of the inputs, each transposed (last two axes)
 * where transA/transB say. */
static int op_fused_matmul(struct sctx *c)
{
	const char *attr[2] = { "transA", "transB" };
	struct md_value v[2];
	int k;

	for (k = 0; k < 2; k++) {
		if (!sin_(c, (uint32_t)k))
			return 0;
		v[k] = *sin_(c, (uint32_t)k);
		if (attr_i(c, attr[k], 0) && v[k].rank >= 2) {
			int64_t t = v[k].dims[v[k].rank - 1];

			v[k].dims[v[k].rank - 1] = v[k].dims[v[k].rank - 2];
			v[k].dims[v[k].rank - 2] = t;
		}
	}
	return matmul_of(c, &v[0], &v[1], 0);
}

/* MatMulNBits, MatMulBnb4: A [..., K] times quantized B: [..., N]. */
static int op_matmul_nbits(struct sctx *c)
{
	int64_t n = attr_i(c, "N", -1);

	if (n < 0)
		return as_unknown(c, "needs attribute N");
	last_axis(sout(c, 0), 0, sin_(c, 0), n);
	if (sout(c, 0) && sin_(c, 0))
		sout(c, 0)->elem = sin_(c, 0)->elem;
	return 0;
}

/* DynamicQuantizeMatMul, MatMulIntegerToFloat: a matmul whose result has
 * the type of A's scale (input 2), float when absent. */
static int op_matmul_to_float(struct sctx *c)
{
	struct md_value *scale = sin_(c, 2);
	bool dyn = !strcmp(c->n->p->op_type, "DynamicQuantizeMatMul");

	return matmul_like(c, 0, 1, dyn ? (sin_(c, 0) ? sin_(c, 0)->elem : T_FLOAT) :
				  scale && scale->elem ? scale->elem : T_FLOAT);
}

static int op_fused_conv(struct sctx *c) { return conv_like(c, 0, 1, false, 0); }

/* Attention: input [B, S, in], weights [in, q + k + v] (qkv_hidden_sizes,
 * or three equal parts): output [B, S, v]; present [2, B, heads,
 * past + S, head size] with the query's head size. */
static int op_attention(struct sctx *c)
{
	struct md_value *x = sin_(c, 0), *w = sin_(c, 1), *past = sin_(c, 4);
	int64_t heads = attr_i(c, "num_heads", 0), dims[5], q, v;
	size_t nq;
	const int64_t *qkv = attr_ints(c, "qkv_hidden_sizes", &nq);

	if (!x || !w || x->rank < 0 || w->rank < 0)
		return 0;
	if (x->rank != 3 || w->rank != 2 || heads <= 0)
		return as_unknown(c, "needs input [batch, sequence, hidden], weights [hidden, qkv] and num_heads");
	if (qkv && nq == 3) {
		q = qkv[0];
		v = qkv[2];
	} else {
		q = v = w->dims[1] < 0 ? -1 : w->dims[1] / 3;
	}
	last_axis(sout(c, 0), x->elem, x, v);
	if (!sout(c, 1) || q < 0 || q % heads)
		return 0;
	dims[0] = 2;
	dims[1] = x->dims[0];
	dims[2] = heads;
	dims[3] = !past ? x->dims[1] : past->rank == 5 && past->dims[3] >= 0 && x->dims[1] >= 0 ?
		  past->dims[3] + x->dims[1] : -1;
	dims[4] = q / heads;
	set_shape(sout(c, 1), x->elem, 5, dims);
	return 0;
}

/* Heads x head size of a [B, heads, L, head] value; -1 unknown. */
static int64_t bnsh_hidden(const struct md_value *v)
{
	return v->dims[1] < 0 || v->dims[3] < 0 ? -1 : v->dims[1] * v->dims[3];
}

/* MultiHeadAttention: query [B, S, D] (or packed [B, S, heads, 3, head]),
 * value [B, L, v] or [B, heads, L, head]: output [B, S, v].  Present
 * key/value [B, heads, L, head] when there is no past to grow. */
static int op_mha(struct sctx *c)
{
	struct md_value *q = sin_(c, 0), *k = sin_(c, 1), *v = sin_(c, 2);
	int64_t heads = attr_i(c, "num_heads", 0), dims[4], hidden = -1;
	int32_t j;

	if (!q || q->rank < 0 || heads <= 0)
		return heads <= 0 ? as_unknown(c, "needs num_heads") : 0;
	if (v && v->rank == 3)
		hidden = v->dims[2];
	else if (v && v->rank == 4)
		hidden = bnsh_hidden(v);
	else if (!v && q->rank == 5 && q->dims[2] >= 0 && q->dims[4] >= 0)
		hidden = q->dims[2] * q->dims[4];	/* packed QKV */
	else if (!v && k && k->rank == 5 && k->dims[2] >= 0 && k->dims[4] >= 0)
		hidden = k->dims[2] * k->dims[4];	/* packed KV */
	else if (!v && q->rank == 3)
		hidden = q->dims[2];
	dims[0] = q->dims[0];
	dims[1] = q->dims[1];
	dims[2] = hidden;
	set_shape(sout(c, 0), q->elem, 3, dims);
	if (sin_(c, 6) || sin_(c, 7) || !k || !v)
		return 0;	/* a past to grow, or packed inputs: left unknown */
	for (j = 1; j <= 2; j++) {
		struct md_value *x = j == 1 ? k : v;

		if (x->rank == 4) {
			copy_type_shape(sout(c, (uint32_t)j), x);
		} else if (x->rank == 3 && x->dims[2] >= 0 && x->dims[2] % heads == 0) {
			int64_t p[4] = { x->dims[0], heads, x->dims[1], x->dims[2] / heads };

			memcpy(dims, p, sizeof(p));
			set_shape(sout(c, (uint32_t)j), x->elem, 4, dims);
		}
	}
	return 0;
}

/* GroupQueryAttention: query [B, S, D], packed with K and V when key is
 * absent: output [B, S, heads x head size].  Present key/value: [B, kv
 * heads, max(past, total sequence), head size] where the total is known
 * (input 6's contents); else unknown. */
static int op_gqa(struct sctx *c)
{
	struct md_value *q = sin_(c, 0), *k = sin_(c, 1), *past = sin_(c, 3);
	struct md_value *total = sin_(c, 6);
	int64_t heads = attr_i(c, "num_heads", 0), kv = attr_i(c, "kv_num_heads", 0);
	int64_t dims[4], head, parts;
	uint32_t j;

	if (heads <= 0 || kv <= 0)
		return as_unknown(c, "needs num_heads and kv_num_heads");
	if (!q || q->rank != 3 || q->dims[2] < 0)
		return q && q->rank >= 0 && q->rank != 3 ? as_unknown(c, "needs query [batch, sequence, hidden]") : 0;
	parts = k ? heads : heads + 2 * kv;
	if (q->dims[2] % parts)
		return as_unknown(c, "the query's hidden size is not a multiple of the heads");
	head = q->dims[2] / parts;
	last_axis(sout(c, 0), q->elem, q, heads * head);
	if (!past || past->rank != 4 || !total || !total->has_data || total->n_data != 1)
		return 0;
	dims[0] = past->dims[0];
	dims[1] = kv;
	dims[2] = past->dims[2] < 0 ? -1 : past->dims[2] > total->idata[0] ? past->dims[2] :
		  total->idata[0];
	dims[3] = head;
	for (j = 1; j <= 2; j++)
		set_shape(sout(c, j), q->elem, 4, dims);
	return 0;
}

/* EmbedLayerNormalization: ids [B, S], word embedding [V, H]: output and
 * embedding sum [B, S, H], mask index [B] (int32). */
static int op_embed_ln(struct sctx *c)
{
	struct md_value *ids = sin_(c, 0), *word = sin_(c, 2);
	int64_t dims[3];

	if (!ids || !word || ids->rank < 0 || word->rank < 0)
		return 0;
	if (ids->rank != 2 || word->rank != 2)
		return as_unknown(c, "needs input_ids [batch, sequence] and word_embedding [vocabulary, hidden]");
	dims[0] = ids->dims[0];
	dims[1] = ids->dims[1];
	dims[2] = word->dims[1];
	set_shape(sout(c, 0), word->elem, 3, dims);
	set_shape(sout(c, 1), T_INT32, 1, dims);
	set_shape(sout(c, 2), word->elem, 3, dims);
	return 0;
}

/* QLinearAdd, QLinearMul: A (0) and B (3) broadcast; A's type. */
static int op_qlinear_binary(struct sctx *c)
{
	struct md_value *in[2] = { sin_(c, 0), sin_(c, 3) }, *o = sout(c, 0);
	int64_t dims[MD_MAX_RANK];
	int32_t rank;

	if (!o || !in[0] || !in[1])
		return 0;
	o->elem = in[0]->elem;
	if (bcast_shape(in, 2, &rank, dims))
		set_shape(o, 0, rank, dims);
	return 0;
}

/* QLinearGlobalAveragePool: [N, C, 1...] or, channels_last, [N, 1..., C]. */
static int op_qlinear_gap(struct sctx *c)
{
	struct md_value *x = sin_(c, 0);
	int64_t dims[MD_MAX_RANK];
	bool last = attr_i(c, "channels_last", 0) != 0;
	int32_t k;

	if (!x || x->rank < 0)
		return 0;
	if (x->rank < 3)
		return as_unknown(c, "needs rank 3 or more");
	for (k = 0; k < x->rank; k++)
		dims[k] = k == 0 || k == (last ? x->rank - 1 : 1) ? x->dims[k] : 1;
	set_shape(sout(c, 0), x->elem, x->rank, dims);
	return 0;
}

/* QLinearConcat: Y scale and zero point, then (X, scale, zero point)
 * triples, joined on axis. */
static int op_qlinear_concat(struct sctx *c)
{
	struct md_value *first = sin_(c, 2);
	int64_t dims[MD_MAX_RANK];
	uint32_t k;
	int axis;

	if (!first || first->rank < 0 || c->n->n_in < 5 || (c->n->n_in - 2) % 3)
		return first && first->rank >= 0 ? as_unknown(c, "needs Y scale, Y zero point, then triples") : 0;
	axis = norm_axis(attr_i(c, "axis", 0), first->rank);
	if (axis < 0)
		return as_unknown(c, "axis out of range");
	memcpy(dims, first->dims, sizeof(dims));
	for (k = 5; k < c->n->n_in; k += 3) {
		struct md_value *x = sin_(c, k);

		if (!x || x->rank != first->rank)
			return x && x->rank >= 0 ? as_unknown(c, "inputs of different ranks") : 0;
		dims[axis] = dims[axis] < 0 || x->dims[axis] < 0 ? -1 : dims[axis] + x->dims[axis];
	}
	set_shape(sout(c, 0), first->elem, first->rank, dims);
	return 0;
}

const struct shape_op shape_ops_ms[] = {
	/* As the first input. */
	{ "Gelu", same }, { "FastGelu", same }, { "BiasGelu", same },
	{ "QuickGelu", same }, { "BiasAdd", same }, { "BiasSoftmax", same },
	{ "RotaryEmbedding", same }, { "QLinearSigmoid", same },
	{ "QLinearLeakyRelu", same }, { "QLinearSoftmax", same },
	{ "BiasDropout", op_bias_dropout },
	{ "SkipLayerNormalization", op_skip_ln },
	{ "SkipSimplifiedLayerNormalization", op_skip_ln },
	{ "SimplifiedLayerNormalization", op_layernorm },
	{ "FusedMatMul", op_fused_matmul }, { "MatMulNBits", op_matmul_nbits },
	{ "MatMulBnb4", op_matmul_nbits },
	{ "DynamicQuantizeMatMul", op_matmul_to_float },
	{ "MatMulIntegerToFloat", op_matmul_to_float },
	{ "FusedConv", op_fused_conv },
	{ "Attention", op_attention }, { "MultiHeadAttention", op_mha },
	{ "GroupQueryAttention", op_gqa },
	{ "EmbedLayerNormalization", op_embed_ln },
	{ "QLinearAdd", op_qlinear_binary }, { "QLinearMul", op_qlinear_binary },
	{ "QLinearGlobalAveragePool", op_qlinear_gap },
	{ "QLinearConcat", op_qlinear_concat },
	/* The ONNX domain's rule. */
	{ "QuantizeLinear", NULL }, { "DequantizeLinear", NULL },
	{ "DynamicQuantizeLinear", NULL }, { "Trilu", NULL }, { "Range", NULL },
	{ NULL, NULL }
};
