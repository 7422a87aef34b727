// SPDX-License-Identifier: MIT
/*
 * ortmem-run follows the planner's transfer schedule (see xfer.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refuse.h"
#include "xfer.h"

/* ---- copies within host memory ---- */

static int host_in(void *ctx, uint64_t off, const void *src, uint64_t len)
{
	memcpy((uint8_t *)ctx + off, src, len);
	return 0;
}

static int host_out(void *ctx, void *dst, uint64_t off, uint64_t len)
{
	memcpy(dst, (uint8_t *)ctx + off, len);
	return 0;
}

/* All ones: NaN in fp32, which no arithmetic hides from the output. */
static int host_poison(void *ctx, uint64_t off, uint64_t len)
{
	memset((uint8_t *)ctx + off, 0xff, len);
	return 0;
}

/* The ranges may overlap (a slide, ortmem_plan_transfers(3)). */
static int host_move(void *ctx, uint64_t dst, uint64_t src, uint64_t len)
{
	memmove((uint8_t *)ctx + dst, (uint8_t *)ctx + src, len);
	return 0;
}

struct xfer_ops xfer_host_ops(void *arena)
{
	return (struct xfer_ops){ host_in, host_out, host_poison, host_move, arena };
}

/* ---- the copy thread ---- */

/* A value whose home is the disk: through the bounce buffer, one extent
 * a value, the last pass's freed when it is written again. */
static int disk_copy(struct xfer *x, const struct xfer_item *it)
{
	uint32_t v = it->value;
	int ret;

	if (it->dir == ORTMEM_PLAN_XFER_IN) {
		if (!x->has_extent[v])
			return -ENODATA;	/* read back before written out */
		ret = ortmem_spill_read(x->spill, x->extent[v], x->bounce, it->len);
		return ret ? ret : x->ops.in(x->ops.ctx, it->off, x->bounce, it->len);
	}
	ret = x->ops.out(x->ops.ctx, x->bounce, it->off, it->len);
	if (!ret && x->has_extent[v]) {
		ret = ortmem_spill_free(x->spill, x->extent[v]);
		x->has_extent[v] = 0;
	}
	if (!ret)
		ret = ortmem_spill_write(x->spill, x->bounce, it->len, &x->extent[v]);
	x->has_extent[v] = !ret;
	return ret;
}

static int copy(struct xfer *x, const struct xfer_item *it)
{
	if (it->tier == ORTMEM_TIER_DISK)
		return disk_copy(x, it);
	if (it->dir == ORTMEM_PLAN_XFER_IN)
		return x->ops.in(x->ops.ctx, it->off, it->home, it->len);
	return x->ops.out(x->ops.ctx, it->home, it->off, it->len);
}

static void copy_failed(struct xfer *x, const struct xfer_item *it, int ret)
{
	snprintf(x->errmsg, sizeof(x->errmsg), "%s value %u (%" PRIu64 " bytes) %s %s: %s",
		 it->dir == ORTMEM_PLAN_XFER_IN ? "reading back" : "writing out",
		 it->value, it->len, it->dir == ORTMEM_PLAN_XFER_IN ? "from" : "to",
		 it->tier == ORTMEM_TIER_DISK ? "disk" : "host memory",
		 run_error_text(ret));
}

const char *xfer_error(const struct xfer *x)
{
	return x->errmsg[0] ? x->errmsg : x->move_errmsg[0] ? x->move_errmsg : NULL;
}

static void *copier(void *arg)
{
	struct xfer *x = arg;

	pthread_mutex_lock(&x->mu);
	for (;;) {
		struct xfer_item *it;
		int ret = 0;

		while (!x->stop && x->done == x->issued)
			pthread_cond_wait(&x->work, &x->mu);
		if (x->done == x->issued)
			break;
		it = x->q[x->done % x->n_items];
		pthread_mutex_unlock(&x->mu);
		/* After a failure nothing more is copied: the run stops. */
		ret = x->err ? 0 : copy(x, it);
		if (ret && !x->err)	/* this thread's error, for the report */
			copy_failed(x, it, ret);
		pthread_mutex_lock(&x->mu);
		if (ret && !x->err)
			x->err = ret;
		if (!ret && !x->err) {
			int in = it->dir == ORTMEM_PLAN_XFER_IN;

			*(in ? &x->moved_in : &x->moved_out) += it->len;
			if (it->tier == ORTMEM_TIER_DISK)
				*(in ? &x->disk_in : &x->disk_out) += it->len;
		}
		x->done++;
		pthread_cond_broadcast(&x->done_cv);
	}
	pthread_mutex_unlock(&x->mu);
	return NULL;
}

