// SPDX-License-Identifier: MIT
/*
 * Residency and device offsets in one pass, as an allocator running the
 * schedule would see them: at each step, the buffers it touches that are
 * not on the device (produced there, or read back) take the best-fitting
 * hole of [0, budget) among the resident buffers; when no hole holds one,
 * resident buffers the step does not touch leave the device, the one with
 * the furthest next use per byte of transfer first, until one does.  When
 * the step's own buffers are what splits the space, every buffer the step
 * touches is re-seated from offset 0 (those already resident are written
 * out after their last touch and read back: legal in the gap model, and it
 * fits whenever the step's footprint does).
 *
 * Given a plan to follow (guide) and its packing (hint), a buffer takes
 * its packed offset where that is free; one that cannot takes, among the
 * free ranges, the one that stays clear of the packing's later intervals
 * longest, so it does not take the room a packed buffer will need.
 *
 * With ORTMEM__PLAN_RETRO, before sending residents off it tries to make
 * the room by moving them, back in time, to ranges free since their
 * intervals began (plan_retro.c): no bytes move for that.  Given room for
 * moves (ortmem__plan_online_mv()), it then tries copying them elsewhere
 * in the arena before the step, where that costs less (plan_move.c).
 *
 * Unlike the profile sweep and the packer (plan_gaps.c) this cannot lose to
 * fragmentation: what it places fits by construction, so it is both the
 * fallback that makes every budget at or above the largest step's
 * footprint solvable and a candidate of its own.  O(steps x residents x
 * log residents).
 */
#include <stdlib.h>

#include "plan_online.h"

/* Hinted intervals ol_free_until() looks at, at most, per offset. */
#define OL_AHEAD_MAX 256

static void ol_send_off(struct ol *o, uint32_t at);
static uint32_t ol_planned_end(const struct ol *o, uint32_t b, uint32_t k);

/* The occupied ranges, sorted, into o->hole (their count in *nd), and
 * with @best_fit the best fit for @size in [0, budget), or UINT64_MAX.
 * Without it, 0: the caller's own fit (ol_fit_ahead()) scans the same
 * holes and fails exactly when no hole holds @size.  A zero-size resident
 * occupies nothing and may lie inside another's range: left out, the
 * ranges are disjoint and their ends sorted too, as plan_move.c's
 * bisections need (with one in, a window over a resident the step reads
 * could look clear, and clearing it sent that resident off). */
static uint64_t ol_fit(struct ol *o, uint64_t size, uint32_t *nd, bool best_fit)
{
	uint32_t i, d = 0;

	for (i = 0; i < o->n_live; i++) {
		uint32_t b = o->live[i];

		if (!o->asz[b])
			continue;
		o->hole[d][0] = o->addr[b];
		o->hole[d][1] = o->addr[b] + o->asz[b];
		o->hole[d++][2] = b;
	}
	*nd = d;
	return best_fit ? ortmem__plan_best_gap(&o->hole[0][0], 3, d, o->budget, size) : 0;
}

/* The first step in (s, e) at which a hinted interval, other than @b's,
 * takes any of [a, a + size); @e when none does. */
static uint32_t ol_free_until(const struct ol *o, uint32_t b, uint64_t a, uint64_t size,
			      uint32_t s, uint32_t e)
{
	uint32_t lo = 0, hi = o->n_fut, i;

	while (lo < hi) {	/* first interval starting at or after s */
		uint32_t mid = lo + (hi - lo) / 2;

		if (o->fut[mid].lo < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < o->n_fut && o->fut[i].lo < e; i++) {
		const struct ol_iv *q = &o->fut[i];

		if (i - lo >= OL_AHEAD_MAX)
			return q->lo;	/* far enough: as good as free */

		if (q->buf != b && q->addr < a + size && a < q->addr + q->size)
			return q->lo > s ? q->lo : s + 1;
	}
	return e;
}

/*
 * Where a buffer without its hinted offset goes when a layout is hinted:
 * among the free ranges of [0, budget) now, the offset that stays clear of
 * the layout's later intervals longest (up to @e, its planned end), the
 * tightest hole on a tie; so it does not seat where a hinted buffer will
 * need the room.  UINT64_MAX when no hole holds it.  Call after ol_fit().
 */
static uint64_t ol_fit_ahead(struct ol *o, uint32_t d, uint32_t b, uint64_t size,
			     uint32_t s, uint32_t e)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = 0, len, cand[2];
	uint32_t i, c, best_until = 0, until;

	for (i = 0; i <= d; i++) {
		uint64_t next = i < d ? o->hole[i][0] : o->budget;

		len = next > cur ? next - cur : 0;
		if (len >= size) {
			cand[0] = cur;
			cand[1] = next - size;
			for (c = 0; c < 2; c++) {
				until = ol_free_until(o, b, cand[c], size, s, e);
				if (best == UINT64_MAX || until > best_until ||
				    (until == best_until && len < best_len)) {
					best = cand[c];
					best_until = until;
					best_len = len;
				}
			}
		}
		if (i < d && o->hole[i][1] > cur)
			cur = o->hole[i][1];
	}
	return best;
}

