/* SPDX-License-Identifier: MIT */
/*
 * tools/run/xfer.h - ortmem-run follows the planner's transfer schedule
 * (ortmem_plan_transfers()): under an activation budget, values leave the
 * arena for their home between the steps that touch them.
 *
 * Each step, around its compute:
 *   before  run the step's moves within the arena (xfer_move.c: once step
 *           s - 1 is done, before anything lands in a range they leave),
 *           issue the read-backs whose earliest step this is (they overlap
 *           the compute until their own step), then wait for the step's
 *           own read-backs and for any write-out still reading a range the
 *           step writes;
 *   after   issue the write-outs that may start now: the plan lists one
 *           after the last touch before its value leaves, and lets it
 *           start once the value is produced (its earliest), so it
 *           overlaps the steps in between, unless the value moves within
 *           the arena before the listed step (then after the first step
 *           that touches it where the write-out reads).
 * One copy thread runs the transfers in the order they are issued, so a
 * read-back into a range never passes the write-out that empties it, nor
 * a value's read-back its own write-out.  The copies between the arena
 * and host memory (in RAM, or on the GPU) are the caller's ops; a value
 * whose home is the disk goes through a bounce buffer and the spill
 * engine, one extent a value (written once a pass, read back as often as
 * the schedule says).
 */
#ifndef ORTMEM_TOOLS_RUN_XFER_H
#define ORTMEM_TOOLS_RUN_XFER_H

#include <pthread.h>
#include <stdint.h>

#include <ortmem/spill.h>

#include "acts.h"

/* Copies between the arena (at @off) and host memory; 0 or a negative
 * code.  @poison overwrites arena bytes with a pattern that makes any
 * computation on them visible in the output (testing). */
struct xfer_ops {
	int (*in)(void *ctx, uint64_t off, const void *src, uint64_t len);
	int (*out)(void *ctx, void *dst, uint64_t off, uint64_t len);
	int (*poison)(void *ctx, uint64_t off, uint64_t len);
	/* [src, src + len) to [dst, dst + len) within the arena; the two
	 * never overlap (ORTMEM_PLAN_XFER_MOVE). */
	int (*move)(void *ctx, uint64_t dst, uint64_t src, uint64_t len);
	void *ctx;
};

/* The ops of an arena at @arena in host memory (poison: all ones, NaN in
 * fp32, which no arithmetic hides from the output). */
struct xfer_ops xfer_host_ops(void *arena);

struct xfer_range {
	uint64_t off, len;
};

struct xfer_item {
	uint32_t dir;		/* ORTMEM_PLAN_XFER_* */
	uint32_t value;
	uint32_t step;		/* the step it is listed at */
	uint32_t earliest;	/* read-back: issued before it; write-out: after */
	int32_t tier;		/* its home's: ORTMEM_TIER_HOST or _DISK */
	uint64_t off, len;	/* arena range (a move's destination) */
	uint64_t src;		/* a move's source; else off */
	uint8_t *home;		/* its home copy in host memory */
	uint64_t ticket;	/* when issued: the queue's count after it */
};

