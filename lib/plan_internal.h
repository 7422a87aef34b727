/* SPDX-License-Identifier: MIT */
/*
 * lib/plan_internal.h - the planner's private structures, shared by
 * lib/plan_*.c.  Never installed.
 */
#ifndef ORTMEM_LIB_PLAN_INTERNAL_H
#define ORTMEM_LIB_PLAN_INTERNAL_H

#include <ortmem/plan.h>

#include "internal.h"

/* ---- offset packing (plan_pack.c, plan_search.c, plan_bnb.c) ---- */

/* A buffer to pack: live over [lo, hi), @size already aligned. */
struct pk_item {
	uint64_t lo;
	uint64_t hi;
	uint64_t size;
};

struct pk_opts {
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0: no search at all */
	uint64_t max_iter;	/* 0: unlimited */
	uint64_t seed;
	bool compact_only;	/* tests: heights from LB up, compact search only */
};

struct pk_result {
	uint64_t height;
	uint64_t lb;
	uint64_t iters;
	bool optimal;
};

/* Internal state of one packing run. */
struct packer {
	uint32_t n;
	const struct pk_item *it;
	uint64_t lb;
	/* conflict lists (CSR): conf[cidx[i] .. cidx[i+1]) */
	uint32_t *cidx;
	uint32_t *conf;
	bool have_conf;
	/* current order, its inverse, offsets, prefix heights */
	uint32_t *order;
	uint32_t *rank;
	uint64_t *off;
	uint64_t *hpre;
	/* order, rank, off and hpre are one placement by place_from() */
	bool placed;
	/* scratch shared by the phases: n (t32: n + 1) entries each */
	uint64_t *t64[3];
	uint32_t *t32[2];
	/* scratch for gap search */
	uint64_t (*gap)[2];
	/* best so far */
	uint32_t *best_order;
	uint64_t *best_off;
	uint64_t best_h;
	uint64_t iters;
	uint64_t rng;
	struct pk_opts opts;
};

/* The packer's deterministic generator (xorshift64*), seeded by opts. */
static inline uint64_t ortmem__pk_rand(struct packer *pk)
{
	pk->rng ^= pk->rng >> 12;
	pk->rng ^= pk->rng << 25;
	pk->rng ^= pk->rng >> 27;
	return pk->rng * 0x2545f4914f6cdd1dull;
}

/* An item that takes room: a size and a non-empty lifetime. */
static inline bool ortmem__pk_live(const struct pk_item *x)
{
	return x->size && x->hi > x->lo;
}

uint64_t ortmem__now_ns(void);
/* plan_sort.c: stable sort of @ids by key[id] (radix); @tmp holds n. */
void ortmem__pk_sort_by(uint32_t *ids, uint32_t n, const uint64_t *key,
			uint32_t *tmp);
/*
 * plan_sort.c: sections of time for the exact searches.  Sort and dedupe
 * the @nt event times in @t, returning how many distinct ones remain;
 * then the index of the first time >= @v among them.
 */
uint32_t ortmem__pk_section_times(uint64_t *t, uint32_t nt);
uint32_t ortmem__pk_section_of(const uint64_t *t, uint32_t n, uint64_t v);
uint64_t ortmem__pk_lower_bound(const struct pk_item *it, uint32_t n);
int ortmem__pack(const struct pk_item *it, uint32_t n,
		 const struct pk_opts *opts, uint64_t *off,
		 struct pk_result *res);

/* plan_pack.c internals used by the search */
uint64_t ortmem__pk_place_from(struct packer *pk, uint32_t from);
bool ortmem__pk_out_of_time(struct packer *pk);
void ortmem__pk_keep_if_best(struct packer *pk, uint64_t h);
/*
 * An exact search placed the @m live items of @placed (offsets in pk->off):
 * order them first, the empty ones after, and keep it if it is the best.
 */
void ortmem__pk_keep_placed(struct packer *pk, const uint32_t *placed,
			    uint32_t m);
/* plan_search.c: local search over the order from the best plan. */
void ortmem__pk_local_search(struct packer *pk);
/* plan_decide.c: bisection on the height with a decision search; true
 * when the best height is proven optimal. */
bool ortmem__pk_decide(struct packer *pk);
/* plan_compact.c: MiniMalloc's search over compact packings under @h:
 * 1 found (kept if best), 0 proven infeasible, -1 out of budget. */
int ortmem__pk_compact(struct packer *pk, uint64_t h, uint64_t deadline,
		       uint64_t max_nodes);
/* plan_bnb.c: exact search; true when it finished (best is optimal). */
bool ortmem__pk_bnb(struct packer *pk);

/* plan_validate.c: no two items overlap in time and address. */
int ortmem__pk_check_disjoint(const struct pk_item *it, const uint64_t *off,
			      uint32_t n, uint32_t *a, uint32_t *b);

/* ---- the graph (plan_graph.c) ---- */

struct pl_value {
	uint64_t size;		/* as given; ORTMEM_PLAN_SIZE_SYMBOLIC */
	uint64_t rsize;		/* resolved at solve */
	uint32_t flags;
	int32_t view_of;	/* source value, or -1 */
	int32_t def;		/* producing node, or -1 (graph input) */
	/* computed at solve */
	int32_t root;		/* buffer owner (itself when not a view) */
	int32_t last;		/* last step reading it, or -1 */
	int32_t buf;		/* buffer index, or -1 */
	int32_t inplace_of;	/* value whose buffer it took, or -1 */
};

struct pl_node {
	uint32_t in;		/* index of its first input in plan->edges */
	uint32_t n_in;
	uint32_t out;
	uint32_t n_out;
};

struct pl_hint {
	uint32_t node;
	uint32_t out;
	uint32_t in;
};

struct pl_buf {
	uint64_t size;		/* bytes, unaligned */
	uint32_t lo;		/* live over steps [lo, hi) */
	uint32_t hi;
	uint32_t owner;		/* root value */
	uint32_t uses;		/* node reads and writes */
	int tier;
	uint64_t off;
};

struct ortmem_plan {
	struct ortmem_plan_opts o;	/* normalized: defaults filled */
	struct pl_value *vals;
	uint32_t n_vals, cap_vals;
	struct pl_node *nodes;
	uint32_t n_nodes, cap_nodes;
	uint32_t *edges;
	uint32_t n_edges, cap_edges;
	struct pl_hint *hints;
	uint32_t n_hints, cap_hints;
	ortmem_plan_size_fn size_fn;
	void *size_user;
	/* results */
	bool solved;
	struct pl_buf *bufs;
	uint32_t n_bufs;
	uint32_t *deferred;
	uint32_t n_deferred;
	/* steps each buffer is read or written at, CSR over buffers */
	uint32_t *touch_idx;
	uint32_t *touch_step;
	uint64_t *touch_off;	/* device staging offset when off-device */
	uint64_t *prefetch;	/* [step * ORTMEM_TIER_COUNT + tier] */
	uint64_t *spill;
	struct ortmem_plan_stats st;
};

int ortmem__plan_opts(struct ortmem_plan_opts *o,
		      const struct ortmem_plan_opts *in);
void ortmem__plan_reset(struct ortmem_plan *plan);
int ortmem__grow(void **arr, uint32_t *cap, uint32_t need, size_t elem);

/* plan_live.c: sizes, liveness, views, in-place -> plan->bufs. */
int ortmem__plan_liveness(struct ortmem_plan *plan);
/* plan_place.c: tiers and offsets of plan->bufs under the budgets. */
int ortmem__plan_place(struct ortmem_plan *plan);

#endif /* ORTMEM_LIB_PLAN_INTERNAL_H */
