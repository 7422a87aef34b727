/* SPDX-License-Identifier: MIT */
/*
 * ortmem/plan.h - the activation planner.
 *
 * The planner is pure: it does no I/O and touches no device.  It takes a
 * graph (values with byte sizes, nodes in execution order, view edges, graph
 * outputs, in-place hints), computes when each buffer is live, gives every
 * buffer a tier (device, host or disk) and an offset in that tier's arena so
 * that no two buffers live at the same time overlap, and reports the lower
 * bound, the arenas and the bytes that move between tiers at every step.
 *
 * Model:
 *  - Nodes run in the order they are added; node i is "step i".
 *  - A value produced by no node is a graph input: it is owned by the caller
 *    and is not planned (nor are views of it).
 *  - A view aliases its source's buffer (transitively: a view of a view
 *    aliases the root); it owns no memory and keeps its root alive as long
 *    as it is used.
 *  - A value is live from the step that produces it to the last step that
 *    reads it (or one of its views), inclusive; a graph output is live to
 *    the end.  A node's outputs never share memory with its inputs, except
 *    through an in-place hint the planner accepted.
 *
 * Thread safety: a plan object must not be used by two threads at once;
 * distinct plan objects are independent.  ortmem_plan_pack() is reentrant.
 * See Documentation/lib/planner.rst for the algorithm and its guarantees.
 */
#ifndef ORTMEM_PLAN_H
#define ORTMEM_PLAN_H

#include <ortmem/core.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ortmem_plan;

/* A size not known yet: the size oracle is asked at solve time. */
#define ORTMEM_PLAN_SIZE_SYMBOLIC UINT64_MAX

/* Flags of ortmem_plan_add_value(). */
#define ORTMEM_PLAN_VALUE_OUTPUT (1u << 0)	/* graph output: live to the end */

/* Flags of struct ortmem_plan_opts. */
#define ORTMEM_PLAN_F_VALIDATE (1u << 0)	/* validate every plan it makes */
#define ORTMEM_PLAN_F_NO_INPLACE (1u << 1)	/* ignore the in-place hints */
#define ORTMEM_PLAN_F_NO_MOVE (1u << 2)	/* never move a buffer within the
					 * device arena (for runtimes that
					 * cannot run ORTMEM_PLAN_XFER_MOVE) */
#define ORTMEM_PLAN_F_MOVE_APART (1u << 3)	/* a step's moves touch none of
					 * one another's ranges, nor their
					 * own (for runtimes that run them
					 * together or in any order; added
					 * in 0.2, when moves became ordered
					 * by default) */

/* Defaults of struct ortmem_plan_opts. */
#define ORTMEM_PLAN_DEFAULT_BUDGET_US 10000
#define ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE 256
#define ORTMEM_PLAN_DEFAULT_ALIGN_HOST 64
#define ORTMEM_PLAN_DEFAULT_ALIGN_DISK 4096
#define ORTMEM_PLAN_DEFAULT_THREADS_MAX 4
#define ORTMEM_PLAN_THREADS_MAX 64
#define ORTMEM_PLAN_DEFAULT_MOVE_RATIO 16
#define ORTMEM_PLAN_MOVE_RATIO_MAX 1024