struct xfer {
	const struct acts *a;
	struct xfer_ops ops;
	uint8_t *home;		/* the values' home: a->home bytes */
	struct ortmem_spill *spill;	/* and on disk */
	uint8_t *bounce;	/* the copy thread's, for the disk */
	uint64_t *extent;	/* per value: its extent, when on disk */
	uint8_t *has_extent;
	struct xfer_item *it;	/* the schedule, by the step it is listed at */
	uint32_t n_items;
	uint32_t n_reads, n_ahead;	/* read-backs; those that start before their step */
	uint32_t *at;		/* per step + 1: first item listed there */
	uint32_t *issue;	/* read-backs by the step they start at */
	uint32_t *issue_at;	/* per step + 1: first of them */
	uint32_t *out_at;	/* per step + 1: first write-out starting after it */
	uint32_t *outs;		/* write-outs by the step they start after */
	uint32_t n_outs, n_outs_ahead;	/* write-outs; those that start before their step */
	uint32_t n_outs_moved;	/* those of a value moved within the arena since it was made */
	uint32_t *poison_at;	/* per step + 1: first range to poison after it */
	struct xfer_range *poison;	/* ranges that fall free after a step */
	uint64_t plan_in, plan_out, plan_stall;	/* the schedule's, a pass */
	uint64_t plan_disk_in, plan_disk_out;	/* ortmem_plan_step_moves()' disk */
	uint64_t plan_move;	/* the schedule's moves' bytes, a pass */
	uint64_t plan_step_move;	/* ortmem_plan_step_moves()' device_move */
	uint32_t n_moves;	/* moves a pass */
	int do_poison;		/* --poison-evicted */
	uint64_t drop_nth;	/* --drop-read-back: skip this read-back (1-based) */
	uint64_t drop_move;	/* --drop-move: skip this move (1-based) */
	uint64_t moves_seen;	/* moves met over the run */
	uint64_t moved_dev;	/* bytes moved within the arena */
	/* the copy thread */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t work, done_cv;
	struct xfer_item **q;	/* ring of n_items entries */
	uint64_t issued, done;	/* tickets */
	uint64_t reads_seen;	/* read-backs issued over the run */
	uint64_t moved_in, moved_out;	/* bytes actually copied */
	uint64_t disk_in, disk_out;	/* of those, from and to the disk */
	uint64_t issued_ahead;	/* read-backs issued before their step's */
	uint64_t outs_issued_ahead;	/* write-outs issued before their step's end */
	uint32_t *pend_out;	/* write-outs issued this pass */
	uint32_t n_pend_out;
	int err, stop, started;
	char errmsg[512];	/* the copy thread's detailed error */
	char move_errmsg[512];	/* the compute thread's, of a failed move */
};

/* Read the schedule of @a's plan and start the copy thread, with the
 * values' homes @home (a->home bytes) and @spill (when a->disk); 0, or a
 * negative code (-EPROTO: after saying what is wrong). */
int xfer_open(struct xfer *x, const struct acts *a,
	      const struct xfer_ops *ops, uint8_t *home,
	      struct ortmem_spill *spill);
/* --drop-read-back @nth (0: none) names one of the read-backs of
 * @passes passes: 0, or -1 after saying how many there are (one past them
 * would test nothing, silently). */
int xfer_check_drop(const struct xfer *x, uint64_t nth, uint32_t passes,
		    uint64_t act_budget);
/* --drop-move @nth (0: none), likewise for the moves. */
int xfer_check_drop_move(const struct xfer *x, uint64_t nth, uint32_t passes,
			 uint64_t act_budget);
/* Around step @step: 0 or the first copy error. */
int xfer_before(struct xfer *x, uint32_t step);
int xfer_after(struct xfer *x, uint32_t step);
/* What the first failed copy said (its detailed error, from the copy
 * thread), else what a failed move said, or NULL when none failed; once
 * the copy thread is idle (after xfer_drain()). */
const char *xfer_error(const struct xfer *x);
/* Wait for every transfer issued (the end of a pass). */
int xfer_drain(struct xfer *x);
void xfer_close(struct xfer *x);

/* xfer_move.c.  Check a move of the schedule at step @s against the
 * steps' offsets and fill @it: 0, or -EPROTO after saying what is wrong. */
struct ortmem_plan_transfer;
int xfer_take_move(struct xfer *x, uint32_t s,
		   const struct ortmem_plan_transfer *t, struct xfer_item *it);
/* No read-back issued before a move may land in its source (the plan's
 * contract): 0, or -EPROTO after saying so. */
int xfer_check_moves(const struct xfer *x);
/* Run the moves listed at @step (before anything else of it): 0 or the
 * first error. */
int xfer_run_moves(struct xfer *x, uint32_t step);
/* Shared with xfer_move.c: where step @s has value @v in the arena
 * (UINT64_MAX: not there), the message of an inconsistent schedule
 * (-EPROTO), and the wait for the write-outs still reading
 * [@off, @off + @len). */
uint64_t xfer_off_at(const struct acts *a, uint32_t s, uint32_t v);
int xfer_bad(uint32_t step, const char *why);
int xfer_wait_outs(struct xfer *x, uint64_t off, uint64_t len);

#endif /* ORTMEM_TOOLS_RUN_XFER_H */