/* How far apart the ends of @b (at @e) and its neighbour @nb (UINT32_MAX:
 * the floor or the ceiling, never freed) lie. */
static uint32_t ol_end_gap(const struct ol *o, uint32_t e, uint64_t nb)
{
	uint32_t f = nb == UINT64_MAX ? o->plan->n_nodes + 1u : o->end[nb];

	return e > f ? e - f : f - e;
}

/*
 * Among the holes that hold @size, the side of a hole whose neighbour ends
 * nearest to when @b does (its planned end @e): when both go, their ranges
 * free together and merge, so the space fragments less than by size alone.
 * An exact fit first, then the nearest end, then the tightest hole.
 * Read off o->live itself (no copy into o->hole: most seats find a hole).
 */
static uint64_t ol_fit_end(const struct ol *o, uint64_t size, uint32_t e)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = 0, len, below = UINT64_MAX;
	uint32_t i, gap, best_gap = 0, d = o->n_live;

	for (i = 0; i <= d; i++) {
		uint32_t r = i < d ? o->live[i] : 0;
		uint64_t next = i < d ? o->addr[r] : o->budget;
		uint64_t above = i < d ? r : UINT64_MAX;

		if (i < d && !o->asz[r])
			continue;	/* occupies nothing: splits no hole */
		len = next > cur ? next - cur : 0;
		if (len >= size) {
			uint32_t gb = ol_end_gap(o, e, below), ga = ol_end_gap(o, e, above);
			uint64_t at = gb <= ga ? cur : next - size;

			gap = len == size ? 0 : (gb <= ga ? gb : ga) + 1;
			if (best == UINT64_MAX || gap < best_gap ||
			    (gap == best_gap && len < best_len)) {
				best = at;
				best_gap = gap;
				best_len = len;
			}
		}
		if (i < d && o->addr[r] + o->asz[r] >= cur) {
			cur = o->addr[r] + o->asz[r];
			below = r;
		}
	}
	return best;
}

/* @at when [at, at + size) lies in [0, budget) and no resident holds any
 * of it (the packer's offset, kept where it still fits), or UINT64_MAX. */
static uint64_t ol_hinted(const struct ol *o, uint64_t at, uint64_t size)
{
	uint32_t i;

	if (at == UINT64_MAX || at > o->budget || size > o->budget - at)
		return UINT64_MAX;
	for (i = 0; i < o->n_live; i++) {
		uint32_t b = o->live[i];

		if (o->addr[b] >= at + size)
			break;		/* sorted by offset */
		if (o->addr[b] + o->asz[b] > at && o->asz[b])
			return UINT64_MAX;
	}
	return at;
}

/* What sending buffer @b off at step @s costs, per step it frees, under
 * each rule: rule 0 counts every buffer alike; rule 1 counts a read-back
 * before its next touch, and a write unless it is written out already or
 * the guide writes it out later anyway. */
static void ol_penalties(const struct ol *o, uint32_t b, uint32_t s, double pen[2])
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t k = o->cur[b];
	bool tail = k + 1 == plan->touch_idx[b + 1];
	double units = (tail ? 0 : 1) + (o->written[b] || (o->gw && o->gw[b]) ? 0 : 1);
	double dist = (double)(tail ? plan->n_nodes + 1u : plan->touch_step[k + 1]) - s;

	pen[0] = (1 + 1e-3) * (double)o->asz[b] / dist;
	pen[1] = (units + 1e-3) * (double)o->asz[b] / dist;
}

