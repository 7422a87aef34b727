// SPDX-License-Identifier: MIT
/*
 * Room made by moving residents within the device arena (Documentation/
 * lib/placement.rst, "Moves within the device arena").
 *
 * When the allocator's pass (plan_online.c) finds no hole for a buffer at
 * step s, and no resident can be re-seated back in time for free
 * (plan_retro.c), it would send residents off: each costs a write-out and
 * a read-back across a tier boundary.  Instead, the residents in a
 * window's way can be copied elsewhere in the arena before step s, for a
 * fraction of the cost per byte (ortmem_plan_opts.move_ratio).  A move is
 * made only where its weighted bytes cost less than the cheapest
 * eviction the pass would make instead.
 *
 * A moved buffer holds its old range over [.., s) and its new one over
 * [s, ..).  A step's moves run one after another, in increasing order of
 * their destinations, each as a memmove (its destination may overlap its
 * own source).  The new range must be clear, at step s - 1, of every
 * range still in use after it: other residents, the ranges of buffers
 * that leave the device after step s - 1 (a write-out may still be
 * reading them) and the sources of the step's moves, but for its own and
 * for those *released*: the source of a move down (to a lower offset) of
 * a buffer last touched before step s - 1.  A move lands on a released
 * source only above that move's destination (the mover's new range lies
 * there, and the lander's is clear of it and reaches the source above),
 * so the move that leaves a range always runs before the one that takes
 * it.  Why only those: a pass may later send a moved buffer off in the
 * same gap, which drops its move (the buffer then left after its last
 * touch, from its old range); a buffer last touched before s - 1 is
 * written out after an earlier step, and a move waits for that write-out
 * as for any other on its destination, while one written out after step
 * s - 1 would be read while the lander copies in.
 *
 * Two ways of making room: a window's residents moved elsewhere, each to
 * the tightest range clear of all the above (mv_plan()); or a run of
 * residents slid down, each onto the gap below it and the range the one
 * below left, which merges the free gaps between them above the run
 * (mv_slide()): a compaction, the way a full arena opens, where no single
 * resident finds a range of its own.  On random DAGs of 40-700 nodes at
 * 30-90 % budgets, slides moved 1 % fewer tier bytes in the geometric
 * mean and up to 18 % fewer at a budget (placement.rst).
 *
 * Under ORTMEM_PLAN_F_MOVE_APART (a runtime that runs a step's moves
 * together), no source is released and no run slides: the moves of a
 * step touch none of one another's ranges nor their own.
 *
 * A move onto part of its own source shifts the buffer by at least
 * 1/ORTMEM__PLAN_MOVE_PIECES of its size: the driver copies only disjoint
 * ranges, so a runtime copies it in pieces no longer than the shift, and
 * a shift of a few hundred bytes would take thousands of copies.
 *
 * A buffer moves at most once per gap, never in the trailing gap of a
 * graph output (no touch holds the new offset), and in a gap the step
 * ends (the step touches it) only in a slide under ORTMEM__PLAN_PINSLIDE
 * (mv_slide_kind()), where a buffer the step itself seated takes another
 * range for nothing.  A pass that sends a moved buffer off in the same
 * gap later drops the move: the buffer then left before it.
 *
 * Also what a plan costs: its tier bytes (off gaps) and its bytes moved
 * within the arena.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_online.h"


void ortmem__plan_move_gone(struct ol *o, uint64_t addr, uint64_t size)
{
	if (o->mstep && size) {
		o->gone[o->n_gone][0] = addr;
		o->gone[o->n_gone++][1] = addr + size;
	}
}

/* May @b move in the gap after its touch @k: not moved there yet, and a
 * touch after the gap takes the offset? */
static bool mv_gap_open(const struct ol *o, uint32_t b, uint32_t k)
{
	return o->mgap[b] != k && k + 1 < o->plan->touch_idx[b + 1];
}

/* May resident @b move before step o->s?  Not touched by the step, not
 * moved in this gap already, and a touch after the gap takes the offset. */
