// SPDX-License-Identifier: MIT
/*
 * ortmem-run's activations, placed by the planner (see acts.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "acts.h"

static int add_node(struct acts *a, const uint32_t *in, uint32_t n_in,
		    uint32_t out)
{
	struct act_node *nd = &a->node[a->n_nodes];
	int ret = ortmem_plan_add_node(a->plan, in, n_in, &out, 1);
	uint32_t i;

	if (ret < 0)
		return ret;
	nd->n_in = n_in;
	for (i = 0; i < n_in; i++)
		nd->in[i] = in[i];
	nd->out = out;
	a->n_nodes++;
	return 0;
}

static int add_values(const struct model_cfg *c, struct acts *a)
{
	uint32_t l;
	int v;

	for (l = 0; l <= c->layers; l++) {
		v = ortmem_plan_add_value(a->plan, a->xb,
					  l == c->layers ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (v < 0)
			return v;
		a->x[l] = (uint32_t)v;
		if (l == c->layers)
			break;
		v = ortmem_plan_add_value(a->plan, a->hb, 0);
		if (v < 0)
			return v;
		a->h[l] = (uint32_t)v;
	}
	a->n_values = 2 * c->layers + 1;
	return 0;
}

static int add_nodes(const struct model_cfg *c, struct acts *a)
{
	uint32_t l, in[ACTS_MAX_IN];
	int ret;

	ret = add_node(a, NULL, 0, a->x[0]);
	for (l = 0; !ret && l < c->layers; l++) {
		ret = add_node(a, &a->x[l], 1, a->h[l]);
		in[0] = a->h[l];
		in[1] = a->x[l];
		in[2] = a->skip && l >= a->skip ? a->x[l - a->skip] : 0;
		if (!ret)
			ret = add_node(a, in, a->skip && l >= a->skip ? 3 : 2, a->x[l + 1]);
	}
	return ret;
}

/* Value @v's offset in the arena at @step: the resident interval that
 * holds it at @step, when it is sent off between steps or moved within
 * the arena (ortmem_plan_staging_offset()), else its one offset there. */
static int arena_off(const struct acts *a, uint32_t v, uint32_t step,
		     uint64_t *off)
{
	int tier = ortmem_plan_offset(a->plan, v, off), ret;

	if (tier < 0)
		return tier;
	ret = ortmem_plan_staging_offset(a->plan, v, step, off);
	/* -ENOENT on the device: a value that never moves, at the offset
	 * ortmem_plan_offset() gave. */
	return tier == ORTMEM_TIER_DEVICE && ret == -ENOENT ? 0 : ret;
}

uint64_t act_len(const struct acts *a, uint32_t v)
{
	return v % 2 ? a->hb : a->xb;	/* x_0, h_0, x_1, h_1, ... */
}

static int inconsistent(uint32_t v, const char *why)
{
	fprintf(stderr, "ortmem-run: the planner's plan puts value %u %s (a planner bug; run without --act-budget)\n",
		v, why);
	return -EPROTO;
}

/* Where every step finds its values, and where the values sent off the
 * arena live in their home; checked against the arenas' sizes. */
static int locate(struct acts *a)
{
	uint32_t s, i, v;
	int ret;

	for (v = 0; v < a->n_values; v++) {
		uint64_t off = 0;
		int tier = ortmem_plan_offset(a->plan, v, &off);

		if (tier < 0)
			return tier;
		a->home_off[v] = UINT64_MAX;
		a->tier[v] = (int8_t)tier;
		if (tier == ORTMEM_TIER_HOST) {
			if (off > a->home || act_len(a, v) > a->home - off)
				return inconsistent(v, "outside the host arena");
			a->home_off[v] = off;
		}
	}
	for (s = 0; s < a->n_nodes; s++) {
		struct act_node *nd = &a->node[s];

		for (i = 0; i < nd->n_in; i++) {
			nd->in_len[i] = act_len(a, nd->in[i]);
			ret = arena_off(a, nd->in[i], s, &nd->in_off[i]);
			if (ret)
				return ret;
			if (nd->in_off[i] > a->arena || nd->in_len[i] > a->arena - nd->in_off[i])
				return inconsistent(nd->in[i], "outside the arena");
		}
		nd->out_len = act_len(a, nd->out);
		ret = arena_off(a, nd->out, s, &nd->out_off);
		if (ret)
			return ret;
		if (nd->out_off > a->arena || nd->out_len > a->arena - nd->out_off)
			return inconsistent(nd->out, "outside the arena");
	}
	return 0;
}

/* Solve @a's graph, then size its arenas and locate every value. */
static int acts_solve(struct acts *a)
{
	int ret = ortmem_plan_solve(a->plan) ?: ortmem_plan_stats(a->plan, &a->stats);

	if (ret)
		return ret;
	a->arena = a->stats.arena[ORTMEM_TIER_DEVICE];
	a->home = a->stats.arena[ORTMEM_TIER_HOST];
	a->disk = a->stats.arena[ORTMEM_TIER_DISK];
	return locate(a);
}

int acts_plan(const struct model_cfg *c, uint32_t batch, uint32_t skip,
	      uint64_t budget, uint64_t host_budget, struct acts *a)
{
	/* The compute tier only ("device"), unless a budget sends values off
	 * it: then their home is the planner's host tier, and the disk's
	 * under a host budget. */
	ORTMEM_OPTS(ortmem_plan_opts, po, .tiers = 1u << ORTMEM_TIER_DEVICE,
		    .max_iterations = 1000, .time_budget_us = 200000,
		    .budget = { budget, host_budget, 0 });
	int ret;

	if (budget) {
		po.tiers |= 1u << ORTMEM_TIER_HOST;
		/* Moves within the arena allowed: xfer_move.c runs them, and
		 * arena_off() reads the offsets of values that move. */
		po.flags |= ORTMEM_PLAN_F_VALIDATE;
	}
	if (budget && host_budget)
		po.tiers |= 1u << ORTMEM_TIER_DISK;
	a->xb = (uint64_t)batch * c->hidden * 4;
	a->hb = (uint64_t)batch * c->ffn * 4;
	a->skip = skip;
	a->stats.sz = sizeof(a->stats);
	a->x = calloc(c->layers + 1, sizeof(*a->x));
	a->h = calloc(c->layers, sizeof(*a->h));
	a->node = calloc(2 * c->layers + 1, sizeof(*a->node));
	a->home_off = calloc(2 * c->layers + 1, sizeof(*a->home_off));
	a->tier = calloc(2 * c->layers + 1, sizeof(*a->tier));
	if (!a->x || !a->h || !a->node || !a->home_off || !a->tier)
		return -ENOMEM;
	ret = ortmem_plan_new(&po, &a->plan);
	if (!ret)
		ret = add_values(c, a);
	if (!ret)
		ret = add_nodes(c, a);
	return ret ?: acts_solve(a);
}

float *act_in(const struct acts *a, void *arena, uint32_t step, uint32_t i)
{
	return (float *)((char *)arena + a->node[step].in_off[i]);
}

float *act_out(const struct acts *a, void *arena, uint32_t step)
{
	return (float *)((char *)arena + a->node[step].out_off);
}

void acts_free(struct acts *a)
{
	ortmem_plan_free(a->plan);
	free(a->x);
	free(a->h);
	free(a->node);
	free(a->home_off);
	free(a->tier);
}
