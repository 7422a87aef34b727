// SPDX-License-Identifier: MIT
/*
 * Closing off gaps that have room after all.  An allocator's pass sends a
 * buffer off the device when a step finds no hole for what it needs; by
 * the end of the plan, the address range the buffer left may have stayed
 * free for the whole gap (the step needed a different range, or a later
 * eviction cleared it).  Such a gap can be kept on the device at no cost
 * in space: the two resident intervals on either side of it merge into
 * one, at the address of either where that address is free over the
 * steps the merge adds, or else at the tightest range of [0, budget) free
 * over the whole merged span (the buffer is read back there instead of
 * where it was).  Each merge saves the read-back (and the write-out when
 * it was the buffer's last off gap that a touch ends).
 *
 * A gap in which the buffer moves within the arena (plan_move.c) is kept
 * as it is: each side of the move is an interval of its own, the first
 * held until the move's step s, the second from s - 1 (one step earlier
 * than it needs: so nothing this moves or merges meets a move's
 * destination at the step before it, where only a buffer whose life ends
 * may).
 *
 * Intervals are kept sorted by first step.  A check looks at the short
 * ones that start within CL_SHORT steps before the span, found by binary
 * search, and at the few long ones, listed apart.  O(off gaps x intervals
 * near each) a pass.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

struct cl_iv {
	uint64_t lo, hi;	/* steps [lo, hi) */
	uint64_t addr, size;
	uint32_t k0, k1;	/* first and last touch */
	uint32_t buf;
	uint32_t next;		/* the buffer's next interval, or UINT32_MAX */
	bool dead;
	bool moves;		/* the gap after k1 is kept, with a move */
	bool fixed;		/* it starts with a move that released its source:
				 * its address stays (ortmem__plan_move_releases()) */
};

/* Steps past which an interval counts as long (listed apart). */
#define CL_SHORT 64
/* Addresses cl_move() tries per gap, fewest bytes in the way first.  It
 * stops at a deadline that it reaches on every random DAG measured (100
 * to 1,500 nodes), and most tries fail after trying every address (25 to
 * 134 of them on average); of those that succeed, 94 % (300 nodes) and
 * 91 % (1,000 nodes) do within the first 16.  So the time goes to more
 * gaps instead. */
#define CL_CANDS_MAX 16

struct cl {
	struct cl_iv *iv;	/* sorted by first step */
	uint32_t n;
	uint32_t *lng;		/* intervals longer than CL_SHORT steps */
	uint32_t n_lng;
	uint32_t *near;		/* scratch: what cl_near() found */
	uint64_t (*rng)[2];	/* scratch: their address ranges */
	uint64_t *prof;		/* bytes resident per step */
	uint64_t budget;
	bool anywhere;		/* try any free range, not only the two */
	bool move;		/* and ranges others make room in (cl_move()) */
	uint64_t deadline;	/* for cl_move(); 0: none */
	/* scratch for cl_move() */
	uint32_t *around;	/* what overlaps the merged span */
	uint64_t (*cand)[2];	/* an address and the bytes in its way */
	uint32_t *moved;	/* intervals moved, and */
	uint64_t *was;		/* the addresses they had */
	uint32_t *ord;		/* the order cl_move() tries gaps in */
};

/* The first interval starting at CL_SHORT steps before @lo or later: no
 * short one before it reaches @lo. */
static uint32_t cl_first(const struct cl *c, uint64_t lo)
{
	uint32_t l = 0, h = c->n;
	uint64_t from = lo > CL_SHORT ? lo - CL_SHORT : 0;

	while (l < h) {
		uint32_t mid = l + (h - l) / 2;

		if (c->iv[mid].lo < from)
			l = mid + 1;
		else
			h = mid;
	}
	return l;
}

/* Does interval @i, other than @a and @b, overlap steps [lo, hi)? */
static bool cl_live(const struct cl *c, uint32_t i, uint32_t a, uint32_t b,
		    uint64_t lo, uint64_t hi)
{
	const struct cl_iv *q = &c->iv[i];

	return !q->dead && i != a && i != b && q->lo < hi && q->hi > lo && q->size;
}