static bool mv_can(const struct ol *o, uint32_t b)
{
	return !o->pin[b] && mv_gap_open(o, b, o->cur[b]);
}

/* How resident @b may take part in a slide before step o->s. */
enum mv_kind {
	MV_NO,		/* it stays */
	MV_GAP,		/* a move in the gap of one of its touches */
	MV_FRESH,	/* seated by the step itself: re-seated for nothing */
};

/*
 * As mv_can(), the gap's touch in *@g; but under ORTMEM__PLAN_PINSLIDE
 * one the step touches may slide too (its gap then ends at the step: a
 * move before the touch that ends it, which the validator allows, and the
 * step uses it at its new range).  If the step has reached it, the gap is
 * the one before that touch; if the step seated it (a read-back, or an
 * output), nothing is there yet, and it takes another range for nothing.
 */
static enum mv_kind mv_slide_kind(const struct ol *o, uint32_t b, uint32_t *g)
{
	const struct ortmem_plan *plan = o->plan;
	uint32_t k = o->cur[b];

	*g = k;
	if (o->pin[b] && !o->pinslide)
		return MV_NO;
	if (o->pin[b] && plan->touch_step[k] == o->s) {
		if (k == plan->touch_idx[b] || o->off[k - 1])
			return MV_FRESH;
		*g = --k;
	}
	return mv_gap_open(o, b, k) ? MV_GAP : MV_NO;
}

/* Tier bytes of sending resident @b off now: a read-back before its next
 * touch, and a write-out unless it is written out already (or the guide
 * writes it out anyway). */
static uint64_t mv_evict_cost(const struct ol *o, uint32_t b)
{
	const struct ortmem_plan *plan = o->plan;
	bool tail = o->cur[b] + 1 == plan->touch_idx[b + 1];
	uint64_t units = (tail ? 0 : 1) + (o->written[b] || (o->gw && o->gw[b]) ? 0 : 1);

	return units * o->asz[b];
}

/*
 * Prefix sums over the @d residents of o->hole (sorted by start; disjoint,
 * so their ends are sorted too): bytes, cost of sending off, how many
 * cannot move, how many the step touches.  Then the residents in the way
 * of any window are two binary searches away, and a window's bytes and
 * cost a subtraction: a search costs O(residents log residents).
 */
static void mv_prefix(struct ol *o, uint32_t d)
{
	uint32_t i;

	memset(o->mpre[0], 0, sizeof(o->mpre[0]));
	for (i = 0; i < d; i++) {
		uint32_t b = (uint32_t)o->hole[i][2];
		bool sized = o->asz[b] != 0;

		o->mpre[i + 1][0] = o->mpre[i][0] + o->asz[b];
		o->mpre[i + 1][1] = o->mpre[i][1] + (o->pin[b] ? 0 : mv_evict_cost(o, b));
		o->mpre[i + 1][2] = o->mpre[i][2] + (sized && !mv_can(o, b));
		o->mpre[i + 1][3] = o->mpre[i][3] + (sized && o->pin[b]);
	}
}

/* The residents in the way of [a, a + size): o->hole[*lo .. *hi). */
static void mv_way(const struct ol *o, uint32_t d, uint64_t a, uint64_t size,
		   uint32_t *lo, uint32_t *hi)
{
	uint32_t l = 0, h = d;

	while (l < h) {		/* the first ending past a */
		uint32_t mid = l + (h - l) / 2;

		if (o->hole[mid][1] <= a)
			l = mid + 1;
		else
			h = mid;
	}
	*lo = l;
	for (h = d; l < h;) {	/* the first starting at or past a + size */
		uint32_t mid = l + (h - l) / 2;

		if (o->hole[mid][0] < a + size)
			l = mid + 1;
		else
			h = mid;
	}
	*hi = l;
}

/* Keep window @a, @w bytes in the way (UINT64_MAX: it cannot be cleared
 * by moves), among the MV_TRIES with the fewest, o->mwin[0 .. *n) sorted. */
