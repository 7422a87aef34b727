/* SPDX-License-Identifier: MIT */
/*
 * lib/plan/plan_online.h - the allocator's pass (plan_online.c) as the
 * files that extend it see it: its state, and moving resident intervals
 * back in time (plan_retro.c).  Private to lib/plan/.
 */
#ifndef ORTMEM_LIB_PLAN_ONLINE_H
#define ORTMEM_LIB_PLAN_ONLINE_H

#include "plan_internal.h"

struct ol {
	const struct ortmem_plan *plan;
	uint64_t budget;
	const uint64_t *asz;
	const uint8_t *guide;	/* per touch: a gap the sweep sent off, or NULL */
	const uint64_t *hint;	/* per touch: an offset to take when free, or NULL */
	uint8_t *off;		/* per touch: the gap it opens is off */
	uint64_t *toff;		/* per touch: device offset */
	uint32_t *cur;		/* per buffer: its latest touch, or UINT32_MAX */
	uint64_t *addr;		/* per buffer, while resident */
	bool *res, *pin, *written;
	bool *gw;		/* per buffer: the guide writes it out anyway */
	uint32_t *live;		/* resident buffers */
	uint32_t n_live;
	uint64_t (*hole)[3];	/* scratch: occupied ranges, buffer */
	uint32_t *st_idx, *st_k;	/* touches per step, CSR */
	uint32_t *st_b;		/* the buffer of each st_k[] touch */
	struct ol_iv *fut;	/* hinted intervals by first step (hint && guide) */
	uint32_t n_fut;
	uint32_t *end;		/* per resident buffer: its planned end */
	uint32_t *drop;		/* per resident buffer: the step ol_step() drops it */
	bool endfit;
	bool noslide;		/* no slides (ORTMEM__PLAN_NOSLIDE) */
	bool pinslide;		/* ORTMEM__PLAN_PINSLIDE */
	uint32_t n_win;		/* windows cleared so far */
	uint32_t alt;		/* bit i: the i-th clearing takes the second cheapest */
	bool twin_differs;	/* a clearing the other rule would make elsewhere */
	uint32_t s;		/* the step being placed */
	/* moving resident intervals back in time (plan_retro.c) */
	bool retro;
	uint64_t retro_by;	/* the clock it stops at; 0: none */
	uint32_t *istart, *ik;	/* per resident buffer: its interval's first step, touch */
	struct ol_past *past;	/* closed intervals, in the order they closed */
	uint32_t n_past;
	bool *out;		/* per buffer: taken out of the way for a move */
	uint64_t (*rr)[2];	/* scratch: occupied ranges */
	uint32_t *mv;		/* scratch: the residents a move displaces */
	uint64_t *mv_was;
	/* moves within the device arena (plan_move.c); mstep NULL: none */
	uint32_t *mstep;	/* per touch: the step its gap's buffer moves before, or 0 */
	uint32_t *mgap;		/* per buffer: the touch whose gap it moved in, or UINT32_MAX */
	uint64_t (*gone)[2];	/* ranges in use after step s - 1, not resident now */
	uint32_t n_gone;
	uint64_t (*mr)[2];	/* scratch: occupied ranges for a move's destination */
	uint64_t (*mbase)[2];	/* scratch: those in use after step s - 1 */
	uint64_t (*mpre)[4];	/* scratch: prefix sums over the residents */
	uint64_t (*mwin)[2];	/* scratch: MV_TRIES windows, bytes in the way */
	uint32_t *mb;		/* scratch: the residents a move displaces */
	uint64_t *mto;		/* and where they go */
	uint64_t n_moved;	/* bytes moved so far (aligned) */
};

/* Windows a move tries per buffer that finds no hole (plan_move.c), the
 * fewest bytes in the way first: a pass stays O(steps x residents log
 * residents).  The few with the fewest bytes often hold a resident that
 * finds no range, where one a little further down the list moves whole:
 * on 24 random DAGs (192 budgets) 16 moved 0.6-0.9 % fewer tier bytes
 * than 8 in the geometric mean, the worst budget 1.25-1.26x Belady ->
 * 1.20-1.23x; 12 to 64 did as well as 16 within the noise
 * (Documentation/lib/placement-history.rst, "Sixteenth session"). */
#define MV_TRIES 16

/* A closed resident interval: steps [lo, hi) at @addr, closed at step @drop. */
struct ol_past {
	uint32_t lo, hi, drop;
	uint64_t addr, size;
};

/* A resident interval of the hinted layout: steps [lo, hi) at @addr. */
struct ol_iv {
	uint32_t lo, hi;
	uint32_t buf;
	uint64_t addr, size;
};

/* plan_retro.c: where no hole holds @size, the start of a window made by
 * moving the residents in its way to ranges free since their intervals
 * began (no bytes move), or UINT64_MAX.  o->hole holds the @d residents'
 * ranges (ol_fit()). */
uint64_t ortmem__plan_retro(struct ol *o, uint32_t d, uint64_t size);

/* plan_move.c: where no hole holds @size at step o->s, the start of a
 * window cleared by moving the residents in its way within the arena
 * before the step, when that costs less than the cheapest eviction
 * (bytes moved weighed by ortmem__plan_move_weigh()), or UINT64_MAX.
 * o->hole holds the @d residents' ranges (ol_fit()). */
uint64_t ortmem__plan_move(struct ol *o, uint32_t d, uint64_t size);
/* Record in o->gone a range in use after step o->s - 1 (a move's source, a
 * range sent off after it) that is not resident now. */
void ortmem__plan_move_gone(struct ol *o, uint64_t addr, uint64_t size);

/* qsort() orders of ranges kept as {address, bytes in the way}: by
 * address; by bytes in the way, then address. */
static inline int ortmem__plan_rng_cmp(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	return (a[0] > b[0]) - (a[0] < b[0]);
}

static inline int ortmem__plan_rng_cmp_way(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	if (a[1] != b[1])
		return (a[1] > b[1]) - (a[1] < b[1]);
	return ortmem__plan_rng_cmp(x, y);
}

#endif /* ORTMEM_LIB_PLAN_ONLINE_H */