/* The live intervals but @a and @b that overlap steps [lo, hi), into
 * c->near (short ones found by binary search, long ones from their list);
 * their count. */
static uint32_t cl_near(struct cl *c, uint32_t a, uint32_t b, uint64_t lo, uint64_t hi)
{
	uint32_t i, d = 0;

	for (i = cl_first(c, lo); i < c->n && c->iv[i].lo < hi; i++)
		if (c->iv[i].hi - c->iv[i].lo <= CL_SHORT && cl_live(c, i, a, b, lo, hi))
			c->near[d++] = i;
	for (i = 0; i < c->n_lng; i++)
		if (c->iv[c->lng[i]].hi - c->iv[c->lng[i]].lo > CL_SHORT &&
		    cl_live(c, c->lng[i], a, b, lo, hi))
			c->near[d++] = c->lng[i];
	return d;
}

static bool cl_hits(const struct cl_iv *q, uint64_t addr, uint64_t size)
{
	return q->addr < addr + size && addr < q->addr + q->size;
}

/* Is [addr, addr + size) free over steps [lo, hi) but for @a and @b? */
static bool cl_free(const struct cl *c, uint32_t a, uint32_t b, uint64_t lo, uint64_t hi,
		    uint64_t addr, uint64_t size)
{
	uint32_t i;

	for (i = cl_first(c, lo); i < c->n && c->iv[i].lo < hi; i++)
		if (c->iv[i].hi - c->iv[i].lo <= CL_SHORT && cl_live(c, i, a, b, lo, hi) &&
		    cl_hits(&c->iv[i], addr, size))
			return false;
	for (i = 0; i < c->n_lng; i++)
		if (c->iv[c->lng[i]].hi - c->iv[c->lng[i]].lo > CL_SHORT &&
		    cl_live(c, c->lng[i], a, b, lo, hi) && cl_hits(&c->iv[c->lng[i]], addr, size))
			return false;
	return true;
}

/*
 * The tightest range of [0, budget) free over the steps iv[a] and iv[b]
 * (the same buffer's, either side of an off gap) cover together, with
 * room for the buffer: the merged interval moves there.  UINT64_MAX when
 * none.
 */
static uint64_t cl_hole(struct cl *c, uint32_t a, uint32_t b)
{
	uint64_t size = c->iv[a].size, s;
	uint32_t i, d;

	/* no room in bytes over the gap: no range either (cheap, and the
	 * common case under a tight budget) */
	for (s = c->iv[a].hi; s < c->iv[b].lo; s++)
		if (c->prof[s] + size > c->budget)
			return UINT64_MAX;
	d = cl_near(c, a, b, c->iv[a].lo, c->iv[b].hi);

	for (i = 0; i < d; i++) {
		c->rng[i][0] = c->iv[c->near[i]].addr;
		c->rng[i][1] = c->iv[c->near[i]].addr + c->iv[c->near[i]].size;
	}
	ortmem__sort_pairs(c->rng, d, false);
	return ortmem__plan_best_gap(&c->rng[0][0], 2, d, c->budget, size);
}