static void mv_keep(struct ol *o, uint32_t *n, uint64_t a, uint64_t w)
{
	uint64_t (*c)[2] = o->mwin, x[2] = { a, w };
	uint32_t j;

	if (w == UINT64_MAX)
		return;
	for (j = 0; j < *n; j++)
		if (c[j][0] == a)
			return;
	if (*n == MV_TRIES && ortmem__plan_rng_cmp_way(x, c[MV_TRIES - 1]) >= 0)
		return;
	j = *n < MV_TRIES ? (*n)++ : MV_TRIES - 1;
	for (; j && ortmem__plan_rng_cmp_way(x, c[j - 1]) < 0; j--) {
		c[j][0] = c[j - 1][0];
		c[j][1] = c[j - 1][1];
	}
	c[j][0] = a;
	c[j][1] = w;
}

/*
 * The windows of @size: those starting at 0 or at a resident's end (the
 * ones ol_window() clears) and those ending at a resident's start or the
 * ceiling (any other slides to one of these).  Each family's start grows
 * with the resident it is next to, so the residents in the way are found
 * by two pointers: O(residents) in all.  The cheapest eviction of the
 * first family returned (UINT64_MAX: none possible), the MV_TRIES windows
 * with the fewest bytes to move in o->mwin, their count in *@n.
 */
static uint64_t mv_windows(struct ol *o, uint32_t d, uint64_t size, uint32_t *n)
{
	uint64_t (*p)[4] = o->mpre, best = UINT64_MAX, a;
	uint32_t i, lo, hi = 0, lo_b = 0;

	*n = 0;
	for (i = 0; i <= d; i++) {
		a = i ? o->hole[i - 1][1] : 0;
		if (a + size <= o->budget) {
			while (hi < d && o->hole[hi][0] < a + size)
				hi++;
			lo = i < hi ? i : hi;
			if (p[hi][3] == p[lo][3] && p[hi][1] - p[lo][1] < best)
				best = p[hi][1] - p[lo][1];
			mv_keep(o, n, a, p[hi][3] != p[lo][3] ? UINT64_MAX : p[hi][0] - p[lo][0]);
		}
		a = i < d ? o->hole[i][0] : o->budget;
		if (a >= size) {
			a -= size;
			while (lo_b < i && o->hole[lo_b][1] <= a)
				lo_b++;
			mv_keep(o, n, a, p[i][3] != p[lo_b][3] ? UINT64_MAX : p[i][0] - p[lo_b][0]);
		}
	}
	return best;
}

/* Insert [r0, r1) into the @n ranges of o->mr, sorted by start. */
static void mv_insert(struct ol *o, uint32_t n, uint64_t r0, uint64_t r1)
{
	uint32_t j;

	for (j = n; j && o->mr[j - 1][0] > r0; j--) {
		o->mr[j][0] = o->mr[j - 1][0];
		o->mr[j][1] = o->mr[j - 1][1];
	}
	o->mr[j][0] = r0;
	o->mr[j][1] = r1;
}

/* What a move's destination must be clear of, sorted by start, into
 * o->mbase: the residents where they are now and the ranges in use after
 * step s - 1 that left; their count. */
static uint32_t mv_base(struct ol *o, uint32_t d)
{
	uint32_t i, n = 0;

	for (i = 0; i < d; i++) {
		o->mbase[n][0] = o->hole[i][0];
		o->mbase[n++][1] = o->hole[i][1];
	}
	for (i = 0; i < o->n_gone; i++) {
		o->mbase[n][0] = o->gone[i][0];
		o->mbase[n++][1] = o->gone[i][1];
	}
	if (o->n_gone)
		qsort(o->mbase, n, sizeof(*o->mbase), ortmem__plan_rng_cmp);
	return n;
}

/*
 * Clearing [a, a + size) by moves where they fit: every resident in its way
 * (none the step uses), the largest first, takes the tightest range clear
 * of what is in use after step s - 1 (the @nb ranges of o->mbase) and at s
 * (the window, the destinations taken); one that cannot move, or finds no
 * range, is left to be sent off.  The movers into o->mb and o->mto, their
 * count in *@n; what it costs (tier bytes of those sent off plus the bytes
 * moved, weighed: ortmem__plan_move_weigh()), or UINT64_MAX when the step uses one.
 */
