/* SPDX-License-Identifier: MIT */
/*
 * tools/run/model.h - ortmem-run's model: a stack of MLP blocks
 * x + W2 gelu(W1 x + b1) + b2 in fp32, its weights file and its numerics.
 *
 * The weights file: a 64 KiB header block, then one record per layer,
 * W1 [ffn x hidden], b1 [ffn], W2 [hidden x ffn], b2 [hidden] (little-endian
 * fp32, row-major), each record padded to a multiple of 64 KiB so that every
 * layer is whole checksum blocks and O_DIRECT-aligned.
 */
#ifndef ORTMEM_TOOLS_RUN_MODEL_H
#define ORTMEM_TOOLS_RUN_MODEL_H

#include <signal.h>
#include <stdint.h>

#include <ortmem/wfile.h>

#define MODEL_MAX_LAYERS 4096u
#define MODEL_MAX_DIM 65536u
/* Header size, layer alignment and checksum block. */
#define MODEL_BLOCK (64u << 10)

struct model_cfg {
	uint32_t layers;
	uint32_t hidden;
	uint32_t ffn;
	uint32_t seed;
};

uint64_t model_layer_bytes(const struct model_cfg *c);
uint64_t model_layer_offset(const struct model_cfg *c, uint32_t layer);
uint64_t model_file_bytes(const struct model_cfg *c);

/* Write the weights file and its checksum list; exit status (0, 1, 130). */
int model_create(const struct model_cfg *c, const char *path,
		 volatile sig_atomic_t *interrupted);
/* Read and check the header of an open weights file into @c; 0 or 1
 * (after saying what is wrong). */
int model_read_header(struct ortmem_wfile *wf, struct model_cfg *c);

/* The input x_0 [batch x hidden], from the seed. */
void model_input(const struct model_cfg *c, uint32_t batch, float *x);
/* One block, y = x + W2 gelu(W1 x + b1) + b2, in two steps (the planner's
 * two nodes): h [batch x ffn] = gelu(W1 x + b1), then y from x and h; @w
 * is the layer's record. */
void model_fc1(const struct model_cfg *c, uint32_t batch, const uint8_t *w,
	       const float *x, float *h);
void model_fc2(const struct model_cfg *c, uint32_t batch, const uint8_t *w,
	       const float *x, const float *h, float *y);
/* A long skip connection: y += s ([batch x hidden] each). */
void model_skip_add(const struct model_cfg *c, uint32_t batch, const float *s,
		    float *y);
/* FNV-1a of @n bytes: the output's identity. */
uint64_t model_hash(const void *p, uint64_t n);

#endif /* ORTMEM_TOOLS_RUN_MODEL_H */
