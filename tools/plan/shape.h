/* SPDX-License-Identifier: MIT */
/*
 * Shape inference internals: what an op handler sees, and the helpers
 * every handler uses.  A handler sets its outputs' type and shape from
 * its inputs (leaving what it cannot know at -1), and their contents when
 * the inputs' contents are known and small.  It returns 0, or a negative
 * code with m->err set for an input no valid model has.
 */
#ifndef ORTMEM_PLAN_SHAPE_H
#define ORTMEM_PLAN_SHAPE_H

#include "model.h"

struct sctx {
	struct md_model *m;
	struct md_node *n;
	uint32_t id;		/* node id */
	const struct md_pin *pins;
	size_t n_pins;
};

typedef int (*shape_fn)(struct sctx *c);

struct shape_op {
	const char *name;
	shape_fn fn;
};

/* Each ops file's table, ended by { NULL, NULL }.  In shape_ops_ms (the
 * com.microsoft domain of onnxruntime's contrib ops) a NULL fn means the
 * ONNX domain's rule of the same name. */
extern const struct shape_op shape_ops_elem[];
extern const struct shape_op shape_ops_nn[];
extern const struct shape_op shape_ops_tensor[];
extern const struct shape_op shape_ops_misc[];
extern const struct shape_op shape_ops_control[];
extern const struct shape_op shape_ops_recent[];
extern const struct shape_op shape_ops_ms[];

/* Rules the contrib ops share (shape_nn.c, shape_elem.c). */
int conv_like(struct sctx *c, uint32_t xi, uint32_t wi, bool transposed, int32_t elem);
int matmul_like(struct sctx *c, uint32_t ai, uint32_t bi, int32_t elem);
int matmul_of(struct sctx *c, const struct md_value *a, const struct md_value *b,
	      int32_t elem);
int op_layernorm(struct sctx *c);

/* Input/output @k, or NULL when absent. */
struct md_value *sin_(struct sctx *c, uint32_t k);
struct md_value *sout(struct sctx *c, uint32_t k);
const char *node_name(const struct sctx *c);

/* Attributes; the default when absent. */
int64_t attr_i(const struct sctx *c, const char *name, int64_t def);
double attr_f(const struct sctx *c, const char *name, double def);
const int64_t *attr_ints(const struct sctx *c, const char *name, size_t *n);
const float *attr_floats(const struct sctx *c, const char *name, size_t *n);
const char *attr_s(const struct sctx *c, const char *name, const char *def);
const Onnx__TensorProto *attr_t(const struct sctx *c, const char *name);
bool attr_has(const struct sctx *c, const char *name);

bool shape_known(const struct md_value *v);
void set_shape(struct md_value *o, int32_t elem, int32_t rank,
	       const int64_t *dims);
void copy_type_shape(struct md_value *o, const struct md_value *i);
/* Normalize a possibly negative axis against @rank; -1 when out of range. */
int norm_axis(int64_t axis, int32_t rank);
/* Numpy broadcasting of n values into @o's shape; false when a rank is
 * unknown. Data of elementwise ops is computed by the caller. */
bool bcast_shape(struct md_value *const *in, int n, int32_t *rank,
		 int64_t *dims);
int bad(struct sctx *c, const char *what);
/* Integers from attribute @attr (older opsets) or input @in: 1 found,
 * 0 neither given, -1 the input's contents unknown. */
int int_list(struct sctx *c, const char *attr, uint32_t in, int64_t *v,
	     size_t *n, size_t max);
/* Keep contents on @o (0, or -ENOMEM with the error set). */
int keep(struct sctx *c, struct md_value *o, uint32_t n, const int64_t *iv,
	 const double *fv);

/* Contents: flat index of @v (with @vdims padded to @rank) at out index. */
uint64_t bcast_src(const int64_t *odims, int32_t rank, const struct md_value *v,
		   uint64_t flat);
int elems_of(int32_t rank, const int64_t *dims, uint64_t *n);

#endif /* ORTMEM_PLAN_SHAPE_H */