static uint64_t mv_plan(struct ol *o, uint32_t d, uint32_t nb, uint64_t a, uint64_t size,
			uint32_t *n)
{
	uint64_t evicted = 0, moved = 0;
	uint32_t i, j, m = 0, nr = nb, lo, hi;

	mv_way(o, d, a, size, &lo, &hi);
	for (i = lo; i < hi; i++) {
		uint32_t b = (uint32_t)o->hole[i][2];

		if (!o->asz[b])
			continue;
		if (o->pin[b])
			return UINT64_MAX;
		if (!mv_can(o, b)) {
			evicted += mv_evict_cost(o, b);
			continue;
		}
		for (j = m; j && o->asz[o->mb[j - 1]] < o->asz[b]; j--)
			o->mb[j] = o->mb[j - 1];
		o->mb[j] = b;
		m++;
	}
	memcpy(o->mr, o->mbase, sizeof(*o->mr) * nb);
	mv_insert(o, nr++, a, a + size);
	for (i = 0, j = 0; i < m; i++) {
		uint32_t b = o->mb[i];
		uint64_t to = ortmem__plan_best_gap(&o->mr[0][0], 2, nr, o->budget, o->asz[b]);

		if (to == UINT64_MAX) {
			evicted += mv_evict_cost(o, b);
			continue;
		}
		mv_insert(o, nr++, to, to + o->asz[b]);
		moved += o->asz[b];
		o->mb[j] = b;
		o->mto[j++] = to;
	}
	*n = j;
	return evicted + ortmem__plan_move_weigh(o->plan, moved);
}

/* Does a range in use after step s - 1 that left the device meet [a, e)? */
static bool mv_gone_meets(const struct ol *o, uint64_t a, uint64_t e)
{
	uint32_t g;

	for (g = 0; g < o->n_gone; g++)
		if (o->gone[g][0] < e && a < o->gone[g][1])
			return true;
	return false;
}

/* Does resident @b moving to @to before step o->s release its source to
 * the step's later moves (see the top of this file)? */
static bool mv_releases(const struct ol *o, uint32_t b, uint64_t to)
{
	uint32_t g;

	/* a range the step seated holds nothing yet: free to land on, unless
	 * a write-out may still read it (seats may take such a range) */
	if (mv_slide_kind(o, b, &g) == MV_FRESH)
		return !mv_gone_meets(o, o->addr[b], o->addr[b] + o->asz[b]);
	return ortmem__plan_move_releases(o->plan, o->plan->touch_step[g], o->s,
					  o->addr[b], to);
}

/* Move the @n residents of o->mb to o->mto before step o->s (in
 * increasing order of destination where one lands on another's source). */
static void mv_apply(struct ol *o, uint32_t n)
{
	uint32_t i, j, s = o->s;

	for (i = 0; i < n; i++) {
		uint32_t b = o->mb[i], g;

		if (mv_slide_kind(o, b, &g) == MV_FRESH) {
			o->addr[b] = o->toff[g] = o->mto[i];
			continue;
		}
		if (!mv_releases(o, b, o->mto[i]))
			ortmem__plan_move_gone(o, o->addr[b], o->asz[b]);
		if (o->retro) {
			/* its old range, held until s, is history to moves back
			 * in time; from now on its interval starts at s - 1, and
			 * no touch before the move takes a new address */
			if (s > o->istart[b])
				o->past[o->n_past++] = (struct ol_past){ o->istart[b], s, s,
									 o->addr[b], o->asz[b] };
			o->istart[b] = s - 1;
			o->ik[b] = g + 1;
		}
		o->addr[b] = o->mto[i];
		if (g != o->cur[b])	/* reached by the step already */
			o->toff[o->cur[b]] = o->mto[i];
		o->mstep[g] = s;
		o->mgap[b] = g;
		o->n_moved += o->asz[b];
	}
	for (i = 1; i < o->n_live; i++) {	/* sorted by offset again */
		uint32_t b = o->live[i];

		for (j = i; j && o->addr[o->live[j - 1]] > o->addr[b]; j--)
			o->live[j] = o->live[j - 1];
		o->live[j] = b;
	}
}