/* The cheapest and second cheapest windows so far under one rule. */
struct ol_pick {
	uint64_t at, at2;	/* UINT64_MAX: none */
	double pen, pen2;
};

static void ol_pick_add(struct ol_pick *p, uint64_t a, double pen)
{
	if (p->at == UINT64_MAX || pen < p->pen) {
		p->pen2 = p->pen;
		p->at2 = p->at;
		p->pen = pen;
		p->at = a;
	} else if (p->at2 == UINT64_MAX || pen < p->pen2) {
		p->pen2 = pen;
		p->at2 = a;
	}
}

/* The window a pick gives the clearing: its second choice where @second. */
static uint64_t ol_pick_at(const struct ol_pick *p, bool second)
{
	return second && p->at2 != UINT64_MAX ? p->at2 : p->at;
}

/*
 * The window of @size in [0, budget) whose residents cost least to send
 * off (none the step touches); its start, or UINT64_MAX.  Windows start at
 * 0 or where a resident ends.  The window the other rule would pick is
 * found alongside: where it differs, the pass under the other rule (its
 * twin) would make another plan (o->twin_differs).
 */
static uint64_t ol_window(struct ol *o, uint32_t d, uint64_t size, uint32_t s, int rule)
{
	struct ol_pick pick[2] = { { UINT64_MAX, UINT64_MAX, 0, 0 },
				   { UINT64_MAX, UINT64_MAX, 0, 0 } };
	uint64_t a, at;
	double pen[2], one[2];
	uint32_t i, j, first = 0;
	bool second;

	for (i = 0, a = 0; i <= d; i++) {
		/* A zero-size resident can end below the one before it: a
		 * window starting there was looked at already, and the scan
		 * from @first would miss the residents below it. */
		if (i && o->hole[i - 1][1] < a)
			continue;
		a = i ? o->hole[i - 1][1] : 0;
		if (a + size > o->budget)
			continue;
		while (first < d && o->hole[first][1] <= a)
			first++;
		pen[0] = pen[1] = 0;
		for (j = first; j < d && o->hole[j][0] < a + size; j++) {
			if (o->hole[j][1] <= a)
				continue;
			if (o->pin[o->hole[j][2]]) {
				pen[0] = -1;
				break;
			}
			ol_penalties(o, (uint32_t)o->hole[j][2], s, one);
			pen[0] += one[0];
			pen[1] += one[1];
		}
		if (pen[0] < 0)
			continue;
		ol_pick_add(&pick[0], a, pen[0]);
		ol_pick_add(&pick[1], a, pen[1]);
	}
	second = o->n_win < 32 && (o->alt >> o->n_win++ & 1);
	at = ol_pick_at(&pick[rule & 1], second);
	if (at != ol_pick_at(&pick[!(rule & 1)], second))
		o->twin_differs = true;
	return at;
}

/* Send off every resident overlapping [a, a + size). */
static void ol_clear(struct ol *o, uint64_t a, uint64_t size)
{
	uint32_t i;

	for (i = 0; i < o->n_live;) {
		uint32_t b = o->live[i];

		if (o->addr[b] < a + size && o->addr[b] + o->asz[b] > a && o->asz[b])
			ol_send_off(o, i);
		else
			i++;
	}
}

/* o->live stays sorted by offset: holes are read off it in order.  The
 * resident interval of live[at] ends at step @end (recorded for moves). */
static void ol_drop(struct ol *o, uint32_t at, uint32_t end)
{
	uint32_t b = o->live[at];

	if (o->retro && end > o->istart[b] && o->asz[b])
		o->past[o->n_past++] = (struct ol_past){ o->istart[b], end, o->s,
							 o->addr[b], o->asz[b] };
	o->res[o->live[at]] = false;
	memmove(&o->live[at], &o->live[at + 1], sizeof(*o->live) * (--o->n_live - at));
}