/*
 * Options; declare with ORTMEM_OPTS(ortmem_plan_opts, o, ...).  A zero field
 * means its default.
 *
 * @time_budget_us: time a solve or pack may take, beyond the time of its
 *	first complete plan (default ORTMEM_PLAN_DEFAULT_BUDGET_US): every
 *	call returns within the budget plus the first plan, which costs
 *	O(n log n) plus the conflicts it inspects on any graph.  The search
 *	stops early when the arena reaches the lower bound; under a device
 *	budget, where bytes still leave the device, a small graph spends
 *	what its candidates left on a local search around the best plan,
 *	which ends when 256 passes in a row find nothing cheaper (under
 *	max_iterations, after that many passes at most).
 * @max_iterations: stop the search after this many candidate plans (0: no
 *	limit but the time budget).  With a limit and a generous budget the
 *	result is the same on every run.
 * @seed: seed of the search's pseudo-random generator (0: a fixed seed).
 * @align: per tier, offsets and sizes are rounded up to a multiple of this
 *	power of two (defaults ORTMEM_PLAN_DEFAULT_ALIGN_*).
 * @budget: per tier, the most bytes its arena may take (0: no limit).
 *	With no limit on the device tier everything is placed there.
 * @tiers: mask of the tiers that may be used, bit (1 << tier) (0: all).
 * @flags: ORTMEM_PLAN_F_*.
 * @threads: threads the search may use (the packer's, the placement's
 *	candidate passes), the caller's included (0: one per
 *	online CPU, at most ORTMEM_PLAN_DEFAULT_THREADS_MAX; at most
 *	ORTMEM_PLAN_THREADS_MAX).  A search with @max_iterations uses one, so
 *	that its result is the same on every run.
 * @move_ratio: how many bytes copied within the device arena weigh as
 *	much as one byte moved between tiers: the device's copy rate over
 *	its host link's (0: ORTMEM_PLAN_DEFAULT_MOVE_RATIO, 16).  A power of
 *	two, 1 to ORTMEM_PLAN_MOVE_RATIO_MAX.  The placement minimises tier
 *	bytes + bytes moved within the arena / @move_ratio: a higher ratio
 *	makes it trade host-link bytes for more copies within the device.
 *	Of no use under ORTMEM_PLAN_F_NO_MOVE.  Added in 0.2.
 */
struct ortmem_plan_opts {
	size_t sz;
	uint64_t time_budget_us;
	uint64_t max_iterations;
	uint64_t seed;
	uint64_t align[ORTMEM_TIER_COUNT];
	uint64_t budget[ORTMEM_TIER_COUNT];
	uint32_t tiers;
	uint32_t flags;
	uint32_t threads;
	uint32_t move_ratio;	/* in 0.1's trailing padding, which 0.1 refuses unless zero */
};
/* Its last field: the library checks a caller's struct for fields it does
 * not know from the end of this one (update it with the struct). */
#define ortmem_plan_opts__last_field move_ratio

/*
 * What a plan achieved; declare with ORTMEM_OPTS(ortmem_plan_stats, s).
 *
 * @lower_bound: largest total of (device-aligned) bytes live at one step,
 *	over every planned buffer; no arena can be smaller when all buffers
 *	share one tier.
 * @arena: bytes each tier's arena needs (highest offset + size).
 * @tier_lower_bound: the same bound for the buffers placed on each tier,
 *	device staging included.
 * @naive_bytes: bytes one buffer per planned value would take.
 * @arena_over_lb: arena[device] / lower_bound when every buffer is on the
 *	device; the sum of the arenas over the lower bound otherwise (1.0 when
 *	the bound is 0).
 * @spill_bytes, @prefetch_bytes: total over all steps (see
 *	ortmem_plan_step_moves()).
 * @optimal: 1 when the packing is proved optimal (it reached the lower
 *	bound, or the exact search finished).
 * @move_bytes: bytes copied within the device arena by
 *	ORTMEM_PLAN_XFER_MOVE transfers, over all steps (not counted in
 *	@spill_bytes or @prefetch_bytes: no tier boundary is crossed).
 * @first_plan_ns: nanoseconds of @solve_ns spent on the first plan, the
 *	work a solve does whatever its time budget (ortmem_plan_new(3)): all
 *	but the searches and candidates the deadline stops, which keep
 *	within the budget, so @solve_ns is about the budget plus this at
 *	most.  A last field, as @move_bytes.
 */
struct ortmem_plan_stats {
	size_t sz;
	uint64_t lower_bound;
	uint64_t arena[ORTMEM_TIER_COUNT];
	uint64_t tier_lower_bound[ORTMEM_TIER_COUNT];
	uint64_t naive_bytes;
	double arena_over_lb;
	uint64_t n_values;
	uint64_t n_buffers;
	uint64_t n_inplace;
	uint64_t spill_bytes;
	uint64_t prefetch_bytes;
	uint64_t iterations;
	uint64_t solve_ns;
	uint32_t optimal;
	uint32_t pad;
	uint64_t move_bytes;
	uint64_t first_plan_ns;
};

/* Bytes that move at one step: per tier, read onto the device before the
 * step (prefetch) and written from the device after it (spill); and the
 * bytes moved within the device arena before it (device_move). */
struct ortmem_plan_moves {
	size_t sz;
	uint64_t prefetch[ORTMEM_TIER_COUNT];
	uint64_t spill[ORTMEM_TIER_COUNT];
	uint64_t device_move;
};

