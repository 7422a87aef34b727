/* SPDX-License-Identifier: MIT */
/*
 * lib/plan/plan_internal.h - the planner's private structures, shared by
 * the files of lib/plan/; never installed.  The planner packs offsets
 * through the packer's narrow interface, lib/pack/pack.h.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   plan_graph.c     the graph: values, nodes, views, hints, options
 *   plan_live.c      sizes, liveness, views folded, in-place hints
 *   plan_validate.c  the independent validator
 *   plan_retro.c     room made by moving resident intervals back in time
 *   plan_move.c      room made by moving residents within the device arena;
 *                    what a plan's gaps and moves cost
 *   plan_online.c    residency and offsets in one allocator's pass
 *   plan_close.c     off gaps kept on the device where their range is free
 *   plan_compact.c   a residency laid out by moving residents as often as it takes
 *   plan_waypoint.c  such a layout made the plan's: moves past a gap's first at waypoints
 *   plan_gaps.c      device residency per gap and its offsets
 *   plan_gap_ctx.c   the gaps indexed, whether the graph is dense
 *   plan_gap_sweep.c the gap sweeps under their eviction rules
 *   plan_gap_exact.c the branch and bound over the gap sweep's choices
 *   plan_gap_pass.c  the candidates' passes, in batches on the plan's threads
 *   plan_gap_slack.c the slack sweeps and the passes following them
 *   plan_gap_local.c the local search around the best plan, in the time left
 *   plan_range.c     add over a range of steps, the largest over one
 *   plan_heap.c      a binary heap of ids under the caller's order
 *   plan_pool.c      helper threads running a batch of jobs with the caller
 *   plan_place.c     tier placement and offsets under the budgets, moves per step
 *   plan_fit.c       a tier held to its budget: whole buffers sent a tier down
 *   plan_solve.c     ortmem_plan_solve(), the accessors, ortmem_plan_pack()
 *   plan_sched_xfer.c  ortmem_plan_transfers(): the transfer schedule
 */
#ifndef ORTMEM_LIB_PLAN_INTERNAL_H
#define ORTMEM_LIB_PLAN_INTERNAL_H

#include <ortmem/plan.h>

#include "internal.h"
#include "pack/pack.h"

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
	uint32_t n_vals;
	size_t cap_vals;
	struct pl_node *nodes;
	uint32_t n_nodes;
	size_t cap_nodes;
	uint32_t *edges;
	uint32_t n_edges;
	size_t cap_edges;
	struct pl_hint *hints;
	uint32_t n_hints;
	size_t cap_hints;
	ortmem_plan_size_fn size_fn;
	void *size_user;
	/* results */
	bool solved;
	uint64_t deadline_ns;	/* the solve's search ends here; 0: a budget from now */
	/* the solve's time in work the deadline stops (searches, candidates
	 * past the first plan): the rest of solve_ns is its first plan */
	uint64_t budgeted_ns;
	struct pl_buf *bufs;
	uint32_t n_bufs;
	uint32_t *deferred;
	uint32_t n_deferred;
	/* steps each buffer is read or written at, CSR over buffers */
	uint32_t *touch_idx;
	uint32_t *touch_step;
	uint64_t *touch_off;	/* device offset of the interval holding it */
	uint8_t *gap_off;	/* per touch: the gap after it is off-device */
	/* per touch: in a kept gap whose next touch has another offset, the
	 * step s (touch_step[k] < s <= touch_step[k + 1]) before which the
	 * buffer moves there (ORTMEM_PLAN_XFER_MOVE); 0 otherwise.  NULL when
	 * no buffer moves.  The old range is held over [.., s), the new one
	 * over [s, ..), and the new one must not meet, at step s - 1, a range
	 * still in use after it: another move's source, or a range that
	 * leaves the device after step s - 1 (only one whose buffer's life
	 * ends with step s - 1). */
	uint32_t *move_step;
	uint64_t *dev_move;	/* per step: bytes moved before it; NULL: none */
	uint64_t *prefetch;	/* [step * ORTMEM_TIER_COUNT + tier] */
	uint64_t *spill;
	struct ortmem_plan_stats st;
};