/* Send live[at] off after its latest touch. */
static void ol_send_off(struct ol *o, uint32_t at)
{
	uint32_t b = o->live[at];

	o->off[o->cur[b]] = 1;
	if (o->mstep)	/* it left before any move in this gap */
		o->mstep[o->cur[b]] = 0;
	/* written out (or, once gaps close, maybe) after step s - 1: no move
	 * before step s lands there */
	if (o->plan->touch_step[o->cur[b]] + 1 >= o->s)
		ortmem__plan_move_gone(o, o->addr[b], o->asz[b]);
	o->written[b] = true;
	ol_drop(o, at, o->plan->touch_step[o->cur[b]] + 1);
}

static void ol_seat(struct ol *o, uint32_t b, uint32_t k, uint64_t addr)
{
	uint32_t lo = 0, hi = o->n_live;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (o->addr[o->live[mid]] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&o->live[lo + 1], &o->live[lo], sizeof(*o->live) * (o->n_live - lo));
	o->addr[b] = addr;
	o->res[b] = true;
	if (o->retro) {
		o->istart[b] = o->plan->touch_step[k];
		o->ik[b] = k;
	}
	o->live[lo] = b;
	o->n_live++;
	o->toff[k] = addr;
}

/* Resident @b's latest touch is now @k: the step that drops it (the end
 * of its life) or, where the guide sends the gap @k opens off, sends it
 * off, so that ol_step() looks at one number per resident. */
static void ol_touched(struct ol *o, uint32_t b, uint32_t k)
{
	const struct ortmem_plan *plan = o->plan;

	o->cur[b] = k;
	o->drop[b] = o->guide && o->guide[k] ? plan->touch_step[k] + 1 : plan->bufs[b].hi;
}

/* Re-seat every buffer step @s touches from offset 0. */
static void ol_reseat(struct ol *o, uint32_t s)
{
	const struct ortmem_plan *plan = o->plan;
	uint64_t at = 0;
	uint32_t i, j;

	for (i = 0; i < o->n_live;) {
		uint32_t b = o->live[i], k = o->cur[b];

		if (!o->pin[b]) {
			ol_send_off(o, i);
			continue;
		}
		/* touched here and resident: out after its touch before this
		 * step (none when this step produced it) */
		if (plan->touch_step[k] == s)
			k = k > plan->touch_idx[b] ? k - 1 : UINT32_MAX;
		if (k != UINT32_MAX) {
			o->off[k] = 1;
			if (o->mstep)
				o->mstep[k] = 0;
			o->written[b] = true;
		}
		ol_drop(o, i, k != UINT32_MAX ? plan->touch_step[k] + 1 : s);
	}
	for (j = o->st_idx[s]; j < o->st_idx[s + 1]; j++) {
		uint32_t k = o->st_k[j], b = o->st_b[j];

		ol_seat(o, b, k, at);
		ol_touched(o, b, k);
		at += o->asz[b];
	}
}

/* The step after the touch at which the guide next sends @b off (its
 * planned interval's end), or the end of its life. */
static uint32_t ol_planned_end(const struct ol *o, uint32_t b, uint32_t k)
{
	const struct ortmem_plan *plan = o->plan;

	if (!o->guide)
		return plan->bufs[b].hi;
	while (k + 1 < plan->touch_idx[b + 1] && !o->guide[k])
		k++;
	return o->guide[k] || k + 1 < plan->touch_idx[b + 1] ?
	       plan->touch_step[k] + 1 : plan->bufs[b].hi;
}