static void issue(struct xfer *x, struct xfer_item *it)
{
	pthread_mutex_lock(&x->mu);
	it->ticket = x->done;	/* a dropped read-back waits for nothing */
	if (it->dir == ORTMEM_PLAN_XFER_IN && ++x->reads_seen == x->drop_nth) {
		pthread_mutex_unlock(&x->mu);
		return;
	}
	x->q[x->issued % x->n_items] = it;
	it->ticket = ++x->issued;
	pthread_cond_signal(&x->work);
	pthread_mutex_unlock(&x->mu);
}

static int wait_ticket(struct xfer *x, uint64_t ticket)
{
	int ret;

	pthread_mutex_lock(&x->mu);
	while (x->done < ticket)
		pthread_cond_wait(&x->done_cv, &x->mu);
	ret = x->err;
	pthread_mutex_unlock(&x->mu);
	return ret;
}

/* ---- reading the schedule ---- */

int xfer_bad(uint32_t step, const char *why)
{
	fprintf(stderr, "ortmem-run: the planner's transfer schedule at step %u is inconsistent: %s (a planner bug; run without --act-budget)\n",
		step, why);
	return -EPROTO;
}

/* Where step @s has value @v in the arena, or UINT64_MAX. */
uint64_t xfer_off_at(const struct acts *a, uint32_t s, uint32_t v)
{
	const struct act_node *nd = &a->node[s];
	uint32_t i;

	if (nd->out == v)
		return nd->out_off;
	for (i = 0; i < nd->n_in; i++)
		if (nd->in[i] == v)
			return nd->in_off[i];
	return UINT64_MAX;
}

/*
 * Is the plan's @earliest for the write-out of value @v listed at step @s
 * right?  At or after the step that produces @v, and from there to @s the
 * value's touches use the range the write-out reads (@off): it may run any
 * time in between (the plan says so: after the value's last move within
 * the arena, if it moved).  No off gap comes before a value's write-out (it
 * is written out once, before its first), so only moves change its offset
 * before @s.  Whether the value moved since it was made in *@moved.
 */
static bool out_start_ok(const struct acts *a, uint32_t s, uint32_t v, uint32_t earliest,
			 uint64_t off, bool *moved)
{
	uint32_t t = earliest + 1;

	while (t-- && a->node[t].out != v)
		;
	if (t == UINT32_MAX)
		return false;	/* no step up to it produces the value */
	*moved = t < earliest;
	for (t = earliest; t < s; t++) {
		uint64_t at = xfer_off_at(a, t, v);

		if (at != UINT64_MAX && at != off)
			return false;
	}
	return true;
}

/* One transfer of the plan at step @s, checked against the steps' own
 * offsets: a read-back lands where the step reads the value, a write-out
 * reads where the step left it. */
static int take(struct xfer *x, uint32_t s, const struct ortmem_plan_transfer *t,
		struct xfer_item *it)
{
	const struct acts *a = x->a;
	int in = t->dir == ORTMEM_PLAN_XFER_IN;
	bool moved = false;

	if (t->dir > ORTMEM_PLAN_XFER_MOVE || t->value >= a->n_values)
		return xfer_bad(s, "unknown direction or value");
	if (t->dir == ORTMEM_PLAN_XFER_MOVE)
		return xfer_take_move(x, s, t, it);
	if (t->src_offset != t->device_offset)
		return xfer_bad(s, "a read-back or write-out whose source offset is not its device offset");
	if ((in ? t->from_tier : t->to_tier) != a->tier[t->value] ||
	    (in ? t->to_tier : t->from_tier) != ORTMEM_TIER_DEVICE)
		return xfer_bad(s, "a transfer between other tiers than the arena and the value's home");
	if (a->tier[t->value] == ORTMEM_TIER_DEVICE ||
	    (a->tier[t->value] == ORTMEM_TIER_DISK && !x->spill))
		return xfer_bad(s, "a transfer of a value that never leaves the arena");
	if (t->bytes != act_len(a, t->value))
		return xfer_bad(s, "a transfer of the wrong size");
	if (xfer_off_at(a, s, t->value) != t->device_offset)
		return xfer_bad(s, "a transfer to or from another offset than the step uses");
	if (t->earliest > s)
		return xfer_bad(s, "a transfer that starts after its step");
	if (!in && !out_start_ok(a, s, t->value, t->earliest, t->device_offset, &moved))
		return xfer_bad(s, "a write-out whose earliest step is before its value is made or where it reads");
	it->dir = t->dir;
	it->value = t->value;
	it->step = s;
	it->earliest = t->earliest;
	it->off = t->device_offset;
	it->src = t->device_offset;
	it->len = t->bytes;
	it->tier = a->tier[t->value];
	it->home = it->tier == ORTMEM_TIER_HOST ? x->home + a->home_off[t->value] : NULL;
	if (in) {
		x->plan_in += t->bytes;
		x->n_reads++;
		x->n_ahead += t->earliest < s;
	} else {
		x->plan_out += t->bytes;
		x->n_outs++;
		x->n_outs_ahead += it->earliest < s;
		x->n_outs_moved += moved;
	}
	return 0;
}