int ortmem__plan_opts(struct ortmem_plan_opts *o,
		      const struct ortmem_plan_opts *in);
void ortmem__plan_reset(struct ortmem_plan *plan);
/* ortmem__grow() with the planner's error when it fails. */
int ortmem__plan_grow(void **arr, size_t *cap, uint32_t need, size_t elem);

/* plan_validate.c: no two items overlap in time and address. */
int ortmem__plan_check_disjoint(const struct pk_item *it, const uint64_t *off,
				uint32_t n, uint32_t *a, uint32_t *b);
/* Does the plan hold value @v's buffer (not a graph input's, nor a view
 * of one)?  Valid once the roots are known (plan_live.c). */
static inline bool ortmem__plan_planned(const struct ortmem_plan *plan, uint32_t v)
{
	return plan->vals[plan->vals[v].root].def >= 0;
}

/* plan_live.c: sizes, liveness, views, in-place -> plan->bufs. */
int ortmem__plan_liveness(struct ortmem_plan *plan);
/* plan_inplace.c: the in-place hints that are safe and raise no step's
 * live bytes past its limit, merged into their input's buffer; all
 * together, or (@one_by_one) each checked.  0; 1: together they overrun,
 * make the buffers again and ask one by one; or an error. */
int ortmem__plan_inplace(struct ortmem_plan *plan, bool one_by_one);
/* The device budget rounded down to the device alignment: every offset the
 * placement computes from it (a range's top minus a size) stays aligned. */
static inline uint64_t ortmem__plan_dev_budget(const struct ortmem_plan *plan)
{
	return plan->o.budget[ORTMEM_TIER_DEVICE] &
	       ~(plan->o.align[ORTMEM_TIER_DEVICE] - 1);
}

/* plan_online.c: off gaps and device offsets per touch under @budget by
 * an allocator's pass, sending off the gaps @guide marks (NULL: none) and
 * more when a step finds no room; returns the arena height (UINT64_MAX:
 * no memory). */
/* @rule flag: a buffer without a hinted offset seats by its neighbours'
 * ends (ol_fit_end()), not in the tightest hole */
#define ORTMEM__PLAN_ENDFIT 0x100
/* @rule flag: where no hole holds a buffer, first try moving the residents
 * in a window's way to ranges free since their intervals began
 * (plan_retro.c), until @retro_by in ortmem__plan_online_alt() (0: no limit) */
#define ORTMEM__PLAN_RETRO 0x200
/* @rule flag: make room by moves of residents to ranges of their own
 * only, never by sliding a run of them (plan_move.c) */
#define ORTMEM__PLAN_NOSLIDE 0x400
/* @rule flag: a slide may also take a resident the step touches, moved
 * before it, and re-seat one the step seated itself (plan_move.c,
 * mv_slide_kind()) */
#define ORTMEM__PLAN_PINSLIDE 0x800
uint64_t ortmem__plan_online(const struct ortmem_plan *plan, const uint64_t *asz,
			     uint64_t budget, int rule, const uint8_t *guide,
			     const uint64_t *hint, uint8_t *off, uint64_t *toff);
uint64_t ortmem__plan_online_alt(const struct ortmem_plan *plan, const uint64_t *asz,
				 uint64_t budget, int rule, uint32_t alt,
				 const uint8_t *guide, const uint64_t *hint,
				 uint8_t *off, uint64_t *toff, uint32_t *n_win,
				 uint64_t retro_by);
/* ortmem__plan_online_alt() that may also move residents within the arena
 * where that costs less than evicting (plan_move.c): the move steps into
 * @mstep (one per touch, 0: none; NULL: never move).  Past @stop_at (0:
 * never) it stops half way and returns ORTMEM__PLAN_STOPPED.  *@twin_same
 * (when not NULL): the pass under the other eviction rule (rule ^ 1) would
 * make this very plan, every window it cleared being the same. */
#define ORTMEM__PLAN_STOPPED (UINT64_MAX - 1)
/* plan_range.c: add over a range of steps, the largest value over one */
struct plan_rtree {
	uint32_t n;
	int64_t *mx, *add;
};

