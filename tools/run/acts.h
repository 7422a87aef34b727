/* SPDX-License-Identifier: MIT */
/*
 * tools/run/acts.h - ortmem-run's activations, placed by the planner: x_0
 * (made by the input node), then per layer h_l = fc1(x_l) and x_{l+1} =
 * fc2(h_l, x_l); x_L is the output.  One arena, at the offsets the plan
 * gives each value.
 */
#ifndef ORTMEM_TOOLS_RUN_ACTS_H
#define ORTMEM_TOOLS_RUN_ACTS_H

#include <stdint.h>

#include <ortmem/ortmem.h>

#include "model.h"

struct acts {
	struct ortmem_plan *plan;
	uint32_t *x, *h;	/* value ids */
	uint64_t xb, hb;	/* their sizes */
	uint64_t arena;
};

/* Plan the activations of @c at @batch rows: 0 or a negative code. */
int acts_plan(const struct model_cfg *c, uint32_t batch, struct acts *a);
/* Where value @v lies in @arena. */
float *act_ptr(const struct acts *a, void *arena, uint32_t v);
void acts_free(struct acts *a);

#endif /* ORTMEM_TOOLS_RUN_ACTS_H */