static int read_plan(struct xfer *x, uint32_t max_items)
{
	const struct acts *a = x->a;
	struct ortmem_plan_transfer *buf = NULL;
	uint32_t s, i;
	size_t cap = 0;
	int n, ret = 0;

	for (s = 0; !ret && s < a->n_nodes; s++) {
		ORTMEM_OPTS(ortmem_plan_moves, mv);
		uint64_t stall = 0;

		ret = ortmem_plan_step_moves(a->plan, s, &mv);
		if (ret)
			break;
		x->plan_disk_in += mv.prefetch[ORTMEM_TIER_DISK];
		x->plan_disk_out += mv.spill[ORTMEM_TIER_DISK];
		x->plan_step_move += mv.device_move;
		n = ortmem_plan_transfers(a->plan, s, buf, cap, &stall);
		if (n >= 0 && (size_t)n > cap) {
			free(buf);
			cap = (size_t)n * 2;
			buf = calloc(cap, sizeof(*buf));
			if (!buf)
				return -ENOMEM;
			n = ortmem_plan_transfers(a->plan, s, buf, cap, &stall);
		}
		if (n < 0) {
			free(buf);
			return n;
		}
		x->plan_stall += stall;
		x->at[s] = x->n_items;
		if ((uint32_t)n > max_items - x->n_items) {
			ret = xfer_bad(s, "more transfers than the values have touches");
			break;
		}
		for (i = 0; !ret && i < (uint32_t)n; i++)
			ret = take(x, s, &buf[i], &x->it[x->n_items++]);
	}
	x->at[a->n_nodes] = x->n_items;
	free(buf);
	return ret;
}

/* The step before @t that last touched value @v (@t when none). */
static uint32_t touch_before(const struct acts *a, uint32_t t, uint32_t v)
{
	uint32_t s;

	for (s = t; s-- > 0;)
		if (xfer_off_at(a, s, v) != UINT64_MAX)
			return s;
	return t;
}

/*
 * Index the read-backs by the step they start at, and (for
 * --poison-evicted) the range each value leaves free after its last touch
 * before a read-back: from then on the value's bytes are in its home only.
 */
