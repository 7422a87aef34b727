// SPDX-License-Identifier: MIT
/*
 * A residency laid out by compaction.  The gap sweeps decide which gaps
 * leave the device with every step's bytes within the budget, offsets
 * aside (plan_gap_sweep.c); the allocator's pass then lays them out and
 * sends more gaps off where a step finds no room, since it moves a
 * buffer at most once between two of its touches (plan_move.c).  Here
 * the decided residency is kept as it is: where a value a step brings in
 * finds no free range, the residents in its way move, as often as it
 * takes, a buffer several times in one gap if need be (each move after
 * the first splits the gap at a waypoint, ortmem__plan_compact_apply()).
 * The step's bytes fit, so room can be made unless something that may
 * not move is in the way: a buffer after its last touch, one a write-out
 * still reads, one already moved at this step.
 *
 * Each value a step brings in (its outputs, the read-backs it needs), the
 * largest first, takes the tightest free range (a write-out's range is
 * free to it: a step's read-backs run after its write-outs and moves).
 * Where none holds it, the cheaper in bytes moved of
 *
 *  1. the window of its size, among those starting at 0 or at an item's
 *     end (or a held range's start), or ending at one's start or the
 *     ceiling, whose residents weigh least, each moved, the largest
 *     first, to the tightest range that is free now and was no source of
 *     this step's moves (so the moves are independent of each other);
 *     all or none of them;
 *  2. (not under ORTMEM_PLAN_F_MOVE_APART) the run of residents whose
 *     slide down, one against the next, opens the room above them;
 *
 * else every resident that may move slid down as far as it goes, in order
 * of address, then the step's values placed again.  Slides run in
 * increasing order of destination, each onto sources of the moves before
 * it, never onto a write-out's range nor another window's source (the
 * validator's rules, plan_validate.c).  Where even that finds no room, a
 * resident leaves the device after the fact (cp_evict()); where none may,
 * the layout fails and the caller keeps its other plans.
 * Placement-history-3.rst has the measurements.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* Windows tried, the fewest bytes in the way first, before sliding. */
#define CP_WINDOWS 16

struct cp {
	const struct ortmem_plan *plan;
	const uint64_t *asz;
	uint8_t *off;		/* gaps sent off where no room could be made */
	uint64_t budget;
	uint32_t s;		/* the step being laid out */
	uint64_t *addr;		/* per buffer, while resident */
	uint32_t *pos;		/* per buffer: its index in live; UINT32_MAX: not resident */
	uint32_t *iend;		/* per buffer: the step its interval ends before */
	uint32_t *last;		/* per buffer: its last touch before the step */
	uint32_t *moved_at;	/* per buffer: the step of its last move + 1 */
	uint32_t *first_mv;	/* per buffer: the step of its first move in its gap */
	uint8_t *wo;		/* per buffer: its interval ends with a write-out */
	uint8_t *fresh;		/* per buffer: placed at this step */
	uint32_t *live, n_live;
	uint64_t (*held)[2];	/* this step's write-out ranges, then its sources */
	uint32_t n_held;
	uint32_t *in, n_in;	/* the values this step brings in */
	uint32_t *by_step_idx;	/* touches by step, CSR */
	uint32_t *by_step;
	uint32_t *tbuf;		/* per touch: its buffer */
	uint64_t (*win)[2];	/* windows: start, bytes in the way */
	uint64_t (*rng)[2];	/* scratch: the ranges in a fit's way */
	uint32_t *way;
	uint32_t *ord;		/* scratch: the residents by address */
	uint8_t *slides;	/* scratch, per p->ord: may it slide down (cp_run()) */
	struct ortmem__plan_cmove *mv;
	uint32_t n_mv;
	size_t cap_mv;
	uint64_t moved;		/* bytes, as the moves so far copy them */
};