static int cl_cmp(const void *x, const void *y)
{
	const struct cl_iv *a = x, *b = y;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

/* The intervals of the plan (off, toff, mstep), sorted by first step. */
static struct cl_iv *cl_build(const struct ortmem_plan *plan, const uint64_t *asz,
			      const uint8_t *off, const uint64_t *toff, const uint32_t *mstep,
			      uint32_t *count)
{
	uint32_t nt = plan->touch_idx[plan->n_bufs], n = 0, b, k, j, i;
	struct cl_iv *iv = malloc(sizeof(*iv) * (nt + 1));
	uint32_t *pos;

	if (!iv)
		return NULL;
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k = j + 1) {
			bool moves = false;

			for (j = k; j + 1 < plan->touch_idx[b + 1] && !off[j]; j++)
				if (mstep && mstep[j]) {
					moves = true;
					break;
				}
			iv[n] = (struct cl_iv){
				.lo = k > plan->touch_idx[b] && mstep && mstep[k - 1] && !off[k - 1] ?
				      mstep[k - 1] - 1ull : plan->touch_step[k],
				.hi = moves ? mstep[j] :
				      off[j] || j + 1 < plan->touch_idx[b + 1] ?
				      plan->touch_step[j] + 1ull : plan->bufs[b].hi,
				.addr = toff[k], .size = asz[b], .k0 = k, .k1 = j, .buf = b,
				.next = UINT32_MAX, .moves = moves,
				.fixed = k > plan->touch_idx[b] && mstep && mstep[k - 1] && !off[k - 1] &&
					 ortmem__plan_move_releases(plan, plan->touch_step[k - 1],
						mstep[k - 1], toff[k - 1], toff[k]) };
			n++;
		}
	qsort(iv, n, sizeof(*iv), cl_cmp);
	/* link each interval to its buffer's next one, by first touch */
	pos = malloc(sizeof(*pos) * (nt + 1));
	if (!pos) {
		free(iv);
		return NULL;
	}
	for (i = 0; i < nt; i++)
		pos[i] = UINT32_MAX;
	for (i = 0; i < n; i++)
		pos[iv[i].k0] = i;
	for (i = 0; i < n; i++)
		if (iv[i].k1 + 1 < plan->touch_idx[iv[i].buf + 1])
			iv[i].next = pos[iv[i].k1 + 1];
	free(pos);
	*count = n;
	return iv;
}

/* Put back the intervals cl_move() took out of the way, and iv[a], iv[b]. */
static void cl_unmove(struct cl *c, uint32_t a, uint32_t b, uint64_t a_hi, uint64_t a_addr,
		      uint32_t n_lng, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		c->iv[c->moved[i]].addr = c->was[i];
		c->iv[c->moved[i]].dead = false;
	}
	c->iv[a].hi = a_hi;
	c->iv[a].addr = a_addr;
	c->iv[b].dead = false;
	c->n_lng = n_lng;
}

/* A new address for iv[q] (taken out), free over its steps; or UINT64_MAX. */
static uint64_t cl_rehome(struct cl *c, uint32_t q)
{
	uint32_t i, d = cl_near(c, q, q, c->iv[q].lo, c->iv[q].hi);

	for (i = 0; i < d; i++) {
		c->rng[i][0] = c->iv[c->near[i]].addr;
		c->rng[i][1] = c->iv[c->near[i]].addr + c->iv[c->near[i]].size;
	}
	ortmem__sort_pairs(c->rng, d, false);
	return ortmem__plan_best_gap(&c->rng[0][0], 2, d, c->budget, c->iv[q].size);
}

/* Of @d (key, size) pairs sorted by key, sizes summed along: the bytes of
 * those with a key below @x. */
static uint64_t cl_below(const uint64_t (*by)[2], uint32_t d, uint64_t x)
{
	uint32_t l = 0, h = d;

	while (l < h) {
		uint32_t mid = l + (h - l) / 2;

		if (by[mid][0] < x)
			l = mid + 1;
		else
			h = mid;
	}
	return l ? by[l - 1][1] : 0;
}

/* Addresses to try for the merged interval (its span's neighbours in
 * c->around, @d of them), with the bytes in the way at each, fewest
 * first.  Any placement can slide down until it meets the floor or the
 * top of a neighbour, so those (and the spot under each neighbour and
 * under the ceiling) are enough.  Their count.  The bytes in the way of
 * [x, x + size) are those starting below x + size less those ending at
 * or below x, each a binary search: O(d log d) in all. */