static int index_items(struct xfer *x)
{
	const struct acts *a = x->a;
	uint32_t n = a->n_nodes, i, s, *fill;

	x->issue_at = calloc(n + 1, sizeof(*x->issue_at));
	x->out_at = calloc(n + 1, sizeof(*x->out_at));
	x->poison_at = calloc(n + 1, sizeof(*x->poison_at));
	x->issue = calloc(x->n_items + 1, sizeof(*x->issue));
	x->outs = calloc(x->n_items + 1, sizeof(*x->outs));
	x->poison = calloc(x->n_items + 1, sizeof(*x->poison));
	fill = calloc(n + 1, sizeof(*fill));
	if (!x->issue_at || !x->out_at || !x->poison_at || !x->issue || !x->outs ||
	    !x->poison || !fill) {
		free(fill);
		return -ENOMEM;
	}
	for (i = 0; i < x->n_items; i++) {
		const struct xfer_item *it = &x->it[i];

		if (it->dir == ORTMEM_PLAN_XFER_OUT)
			x->out_at[it->earliest + 1]++;
		if (it->dir != ORTMEM_PLAN_XFER_IN)
			continue;
		x->issue_at[it->earliest + 1]++;
		x->poison_at[touch_before(a, it->step, it->value) + 1]++;
	}
	for (s = 0; s < n; s++) {
		x->issue_at[s + 1] += x->issue_at[s];
		x->out_at[s + 1] += x->out_at[s];
		x->poison_at[s + 1] += x->poison_at[s];
	}
	/* Items are listed by step, so each step's read-backs keep the order
	 * of the steps that need them, and its write-outs the order of the
	 * steps that list them. */
	for (i = 0; i < x->n_items; i++)
		if (x->it[i].dir == ORTMEM_PLAN_XFER_IN)
			x->issue[x->issue_at[x->it[i].earliest] + fill[x->it[i].earliest]++] = i;
	memset(fill, 0, (n + 1) * sizeof(*fill));
	for (i = 0; i < x->n_items; i++)
		if (x->it[i].dir == ORTMEM_PLAN_XFER_OUT)
			x->outs[x->out_at[x->it[i].earliest] + fill[x->it[i].earliest]++] = i;
	memset(fill, 0, (n + 1) * sizeof(*fill));
	for (i = 0; i < x->n_items; i++) {
		const struct xfer_item *it = &x->it[i];
		uint32_t p;

		if (it->dir != ORTMEM_PLAN_XFER_IN)
			continue;
		p = touch_before(a, it->step, it->value);
		x->poison[x->poison_at[p] + fill[p]++] =
			(struct xfer_range){ xfer_off_at(a, p, it->value), it->len };
	}
	free(fill);
	return 0;
}

int xfer_open(struct xfer *x, const struct acts *a,
	      const struct xfer_ops *ops, uint8_t *home,
	      struct ortmem_spill *spill)
{
	uint32_t s, max_items = a->n_values;
	int ret;

	memset(x, 0, sizeof(*x));
	x->a = a;
	x->ops = *ops;
	x->home = home;
	x->spill = spill;
	/* A read-back and a move at most a touch, a write-out a value. */
	for (s = 0; s < a->n_nodes; s++)
		max_items += 2 * (a->node[s].n_in + 1);
	x->it = calloc(max_items, sizeof(*x->it));
	x->at = calloc(a->n_nodes + 1, sizeof(*x->at));
	x->q = calloc(max_items, sizeof(*x->q));
	x->pend_out = calloc(max_items, sizeof(*x->pend_out));
	x->extent = calloc(a->n_values, sizeof(*x->extent));
	x->has_extent = calloc(a->n_values, 1);
	x->bounce = spill ? malloc(a->xb > a->hb ? a->xb : a->hb) : NULL;
	if (!x->it || !x->at || !x->q || !x->pend_out || !x->extent ||
	    !x->has_extent || (spill && !x->bounce))
		return -ENOMEM;
	ret = read_plan(x, max_items);
	if (!ret)
		ret = xfer_check_moves(x);
	if (!ret)
		ret = index_items(x);
	if (ret || !x->n_items)
		return ret;
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->work, NULL);
	pthread_cond_init(&x->done_cv, NULL);
	ret = -pthread_create(&x->th, NULL, copier, x);
	x->started = !ret;
	return ret;
}

static int overlaps(const struct xfer_item *it, uint64_t off, uint64_t len)
{
	return it->off < off + len && off < it->off + it->len;
}

int xfer_before(struct xfer *x, uint32_t step)
{
	const struct act_node *nd = &x->a->node[step];
	uint64_t need = 0, done;
	uint32_t i, kept;
	int ret;

	if (!x->n_items)
		return 0;
	/* Moves first: a read-back issued now may land in a range one of
	 * them leaves. */
	ret = xfer_run_moves(x, step);
	if (ret)
		return ret;
	for (i = x->issue_at[step]; i < x->issue_at[step + 1]; i++) {
		issue(x, &x->it[x->issue[i]]);
		x->issued_ahead += x->it[x->issue[i]].step > step;
	}
	/* This step's read-backs were issued at or before it. */
	for (i = x->at[step]; i < x->at[step + 1]; i++)
		if (x->it[i].dir == ORTMEM_PLAN_XFER_IN && x->it[i].ticket > need)
			need = x->it[i].ticket;
	/* A write-out still reading what the step is about to overwrite;
	 * those done are dropped from the list, which stays short. */
	pthread_mutex_lock(&x->mu);
	done = x->done;
	pthread_mutex_unlock(&x->mu);
	for (i = 0, kept = 0; i < x->n_pend_out; i++) {
		const struct xfer_item *it = &x->it[x->pend_out[i]];

		if (it->ticket <= done)
			continue;
		x->pend_out[kept++] = x->pend_out[i];
		if (overlaps(it, nd->out_off, nd->out_len) && it->ticket > need)
			need = it->ticket;
	}
	x->n_pend_out = kept;
	return wait_ticket(x, need);
}

