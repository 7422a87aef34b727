// SPDX-License-Identifier: MIT
/*
 * A plan laid out by compaction (plan_compact.c) made the plan's own: a
 * buffer may move several times between two of its touches there, where
 * the plan's arrays hold one move per gap (move_step, and the offset of
 * the touch that ends the gap).  Each move past the first in a gap splits
 * it at a waypoint: a touch of no node, at the step of the move before,
 * holding the offset that move reached.  Every reader of the touches (the
 * validator, the transfer schedule, the staging offsets, the bytes per
 * step) then sees gaps with one move each; a waypoint is never read back
 * nor written out, and no node uses the buffer there
 * (ortmem_plan_staging_offset() asks the node).
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

/* The gap of buffer @b (a touch index) that a move before step @s lies
 * in, from touch @k on: its last touch before @s. */
static uint32_t wp_gap_of(const struct ortmem_plan *plan, uint32_t b, uint32_t k, uint32_t s)
{
	while (k + 1 < plan->touch_idx[b + 1] && plan->touch_step[k + 1] < s)
		k++;
	return k;
}

/* The moves, by buffer and then step (stable: they were made in step
 * order); *@idx their CSR over buffers. */
static struct ortmem__plan_cmove *wp_by_buf(const struct ortmem_plan *plan,
					    const struct ortmem__plan_compacted *c, uint32_t **idx)
{
	struct ortmem__plan_cmove *mv = malloc(sizeof(*mv) * (c->n_mv + 1));
	uint32_t i, b;

	*idx = calloc(plan->n_bufs + 2, sizeof(**idx));
	if (!mv || !*idx) {
		free(mv);
		free(*idx);
		*idx = NULL;	/* the caller frees it too */
		return NULL;
	}
	for (i = 0; i < c->n_mv; i++)
		if (c->mv[i].buf != UINT32_MAX)	/* not dropped */
			(*idx)[c->mv[i].buf + 2]++;
	for (b = 2; b <= plan->n_bufs + 1; b++)
		(*idx)[b] += (*idx)[b - 1];
	for (i = 0; i < c->n_mv; i++)
		if (c->mv[i].buf != UINT32_MAX)
			mv[(*idx)[c->mv[i].buf + 1]++] = c->mv[i];
	return mv;
}

/* The new touch arrays of the plan, with room for @nt touches. */
struct wp_touches {
	uint32_t *idx, *step, *ms;
	uint64_t *off;
	uint8_t *gap;
};

static void wp_touches_free(struct wp_touches *t)
{
	free(t->idx);
	free(t->step);
	free(t->ms);
	free(t->off);
	free(t->gap);
}

/* Buffer @b's touches with a waypoint for each move past the first in a
 * gap: touch @k's gap moves before the steps of @mv[0 .. @n), the
 * waypoint after move i at its step, where it arrived. */
static void wp_put_buf(const struct ortmem_plan *plan, const struct ortmem__plan_compacted *c,
		       struct wp_touches *t, uint32_t b, const struct ortmem__plan_cmove *mv,
		       uint32_t n, uint32_t *at)
{
	uint32_t k, i = 0;

	t->idx[b] = *at;
	for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
		uint32_t j = (*at)++;

		t->step[j] = plan->touch_step[k];
		t->off[j] = c->toff[k];
		t->gap[j] = c->off[k];
		t->ms[j] = 0;
		for (; i < n && wp_gap_of(plan, b, k, mv[i].step) == k; i++) {
			if (t->ms[j]) {	/* a second move: a waypoint at the first's step */
				uint32_t w = (*at)++;

				t->step[w] = t->ms[j];
				t->off[w] = mv[i - 1].to;
				t->gap[w] = 0;
				j = w;
			}
			t->ms[j] = mv[i].step;
		}
	}
}

int ortmem__plan_compact_apply(struct ortmem_plan *plan, struct ortmem__plan_compacted *c,
			       int home)
{
	uint32_t nb = plan->n_bufs, nt = plan->touch_idx[nb], *idx, b, k, at = 0;
	struct ortmem__plan_cmove *mv = wp_by_buf(plan, c, &idx);
	struct wp_touches t = { 0 };
	uint32_t extra = c->n_mv;	/* at most one waypoint a move */

	t.idx = malloc(sizeof(*t.idx) * (nb + 1));
	t.step = malloc(sizeof(*t.step) * (nt + extra + 1));
	t.ms = malloc(sizeof(*t.ms) * (nt + extra + 1));
	t.off = malloc(sizeof(*t.off) * (nt + extra + 1));
	t.gap = malloc(nt + extra + 1);
	if (!mv || !t.idx || !t.step || !t.ms || !t.off || !t.gap) {
		free(mv);
		free(idx);
		wp_touches_free(&t);
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	}
	for (b = 0; b < nb; b++)
		wp_put_buf(plan, c, &t, b, mv + idx[b], idx[b + 1] - idx[b], &at);
	t.idx[nb] = at;
	free(mv);
	free(idx);
	free(plan->touch_idx);
	free(plan->touch_step);
	free(plan->touch_off);
	free(plan->gap_off);
	free(plan->move_step);
	plan->touch_idx = t.idx;
	plan->touch_step = t.step;
	plan->touch_off = t.off;
	plan->gap_off = t.gap;
	plan->move_step = t.ms;
	for (b = 0; b < nb; b++) {
		struct pl_buf *pb = &plan->bufs[b];

		pb->tier = ORTMEM_TIER_DEVICE;
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			if (plan->gap_off[k])
				pb->tier = home;
		if (pb->tier == ORTMEM_TIER_DEVICE)
			pb->off = plan->touch_idx[b] < plan->touch_idx[b + 1] ?
				  plan->touch_off[plan->touch_idx[b]] : 0;
	}
	return 0;
}