static void ol_step(struct ol *o, uint32_t s, int rule)
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t i, j, d;

	o->s = s;
	o->n_gone = 0;
	for (i = 0; i < o->n_live;) {
		uint32_t b = o->live[i];

		if (o->drop[b] > s)
			i++;
		else if (plan->bufs[b].hi <= s)
			ol_drop(o, i, plan->bufs[b].hi);
		else
			ol_send_off(o, i);	/* the sweep sent this gap off */
	}
	for (j = o->st_idx[s]; j < o->st_idx[s + 1]; j++)
		o->pin[o->st_b[j]] = true;
	for (j = o->st_idx[s]; j < o->st_idx[s + 1]; j++) {
		uint32_t k = o->st_k[j], b = o->st_b[j];
		uint64_t addr;

		if (o->res[b]) {
			o->toff[k] = o->addr[b];
			ol_touched(o, b, k);
			continue;
		}
		addr = ol_hinted(o, o->hint ? o->hint[k] : UINT64_MAX, o->asz[b]);
		if (addr == UINT64_MAX) {
			if (!o->fut && o->endfit) {
				addr = ol_fit_end(o, o->asz[b], ol_planned_end(o, b, k));
				d = 0;
				if (addr == UINT64_MAX)	/* the holes, for what follows */
					ol_fit(o, o->asz[b], &d, false);
			} else {
				addr = ol_fit(o, o->asz[b], &d, !o->fut);
				if (o->fut)
					addr = ol_fit_ahead(o, d, b, o->asz[b], s,
							    ol_planned_end(o, b, k));
			}
		} else {
			d = 0;
		}
		if (addr == UINT64_MAX && o->retro &&
		    (!o->retro_by || ortmem__now_ns() < o->retro_by))
			addr = ortmem__plan_retro(o, d, o->asz[b]);
		if (addr == UINT64_MAX && o->mstep) {
			addr = ortmem__plan_move(o, d, o->asz[b]);
			if (addr != UINT64_MAX)	/* what did not move goes off */
				ol_clear(o, addr, o->asz[b]);
		}
		if (addr == UINT64_MAX) {
			addr = ol_window(o, d, o->asz[b], s, rule);
			if (addr != UINT64_MAX)
				ol_clear(o, addr, o->asz[b]);
		}
		if (addr == UINT64_MAX) {
			ol_reseat(o, s);
			break;
		}
		ol_seat(o, b, k, addr);
		ol_touched(o, b, k);
		o->end[b] = ol_planned_end(o, b, k);
	}
	for (j = o->st_idx[s]; j < o->st_idx[s + 1]; j++)
		o->pin[o->st_b[j]] = false;
}

/* Touches of each step, largest buffer first (they seat best that way). */
static int ol_index(struct ol *o)
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t n = plan->n_nodes, b, k, s, j, *pos = malloc(sizeof(*pos) * (n + 1));

	if (!pos)
		return -1;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			o->st_idx[plan->touch_step[k] + 1]++;
	for (s = 0; s < n; s++) {
		o->st_idx[s + 1] += o->st_idx[s];
		pos[s] = o->st_idx[s];
	}
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			s = plan->touch_step[k];
			for (j = pos[s]; j > o->st_idx[s] && o->asz[o->st_b[j - 1]] < o->asz[b]; j--) {
				o->st_k[j] = o->st_k[j - 1];
				o->st_b[j] = o->st_b[j - 1];
			}
			o->st_k[j] = k;
			o->st_b[j] = b;
			pos[s]++;
		}
	free(pos);
	return 0;
}

static int ol_iv_cmp(const void *x, const void *y)
{
	const struct ol_iv *a = x, *b = y;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

/* The hinted layout's intervals (runs of touches the guide keeps), sorted
 * by first step: what ol_fit_ahead() keeps clear of.  0 or -1. */
static int ol_layout(struct ol *o)
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t b, k, j;

	o->fut = malloc(sizeof(*o->fut) * (plan->touch_idx[plan->n_bufs] + 1));
	if (!o->fut)
		return -1;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1) {
			for (j = k; j + 1 < plan->touch_idx[b + 1] && !o->guide[j]; j++)
				;
			if (!o->asz[b])
				continue;
			o->fut[o->n_fut++] = (struct ol_iv){
				.lo = plan->touch_step[k], .hi = ol_planned_end(o, b, k),
				.buf = b, .addr = o->hint[k], .size = o->asz[b] };
		}
	qsort(o->fut, o->n_fut, sizeof(*o->fut), ol_iv_cmp);
	return 0;
}

/* Which buffers the guide sends off somewhere (so writes out): evicting
 * one of them early costs no write of its own.  0 or -1. */
static int ol_guide_writes(struct ol *o)
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t b, k;

	o->gw = calloc(plan->n_bufs + 1, 1);
	if (!o->gw)
		return -1;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			if (o->guide[k])
				o->gw[b] = true;
	return 0;
}

