/* SPDX-License-Identifier: MIT */
/*
 * tools/run/acts.h - ortmem-run's activations, placed by the planner.
 *
 * The graph: step 0 makes x_0 (the input); layer l is two steps, 1 + 2l
 * (h_l = fc1(x_l)) and 2 + 2l (x_{l+1} = fc2(h_l, x_l)); x_L is the
 * output.  With long skip connections of span K (U-Net style), step
 * 2 + 2l of every layer l >= K also reads x_{l-K} and adds it, so x_j
 * lives from its layer to layer j + K.
 *
 * The planner's "device" tier is the arena ortmem-run computes in (on the
 * GPU when there is one, else in the host tier); under an activation
 * budget the values it sends off the arena live in their home, the
 * planner's host tier (host memory), or under a budget for that too, its
 * disk tier (the spill engine), between the steps that touch them, moved
 * by the transfer schedule (xfer.h).
 */
#ifndef ORTMEM_TOOLS_RUN_ACTS_H
#define ORTMEM_TOOLS_RUN_ACTS_H

#include <stdint.h>

#include <ortmem/ortmem.h>

#include "model.h"

#define ACTS_MAX_IN 3

/* One step: the values it reads and the one it writes, with their sizes
 * and their offsets in the arena at that step. */
struct act_node {
	uint32_t n_in;
	uint32_t in[ACTS_MAX_IN];
	uint32_t out;
	uint64_t in_off[ACTS_MAX_IN], in_len[ACTS_MAX_IN];
	uint64_t out_off, out_len;
};

struct acts {
	struct ortmem_plan *plan;
	uint32_t *x, *h;	/* value ids */
	uint64_t xb, hb;	/* their sizes */
	uint32_t skip;		/* span of the long skips; 0: none */
	uint64_t arena;		/* the compute arena's bytes */
	uint64_t home;		/* the home's bytes in host memory */
	uint64_t disk;		/* and on disk (the planner's disk arena) */
	uint32_t n_nodes, n_values;
	struct act_node *node;	/* per step */
	uint64_t *home_off;	/* per value; UINT64_MAX: not in host memory */
	int8_t *tier;		/* per value: ORTMEM_TIER_* of its home */
	struct ortmem_plan_stats stats;
};

/*
 * Plan the activations of @c at @batch rows, with skips of span @skip (0:
 * none), at most @budget bytes of arena (0: no limit, one tier) and
 * @host_budget bytes of home in host memory (0: no limit; else the disk
 * takes the rest): 0, or a negative code with the planner's detailed error
 * (-EPROTO: a plan that contradicts itself, said on stderr).
 */
int acts_plan(const struct model_cfg *c, uint32_t batch, uint32_t skip,
	      uint64_t budget, uint64_t host_budget, struct acts *a);
/* The bytes of value @v (x_l or h_l: by its id's parity). */
uint64_t act_len(const struct acts *a, uint32_t v);
/* Input @i and the output of step @step in @arena. */
float *act_in(const struct acts *a, void *arena, uint32_t step, uint32_t i);
float *act_out(const struct acts *a, void *arena, uint32_t step);
void acts_free(struct acts *a);

#endif /* ORTMEM_TOOLS_RUN_ACTS_H */