static uint32_t cl_cands(struct cl *c, uint32_t d, uint64_t size)
{
	uint64_t (*lo)[2] = c->rng, (*hi)[2] = c->rng + d;
	uint32_t i, n = 0;

	c->cand[n++][0] = 0;
	c->cand[n++][0] = c->budget - size;
	for (i = 0; i < d; i++) {
		const struct cl_iv *q = &c->iv[c->around[i]];

		if (q->addr + q->size + size <= c->budget)
			c->cand[n++][0] = q->addr + q->size;
		if (q->addr >= size)
			c->cand[n++][0] = q->addr - size;
		lo[i][0] = q->addr;
		lo[i][1] = q->size;
		hi[i][0] = q->addr + q->size;
		hi[i][1] = q->size;
	}
	ortmem__sort_pairs(lo, d, false);
	ortmem__sort_pairs(hi, d, false);
	for (i = 1; i < d; i++) {
		lo[i][1] += lo[i - 1][1];
		hi[i][1] += hi[i - 1][1];
	}
	for (i = 0; i < n; i++)
		c->cand[i][1] = cl_below(lo, d, c->cand[i][0] + size) -
				cl_below(hi, d, c->cand[i][0] + 1);
	ortmem__sort_pairs(c->cand, n, true);
	return n;
}

/*
 * Room for the merge of iv[a] and iv[b] made by moving others out of its
 * way: at an address where every interval overlapping the merged span
 * there finds a range free over its own steps (the largest first).
 * Moving a whole resident interval costs nothing (each has its own
 * offset; its buffer is on the device all along it), so this closes gaps
 * that no free range holds, by defragmenting around them.  The address,
 * with iv[a] and iv[b] as they were and the moved intervals (c->moved) at
 * their new addresses; or UINT64_MAX, nothing changed.
 */
static uint64_t cl_move(struct cl *c, uint32_t a, uint32_t b, uint32_t *n_moved)
{
	struct cl_iv *iv = c->iv;
	uint64_t size = iv[a].size, lo = iv[a].lo, hi = iv[b].hi;
	uint64_t a_hi = iv[a].hi, a_addr = iv[a].addr, s, addr, to;
	uint32_t d, i, j, n, nc, t, n_lng = c->n_lng;
	bool stuck;

	if (iv[a].fixed || (c->deadline && ortmem__now_ns() > c->deadline))
		return UINT64_MAX;
	for (s = iv[a].hi; s < iv[b].lo; s++)
		if (c->prof[s] + size > c->budget)
			return UINT64_MAX;
	d = cl_near(c, a, b, lo, hi);
	memcpy(c->around, c->near, sizeof(*c->around) * d);
	nc = cl_cands(c, d, size);
	for (j = 0, t = 0; j < nc && t < CL_CANDS_MAX; j++) {
		if (c->deadline && ortmem__now_ns() > c->deadline)
			return UINT64_MAX;
		addr = c->cand[j][0];
		if (j && addr == c->cand[j - 1][0])
			continue;
		t++;
		/* the merged interval in place, what is in its way out */
		iv[b].dead = true;
		iv[a].hi = hi;
		iv[a].addr = addr;
		if (hi - lo > CL_SHORT && a_hi - lo <= CL_SHORT)
			c->lng[c->n_lng++] = a;
		for (i = 0, n = 0, stuck = false; i < d && !stuck; i++)
			if (cl_hits(&iv[c->around[i]], addr, size)) {
				uint32_t q = c->around[i], m;

				/* a released move's destination stays */
				stuck = iv[q].fixed;
				/* largest first: the small ones fit in what is left */
				for (m = n; m && iv[c->moved[m - 1]].size < iv[q].size; m--) {
					c->moved[m] = c->moved[m - 1];
					c->was[m] = c->was[m - 1];
				}
				c->moved[m] = q;
				c->was[m] = iv[q].addr;
				iv[q].dead = true;
				n++;
			}
		for (i = 0; i < n && !stuck; i++) {
			to = cl_rehome(c, c->moved[i]);
			if (to == UINT64_MAX)
				break;
			iv[c->moved[i]].addr = to;
			iv[c->moved[i]].dead = false;
		}
		if (i == n && !stuck) {
			cl_unmove(c, a, b, a_hi, a_addr, n_lng, 0);
			*n_moved = n;
			return addr;
		}
		cl_unmove(c, a, b, a_hi, a_addr, n_lng, n);
	}
	return UINT64_MAX;
}

