// SPDX-License-Identifier: MIT
/*
 * Room made by moving resident intervals back in time (Documentation/
 * lib/placement.rst).
 *
 * Each resident interval of a buffer (a run of touches joined by gaps
 * kept on the device) has its own device offset, and nothing but the
 * plan says where it sat.  So when the allocator's pass (plan_online.c)
 * finds no hole for a buffer at step s, a resident in the way can be
 * given another range instead of being sent off, provided that range was
 * free from the first step of its interval up to s: it is then taken to
 * have sat there all along, and no byte moves.  Only when no window can
 * be cleared that way does the pass send residents off (ol_window()).
 *
 * A window is tried with every resident in its way taken out, the
 * largest first finding the tightest range free over its interval so far
 * (the closed intervals since it began, the residents now and the window
 * itself kept clear), all or none.  The pass records each interval it
 * closes, in the order it closes them, for that look back.
 */
#include <stdlib.h>

#include "plan_online.h"

/*
 * The tightest range for resident @r, taken out of the way, that was free
 * from the first step of its interval until now and is free now (the
 * window @a, @size reserved): moved there, it would have sat there all
 * along.  UINT64_MAX when none.
 */
static uint64_t ol_retro_fit(struct ol *o, uint32_t r, uint64_t a, uint64_t size)
{
	uint32_t lo = 0, hi = o->n_past, i, d = 0, from = o->istart[r];

	while (lo < hi) {	/* closed after the interval began */
		uint32_t mid = lo + (hi - lo) / 2;

		if (o->past[mid].drop < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a fit looks back at no more intervals than are resident, so it
	 * costs what ol_fit() does; a longer past counts as no room */
	if (o->n_past - lo > o->n_live)
		return UINT64_MAX;
	for (i = lo; i < o->n_past; i++)
		if (o->past[i].hi > from) {
			o->rr[d][0] = o->past[i].addr;
			o->rr[d++][1] = o->past[i].addr + o->past[i].size;
		}
	for (i = 0; i < o->n_live; i++)
		if (!o->out[o->live[i]] && o->asz[o->live[i]]) {
			o->rr[d][0] = o->addr[o->live[i]];
			o->rr[d++][1] = o->addr[o->live[i]] + o->asz[o->live[i]];
		}
	o->rr[d][0] = a;
	o->rr[d++][1] = a + size;
	qsort(o->rr, d, sizeof(*o->rr), ortmem__plan_rng_cmp);
	return ortmem__plan_best_gap(&o->rr[0][0], 2, d, o->budget, o->asz[r]);
}

/* Bytes of residents in the way of [a, a + size) (ranges in o->hole). */
static uint64_t ol_in_way(const struct ol *o, uint32_t d, uint64_t a, uint64_t size)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < d; i++)
		if (o->hole[i][0] < a + size && o->hole[i][1] > a)
			sum += o->hole[i][1] - o->hole[i][0];
	return sum;
}

/* Is there a hole of @need now, with the residents taken out of the way
 * gone and [a, a + size) taken?  (Cheap: ranges in o->hole.) */
static bool ol_now_fits(const struct ol *o, uint32_t d, uint64_t a, uint64_t size,
			uint64_t need)
{
	uint64_t cur = 0, next;
	uint32_t i;
	bool win = false;

	for (i = 0; i <= d; i++) {
		if (i < d && o->out[o->hole[i][2]])
			continue;
		next = i < d ? o->hole[i][0] : o->budget;
		if (!win && a < next) {	/* the window comes first */
			if (a >= cur && a - cur >= need)
				return true;
			if (a + size > cur)
				cur = a + size;
			win = true;
		}
		if (next > cur && next - cur >= need)
			return true;
		if (i < d && o->hole[i][1] > cur)
			cur = o->hole[i][1];
	}
	return false;
}

/* Did resident @b's interval begin with a move that released its source
 * (a move after it in the step's order may have landed there; the touches
 * since, up to now, took its address)?  Then its address is that move's
 * destination, and stays (ortmem__plan_move_releases()). */
static bool ol_released_here(const struct ol *o, uint32_t b)
{
	uint32_t k = o->ik[b] - 1;

	return o->mstep && o->ik[b] > o->plan->touch_idx[b] && o->mstep[k] &&
	       ortmem__plan_move_releases(o->plan, o->plan->touch_step[k], o->mstep[k],
					  o->toff[k], o->addr[b]);
}