uint64_t ortmem__plan_height(const struct ortmem_plan *plan, const uint64_t *asz,
			     const uint64_t *toff)
{
	uint64_t h = 0;
	uint32_t b, k;

	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			if (toff[k] + asz[b] > h)
				h = toff[k] + asz[b];
	return h;
}

/*
 * One pass under @rule (0: furthest next use; 1: per byte of transfer;
 * with ORTMEM__PLAN_ENDFIT, a buffer without a hinted offset seats by
 * ol_fit_end(), else in the tightest hole).
 * Fills @off and @toff; returns the device arena's height, or UINT64_MAX
 * when out of memory.
 */
uint64_t ortmem__plan_online(const struct ortmem_plan *plan, const uint64_t *asz,
			     uint64_t budget, int rule, const uint8_t *guide,
			     const uint64_t *hint, uint8_t *off, uint64_t *toff)
{
	return ortmem__plan_online_alt(plan, asz, budget, rule, 0, guide, hint, off, toff,
				       NULL, 0);
}

/*
 * ortmem__plan_online(), where the i-th window cleared (i < 32) takes the
 * second cheapest window when bit i of @alt is set; the windows it
 * cleared in *@n_win (when not NULL).  Moves back in time stop at
 * @retro_by (0: none): the pass then goes on as a plain one.
 */
uint64_t ortmem__plan_online_alt(const struct ortmem_plan *plan, const uint64_t *asz,
				 uint64_t budget, int rule, uint32_t alt,
				 const uint8_t *guide, const uint64_t *hint,
				 uint8_t *off, uint64_t *toff, uint32_t *n_win,
				 uint64_t retro_by)
{
	return ortmem__plan_online_mv(plan, asz, budget, rule, alt, guide, hint, off, toff,
				      NULL, n_win, NULL, retro_by, 0);
}

/* The scratch of moves within the arena (plan_move.c); false: no memory. */
static bool ol_move_alloc(struct ol *o, uint32_t nb, uint32_t nt)
{
	uint32_t b;

	memset(o->mstep, 0, sizeof(*o->mstep) * nt);
	o->mgap = malloc(sizeof(*o->mgap) * (nb + 1));
	o->gone = malloc(sizeof(*o->gone) * (2 * nb + 2));
	o->mr = malloc(sizeof(*o->mr) * (4 * nb + 4));
	o->mbase = malloc(sizeof(*o->mbase) * (4 * nb + 4));
	o->mpre = malloc(sizeof(*o->mpre) * (nb + 2));
	o->mwin = malloc(sizeof(*o->mwin) * MV_TRIES);
	o->mb = malloc(sizeof(*o->mb) * (nb + 1));
	o->mto = malloc(sizeof(*o->mto) * (nb + 1));
	if (!o->mgap || !o->gone || !o->mr || !o->mwin || !o->mb || !o->mto || !o->mbase ||
	    !o->mpre)
		return false;
	for (b = 0; b < nb; b++)
		o->mgap[b] = UINT32_MAX;
	return true;
}

/* Is the clock past @stop_at, or would a pass begun at @t0 that has
 * placed @s of @n steps end past it at its pace so far? */
static bool ol_past_stop(uint64_t t0, uint32_t s, uint32_t n, uint64_t stop_at)
{
	uint64_t now = ortmem__now_ns();

	if (now > stop_at)
		return true;
	return s >= n / 64 && s && (double)(now - t0) * n / s > (double)(stop_at - t0);
}