int xfer_after(struct xfer *x, uint32_t step)
{
	uint32_t i;
	int ret = 0;

	if (!x->n_items)
		return 0;
	/* The write-outs that may start now: the value is in its range
	 * for good, so the copy overlaps the steps up to the one listing
	 * it. */
	for (i = x->out_at[step]; i < x->out_at[step + 1]; i++) {
		issue(x, &x->it[x->outs[i]]);
		x->pend_out[x->n_pend_out++] = x->outs[i];
		x->outs_issued_ahead += x->it[x->outs[i]].step > step;
	}
	if (!x->do_poison || x->poison_at[step] == x->poison_at[step + 1])
		return 0;
	/* The write-outs read these ranges first; no read-back lands in them
	 * before the next step (the plan keeps them free until then). */
	ret = xfer_drain(x);
	for (i = x->poison_at[step]; !ret && i < x->poison_at[step + 1]; i++)
		ret = x->ops.poison(x->ops.ctx, x->poison[i].off, x->poison[i].len);
	return ret;
}

int xfer_wait_outs(struct xfer *x, uint64_t off, uint64_t len)
{
	uint64_t need = 0;
	uint32_t i;

	for (i = 0; i < x->n_pend_out; i++) {
		const struct xfer_item *it = &x->it[x->pend_out[i]];

		if (overlaps(it, off, len) && it->ticket > need)
			need = it->ticket;
	}
	return wait_ticket(x, need);
}

int xfer_drain(struct xfer *x)
{
	if (!x->n_items)
		return 0;
	x->n_pend_out = 0;
	return wait_ticket(x, x->issued);
}

void xfer_close(struct xfer *x)
{
	if (x->started) {
		pthread_mutex_lock(&x->mu);
		x->stop = 1;
		pthread_cond_signal(&x->work);
		pthread_mutex_unlock(&x->mu);
		pthread_join(x->th, NULL);
		pthread_mutex_destroy(&x->mu);
		pthread_cond_destroy(&x->work);
		pthread_cond_destroy(&x->done_cv);
	}
	free(x->it);
	free(x->at);
	free(x->q);
	free(x->pend_out);
	free(x->issue_at);
	free(x->out_at);
	free(x->poison_at);
	free(x->issue);
	free(x->outs);
	free(x->poison);
	free(x->bounce);
	free(x->extent);
	free(x->has_extent);
	memset(x, 0, sizeof(*x));
}

/* Is the @nth of a run's @per_pass transfers a pass (the first 1) there to
 * skip under option @opt?  Else say why not, naming @what they are and
 * what to try when there are none (@none). */
static int check_nth(const char *opt, const char *what, const char *none,
		     uint64_t nth, uint32_t per_pass, uint32_t passes,
		     uint64_t act_budget)
{
	uint64_t n = (uint64_t)per_pass * passes;

	if (nth <= n)
		return 0;
	if (!n)
		fprintf(stderr, "ortmem-run: %s %" PRIu64 ": under --act-budget %" PRIu64 " %s\n",
			opt, nth, act_budget, none);
	else
		fprintf(stderr, "ortmem-run: %s %" PRIu64 " is past the run's %s: under --act-budget %" PRIu64 " it has %" PRIu64 " (%u a pass, times --passes %u); give a number from 1 to %" PRIu64 "\n",
			opt, nth, what, act_budget, n, per_pass, passes, n);
	return -1;
}

int xfer_check_drop(const struct xfer *x, uint64_t nth, uint32_t passes,
		    uint64_t act_budget)
{
	return check_nth("--drop-read-back", "read-backs",
			 "every activation stays in the arena, so this run has no read-back to skip; give a smaller --act-budget",
			 nth, x->n_reads, passes, act_budget);
}

int xfer_check_drop_move(const struct xfer *x, uint64_t nth, uint32_t passes,
			 uint64_t act_budget)
{
	return check_nth("--drop-move", "moves",
			 "the plan moves no value within the arena, so this run has no move to skip; try another --act-budget",
			 nth, x->n_moves, passes, act_budget);
}