/* The cheapest slide found so far: its bytes, first and last (excluded)
 * resident in o->hole, the floor it slides onto. */
struct mv_run {
	uint64_t bytes, base;
	uint32_t i, j;
};

/* The first run from resident @i (above the free gap from @base) that
 * opens @size, kept in @r where it moves fewer bytes (a longer run from
 * @i would move more); see mv_slide(). */
static void mv_slide_from(const struct ol *o, uint32_t d, uint64_t size, uint32_t i,
			  uint64_t base, struct mv_run *r)
{
	uint64_t span = 0, bytes = 0, end = base, top;
	uint32_t j, g, b = 0, below = UINT32_MAX;
	enum mv_kind kind = MV_NO;

	for (j = i; ; j++) {
		if (j < d && !o->asz[b = (uint32_t)o->hole[j][2]])
			continue;	/* holds no bytes: stays where it is */
		top = j < d ? o->hole[j][0] : o->budget;
		if (j > i) {	/* the free gap below resident j joins the room */
			if (top < end || mv_gone_meets(o, end, top))
				return;
			if (top - base >= span + size) {
				if (bytes < r->bytes)
					*r = (struct mv_run){ bytes, base, i, j };
				return;
			}
		}
		if (j < d)
			kind = mv_slide_kind(o, b, &g);
		if (j == d || kind == MV_NO ||
		    (below != UINT32_MAX && !mv_releases(o, below, base + span - o->asz[below])) ||
		    (kind == MV_GAP &&
		     !ortmem__plan_move_pieces_ok(o->hole[j][0] - (base + span), o->asz[b])))
			return;
		span += o->asz[b];
		bytes += kind == MV_GAP ? o->asz[b] : 0;
		below = b;
		end = o->hole[j][1];
	}
}

/*
 * The slide that opens @size with the fewest bytes moved: of the @d
 * residents of o->hole (sorted by address), a run slides down onto the
 * free gap below it, each resident right above the one before, so the
 * free gaps between them merge above the run, up to the next resident (or
 * the ceiling).  A run holds only residents that may move, spans no gap
 * that a range which left the device meets (a write-out may read it), and
 * has a resident whose source the one above lands on only where that
 * source is released.  The movers into o->mb and o->mto, bottom up (their
 * destinations increase, each landing on the range the one below left:
 * the order they run in), their count in *@n; the start of the room
 * opened in *@at; the bytes moved, weighed, or
 * UINT64_MAX where no run opens it.  O(residents x run length).
 */
static uint64_t mv_slide(struct ol *o, uint32_t d, uint64_t size, uint32_t *n, uint64_t *at)
{
	struct mv_run r = { .bytes = UINT64_MAX };
	uint64_t base = 0;
	uint32_t i, b;

	for (i = 0; i < d; i++) {
		if (!o->asz[o->hole[i][2]])
			continue;
		/* a run starts on a free gap (else it starts higher, for less) */
		if (base < o->hole[i][0] && !mv_gone_meets(o, base, o->hole[i][0]))
			mv_slide_from(o, d, size, i, base, &r);
		base = o->hole[i][1];
	}
	if (r.bytes == UINT64_MAX)
		return UINT64_MAX;
	for (*n = 0, base = r.base, i = r.i; i < r.j; i++) {
		b = (uint32_t)o->hole[i][2];
		if (!o->asz[b])
			continue;
		o->mb[*n] = b;
		o->mto[(*n)++] = base;
		base += o->asz[b];
	}
	*at = base;
	return ortmem__plan_move_weigh(o->plan, r.bytes);
}