int ortmem__rt_init(struct plan_rtree *t, uint32_t n);
void ortmem__rt_free(struct plan_rtree *t);
void ortmem__rt_set(struct plan_rtree *t, const int64_t *v);
void ortmem__rt_add(struct plan_rtree *t, uint32_t lo, uint32_t hi, int64_t d);
int64_t ortmem__rt_max(const struct plan_rtree *t, uint32_t lo, uint32_t hi);

/* plan_heap.c: ids in @v (room for all), the first by @before on top */
struct plan_heap {
	uint32_t *v, n;
	bool (*before)(const void *ctx, uint32_t a, uint32_t b);
	const void *ctx;
};

void ortmem__heap_push(struct plan_heap *h, uint32_t id);
uint32_t ortmem__heap_pop(struct plan_heap *h);

/* plan_pool.c: @threads - 1 helper threads, the caller the last (NULL:
 * one thread, or none could be had: the caller runs every job alone). */
struct plan_pool;
struct plan_pool *ortmem__pool_start(uint32_t threads);
/* Run @fn(@ctx, job) for job 0 .. @n_jobs - 1 on the pool's threads and
 * the caller's, returning when all have ended. */
void ortmem__pool_run(struct plan_pool *p, uint32_t n_jobs,
		      void (*fn)(void *ctx, uint32_t job), void *ctx);
void ortmem__pool_stop(struct plan_pool *p);

/* Past this many steps spanned by its gaps a graph is dense under a device
 * budget (plan_gap_ctx.c, GAP_DENSE_SPAN); the unit tests lower it to plan
 * small graphs the dense way.  Never written by the library. */
extern uint64_t ortmem__plan_dense_span;
/* Up to this many steps spanned, a dense graph's first plan far above its
 * guide takes an allocator's pass too (plan_gap_ctx.c, GAP_NEAR_SPAN); the
 * unit tests raise it.  Never written by the library. */
extern uint64_t ortmem__plan_near_span;
/* Passes in a row without a cheaper plan that end the local search in the
 * time left (plan_gap_local.c, GL_PATIENCE); the unit tests set 0 to plan
 * without it.  Never written by the library. */
extern uint32_t ortmem__plan_local_patience;
uint64_t ortmem__plan_online_mv(const struct ortmem_plan *plan, const uint64_t *asz,
				uint64_t budget, int rule, uint32_t alt,
				const uint8_t *guide, const uint64_t *hint,
				uint8_t *off, uint64_t *toff, uint32_t *mstep,
				uint32_t *n_win, bool *twin_same, uint64_t retro_by,
				uint64_t stop_at);
/* A byte moved within the device arena costs 1/o.move_ratio of a byte moved
 * between tiers (ortmem_plan_opts.move_ratio, a power of two): @moved bytes
 * moved, weighed so.  A device-to-device copy runs at the memory's
 * bandwidth (reading and writing), tens of times what a host link carries
 * (H100/H200: ~1.5-2.4 TB/s copy, ~25-55 GB/s PCIe 4/5); the default,
 * 1/16, lies below that, so a move is chosen only where it clearly pays,
 * and a runtime that has timed its device gives its own. */
static inline uint64_t ortmem__plan_move_weigh(const struct ortmem_plan *plan,
					       uint64_t moved)
{
	/* a power of two, never 0: ortmem_plan_new() filled the default */
	return moved >> __builtin_ctz(plan->o.move_ratio);
}

/* A move onto part of its own source (a slide, plan_move.c) shifts the
 * buffer by at least 1/ORTMEM__PLAN_MOVE_PIECES of its size, so that a
 * runtime copies it in that many disjoint pieces at most
 * (ortmem_plan_transfers(3)).  On random DAGs, 16 kept nearly all the
 * bytes slides save (placement.rst). */