/* Merge iv[a] with the buffer's next interval iv[b] when an address is free. */
static bool cl_merge(struct cl *c, uint32_t a, uint8_t *off, uint64_t *toff)
{
	struct cl_iv *iv = c->iv;
	uint32_t b = iv[a].next, k;
	uint64_t addr, s;
	uint32_t n_moved = 0, i;

	/* the next interval must be the same buffer's (k1 + 1 is its touch),
	 * past an off gap (not a move) */
	if (b == UINT32_MAX || iv[b].dead || iv[b].buf != iv[a].buf || iv[a].moves ||
	    iv[b].k0 != iv[a].k1 + 1)
		return false;
	if (cl_free(c, a, b, iv[a].hi, iv[b].hi, iv[a].addr, iv[a].size))
		addr = iv[a].addr;
	else if (iv[a].fixed)
		return false;	/* its address is a released move's destination */
	else if (cl_free(c, a, b, iv[a].lo, iv[b].lo, iv[b].addr, iv[b].size))
		addr = iv[b].addr;
	else if (!c->anywhere || (addr = cl_hole(c, a, b)) == UINT64_MAX) {
		if (!c->move || (addr = cl_move(c, a, b, &n_moved)) == UINT64_MAX)
			return false;
		/* the intervals moved out of its way take their new address */
		for (i = 0; i < n_moved; i++)
			for (k = iv[c->moved[i]].k0; k <= iv[c->moved[i]].k1; k++)
				toff[k] = iv[c->moved[i]].addr;
	}
	off[iv[a].k1] = 0;
	for (k = iv[a].k0; k <= iv[b].k1; k++)
		toff[k] = addr;
	for (s = iv[a].hi; s < iv[b].lo; s++)
		c->prof[s] += iv[a].size;
	iv[a].addr = addr;
	/* grown past CL_SHORT: listed with the long ones from now on */
	if (iv[a].hi - iv[a].lo <= CL_SHORT && iv[b].hi - iv[a].lo > CL_SHORT)
		c->lng[c->n_lng++] = a;
	iv[a].hi = iv[b].hi;
	iv[a].k1 = iv[b].k1;
	iv[a].moves = iv[b].moves;
	iv[a].next = iv[b].next;
	iv[b].dead = true;
	return true;
}

/* The intervals' indices, largest first, into @ord (@tmp: 2 x c->n
 * scratch).  The moves search the most and stop at a deadline, so they
 * try first the gaps whose read-back (and maybe write-out) saves the most
 * bytes, not the earliest: on random DAGs of 200 to 1,000 nodes the
 * deadline came first in most solves (the 1,500-node DAG at the largest
 * step's budget: 4,103-4,163 MiB moved in six runs by first step,
 * 3,995-4,114 in six largest first). */
static void cl_by_size(const struct cl *c, uint32_t *ord, uint64_t (*tmp)[2])
{
	uint32_t i;

	/* by {index, size complemented}: size falling, then index rising */
	for (i = 0; i < c->n; i++) {
		tmp[i][0] = i;
		tmp[i][1] = ~c->iv[i].size;
	}
	ortmem__sort_pairs(tmp, c->n, true);
	for (i = 0; i < c->n; i++)
		ord[i] = (uint32_t)tmp[i][0];
}

/* Two passes of merges over the intervals (the second finds those the
 * first made room for), in the order @ord (NULL: by first step); false
 * when @deadline (0: none) passed. */
static bool cl_passes(struct cl *c, const uint32_t *ord, uint8_t *off, uint64_t *toff,
		      uint64_t deadline)
{
	uint32_t i, j, pass;
	bool merged = true;

	for (pass = 0; pass < 2 && merged; pass++) {
		merged = false;
		for (j = 0; j < c->n; j++) {
			i = ord ? ord[j] : j;
			if (c->iv[i].dead)
				continue;
			while (cl_merge(c, i, off, toff))
				merged = true;
			/* the clock every 8: a merge that looks for any free
			 * range costs tens of us on a big graph (every 64
			 * overran the deadline by 0.6-1.3 ms on 1,500 nodes) */
			if (deadline && (j & 7) == 0 && ortmem__now_ns() > deadline)
				return false;
		}
	}
	return true;
}