uint64_t ortmem__plan_move(struct ol *o, uint32_t d, uint64_t size)
{
	uint64_t used = 0, evict, cost, best = UINT64_MAX, at = UINT64_MAX, slide_at;
	uint32_t i, n, m, nb;

	if (!o->s)
		return UINT64_MAX;	/* nothing precedes the first step */
	for (i = 0; i < d; i++)
		used += o->hole[i][1] - o->hole[i][0];
	if (used + size > o->budget)
		return UINT64_MAX;	/* no room in bytes: moves cannot help */
	mv_prefix(o, d);
	evict = mv_windows(o, d, size, &n);
	nb = n ? mv_base(o, d) : 0;
	/* the cheapest of the windows tried, if it costs less than evicting.
	 * They come fewest bytes in the way first: once the best costs what
	 * moving window i whole costs (its bytes, weighed), a later one,
	 * with more bytes, costs more (but for a resident whose eviction is
	 * free, rare): stop there */
	for (i = 0; i < n; i++) {
		cost = mv_plan(o, d, nb, o->mwin[i][0], size, &m);
		if (m && cost < best && cost < evict) {
			best = cost;
			at = o->mwin[i][0];
		}
		if (at != UINT64_MAX && best == ortmem__plan_move_weigh(o->plan, o->mwin[i][1]))
			break;
	}
	/* or a slide, where it costs less still (its movers are in o->mb
	 * and o->mto once it is found: it runs last) */
	cost = o->noslide || o->plan->o.flags & ORTMEM_PLAN_F_MOVE_APART ? UINT64_MAX :
	       mv_slide(o, d, size, &m, &slide_at);
	if (cost != UINT64_MAX && cost < evict && (at == UINT64_MAX || cost < best)) {
		mv_apply(o, m);
		return slide_at;
	}
	if (at == UINT64_MAX)
		return UINT64_MAX;
	mv_plan(o, d, nb, at, size, &m);
	mv_apply(o, m);
	return at;
}

/* Tier bytes a plan with these off gaps moves: one write per value sent off
 * (per buffer, but for an in-place chain), one read per off gap a touch ends. */
uint64_t ortmem__plan_gap_cost(const struct ortmem_plan *plan, const uint8_t *off)
{
	uint64_t cost = 0;
	uint32_t b, k;

	for (b = 0; b < plan->n_bufs; b++) {
		bool w = false;

		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			if (w && ortmem__plan_touch_writes(plan, b, k)) {
				cost += plan->bufs[b].size;
				w = false;
			}
			if (!off[k])
				continue;
			w = true;
			if (k + 1 < plan->touch_idx[b + 1])
				cost += plan->bufs[b].size;
		}
		if (w)
			cost += plan->bufs[b].size;
	}
	return cost;
}

uint64_t ortmem__plan_move_bytes(const struct ortmem_plan *plan, const uint8_t *off,
				 const uint32_t *mstep)
{
	uint64_t sum = 0;
	uint32_t b, k;

	for (b = 0; mstep && b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			if (mstep[k] && !off[k])
				sum += plan->bufs[b].size;
	return sum;
}

int ortmem__plan_move_record(struct ortmem_plan *plan)
{
	uint32_t b, k;

	if (!plan->move_step)
		return 0;
	if (!ortmem__plan_move_bytes(plan, plan->gap_off, plan->move_step)) {
		free(plan->move_step);	/* no move survived: none to list */
		plan->move_step = NULL;
		return 0;
	}
	plan->dev_move = calloc(plan->n_nodes + 1ull, sizeof(*plan->dev_move));
	if (!plan->dev_move)
		return ortmem__err_plain(-ENOMEM, "planner: cannot record the moves of %u steps",
					 plan->n_nodes);
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++) {
			if (!plan->move_step[k])
				continue;
			if (plan->gap_off[k]) {
				plan->move_step[k] = 0;	/* left the device instead */
				continue;
			}
			plan->dev_move[plan->move_step[k]] += plan->bufs[b].size;
			plan->st.move_bytes += plan->bufs[b].size;
		}
	return 0;
}