#define ORTMEM__PLAN_MOVE_PIECES 16
static inline bool ortmem__plan_move_pieces_ok(uint64_t shift, uint64_t size)
{
	return shift >= size || shift >= (size + ORTMEM__PLAN_MOVE_PIECES - 1) / ORTMEM__PLAN_MOVE_PIECES;
}
/* Does the move of a buffer before step @ms, from @from to @to, its last
 * touch at step @touched, release its source to the step's later moves
 * (they may land there; plan_move.c)?  A move down of a buffer touched
 * before step @ms - 1, never under ORTMEM_PLAN_F_MOVE_APART.  The
 * destination of such a move stays where it is: a move that runs after it
 * may have landed on its source (plan_close.c, plan_retro.c). */
static inline bool ortmem__plan_move_releases(const struct ortmem_plan *plan, uint32_t touched,
					      uint32_t ms, uint64_t from, uint64_t to)
{
	return !(plan->o.flags & ORTMEM_PLAN_F_MOVE_APART) && to < from && touched + 1 < ms;
}
/* plan_move.c: bytes moved within the arena by @mstep (kept gaps only). */
uint64_t ortmem__plan_move_bytes(const struct ortmem_plan *plan, const uint8_t *off,
				 const uint32_t *mstep);
/* plan_move.c: fill plan->dev_move and st.move_bytes from plan->move_step;
 * 0 or -ENOMEM. */
int ortmem__plan_move_record(struct ortmem_plan *plan);
/* plan_online.c: the top of the highest interval with offsets @toff. */
uint64_t ortmem__plan_height(const struct ortmem_plan *plan, const uint64_t *asz,
			     const uint64_t *toff);
/* plan_close.c: keep on the device the off gaps whose range stayed free
 * (@how: ORTMEM__PLAN_CLOSE_ANY, or any range of [0, budget) free over the
 * merged span; ORTMEM__PLAN_CLOSE_MOVE, or one the intervals in its way
 * can move out of, each to a range free over its own steps). */
#define ORTMEM__PLAN_CLOSE_ANY 1u
#define ORTMEM__PLAN_CLOSE_MOVE 2u
int ortmem__plan_close_gaps(const struct ortmem_plan *plan, const uint64_t *asz,
			    uint8_t *off, uint64_t *toff, unsigned int how, uint64_t deadline);
/* ortmem__plan_close_gaps() on a plan with moves @mstep (NULL: none): a
 * gap with a move is never closed, and each side of it is an interval. */
int ortmem__plan_close_gaps_mv(const struct ortmem_plan *plan, const uint64_t *asz,
			       uint8_t *off, uint64_t *toff, const uint32_t *mstep,
			       unsigned int how, uint64_t deadline);
/* plan_compact.c: the off gaps @off (per touch) laid out by compaction in
 * [0, @budget): each value a step brings in takes a free range, or room
 * made by moving residents, a buffer as often as need be between two of
 * its touches, or (where no move makes it) by sending more gaps off
 * (into @off).  0 (@out filled: offsets per touch, the moves in step
 * order, bytes moved, height), 1 (the moves weighed reach @bound, or past
 * @deadline: 0 for none; or nothing left to send off), or -ENOMEM (error
 * set). */
struct ortmem__plan_cmove {
	uint32_t buf, step;	/* buffer @buf moves before @step */
	uint64_t to;
};

struct ortmem__plan_compacted {
	const uint8_t *off;	/* the caller's: the residency laid out */
	uint64_t *toff;
	struct ortmem__plan_cmove *mv;
	uint32_t n_mv;
	uint64_t moved, height;
};

int ortmem__plan_compact(const struct ortmem_plan *plan, const uint64_t *asz,
			 uint64_t budget, uint8_t *off, uint64_t bound, uint64_t deadline,
			 struct ortmem__plan_compacted *out);
void ortmem__plan_compacted_free(struct ortmem__plan_compacted *c);
/* plan_waypoint.c: the plan made the compacted layout @c (its off gaps
 * c->off, buffers sent off going to @home): each move past the first in a
 * gap splits it at a waypoint, a touch of no node at the step of the move
 * before, so that a gap still has at most one move (plan->touch_* grow;
 * moves dropped, buf UINT32_MAX, skipped).  0 or -ENOMEM. */