/* Try window [a, a + size): move every resident in its way, the largest
 * first, to a range free over its whole interval so far.  All or none
 * (none where one is a released move's destination). */
static bool ol_retro_try(struct ol *o, uint32_t d, uint64_t a, uint64_t size)
{
	uint32_t i, j, n = 0;

	for (i = 0; i < d; i++)
		if (o->hole[i][0] < a + size && o->hole[i][1] > a) {
			uint32_t b = (uint32_t)o->hole[i][2];

			if (ol_released_here(o, b)) {
				for (j = 0; j < n; j++)
					o->out[o->mv[j]] = false;
				return false;
			}
			for (j = n; j && o->asz[o->mv[j - 1]] < o->asz[b]; j--)
				o->mv[j] = o->mv[j - 1];
			o->mv[j] = b;
			o->out[b] = true;
			n++;
		}
	/* each needs a hole now, before its past is looked at */
	for (i = 0; i < n && ol_now_fits(o, d, a, size, o->asz[o->mv[i]]); i++)
		;
	if (i < n) {
		for (j = 0; j < n; j++)
			o->out[o->mv[j]] = false;
		return false;
	}
	for (i = 0; i < n; i++) {
		uint64_t to = ol_retro_fit(o, o->mv[i], a, size);

		if (to == UINT64_MAX)
			break;
		o->mv_was[i] = o->addr[o->mv[i]];
		o->addr[o->mv[i]] = to;
		o->out[o->mv[i]] = false;
	}
	if (i < n) {
		for (j = 0; j < n; j++) {
			if (j < i)
				o->addr[o->mv[j]] = o->mv_was[j];
			o->out[o->mv[j]] = false;
		}
		return false;
	}
	/* the moved intervals' touches so far take the new address */
	for (i = 0; i < n; i++)
		for (j = o->ik[o->mv[i]]; j <= o->cur[o->mv[i]]; j++)
			o->toff[j] = o->addr[o->mv[i]];
	for (i = 1; i < o->n_live; i++) {	/* sorted by offset again */
		uint32_t b = o->live[i];

		for (j = i; j && o->addr[o->live[j - 1]] > o->addr[b]; j--)
			o->live[j] = o->live[j - 1];
		o->live[j] = b;
	}
	return true;
}

/*
 * Room for @size made for free when no hole holds it: each resident
 * interval has its own offset, so one that moves to a range free since it
 * began (and now) can be taken to have sat there all along; no bytes
 * move.  Windows start at 0, at a resident's end or end at a resident's
 * start or the ceiling (any other slides to one of these); the fewest
 * bytes in the way first.  Its start, or UINT64_MAX.  Call after ol_fit().
 */
uint64_t ortmem__plan_retro(struct ol *o, uint32_t d, uint64_t size)
{
	uint64_t (*cand)[2] = o->rr + o->n_past + o->n_live + 1, a, used = 0;
	uint32_t i, n = 0;

	for (i = 0; i < d; i++)
		used += o->hole[i][1] - o->hole[i][0];
	if (used + size > o->budget)
		return UINT64_MAX;	/* no room in bytes: moves cannot help */
	for (i = 0; i <= d; i++) {
		a = i ? o->hole[i - 1][1] : 0;
		if (a + size <= o->budget)
			cand[n++][0] = a;
		a = i < d ? o->hole[i][0] : o->budget;
		if (a >= size)
			cand[n++][0] = a - size;
	}
	for (i = 0; i < n; i++)
		cand[i][1] = ol_in_way(o, d, cand[i][0], size);
	qsort(cand, n, sizeof(*cand), ortmem__plan_rng_cmp_way);
	/* no more windows than ol_window() looks at: a pass stays O(steps x
	 * residents^2).  On a dense graph one seat's windows alone can take
	 * tens of milliseconds (a thousand residents, each try sorting them
	 * all): the clock is read per window, so the moves stop at
	 * o->retro_by (a 2,000-node dense graph's solve went 90 ms past its
	 * budget in one call) */
	for (i = 0; i < n && i <= d; i++) {
		if (o->retro_by && ortmem__now_ns() >= o->retro_by)
			break;
		if ((!i || cand[i][0] != cand[i - 1][0] || cand[i][1] != cand[i - 1][1]) &&
		    ol_retro_try(o, d, cand[i][0], size))
			return cand[i][0];
	}
	return UINT64_MAX;
}