uint64_t ortmem__plan_online_mv(const struct ortmem_plan *plan, const uint64_t *asz,
				uint64_t budget, int rule, uint32_t alt,
				const uint8_t *guide, const uint64_t *hint,
				uint8_t *off, uint64_t *toff, uint32_t *mstep,
				uint32_t *n_win, bool *twin_same, uint64_t retro_by,
				uint64_t stop_at)
{
	uint32_t nb = plan->n_bufs, nt = plan->touch_idx[nb], s;
	struct ol o = { .plan = plan, .budget = budget, .asz = asz, .guide = guide,
			.hint = hint, .off = off, .toff = toff, .alt = alt,
			.retro_by = retro_by, .mstep = mstep };
	uint64_t h = UINT64_MAX, t0;

	o.cur = malloc(sizeof(*o.cur) * (nb + 1));
	o.addr = malloc(sizeof(*o.addr) * (nb + 1));
	o.res = calloc(nb + 1, 1);
	o.pin = calloc(nb + 1, 1);
	o.written = calloc(nb + 1, 1);
	o.live = malloc(sizeof(*o.live) * (nb + 1));
	o.hole = malloc(sizeof(*o.hole) * (nb + 1));
	o.st_idx = calloc(plan->n_nodes + 2, sizeof(*o.st_idx));
	o.st_k = malloc(sizeof(*o.st_k) * (nt + 1));
	o.st_b = malloc(sizeof(*o.st_b) * (nt + 1));
	o.end = calloc(nb + 1, sizeof(*o.end));
	o.drop = malloc(sizeof(*o.drop) * (nb + 1));
	o.endfit = !!(rule & ORTMEM__PLAN_ENDFIT);
	o.retro = !!(rule & ORTMEM__PLAN_RETRO);
	o.noslide = !!(rule & ORTMEM__PLAN_NOSLIDE);
	o.pinslide = !!(rule & ORTMEM__PLAN_PINSLIDE);
	rule &= ~(ORTMEM__PLAN_ENDFIT | ORTMEM__PLAN_RETRO | ORTMEM__PLAN_NOSLIDE |
		  ORTMEM__PLAN_PINSLIDE);
	if (o.retro) {
		o.istart = malloc(sizeof(*o.istart) * (nb + 1));
		o.ik = malloc(sizeof(*o.ik) * (nb + 1));
		/* a move splits an interval: up to two per touch */
		o.past = malloc(sizeof(*o.past) * (2 * nt + 1));
		o.out = calloc(nb + 1, 1);
		o.rr = malloc(sizeof(*o.rr) * (2 * nt + 3 * nb + 4));
		o.mv = malloc(sizeof(*o.mv) * (nb + 1));
		o.mv_was = malloc(sizeof(*o.mv_was) * (nb + 1));
		if (!o.istart || !o.ik || !o.past || !o.out || !o.rr || !o.mv || !o.mv_was)
			goto out;
	}
	if (!o.end || !o.drop || !o.cur || !o.addr || !o.res || !o.pin || !o.written || !o.live ||
	    !o.hole || !o.st_idx || !o.st_k || !o.st_b || (mstep && !ol_move_alloc(&o, nb, nt)))
		goto out;
	memset(off, 0, nt);
	if (ol_index(&o) || (guide && hint && ol_layout(&o)) || (guide && ol_guide_writes(&o)))
		goto out;
	t0 = stop_at ? ortmem__now_ns() : 0;
	for (s = 0; s < plan->n_nodes; s++) {
		/* the clock every 16 steps: a dense graph's step walks
		 * thousands of residents, a sparse one's a few.  Past 1/64 of
		 * the steps, a pass whose pace so far would end it past
		 * @stop_at stops at once (the rest of the time is worth more
		 * to what follows than to a pass that will not end) */
		if (stop_at && !(s & 15) && ol_past_stop(t0, s, plan->n_nodes, stop_at)) {
			h = ORTMEM__PLAN_STOPPED;
			goto out;
		}
		ol_step(&o, s, rule);
	}
	h = ortmem__plan_height(plan, asz, toff);
	if (n_win)
		*n_win = o.n_win;
	if (twin_same)
		*twin_same = !o.twin_differs;
out:
	free(o.cur);
	free(o.addr);
	free(o.res);
	free(o.pin);
	free(o.written);
	free(o.live);
	free(o.hole);
	free(o.st_idx);
	free(o.st_k);
	free(o.st_b);
	free(o.fut);
	free(o.end);
	free(o.drop);
	free(o.gw);
	free(o.istart);
	free(o.ik);
	free(o.past);
	free(o.out);
	free(o.rr);
	free(o.mv);
	free(o.mv_was);
	free(o.mgap);
	free(o.gone);
	free(o.mr);
	free(o.mbase);
	free(o.mpre);
	free(o.mwin);
	free(o.mb);
	free(o.mto);
	return h;
}