int ortmem__plan_compact_apply(struct ortmem_plan *plan, struct ortmem__plan_compacted *c,
			       int home);
/* plan_gaps.c: which gaps of each buffer leave the device (under its
 * budget, buffers sent off going to @home) and the device offsets. */
int ortmem__plan_gaps(struct ortmem_plan *plan, int home, uint64_t deadline,
		      struct pk_result *res);
/* plan_move.c: tier bytes of a plan with off gaps @off (one write-out per
 * buffer sent off, one read-back per off gap a touch ends). */
uint64_t ortmem__plan_gap_cost(const struct ortmem_plan *plan, const uint8_t *off);
uint64_t ortmem__plan_gap_guide(struct ortmem_plan *plan, uint8_t *off);
uint64_t ortmem__plan_gap_decide(struct ortmem_plan *plan, int slack, uint64_t *height);
/* plan_fit.c: demote from @tier to @next (-1: none) until its packed arena
 * fits its budget; @prof has n_nodes + 1 cells of scratch. */
int ortmem__plan_fit_tier(struct ortmem_plan *plan, int tier, int next,
			  uint64_t *prof, uint64_t deadline, struct pk_result *res);
/* Every buffer on the device, packed whole, where that fits its budget:
 * 1 when it does (offsets set), 0 when not, or a negative error. */
int ortmem__plan_fit_whole(struct ortmem_plan *plan, uint64_t *prof, uint64_t deadline,
			   struct pk_result *res);
/* plan_place.c: tiers and offsets of plan->bufs under the budgets. */
int ortmem__plan_place(struct ortmem_plan *plan);

/*
 * Best fit for @size in [0, @budget) around @d occupied ranges sorted by
 * start: range i is [r[i * stride], r[i * stride + 1]).  The start of the
 * smallest free range that holds @size, or UINT64_MAX.
 */
static inline uint64_t ortmem__plan_best_gap(const uint64_t *r, size_t stride,
					     uint32_t d, uint64_t budget,
					     uint64_t size)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = UINT64_MAX, len, next;
	uint32_t i;

	for (i = 0; i <= d; i++) {
		next = i < d ? r[i * stride] : budget;
		len = next > cur ? next - cur : 0;
		if (len >= size && len < best_len) {
			best_len = len;
			best = cur;
		}
		if (i < d && r[i * stride + 1] > cur)
			cur = r[i * stride + 1];
	}
	return best;
}

/* The first of buffer @b's touches at or after @step (touch_idx[b + 1]
 * when none): its touches' steps ascend, so bisect. */
static inline uint32_t ortmem__plan_touch_from(const struct ortmem_plan *plan,
					       uint32_t b, uint32_t step)
{
	uint32_t lo = plan->touch_idx[b], hi = plan->touch_idx[b + 1];

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (plan->touch_step[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Does buffer @b move within the device arena (a move step in a gap)? */
static inline bool ortmem__plan_buf_moves(const struct ortmem_plan *plan, uint32_t b)
{
	uint32_t k;

	if (!plan->move_step)	/* no touches indexed when nothing left the device */
		return false;
	for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
		if (plan->move_step[k])
			return true;
	return false;
}

/* Does touch @k of buffer @b write a value into it: the buffer's first
 * touch, or a step whose output takes it in place?  An in-place chain
 * holds one value after another, so each value with an off gap is written
 * out on its own: the home holds the last one written. */
static inline bool ortmem__plan_touch_writes(const struct ortmem_plan *plan,
					     uint32_t b, uint32_t k)
{
	const struct pl_node *nd;
	uint32_t i;

	if (k == plan->touch_idx[b])
		return true;
	if (!plan->n_hints || (plan->o.flags & ORTMEM_PLAN_F_NO_INPLACE))
		return false;
	nd = &plan->nodes[plan->touch_step[k]];
	for (i = 0; i < nd->n_out; i++) {
		const struct pl_value *y = &plan->vals[plan->edges[nd->out + i]];

		if (y->inplace_of >= 0 && y->buf == (int32_t)b)
			return true;
	}
	return false;
}

#endif /* ORTMEM_LIB_PLAN_INTERNAL_H */