/* Directions of struct ortmem_plan_transfer. */
#define ORTMEM_PLAN_XFER_IN 0	/* read back onto the device before the step */
#define ORTMEM_PLAN_XFER_OUT 1	/* written out from the device after the step */
#define ORTMEM_PLAN_XFER_MOVE 2	/* moved within the device arena before the
				 * step: before a step, run its moves first,
				 * one after another in the order listed,
				 * then its read-backs */

/*
 * One transfer of ortmem_plan_transfers().
 *
 * @value: the value whose buffer moves (the buffer's owner; its views and
 *	in-place successors share it).
 * @dir: ORTMEM_PLAN_XFER_IN, ORTMEM_PLAN_XFER_OUT or ORTMEM_PLAN_XFER_MOVE
 *	(both tiers the device; listed before the step's other transfers).
 * @from_tier, @to_tier: where the bytes come from and go to.
 * @bytes: how many.
 * @device_offset: where the buffer lies in the device arena (for IN, from
 *	the copy's start to its next write-out, move or end; for OUT, where
 *	it is read from; for MOVE, where it is copied to).
 * @earliest: for IN, the earliest step before which the read may start:
 *	its device range is free from there to the step, so the copy overlaps
 *	the compute of steps @earliest .. step - 1 (== step: it cannot start
 *	ahead, and stalls).  For OUT, the step after which it may start: the
 *	one that produced the value it writes out (values are immutable; a
 *	buffer an in-place chain shares holds each of its values from the
 *	step producing it, and each value with an off gap is written out
 *	once) or, when the buffer has moved within the arena since, the step
 *	its last move precedes (from then on it lies at @device_offset).
 *	For MOVE, the step: it
 *	runs after step - 1, before the step's read-backs.
 * @src_offset: for MOVE, where the buffer is copied from; the move runs as
 *	a memmove (the two ranges may overlap), after the step's moves
 *	listed before it, whose sources it may take (they are listed in
 *	increasing order of @device_offset); none does either under
 *	ORTMEM_PLAN_F_MOVE_APART.  Otherwise @device_offset.
 */
struct ortmem_plan_transfer {
	uint32_t value;
	uint32_t dir;
	int32_t from_tier;
	int32_t to_tier;
	uint64_t bytes;
	uint64_t device_offset;
	uint32_t earliest;
	uint32_t pad;
	uint64_t src_offset;
};

/* One buffer of ortmem_plan_pack(): live over [lower, upper). */
struct ortmem_plan_buffer {
	uint64_t lower;
	uint64_t upper;
	uint64_t size;
};

/*
 * Size oracle: set *size and return 0, return 1 when the size is still
 * symbolic (the plan is deferred), or a negative code to fail the solve;
 * any other return fails the solve with -EINVAL.
 */
typedef int (*ortmem_plan_size_fn)(uint32_t value, uint64_t *size,
				   void *user);

/* ===================================================================
 * Plan
 * =================================================================== */

/**
 * ortmem_plan_new() - Create an empty plan.
 * @opts: options, or NULL for the defaults; copied.
 * @planp: receives the plan.
 *
 * Return: 0, -EINVAL (bad options), or -ENOMEM.
 */
ORTMEM_API int ortmem_plan_new(const struct ortmem_plan_opts *opts,
			       struct ortmem_plan **planp);

/**
 * ortmem_plan_free() - Free a plan; NULL is ignored.
 * @plan: the plan.
 */
ORTMEM_API void ortmem_plan_free(struct ortmem_plan *plan);

/**
 * ortmem_plan_add_value() - Add a value (a tensor).
 * @plan: the plan.
 * @size: bytes, or ORTMEM_PLAN_SIZE_SYMBOLIC.
 * @flags: ORTMEM_PLAN_VALUE_*.
 *
 * Return: the value's id (0, 1, 2... in the order of the calls), or -EINVAL
 * (unknown flags), -E2BIG (too many values), -ENOMEM.
 */
ORTMEM_API int ortmem_plan_add_value(struct ortmem_plan *plan, uint64_t size,
				     uint32_t flags);

