// SPDX-License-Identifier: MIT
/*
 * ortmem-run's activations, placed by the planner (see acts.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "acts.h"

/* x_0 (made by the input node), then per layer h_l = fc1(x_l) and
 * x_{l+1} = fc2(h_l, x_l); x_L is the output. */
int acts_plan(const struct model_cfg *c, uint32_t batch, struct acts *a)
{
	/* One tier, the planner's compute tier ("device"): ortmem-run puts
	 * that one arena in the device tier with a GPU, else the host's. */
	ORTMEM_OPTS(ortmem_plan_opts, po, .tiers = 1u << ORTMEM_TIER_DEVICE,
		    .max_iterations = 1000, .time_budget_us = 200000);
	ORTMEM_OPTS(ortmem_plan_stats, ps);
	uint64_t xb = (uint64_t)batch * c->hidden * 4, hb = (uint64_t)batch * c->ffn * 4;
	uint32_t l, in[2];
	int v, ret;

	a->xb = xb;
	a->hb = hb;
	a->x = calloc(c->layers + 1, sizeof(*a->x));
	a->h = calloc(c->layers, sizeof(*a->h));
	if (!a->x || !a->h)
		return -ENOMEM;
	ret = ortmem_plan_new(&po, &a->plan);
	if (ret)
		return ret;
	for (l = 0; l <= c->layers; l++) {
		v = ortmem_plan_add_value(a->plan, xb,
					  l == c->layers ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (v < 0)
			return v;
		a->x[l] = (uint32_t)v;
		if (l == c->layers)
			break;
		v = ortmem_plan_add_value(a->plan, hb, 0);
		if (v < 0)
			return v;
		a->h[l] = (uint32_t)v;
	}
	ret = ortmem_plan_add_node(a->plan, NULL, 0, &a->x[0], 1);
	for (l = 0; ret >= 0 && l < c->layers; l++) {
		ret = ortmem_plan_add_node(a->plan, &a->x[l], 1, &a->h[l], 1);
		in[0] = a->h[l];
		in[1] = a->x[l];
		if (ret >= 0)
			ret = ortmem_plan_add_node(a->plan, in, 2, &a->x[l + 1], 1);
	}
	if (ret < 0)
		return ret;
	ret = ortmem_plan_solve(a->plan);
	if (!ret)
		ret = ortmem_plan_stats(a->plan, &ps);
	a->arena = ps.arena[ORTMEM_TIER_DEVICE];
	return ret;
}

float *act_ptr(const struct acts *a, void *arena, uint32_t v)
{
	uint64_t off = 0;

	if (ortmem_plan_offset(a->plan, v, &off) != ORTMEM_TIER_DEVICE)
		abort();	/* the plan was asked for one tier only */
	return (float *)((char *)arena + off);
}

void acts_free(struct acts *a)
{
	ortmem_plan_free(a->plan);
	free(a->x);
	free(a->h);
}
