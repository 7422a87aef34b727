/* SPDX-License-Identifier: MIT */
/*
 * ortmem-plan's view of an ONNX model: every value and node of the main
 * graph and of every If/Loop/Scan body, in one table, with the shapes that
 * inference found.  Built from the protobuf-c message tree (onnx_load.c),
 * which it points into and which must outlive it.
 */
#ifndef ORTMEM_PLAN_MODEL_H
#define ORTMEM_PLAN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx-ml.pb-c.h"

#define MD_MAX_RANK 16		/* deeper tensors are refused, not guessed */
#define MD_DATA_MAX 4096	/* elements of a value whose contents we keep */
#define MD_MAX_DEPTH 16		/* nesting of If/Loop bodies */
#define MD_ERR_LEN 512

/* Where a value comes from. */
enum md_kind {
	MD_INPUT,		/* a graph input (caller-owned) */
	MD_INIT,		/* an initializer (a weight) */
	MD_NODE,		/* produced by a node */
	MD_BODY_INPUT,		/* a body's formal input (Loop/Scan) */
};

struct md_value {
	const char *name;
	uint32_t graph;		/* index into model->graphs */
	enum md_kind kind;
	int32_t producer;	/* node index, or -1 */
	int32_t elem;		/* ONNX TensorProto.DataType, 0 unknown */
	int32_t rank;		/* -1: rank unknown */
	int64_t dims[MD_MAX_RANK];	/* -1: that dim is unknown */
	bool is_const;		/* computed only from constants */
	bool is_output;		/* an output of its graph */
	bool sized_zero;	/* unknown shape, never read: counts 0 bytes */
	bool data_dep;		/* output of an op whose size depends on data */
	bool bounded;		/* sized from an upper bound (md_model.upper_bounds) */
	/* Contents, for small values (shape arithmetic, scales, pads). */
	uint32_t n_data;
	bool has_data;
	int64_t *idata;		/* integer and bool types */
	double *fdata;		/* float types */
	uint32_t n_readers;	/* nodes of any graph that read it */
};

struct md_node {
	const Onnx__NodeProto *p;
	uint32_t graph;
	int64_t opset;		/* of its domain */
	uint32_t n_in, n_out;
	int32_t *in;		/* value ids, -1 for an omitted optional input */
	int32_t *out;		/* value ids, -1 for an omitted optional output */
	uint32_t n_implicit;
	uint32_t *implicit;	/* outer values its bodies read */
	uint32_t n_bodies;
	uint32_t *bodies;	/* graph indexes */
	bool unknown_op;	/* inference does not know it */
	bool is_const;		/* every output constant (folded) */
};

struct md_graph {
	const Onnx__GraphProto *p;
	int32_t parent;		/* graph index, -1 for the main graph */
	int32_t owner;		/* node whose attribute it is, -1 */
	uint32_t n_nodes;
	uint32_t *order;	/* node ids in execution order */
	uint32_t n_inputs, n_outputs;
	uint32_t *inputs;	/* formal inputs (not initializers) */
	uint32_t *outputs;
};

struct md_model {
	Onnx__ModelProto *proto;
	int64_t ir_version;
	uint32_t n_values, cap_values;
	struct md_value *values;
	uint32_t n_nodes, cap_nodes;
	struct md_node *nodes;
	uint32_t n_graphs, cap_graphs;
	struct md_graph *graphs;
	/* Size data-dependent outputs at the most their inputs allow
	 * (ortmem-plan --upper-bounds), instead of leaving them unknown. */
	bool upper_bounds;
	char err[MD_ERR_LEN];
};

/* onnx_load.c */
int md_load_file(const char *path, Onnx__ModelProto **out, char *err,
		 size_t errlen);
int md_load_mem(const uint8_t *buf, size_t len, Onnx__ModelProto **out,
		char *err, size_t errlen);
void md_proto_free(Onnx__ModelProto *m);

/* model_build.c */
int md_build(struct md_model *m, Onnx__ModelProto *proto);
void md_free(struct md_model *m);
int md_find(const struct md_model *m, uint32_t graph, const char *name);
/* How messages name node @nid: its name, else its first output's, else "". */
const char *md_node_label(const struct md_model *m, uint32_t nid);

/* tensor_data.c */
int md_elem_bits(int32_t elem);
bool md_elem_is_float(int32_t elem);
int md_value_bytes(const struct md_value *v, uint64_t *bytes);
int md_elements(const struct md_value *v, uint64_t *count);
int md_set_from_tensor(struct md_model *m, struct md_value *v,
		       const Onnx__TensorProto *t);
int md_set_data(struct md_value *v, uint32_t n, const int64_t *i,
		const double *f);
void md_drop_data(struct md_value *v);
int md_err(struct md_model *m, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Pins of symbolic input dims: --dim NAME:AXIS=N. */
struct md_pin {
	const char *input;
	int axis;
	int64_t value;
};

/* shape.c */
int md_infer(struct md_model *m, const struct md_pin *pins, size_t n_pins);
int md_infer_graph(struct md_model *m, uint32_t graph, const struct md_pin *pins,
		   size_t n_pins);

#endif /* ORTMEM_PLAN_MODEL_H */