/**
 * ortmem_plan_set_view() - Make @view alias @source's buffer.
 * @plan: the plan.
 * @view: the value that aliases another.
 * @source: the value whose buffer it aliases.
 *
 * Return: 0, or -EINVAL (unknown value, a view of itself, a cycle), -EEXIST
 * (@view is already a view).
 */
ORTMEM_API int ortmem_plan_set_view(struct ortmem_plan *plan, uint32_t view,
				    uint32_t source);

/**
 * ortmem_plan_add_node() - Add the next node in execution order.
 * @plan: the plan.
 * @inputs: the values it reads (may repeat).
 * @n_inputs: how many values @inputs holds.
 * @outputs: the values it produces (each produced once).
 * @n_outputs: how many values @outputs holds.
 *
 * Return: the node's id (its step), or -EINVAL (unknown value, a value
 * produced twice, an output that is also an input), -E2BIG, -ENOMEM.
 */
ORTMEM_API int ortmem_plan_add_node(struct ortmem_plan *plan,
				    const uint32_t *inputs, uint32_t n_inputs,
				    const uint32_t *outputs,
				    uint32_t n_outputs);

/**
 * ortmem_plan_hint_inplace() - Allow @output to reuse @input's buffer.
 * @plan: the plan.
 * @node: the node (its id from ortmem_plan_add_node()).
 * @output: an output of @node.
 * @input: an input of @node.
 *
 * The hint is taken at solve time when @input is the last use of its buffer
 * (no later reader, no live view), @output fits in it, @input is neither a
 * view, a graph input nor a graph output, no other output of the node
 * took it, and the larger buffer raises no step's live bytes past both
 * their figure without sharing and the device budget (with the device
 * alone, or no device budget: the arena's lower bound); otherwise it is
 * ignored (see ortmem_plan_solve()).
 *
 * Return: 0, or -EINVAL (@node does not read @input or produce @output).
 */
ORTMEM_API int ortmem_plan_hint_inplace(struct ortmem_plan *plan,
					uint32_t node, uint32_t output,
					uint32_t input);

/**
 * ortmem_plan_set_size_fn() - Set the size oracle (NULL removes it).
 * @plan: the plan.
 * @fn: the oracle, or NULL.
 * @user: passed back to @fn.
 */
ORTMEM_API int ortmem_plan_set_size_fn(struct ortmem_plan *plan,
				       ortmem_plan_size_fn fn, void *user);

/**
 * ortmem_plan_solve() - Compute liveness, sizes, tiers and offsets.
 * @plan: the plan.
 *
 * May be called again (after adding to the graph or with a new oracle).
 *
 * Return: 0; -ORTMEM_E_PLAN_DEFERRED when some buffer's size is symbolic
 * (ortmem_plan_deferred() names them); -ORTMEM_E_CAPACITY_UNAVAILABLE when
 * the budgets cannot hold the plan (the detailed error has every figure);
 * -EINVAL (a node reads a value before it is produced, an oracle answer
 * outside its contract...); -ENOMEM; -EOVERFLOW (a size, or the sum of the
 * sizes, each rounded up to the largest alignment of the allowed tiers, of
 * 2^62 bytes or more).
 */
ORTMEM_API int ortmem_plan_solve(struct ortmem_plan *plan);

/**
 * ortmem_plan_deferred() - Values whose symbolic size deferred the plan.
 * @plan: the plan.
 * @cap: room in @ids.
 * @ids: receives up to @cap ids (may be NULL when @cap is 0).
 *
 * Return: how many values blocked the last solve (0 when it was not
 * deferred).
 */
ORTMEM_API int ortmem_plan_deferred(const struct ortmem_plan *plan,
				    uint32_t *ids, size_t cap);

/**
 * ortmem_plan_offset() - Where a value lives.
 * @plan: the plan.
 * @value: the value id.
 * @offset: receives the offset of its buffer in the tier's arena (for a
 *	view: its root's buffer; for a device buffer that moves within the
 *	arena, where it is produced: ortmem_plan_staging_offset() gives the
 *	rest).
 *
 * Return: the tier (>= 0); -ENOENT for a value the plan does not hold (a
 * graph input or a view of one); -EINVAL (unknown value); -ENODATA (no
 * solved plan).
 */
ORTMEM_API int ortmem_plan_offset(const struct ortmem_plan *plan,
				  uint32_t value, uint64_t *offset);