static bool cp_meets(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* May resident @b move before this step?  Not placed at it, not moved at
 * it already, and with a touch still to come (a move lies in a gap that a
 * touch ends). */
static bool cp_movable(const struct cp *p, uint32_t b)
{
	return !p->fresh[b] && p->moved_at[b] != p->s + 1 &&
	       p->last[b] + 1 < p->plan->touch_idx[b + 1];
}

/* The tightest range for @size clear of the residents (and, @held, of the
 * held ranges) and of [@x0, @x1), or UINT64_MAX: the ranges in the way
 * sorted, the free ones between them swept. */
static uint64_t cp_fit(const struct cp *p, uint64_t size, bool held, uint64_t x0, uint64_t x1)
{
	uint64_t (*r)[2] = p->rng, best = UINT64_MAX, best_len = UINT64_MAX, cur = 0;
	uint32_t n = 0, i;

	for (i = 0; i < p->n_live; i++) {
		r[n][0] = p->addr[p->live[i]];
		r[n++][1] = p->addr[p->live[i]] + p->asz[p->live[i]];
	}
	for (i = 0; held && i < p->n_held; i++) {
		r[n][0] = p->held[i][0];
		r[n++][1] = p->held[i][1];
	}
	if (x1 > x0) {
		r[n][0] = x0;
		r[n++][1] = x1;
	}
	ortmem__sort_pairs(r, n, false);
	for (i = 0; i <= n; i++) {
		uint64_t next = i < n ? r[i][0] : p->budget;

		if (next > cur && next - cur >= size && next - cur < best_len) {
			best_len = next - cur;
			best = cur;
		}
		if (i < n && r[i][1] > cur)
			cur = r[i][1];
	}
	return best;
}

/* The bytes moved so far, weighed against tier bytes. */
static uint64_t cp_weighed(const struct cp *p)
{
	return ortmem__plan_move_weigh(p->plan, p->moved);
}

static int cp_move(struct cp *p, uint32_t b, uint64_t to)
{
	if (p->n_mv == p->cap_mv && ortmem__grow((void **)&p->mv, &p->cap_mv, p->n_mv + 1,
						 sizeof(*p->mv), 64))
		return -ENOMEM;
	if (p->moved_at[b] <= p->plan->touch_step[p->last[b]] + 1)
		p->first_mv[b] = p->s;	/* its first move in the gap */
	p->mv[p->n_mv++] = (struct ortmem__plan_cmove){ b, p->s, to };
	p->moved += p->plan->bufs[b].size;
	p->held[p->n_held][0] = p->addr[b];
	p->held[p->n_held++][1] = p->addr[b] + p->asz[b];
	p->addr[b] = to;
	p->moved_at[b] = p->s + 1;
	return 0;
}

/* Window [a, a + size) cleared: its residents moved (1), or none (0);
 * -ENOMEM. */
static int cp_window(struct cp *p, uint64_t a, uint64_t size)
{
	uint32_t i, j, n = 0, held = p->n_held;
	uint64_t *to = (uint64_t *)(p->win + 2 * (p->n_live + p->n_held) + 2);	/* behind the windows */
	int ret = 0;

	for (i = 0; i < p->n_live; i++) {
		uint32_t v = p->live[i];

		if (!cp_meets(a, a + size, p->addr[v], p->addr[v] + p->asz[v]))
			continue;
		for (j = n++; j && p->asz[p->way[j - 1]] < p->asz[v]; j--)
			p->way[j] = p->way[j - 1];
		p->way[j] = v;
	}
	/* each to a range free now and never a source: the moves are then
	 * independent (none lands where another still reads) */
	for (i = 0; i < n; i++) {
		uint32_t v = p->way[i];

		to[i] = cp_fit(p, p->asz[v], true, a, a + size);
		if (to[i] == UINT64_MAX)
			break;
		to[n + i] = p->addr[v];
		/* held at both ends for the movers after it: its source (part
		 * of it may lie outside the window) until the step's end */
		p->held[p->n_held][0] = p->addr[v];
		p->held[p->n_held++][1] = p->addr[v] + p->asz[v];
		p->addr[v] = to[i];
	}
	p->n_held = held;	/* cp_move() holds the sources of those that move */
	if (i < n) {
		while (i--)
			p->addr[p->way[i]] = to[n + i];
		return 0;
	}
	for (i = 0; i < n && !ret; i++) {
		p->addr[p->way[i]] = to[n + i];
		ret = cp_move(p, p->way[i], to[i]);
	}
	return ret ? ret : 1;
}

static int cp_cmp_addr(const void *x, const void *y, void *u)
{
	const uint64_t *addr = u;
	uint64_t a = addr[*(const uint32_t *)x], b = addr[*(const uint32_t *)y];

	return (a > b) - (a < b);
}

/* The residents, by address, into p->ord. */
static void cp_sort_live(struct cp *p)
{
	memcpy(p->ord, p->live, sizeof(*p->ord) * p->n_live);
	qsort_r(p->ord, p->n_live, sizeof(*p->ord), cp_cmp_addr, p->addr);
}

/* Windows of @size holding no resident that may not move, with fewer
 * bytes in their way than @below, by those bytes; the first that clears
 * (its start into *@at).  1, 0 (none), or -ENOMEM.  With @least, only the
 * bytes in the way of the cheapest into it (UINT64_MAX: none), 0. */
static int cp_windows(struct cp *p, uint64_t size, uint64_t below, uint64_t *at, uint64_t *least)
{
	uint32_t i, j, n = 0, na = 2 * (p->n_live + p->n_held) + 2;
	int ret;

	cp_sort_live(p);
	/* windows start at 0, at an item's end or a held range's start; or
	 * end at the ceiling, at an item's start or a held range's end (a
	 * value may land on a write-out's range: the window may take it in) */
	for (i = 0; i < na; i++) {
		uint32_t h = i / 2, lo, hi;
		/* the window starts where item h - 1 ends, or ends where it starts
		 * (a held range the other way round: the window takes it in) */
		uint64_t a, way = 0, from_end, to_start;

		if (h && h <= p->n_live) {
			from_end = p->addr[p->ord[h - 1]] + p->asz[p->ord[h - 1]];
			to_start = p->addr[p->ord[h - 1]];
		} else if (h) {
			from_end = p->held[h - 1 - p->n_live][0];
			to_start = p->held[h - 1 - p->n_live][1];
		} else {
			from_end = 0;
			to_start = p->budget;
		}
		a = i % 2 == 0 ? from_end : to_start >= size ? to_start - size : UINT64_MAX;
		if (a == UINT64_MAX || a > p->budget || size > p->budget - a)
			continue;
		/* the residents in its way: disjoint, so sorted by their ends too */
		for (lo = 0, hi = p->n_live; lo < hi;) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (p->addr[p->ord[mid]] + p->asz[p->ord[mid]] <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = lo; j < p->n_live && p->addr[p->ord[j]] < a + size && way != UINT64_MAX; j++)
			way = cp_movable(p, p->ord[j]) ? way + p->asz[p->ord[j]] : UINT64_MAX;
		if (way >= below)
			continue;
		p->win[n][0] = a;
		p->win[n++][1] = way;
	}
	ortmem__sort_pairs(p->win, n, true);
	if (least) {	/* only asked what the cheapest costs */
		*least = n ? p->win[0][1] : UINT64_MAX;
		return 0;
	}
	for (i = 0; i < n && i < CP_WINDOWS; i++) {
		ret = cp_window(p, p->win[i][0], size);
		if (ret) {
			*at = p->win[i][0];
			return ret;
		}
	}
	return 0;
}

/* The lowest start at or above @a, up to @top, where @size meets none of
 * the held ranges but those from @own on (the slide's own sources, onto
 * which it may land); UINT64_MAX where none. */
static uint64_t cp_lowest(const struct cp *p, uint64_t a, uint64_t top, uint64_t size, uint32_t own)
{
	uint32_t i;
	bool again = true;

	while (again && a <= top) {
		again = false;
		for (i = 0; i < own; i++)
			if (cp_meets(a, a + size, p->held[i][0], p->held[i][1])) {
				a = p->held[i][1];
				again = true;
			}
	}
	return a <= top ? a : UINT64_MAX;
}

/* The last resort: this step's values taken out, every resident that may
 * slid down in order of address, the values placed again.  1, 0 (no
 * room), or -ENOMEM. */
static int cp_slide(struct cp *p)
{
	uint32_t i, own;
	uint64_t floor = 0;
	int ret = 0;

	for (i = 0; i < p->n_live;)
		if (p->fresh[p->live[i]]) {
			p->pos[p->live[i]] = UINT32_MAX;
			p->live[i] = p->live[--p->n_live];
		} else {
			i++;
		}
	qsort_r(p->live, p->n_live, sizeof(*p->live), cp_cmp_addr, p->addr);
	own = p->n_held;
	for (i = 0; i < p->n_live && !ret; i++) {
		uint32_t v = p->live[i];
		uint64_t z = p->asz[v], to = UINT64_MAX, from = p->addr[v];

		if (cp_movable(p, v) && floor < from)
			to = cp_lowest(p, floor, from, z, own);
		if (to != UINT64_MAX && to < from &&
		    (to + z <= from || ortmem__plan_move_pieces_ok(from - to, p->plan->bufs[v].size)))
			ret = cp_move(p, v, to);
		floor = p->addr[v] + z;
	}
	for (i = 0; i < p->n_live; i++)
		p->pos[p->live[i]] = i;
	for (i = 0; i < p->n_in && !ret; i++) {
		uint32_t v = p->in[i];
		uint64_t at = cp_fit(p, p->asz[v], false, 0, 0);

		if (at == UINT64_MAX)
			return 0;
		p->addr[v] = at;
		p->pos[v] = p->n_live;
		p->live[p->n_live++] = v;
	}
	return ret ? ret : 1;
}

/* Where buffer @b's interval opened by touch @k ends: the step after the
 * touch that opens an off gap (a write-out), or its life's end. */
static void cp_interval(struct cp *p, uint32_t b, uint32_t k)
{
	const struct ortmem_plan *plan = p->plan;
	uint32_t end = plan->touch_idx[b + 1];

	while (!p->off[k] && k + 1 < end)
		k++;
	p->wo[b] = p->off[k];
	p->iend[b] = p->off[k] ? plan->touch_step[k] + 1 : plan->bufs[b].hi;
}

/* The step's values in, the largest first (insertion: a step has few). */
static void cp_take_in(struct cp *p, uint32_t v)
{
	uint32_t j;

	for (j = p->n_in++; j && p->asz[p->in[j - 1]] < p->asz[v]; j--)
		p->in[j] = p->in[j - 1];
	p->in[j] = v;
}

/* Is some held range in [@a, @b)? */
static bool cp_held_in(const struct cp *p, uint64_t a, uint64_t b)
{
	uint32_t i;

	for (i = 0; i < p->n_held; i++)
		if (cp_meets(a, b, p->held[i][0], p->held[i][1]))
			return true;
	return false;
}

/* May residents p->ord[@i .. @t) slide down to @floor, one against the
 * next?  Each that overlaps its own source shifts by its pieces' share. */
static bool cp_run_ok(const struct cp *p, uint32_t i, uint32_t t, uint64_t floor)
{
	for (; i < t; i++) {
		uint32_t v = p->ord[i];
		uint64_t from = p->addr[v];

		if (from > floor && floor + p->asz[v] > from &&
		    !ortmem__plan_move_pieces_ok(from - floor, p->plan->bufs[v].size))
			return false;
		floor += p->asz[v];
	}
	return true;
}

/*
 * The run of residents (in order of address) whose slide down opens @size
 * with the fewest bytes moved: residents that may move, with no held range
 * in the free gaps they slide over; the room opens above them, up to the
 * next resident (a held range there is free to a value the step brings
 * in).  Its bytes (UINT64_MAX: none), its first resident in p->ord into
 * *@lo, past its last into *@hi.  O(residents^2) at worst.
 */
static uint64_t cp_run(struct cp *p, uint64_t size, uint32_t *lo, uint32_t *hi)
{
	uint32_t n = p->n_live, t, i;
	uint64_t best = UINT64_MAX;

	cp_sort_live(p);
	for (i = 0; i < n; i++) {	/* may resident i slide over the gap below it? */
		uint64_t floor = i ? p->addr[p->ord[i - 1]] + p->asz[p->ord[i - 1]] : 0;

		p->slides[i] = cp_movable(p, p->ord[i]) && !cp_held_in(p, floor, p->addr[p->ord[i]]);
	}
	for (t = 1; t <= n; t++) {
		uint64_t top = t < n ? p->addr[p->ord[t]] : p->budget, sum = 0;

		for (i = t; i-- > 0;) {
			uint32_t v = p->ord[i];
			uint64_t floor = i ? p->addr[p->ord[i - 1]] + p->asz[p->ord[i - 1]] : 0;

			if (!p->slides[i])
				break;
			sum += p->asz[v];
			if (sum >= best)
				break;
			if (top - floor - sum < size)
				continue;
			if (cp_run_ok(p, i, t, floor)) {
				best = sum;
				*lo = i;
				*hi = t;
			}
			break;
		}
	}
	return best;
}

/* Slide the run p->ord[@lo .. @hi) down; the start of the room above it. */
static int cp_run_apply(struct cp *p, uint32_t lo, uint32_t hi, uint64_t *at)
{
	uint64_t cur = lo ? p->addr[p->ord[lo - 1]] + p->asz[p->ord[lo - 1]] : 0;
	int ret = 0;

	for (; lo < hi && !ret; lo++) {
		uint32_t v = p->ord[lo];

		if (p->addr[v] != cur)
			ret = cp_move(p, v, cur);
		cur += p->asz[v];
	}
	*at = cur;
	return ret ? ret : 1;
}

/* Send buffer @b off from its last touch on (written out after that
 * touch, as the sweeps would have sent it), dropping its moves since:
 * what it left at each is free after the fact, for nothing landed where
 * it still was. */
static void cp_send_off(struct cp *p, uint32_t b)
{
	const struct ortmem_plan *plan = p->plan;
	uint32_t k = p->last[b], i = p->n_mv;

	p->off[k] = 1;
	if (plan->touch_step[k] + 1 == p->s) {	/* written out now */
		p->held[p->n_held][0] = p->addr[b];
		p->held[p->n_held++][1] = p->addr[b] + p->asz[b];
	}
	while (i-- > 0 && p->mv[i].step > plan->touch_step[k])
		if (p->mv[i].buf == b) {
			p->mv[i].buf = UINT32_MAX;
			p->moved -= plan->bufs[b].size;
		}
	i = p->pos[b];
	p->pos[b] = UINT32_MAX;
	p->live[i] = p->live[--p->n_live];
	if (i < p->n_live)
		p->pos[p->live[i]] = i;
}

/* The room a value would have where resident p->ord[@i] is (from the end
 * of the resident below to the start of the one above: a value the step
 * brings in may land on held ranges). */
static uint64_t cp_room_at(const struct cp *p, uint32_t i)
{
	uint64_t lo = i ? p->addr[p->ord[i - 1]] + p->asz[p->ord[i - 1]] : 0;

	return (i + 1 < p->n_live ? p->addr[p->ord[i + 1]] : p->budget) - lo;
}

/*
 * Whom to evict for room for @size: of the residents the step does not
 * touch, those whose range, with the free ranges around it, holds @size
 * (*@opens), else all, the one whose next touch is furthest (Belady's
 * rule; the largest at a tie).  Not one that moved right after its touch
 * (another move may have landed on the range its write-out reads, since
 * that move ran).  UINT32_MAX where none may go.
 */
static uint32_t cp_pick(struct cp *p, uint64_t size, bool *opens)
{
	const struct ortmem_plan *plan = p->plan;
	uint32_t i, best = UINT32_MAX, far = 0;

	*opens = false;
	cp_sort_live(p);
	for (i = 0; i < p->n_live; i++) {
		uint32_t b = p->ord[i], k = p->last[b], next;
		bool o;

		if (p->fresh[b] || p->first_mv[b] == plan->touch_step[k] + 1)
			continue;
		next = k + 1 < plan->touch_idx[b + 1] ? plan->touch_step[k + 1] : UINT32_MAX;
		if (next == p->s)
			continue;
		o = cp_room_at(p, i) >= size;
		if (best == UINT32_MAX || o > *opens || (o == *opens && (next > far ||
		    (next == far && p->asz[b] > p->asz[best])))) {
			best = b;
			far = next;
			*opens = o;
		}
	}
	return best;
}

/* Evict for room for @size (cp_pick()); false where none may go. */
static bool cp_evict(struct cp *p, uint64_t size)
{
	bool opens;
	uint32_t b = cp_pick(p, size, &opens);

	if (b == UINT32_MAX)
		return false;
	cp_send_off(p, b);
	return true;
}

/* Tier bytes that sending buffer @b off from its last touch adds: its
 * read-back, if a touch follows, and its write-out, unless an earlier
 * gap of it left the device. */
static uint64_t cp_evict_cost(const struct cp *p, uint32_t b)
{
	const struct ortmem_plan *plan = p->plan;
	uint64_t z = plan->bufs[b].size, cost = p->last[b] + 1 < plan->touch_idx[b + 1] ? z : 0;
	uint32_t k;

	for (k = plan->touch_idx[b]; k < p->last[b] && !p->off[k]; k++)
		;
	return k < p->last[b] ? cost : cost + z;
}

/* Where a move would open room for @size, is evicting a buffer whose
 * range opens it cheaper than the least bytes moved (@move, weighed)?
 * Evict it then (true). */
static bool cp_evict_cheaper(struct cp *p, uint64_t size, uint64_t move)
{
	bool opens;
	uint32_t b = move == UINT64_MAX ? UINT32_MAX : cp_pick(p, size, &opens);

	if (b == UINT32_MAX || !opens ||
	    cp_evict_cost(p, b) >= ortmem__plan_move_weigh(p->plan, move))
		return false;
	cp_send_off(p, b);
	return true;
}

/* Place the step's values not placed yet: a free range; where none holds
 * one, room made by evicting a resident where that adds fewer tier bytes
 * than the least bytes a move would copy, weighed; else a window or a run
 * slid down, or (placing them all again) a slide of all.  1, 0 (no room
 * for one), -ENOMEM. */
static int cp_place(struct cp *p)
{
	bool apart = p->plan->o.flags & ORTMEM_PLAN_F_MOVE_APART;
	uint32_t i = 0;
	int ret;

	while (i < p->n_in) {
		uint32_t b = p->in[i], lo = 0, hi = 0;
		uint64_t at, run, win;

		if (p->pos[b] != UINT32_MAX) {
			i++;
			continue;
		}
		at = cp_fit(p, p->asz[b], false, 0, 0);
		ret = 1;
		if (at == UINT64_MAX) {
			run = apart ? UINT64_MAX : cp_run(p, p->asz[b], &lo, &hi);
			cp_windows(p, p->asz[b], UINT64_MAX, &at, &win);
			if (cp_evict_cheaper(p, p->asz[b], win < run ? win : run))
				continue;	/* the same value again */
			/* p->ord sorted anew: the same residents, the same order */
			ret = cp_windows(p, p->asz[b], run, &at, NULL);
			if (!ret && run != UINT64_MAX)
				ret = cp_run_apply(p, lo, hi, &at);
		}
		if (!ret && !apart)
			return cp_slide(p);	/* places them all, or not */
		if (ret <= 0)
			return ret;
		p->addr[b] = at;
		p->pos[b] = p->n_live;
		p->live[p->n_live++] = b;
		i++;
	}
	return 1;
}

/* The largest of the step's values not placed yet. */
static uint64_t cp_unplaced(const struct cp *p)
{
	uint32_t i;

	for (i = 0; i < p->n_in; i++)	/* the largest first */
		if (p->pos[p->in[i]] == UINT32_MAX)
			return p->asz[p->in[i]];
	return 0;
}

/* Lay out step @s: residents whose interval ended leave, the step's values
 * come in.  0, 1 (no room), or -ENOMEM. */
static int cp_step(struct cp *p, uint64_t *toff)
{
	uint32_t s = p->s, i, j, b, k;
	int ret;

	p->n_held = p->n_in = 0;
	for (i = 0; i < p->n_live;) {
		b = p->live[i];
		if (p->iend[b] > s) {
			i++;
			continue;
		}
		if (p->wo[b]) {		/* a write-out reads it after step s - 1 */
			p->held[p->n_held][0] = p->addr[b];
			p->held[p->n_held++][1] = p->addr[b] + p->asz[b];
		}
		p->pos[b] = UINT32_MAX;
		p->live[i] = p->live[--p->n_live];
		if (i < p->n_live)
			p->pos[p->live[i]] = i;
	}
	for (j = p->by_step_idx[s]; j < p->by_step_idx[s + 1]; j++) {
		b = p->tbuf[p->by_step[j]];
		if (p->pos[b] == UINT32_MAX && p->asz[b]) {
			cp_interval(p, b, p->by_step[j]);
			cp_take_in(p, b);
			p->fresh[b] = 1;
		}
	}
	while (!(ret = cp_place(p)))
		if (!cp_evict(p, cp_unplaced(p)))
			return 1;
	if (ret < 0)
		return ret;
	for (j = p->by_step_idx[s]; j < p->by_step_idx[s + 1]; j++) {
		k = p->by_step[j];
		b = p->tbuf[k];
		toff[k] = p->addr[b];
		p->last[b] = k;
	}
	for (i = 0; i < p->n_in; i++)
		p->fresh[p->in[i]] = 0;
	return 0;
}

static void cp_free(struct cp *p)
{
	free(p->addr);
	free(p->pos);
	free(p->iend);
	free(p->last);
	free(p->moved_at);
	free(p->first_mv);
	free(p->wo);
	free(p->fresh);
	free(p->live);
	free(p->held);
	free(p->in);
	free(p->by_step_idx);
	free(p->by_step);
	free(p->tbuf);
	free(p->win);
	free(p->rng);
	free(p->way);
	free(p->ord);
	free(p->slides);
}

static int cp_alloc(struct cp *p)
{
	const struct ortmem_plan *plan = p->plan;
	uint32_t nb = plan->n_bufs, nt = plan->touch_idx[nb], n = plan->n_nodes, b, k;

	p->addr = calloc(nb + 1, sizeof(*p->addr));
	p->pos = malloc(sizeof(*p->pos) * (nb + 1));
	p->iend = calloc(nb + 1, sizeof(*p->iend));
	p->last = calloc(nb + 1, sizeof(*p->last));
	p->moved_at = calloc(nb + 1, sizeof(*p->moved_at));
	p->first_mv = calloc(nb + 1, sizeof(*p->first_mv));
	p->wo = calloc(nb + 1, 1);
	p->fresh = calloc(nb + 1, 1);
	p->live = malloc(sizeof(*p->live) * (nb + 1));
	p->held = malloc(sizeof(*p->held) * (2 * nb + 1));
	p->in = malloc(sizeof(*p->in) * (nb + 1));
	p->by_step_idx = calloc(n + 2, sizeof(*p->by_step_idx));
	p->by_step = malloc(sizeof(*p->by_step) * (nt + 1));
	p->tbuf = malloc(sizeof(*p->tbuf) * (nt + 1));
	/* the windows (two per resident and per held range), and behind
	 * them room for a window's moves */
	p->win = malloc(sizeof(*p->win) * (7 * nb + 4));
	p->way = malloc(sizeof(*p->way) * (nb + 1));
	p->rng = malloc(sizeof(*p->rng) * (3 * nb + 2));
	p->ord = malloc(sizeof(*p->ord) * (nb + 1));
	p->slides = malloc(nb + 1);
	if (!p->addr || !p->pos || !p->iend || !p->last || !p->moved_at || !p->first_mv || !p->wo ||
	    !p->fresh || !p->live || !p->held || !p->in || !p->by_step_idx || !p->by_step ||
	    !p->tbuf || !p->win || !p->way || !p->rng || !p->ord ||
	    !p->slides)
		return -ENOMEM;
	memset(p->pos, 0xff, sizeof(*p->pos) * (nb + 1));
	for (b = 0; b < nb; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			p->tbuf[k] = b;
			p->by_step_idx[plan->touch_step[k] + 2]++;
		}
	for (k = 2; k <= n + 1; k++)
		p->by_step_idx[k] += p->by_step_idx[k - 1];
	for (k = 0; k < nt; k++)
		p->by_step[p->by_step_idx[plan->touch_step[k] + 1]++] = k;
	return 0;
}

int ortmem__plan_compact(const struct ortmem_plan *plan, const uint64_t *asz,
			 uint64_t budget, uint8_t *off, uint64_t bound, uint64_t deadline,
			 struct ortmem__plan_compacted *out)
{
	struct cp p = { .plan = plan, .asz = asz, .off = off, .budget = budget };
	uint32_t nt = plan->touch_idx[plan->n_bufs], i;
	int ret;

	memset(out, 0, sizeof(*out));
	out->off = off;
	out->toff = calloc(nt + 1, sizeof(*out->toff));
	ret = out->toff ? cp_alloc(&p) : -ENOMEM;
	for (p.s = 0; !ret && p.s < plan->n_nodes; p.s++) {
		ret = cp_step(&p, out->toff);
		if (!ret && deadline && !(p.s & 63) && ortmem__now_ns() > deadline)
			ret = 1;
		if (!ret && p.n_mv && cp_weighed(&p) >= bound)
			ret = 1;
		for (i = 0; !ret && i < p.n_live; i++) {
			uint32_t v = p.live[i];

			if (p.addr[v] + asz[v] > out->height)
				out->height = p.addr[v] + asz[v];
		}
	}
	out->moved = p.moved;
	out->mv = p.mv;
	out->n_mv = p.n_mv;
	cp_free(&p);
	if (ret == -ENOMEM)
		ret = ortmem__err_plain(-ENOMEM, "planner: cannot lay out %u touches by compaction", nt);
	if (ret)
		ortmem__plan_compacted_free(out);
	return ret;
}

void ortmem__plan_compacted_free(struct ortmem__plan_compacted *c)
{
	free(c->toff);
	free(c->mv);
	c->toff = NULL;
	c->mv = NULL;
	c->n_mv = 0;
}