/*
 * Keep on the device every off gap, a touch ends, whose buffer's range is
 * free over it (at its address before or after the gap; with
 * ORTMEM__PLAN_CLOSE_ANY, any range free over the merged span; with
 * ORTMEM__PLAN_CLOSE_MOVE, one that others move out of, until @deadline or
 * for half a time budget); @off and @toff are updated.  Stops at @deadline
 * (0: no limit).  0 or -ENOMEM.
 */
int ortmem__plan_close_gaps(const struct ortmem_plan *plan, const uint64_t *asz,
			    uint8_t *off, uint64_t *toff, unsigned int how, uint64_t deadline)
{
	return ortmem__plan_close_gaps_mv(plan, asz, off, toff, NULL, how, deadline);
}

int ortmem__plan_close_gaps_mv(const struct ortmem_plan *plan, const uint64_t *asz,
			       uint8_t *off, uint64_t *toff, const uint32_t *mstep,
			       unsigned int how, uint64_t deadline)
{
	struct cl c = { .budget = ortmem__plan_dev_budget(plan),
			.anywhere = how & (ORTMEM__PLAN_CLOSE_ANY | ORTMEM__PLAN_CLOSE_MOVE),
		};
	bool move = how & ORTMEM__PLAN_CLOSE_MOVE;
	uint32_t i;
	int ret = -ENOMEM;

	/* moves search the most: within @deadline, or half a time budget */
	if (move)
		c.deadline = deadline ? deadline :
			     ortmem__now_ns() + plan->o.time_budget_us * ORTMEM_NSEC_PER_USEC / 2;
	c.iv = cl_build(plan, asz, off, toff, mstep, &c.n);
	if (!c.iv)
		return -ENOMEM;
	c.lng = malloc(sizeof(*c.lng) * (c.n + 1));
	c.near = malloc(sizeof(*c.near) * (2 * c.n + 1));
	c.rng = malloc(sizeof(*c.rng) * (4 * c.n + 2));
	c.prof = calloc(plan->n_nodes + 1ull, sizeof(*c.prof));
	if (move) {
		c.around = malloc(sizeof(*c.around) * (2 * c.n + 1));
		c.cand = malloc(sizeof(*c.cand) * (4 * c.n + 4));
		c.moved = malloc(sizeof(*c.moved) * (2 * c.n + 1));
		c.was = malloc(sizeof(*c.was) * (2 * c.n + 1));
		c.ord = malloc(sizeof(*c.ord) * (c.n + 1));
		if (!c.around || !c.cand || !c.moved || !c.was || !c.ord)
			goto out;
	}
	if (!c.lng || !c.near || !c.rng || !c.prof)
		goto out;
	/* the profile by differences: O(intervals), not O(their steps),
	 * which on a dense graph is quadratic */
	for (i = 0; i < c.n; i++) {
		uint64_t lo = c.iv[i].lo, hi = c.iv[i].hi < plan->n_nodes ? c.iv[i].hi : plan->n_nodes;

		if (c.iv[i].hi - c.iv[i].lo > CL_SHORT)
			c.lng[c.n_lng++] = i;
		if (lo < hi) {
			c.prof[lo] += c.iv[i].size;
			c.prof[hi] -= c.iv[i].size;
		}
	}
	for (i = 1; i < plan->n_nodes; i++)
		c.prof[i] += c.prof[i - 1];
	c.prof[plan->n_nodes] = 0;
	ret = 0;
	/* the free ranges first (cheap), then the moves, which search */
	if (cl_passes(&c, NULL, off, toff, deadline) && move) {
		c.move = true;
		cl_by_size(&c, c.ord, c.cand);
		cl_passes(&c, c.ord, off, toff, deadline);
	}
out:
	free(c.iv);
	free(c.lng);
	free(c.near);
	free(c.rng);
	free(c.prof);
	free(c.around);
	free(c.cand);
	free(c.moved);
	free(c.was);
	free(c.ord);
	return ret;
}