/**
 * ortmem_plan_staging_offset() - Where a value placed off the device is
 *	staged on the device at a step.
 * @plan: the plan.
 * @value: the value id (a view: its root's buffer).
 * @step: a node that reads or writes the value (itself or a view of it;
 *	not merely another value of its in-place chain).
 * @offset: receives the buffer's offset in the device arena at that step
 *	(the offset of its resident interval there; ortmem_plan_transfers()
 *	lists when it is read back and written out).
 *
 * Return: 0; -ENOENT when there is no staging copy (the buffer stays on
 * the device at one offset: see ortmem_plan_offset(); a buffer that moves
 * within the arena has its offset at each step here; a graph input; or
 * @step does not use the value); -EINVAL (unknown value or step, NULL @offset); -ENODATA (no
 * solved plan).
 */
ORTMEM_API int ortmem_plan_staging_offset(const struct ortmem_plan *plan,
					  uint32_t value, uint32_t step,
					  uint64_t *offset);

/**
 * ortmem_plan_transfers() - The transfers a runtime runs around a step.
 * @plan: the plan.
 * @step: the node.
 * @xfers: receives up to @cap transfers: read-backs the step needs before
 *	it runs, write-outs that follow it (may be NULL when @cap is 0).
 * @cap: room in @xfers.
 * @stall_bytes: if not NULL, receives the bytes of the step's read-backs
 *	that cannot start before the step (their device range is busy until
 *	then).
 *
 * Return: how many transfers the step has (more than @cap: call again with
 * more room); -EINVAL (unknown step, NULL @xfers with @cap); -ENODATA (no
 * solved plan).
 */
ORTMEM_API int ortmem_plan_transfers(const struct ortmem_plan *plan,
				     uint32_t step,
				     struct ortmem_plan_transfer *xfers,
				     size_t cap, uint64_t *stall_bytes);

/**
 * ortmem_plan_stats() - Figures of the solved plan.
 * @plan: the plan.
 * @stats: receives the figures (its sz set by the caller).
 *
 * Return: 0, -EINVAL (bad struct), -ENODATA (no solved plan).
 */
ORTMEM_API int ortmem_plan_stats(const struct ortmem_plan *plan,
				 struct ortmem_plan_stats *stats);

/**
 * ortmem_plan_step_moves() - Bytes moved between tiers at step @step.
 * @plan: the plan.
 * @step: the step (node id).
 * @moves: receives the figures (its sz set by the caller).
 *
 * Return: 0, -EINVAL (bad struct or step), -ENODATA (no solved plan).
 */
ORTMEM_API int ortmem_plan_step_moves(const struct ortmem_plan *plan,
				      uint32_t step,
				      struct ortmem_plan_moves *moves);

/**
 * ortmem_plan_validate() - Check every invariant of the solved plan.
 * @plan: the plan.
 *
 * An independent O(n log n) check: each value's buffer covers its
 * lifetime (views included, graph outputs to the end), buffers sharing
 * addresses are never live together, in-place sharing only at a hinted
 * node, offsets aligned, arenas within budgets.
 *
 * Return: 0, -ENODATA (no solved plan), or -EFAULT naming the first
 * broken invariant in the detailed error.
 */
ORTMEM_API int ortmem_plan_validate(const struct ortmem_plan *plan);

/**
 * ortmem_plan_pack() - Pack plain buffers into one arena.
 * @bufs: the buffers (half-open lifetimes).
 * @n: how many buffers @bufs holds.
 * @opts: uses time_budget_us, max_iterations, seed, align[DEVICE],
 *	budget[DEVICE] and flags (NULL: defaults).
 * @offsets: receives one offset per buffer.
 * @stats: receives lower_bound, arena[DEVICE], arena_over_lb, optimal,
 *	iterations, solve_ns (may be NULL).
 *
 * Return: 0, -EINVAL (upper <= lower with a size, bad options),
 * -EOVERFLOW (sizes rounded up to align[DEVICE] reach 2^62), -ENOMEM, -ORTMEM_E_CAPACITY_UNAVAILABLE (over budget).
 */
ORTMEM_API int ortmem_plan_pack(const struct ortmem_plan_buffer *bufs,
				size_t n, const struct ortmem_plan_opts *opts,
				uint64_t *offsets,
				struct ortmem_plan_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_PLAN_H */
