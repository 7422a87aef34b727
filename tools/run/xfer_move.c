// SPDX-License-Identifier: MIT
/*
 * ortmem-run's moves within the arena (ORTMEM_PLAN_XFER_MOVE): the plan
 * re-seats a resident value before step s, from where its last touch left
 * it to where its next touch finds it, when that avoids an eviction.
 *
 * A step's moves run one after another in the order the plan lists them
 * (increasing destination): a move may land on the range a move before it
 * left, and on part of its own (the copy then runs as a memmove); none
 * lands on a range a write-out issued after step s - 1 reads.  They run
 * on the compute thread once step s - 1 is done (as a GPU runtime runs
 * them on its compute stream, at the device's speed), before the step's
 * read-backs are issued, since those may land in a range a move leaves.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "refuse.h"
#include "xfer.h"

static int in_arena(const struct acts *a, uint64_t off, uint64_t len)
{
	return off <= a->arena && len <= a->arena - off;
}

/* The step before @s that last touched value @v (UINT32_MAX: none). */
static uint32_t last_touch(const struct acts *a, uint32_t s, uint32_t v)
{
	while (s-- > 0)
		if (xfer_off_at(a, s, v) != UINT64_MAX)
			return s;
	return UINT32_MAX;
}

int xfer_take_move(struct xfer *x, uint32_t s,
		   const struct ortmem_plan_transfer *t, struct xfer_item *it)
{
	const struct acts *a = x->a;
	uint64_t len = t->bytes, src = t->src_offset, dst = t->device_offset;
	uint32_t p, q;

	if (t->from_tier != ORTMEM_TIER_DEVICE || t->to_tier != ORTMEM_TIER_DEVICE)
		return xfer_bad(s, "a move that leaves the arena");
	if (len != act_len(a, t->value))
		return xfer_bad(s, "a move of the wrong size");
	if (t->earliest != s)
		return xfer_bad(s, "a move whose earliest step is not its own");
	if (!in_arena(a, src, len) || !in_arena(a, dst, len))
		return xfer_bad(s, "a move outside the arena");
	if (src == dst)
		return xfer_bad(s, "a move onto its own offset");
	/* From where the value's last touch left it, to where its next one
	 * finds it. */
	p = last_touch(a, s, t->value);
	if (p == UINT32_MAX || xfer_off_at(a, p, t->value) != src)
		return xfer_bad(s, "a move from another offset than the value's last step left it at");
	for (q = s; q < a->n_nodes; q++)
		if (xfer_off_at(a, q, t->value) != UINT64_MAX)
			break;
	if (q == a->n_nodes || xfer_off_at(a, q, t->value) != dst)
		return xfer_bad(s, "a move to another offset than the value's next step uses");
	memset(it, 0, sizeof(*it));
	it->dir = ORTMEM_PLAN_XFER_MOVE;
	it->value = t->value;
	it->step = s;
	it->earliest = s;
	it->tier = ORTMEM_TIER_DEVICE;
	it->off = dst;
	it->src = src;
	it->len = len;
	x->plan_move += len;
	x->n_moves++;
	return 0;
}

int xfer_check_moves(const struct xfer *x)
{
	const struct xfer_item *m, *r;
	uint32_t p;

	for (m = x->it; m < x->it + x->n_items; m++) {
		if (m->dir != ORTMEM_PLAN_XFER_MOVE)
			continue;
		/* The moves of a step run in the order listed: none may land
		 * on the source of one listed after it, still in use. */
		for (r = m + 1; r < x->it + x->n_items && r->step == m->step; r++)
			if (r->dir == ORTMEM_PLAN_XFER_MOVE &&
			    (r->off <= m->off ||
			     (m->off < r->src + r->len && r->src < m->off + m->len)))
				return xfer_bad(m->step, "moves not in the order they can run in (a move onto the source of one after it)");
		p = last_touch(x->a, m->step, m->value);
		/* Another value's read-back issued before the move, for a
		 * step from the moved value's last touch on, would land in
		 * the source while the value still lies there. */
		for (r = x->it; r < x->it + x->n_items; r++)
			if (r->dir == ORTMEM_PLAN_XFER_IN && r->value != m->value &&
			    r->earliest < m->step && r->step >= p &&
			    r->off < m->src + m->len && m->src < r->off + r->len)
				return xfer_bad(m->step, "a read-back that may land in a move's source before the move has run");
	}
	return 0;
}

/* The compute thread's own message (the copy thread writes errmsg). */
static void move_failed(struct xfer *x, const struct xfer_item *it, int ret)
{
	if (x->move_errmsg[0])
		return;
	snprintf(x->move_errmsg, sizeof(x->move_errmsg), "moving value %u (%" PRIu64 " bytes) within the arena from offset %" PRIu64 " to %" PRIu64 ": %s",
		 it->value, it->len, it->src, it->off,
		 run_error_text(ret));
}

/* Poison [a, a + len) but for where it meets [b, b + len): both ends of
 * a move, which a slide overlaps. */
static int poison_but(struct xfer *x, uint64_t a, uint64_t b, uint64_t len)
{
	uint64_t lo = a, hi = a + len;

	if (b < hi && lo < b + len) {
		if (b > lo)
			hi = b;
		else
			lo = b + len;
	}
	return lo < hi ? x->ops.poison(x->ops.ctx, lo, hi - lo) : 0;
}

/* One move: after the write-outs still reading its destination (another
 * value's, before step s - 1) or, when its source is to be poisoned, its
 * source. */
static int run_move(struct xfer *x, const struct xfer_item *it)
{
	int ret = xfer_wait_outs(x, it->off, it->len);

	if (!ret && x->do_poison)
		ret = xfer_wait_outs(x, it->src, it->len);
	if (ret)
		return ret;
	/* --poison-evicted: a move skipped leaves NaNs where the value
	 * should be, whatever the range held before (but where it lay). */
	if (x->do_poison)
		ret = poison_but(x, it->off, it->src, it->len);
	if (!ret && ++x->moves_seen != x->drop_move) {
		ret = x->ops.move(x->ops.ctx, it->off, it->src, it->len);
		if (!ret)
			x->moved_dev += it->len;
	}
	/* The source is free from here on: whatever reads it reads NaNs,
	 * but for the part the value now lies on.  A later move of the step
	 * may land there; no earlier one did (it would have landed on a
	 * source still in use). */
	if (!ret && x->do_poison)
		ret = poison_but(x, it->src, it->off, it->len);
	if (ret)
		move_failed(x, it, ret);
	return ret;
}

int xfer_run_moves(struct xfer *x, uint32_t step)
{
	uint32_t i;
	int ret = 0;

	for (i = x->at[step]; !ret && i < x->at[step + 1]; i++)
		if (x->it[i].dir == ORTMEM_PLAN_XFER_MOVE)
			ret = run_move(x, &x->it[i]);
	return ret;
}
