/* SPDX-License-Identifier: MIT */
/*
 * lib/plan/plan_gaps.h - the gap placement's context, shared by its sweep
 * and candidates (plan_gaps.c) and its branch and bound (plan_gap_exact.c);
 * Documentation/lib/placement.rst.
 */
#ifndef ORTMEM_LIB_PLAN_GAPS_H
#define ORTMEM_LIB_PLAN_GAPS_H

#include "plan_internal.h"

struct gap {
	uint32_t k;		/* touch that opens it */
	uint32_t buf;
	uint32_t first;		/* first step inside it */
	uint32_t end;		/* the next touch, or the buffer's end */
	bool tail;		/* no touch ends it: no read-back */
};

struct gap_ctx {
	struct ortmem_plan *plan;
	uint64_t budget;
	uint64_t *asz;		/* aligned size per buffer */
	struct gap *gaps;
	uint32_t n_gaps;
	uint32_t *by_first;	/* gap ids, CSR over their first step */
	uint32_t *by_first_idx;
	uint64_t *base;		/* profile with every gap kept */
	uint64_t *prof;
	uint64_t *bud;		/* budget per step */
	uint64_t *foot;		/* bytes the step itself touches */
	uint64_t max_foot;	/* the largest of them */
	int64_t *vals;		/* per step: scratch for the range tree */
	struct plan_rtree over;	/* per step: bytes kept over its budget */
	uint64_t span;		/* the gaps' steps, summed */
	bool dense;		/* span past GAP_DENSE_SPAN (plan_gap_ctx.c) */
	bool near;		/* span within GAP_NEAR_SPAN (plan_gap_ctx.c) */
	uint32_t *active;	/* live gaps; a heap under Belady's rule */
	bool *written;
	uint8_t *off;		/* per touch: the gap it opens is off */
	uint8_t *best;
	uint32_t *order;	/* evictions of one sweep, in order */
	int rule;		/* the rule of c->best */
	bool searched;		/* the last ortmem__plan_gap_pack() searched */
};

/* Victim rules of the sweeps (plan_gap_sweep.c): 0 is Belady's. */
#define GAP_RULES 4

/* plan_gap_ctx.c */
int ortmem__plan_gap_alloc(struct gap_ctx *c);
int ortmem__plan_gap_footprint(struct gap_ctx *c, uint64_t *foot);
void ortmem__plan_gap_free(struct gap_ctx *c);

/* One sweep under @rule: its plan in c->off, its cost returned. */
uint64_t ortmem__plan_gap_sweep(struct gap_ctx *c, int rule);
/* Every rule's sweep; the cheapest plan in c->best (its rule c->rule). */
void ortmem__plan_gap_place(struct gap_ctx *c);

/* Past this many device intervals the packer's search is not run. */
#define GAP_SEARCH_MAX 2048
/* Slack levels: sweeps under 1/128, 1/64, ... of the budget less. */
#define GAP_SLACKS 4

/* Pack the resident intervals of c->best until @deadline (0: the first
 * heuristic only), as a decision at the budget where @decide; offsets to
 * plan->touch_off (plan_gap_pack.c).  0 or -ENOMEM (error set). */
int ortmem__plan_gap_pack(struct gap_ctx *c, uint64_t deadline, bool decide,
			  struct pk_result *res);

/* Improve c->best (costing @best) by branch and bound over the sweep's
 * choices, on small models, until @deadline (plan_gap_exact.c). */
void ortmem__plan_gap_exact(struct gap_ctx *c, uint64_t best, uint64_t deadline);

#endif /* ORTMEM_LIB_PLAN_GAPS_H */
