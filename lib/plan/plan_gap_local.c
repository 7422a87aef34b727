// SPDX-License-Identifier: MIT
/*
 * The gap placement's local search (the placement is in plan_gaps.c;
 * Documentation/lib/placement.rst, "Local search"): in the time every
 * other candidate left, passes that follow the best plan so far with a
 * few of its gaps flipped, kept when cheaper.
 *
 * An allocator's pass decodes a guide (the gaps to send off) into a plan
 * that fits, sending off more where a step finds no room.  On small graphs
 * at 60-90 % of their bound the other candidates all run within about
 * two thirds of the time budget, and their best can be far above Belady's
 * bytes (a 40-node DAG at 90 %: 2x): there is no other guide left to
 * follow but the best plan itself.  Flipping one to three of its gaps (an
 * off one kept on the device, or a kept one sent off to make room
 * elsewhere) and following that is a step of a local search whose moves
 * the allocator repairs.  Half the passes also take the best plan's
 * offsets as their hint, so the flip changes the layout near it only;
 * the other half seat from scratch, a larger step.  The flips and rules
 * are drawn from a fixed seed: a search of the same length makes the
 * same plan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_gaps.h"

/* xorshift64* (Vigna): plenty for drawing flips, and the same sequence
 * on every platform. */
static uint64_t gl_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

/* The rule a pass follows its guide under, from the draw @r: either
 * seating, either eviction rule, with or without slides. */
static int gl_rule(uint64_t r)
{
	static const int rules[] = { ORTMEM__PLAN_ENDFIT, 1 | ORTMEM__PLAN_ENDFIT, 1, 0 };
	static const int slides[] = { 0, ORTMEM__PLAN_NOSLIDE, ORTMEM__PLAN_PINSLIDE };

	return rules[r & 3] | slides[(r >> 2) % 3];
}

/* Passes in a row that find nothing cheaper before the search gives up,
 * so that under a generous time budget it ends on its own.  In the default
 * 10 ms a small graph runs 30-270 passes; stopping after 64 or 32 idle
 * ones cost the small DAGs 0.8-1.0 % of their bytes in the geometric mean
 * (placement-history-2.rst, "Twenty-fifth session").  Under
 * max_iterations (a search bounded by candidates, the same plan on every
 * run) the search runs that many passes at most: the tests solve
 * thousands of small graphs so, under sanitizers too. */
#define GL_PATIENCE 256
uint32_t ortmem__plan_local_patience = GL_PATIENCE;
/* Flips per guide, at most. */
#define GL_FLIPS 3
/* Draws for a gap of the wanted kind (off or kept) before any will do. */
#define GL_DRAWS 8

/* @g: the best plan's off gaps with one to GL_FLIPS of them flipped, each
 * as likely to keep an off gap on the device as to send a kept one off. */
static void gl_perturb(const struct gap_ctx *c, const struct gp_win *w, uint8_t *g,
		       uint64_t *seed)
{
	uint32_t nt = c->plan->touch_idx[c->plan->n_bufs];
	uint32_t f, n = 1 + (uint32_t)(gl_next(seed) % GL_FLIPS);

	memcpy(g, w->off, nt);
	for (f = 0; f < n; f++) {
		bool want_off = gl_next(seed) & 1;
		uint32_t i = 0, d;

		for (d = 0; d < GL_DRAWS; d++) {
			i = (uint32_t)(gl_next(seed) % c->n_gaps);
			if (!!g[c->gaps[i].k] == want_off)
				break;
		}
		g[c->gaps[i].k] ^= 1;
	}
}

/*
 * The best plan closed as the winner is (plan_gaps.c: off gaps kept where
 * the intervals in the way move out), before the search: the search takes
 * the time that closing had at the end, and where the closing is worth
 * more than the search finds, the plan lost it (a 30-node DAG at 60 %:
 * 22.0 MiB where it had moved 20.6; a 70-node one at 40 %: 165.2 where
 * 161.0).  The search then beats the closed plan or keeps it.  -ENOMEM
 * or 0.
 */
static int gl_close_best(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	uint64_t now = ortmem__now_ns();

	if (ortmem__plan_close_gaps_mv(plan, c->asz, w->off, w->toff, w->mv,
				       ORTMEM__PLAN_CLOSE_MOVE, w->end > now ? w->end : 1))
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches",
					 plan->touch_idx[plan->n_bufs]);
	w->cost = ortmem__plan_gap_cost(plan, w->off) +
		  ortmem__plan_move_weigh(plan, ortmem__plan_move_bytes(plan, w->off, w->mv));
	w->res.height = ortmem__plan_height(plan, c->asz, w->toff);
	w->res.optimal = false;
	return 0;
}

int ortmem__plan_gp_local(struct gap_ctx *c, struct gp_win *w)
{
	struct ortmem_plan *plan = c->plan;
	uint32_t nt = plan->touch_idx[plan->n_bufs], j, idle = 0;
	uint64_t passes = 0, most = plan->o.max_iterations ? plan->o.max_iterations : UINT64_MAX;
	uint32_t batch = w->threads < w->n_ch ? w->threads : w->n_ch;
	uint64_t seed = 0x9E3779B97F4A7C15ULL ^ nt, *hint;
	uint8_t *guides;
	int ret = 0;

	/* nothing leaves the device: no plan moves fewer bytes */
	if (!c->n_gaps || !w->cost || w->cost == UINT64_MAX)
		return 0;
	ret = gl_close_best(c, w);
	if (ret || !w->cost || !ortmem__plan_gp_room(w))
		return ret;
	batch = batch ? batch : 1;
	guides = malloc((size_t)nt * batch + 1);
	hint = malloc(sizeof(*hint) * (nt + 1));
	if (!guides || !hint) {
		free(guides);
		free(hint);
		return ortmem__err_plain(-ENOMEM, "planner: cannot place %u touches", nt);
	}
	while (!ret && w->cost && idle < ortmem__plan_local_patience && passes < most &&
	       ortmem__plan_gp_room(w)) {
		uint64_t before = w->cost;

		/* the passes of a batch read it while the best may change */
		memcpy(hint, w->toff, sizeof(*hint) * nt);
		for (j = 0; j < batch; j++) {
			uint8_t *g = guides + (size_t)j * nt;
			uint64_t r;

			gl_perturb(c, w, g, &seed);
			r = gl_next(&seed);
			ortmem__plan_gp_chain_set(&w->ch[j], g, r & 8 ? hint : NULL,
						  gl_rule(r), -1, 0);
		}
		ret = ortmem__plan_gp_chains(c, w, w->ch, batch);
		idle = w->cost < before ? 0 : idle + batch;
		passes += batch;
	}
	free(guides);
	free(hint);
	return ret;
}
