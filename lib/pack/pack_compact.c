// SPDX-License-Identifier: MIT
/*
 * Compact search: can the items be packed under a height H?  Written from
 * the ideas MiniMalloc (Moffitt, ASPLOS 2023) describes, not from its code.
 *
 * Canonical solutions.  Lower any packing, one item at a time, to any lower
 * offset where it fits, until none can move: every packing under H becomes
 * such a *compact* one.  Placed in order of offset (ties by a static
 * preorder), each item of a compact packing sits at its *base* at its
 * turn: the highest top of the placed items it conflicts with.  So the
 * search places items at their bases only, with offsets non-decreasing
 * along a path (at equal offsets, in preorder), and skips an item whose
 * base is at or above the lowest top an unplaced item could reach (that
 * one could then move down under it: not compact).  Every compact packing
 * is reached, so an exhausted search proves that none fits.  When an item
 * placed has no unplaced item overlapping it in time and its subtree
 * fails, its siblings are not tried: it could be put back at its base in
 * any of their packings.
 *
 * Inference (pack_sky.c).  A section's floor is the lowest base of its
 * unplaced items; they all live there together above max(floor, last
 * offset placed), so that plus their bytes must fit under H.
 *
 * Decomposition.  When no unplaced item crosses some section boundaries
 * of the range being solved, the range is cut there into parts, each
 * solved on its own in turn: its own order of offsets, its items ranked
 * afresh by the preorder with the crowds of what is left.  When a part
 * fails, the placement that made the split fails, whatever the earlier
 * parts did: they are independent, so their alternatives are not tried.
 *
 * Search.  Depth first, iterative (no recursion, whatever the size): a
 * stack of frames and a stack of splits; a part's first frame, when
 * exhausted, unwinds to the frame that split.  The preorders: width
 * (duration), area, crowd (the largest total of the sections an item
 * lives in) in three orders, then perturbed at random.  Each dive is
 * bounded in nodes; the three orders run in turn under a limit that
 * doubles each round.  A probe ends with a packing, a proof that none
 * exists, or its budget; it can pause and resume (pack_race.c races it
 * against other probes).
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

#define PD_NONE UINT32_MAX
/* Orders tried in turn at one node limit. */
#define PD_ORDERS 3
/* Rounds of the plain orders before they are perturbed. */
#define PD_PLAIN_ROUNDS 40

struct pd_frame {
	uint32_t item;		/* placed from this frame, or PD_NONE */
	uint32_t bound;		/* rank of the last tried (or parent) item */
	uint64_t boff;		/* its offset: candidates come after (boff, bound) */
	uint32_t mark;		/* undo log position before the branch */
	uint32_t split;		/* the split whose current part it branches in */
	bool start;		/* the first frame of that part */
	bool busy;		/* a branch is applied */
	bool hatless;		/* the item placed has no unplaced conflict */
};

/*
 * A range of sections that no unplaced item crosses at some boundaries,
 * cut there into parts, each solved on its own in turn: when one fails,
 * the placement that made the split fails, whatever the parts before it
 * did (they are independent).
 */
struct pd_split {
	uint32_t depth;		/* frame whose placement split; PD_NONE: root */
	uint32_t part0;		/* parts: [lo, hi) pairs at d->parts[2 * part0] */
	uint32_t rr0;		/* ranks it changed: d->rr[rr0 ..] */
	uint32_t nparts;
	uint32_t cur;		/* the part being solved */
	uint32_t left;		/* its unplaced items */
};

/* Undo log entry: a base (kind 0) or a section floor (kind 1). */
struct pk_compact {
	struct packer *pk;
	struct pk_sky sky;	/* bases, floors, bytes left: pack_sky.c */
	uint32_t m;		/* live items */
	uint32_t nsec;		/* sections */
	uint32_t *ids;		/* live items in the current preorder */
	uint32_t *rank;		/* per item: its place in the preorder */
	uint64_t *k1, *k2, *k3;	/* sort keys (scratch) */
	uint32_t *tmp;
	struct pd_frame *fr;
	uint32_t *stack;
	uint32_t *cross;	/* per boundary b: unplaced items over b-1 and b */
	uint32_t *cuts;		/* scratch: boundaries nothing crosses now */
	struct pd_split *split;	/* one per frame at most, plus the root */
	uint32_t nsplit;
	uint32_t *parts;	/* part bounds of the splits, a stack */
	uint32_t nparts;
	size_t cap_parts;
	uint32_t *pcount;	/* scratch: unplaced items per part */
	struct pd_rr { uint32_t item, rank; } *rr;	/* ranks to restore */
	uint32_t nrr;
	size_t cap_rr;
	uint32_t *lst, *oldr;	/* scratch: n each */
	const enum pk_ordering *order;	/* the preorder's keys, in turn */
	uint64_t h;		/* the height probed */
	struct pk_diver diver;	/* restarts, pauses */
	/* where a paused dive resumes */
	uint32_t depth, nplaced;
	uint64_t dive_nodes, dive_limit;
};

/* Every section's unplaced items live there together, above its floor and
 * the offset @off just placed: their bytes must fit above.  Only the
 * sections [@sa, @sb) of the part the offsets are ordered in. */
static bool pd_fits(const struct pk_compact *d, uint64_t off, uint32_t sa,
		    uint32_t sb)
{
	uint32_t s;

	for (s = sa; s < sb; s++) {
		uint64_t f = d->sky.floor[s] > off ? d->sky.floor[s] : off;

		if (d->sky.rem[s] && f + d->sky.rem[s] > d->h)
			return false;
	}
	return true;
}

/* The sections [*sa, *sb) of the part frame @f branches in. */
static void pd_range(const struct pk_compact *d, const struct pd_frame *f,
		     uint32_t *sa, uint32_t *sb)
{
	const struct pd_split *x = &d->split[f->split];

	*sa = d->parts[2 * (x->part0 + x->cur)];
	*sb = d->parts[2 * (x->part0 + x->cur) + 1];
}

/*
 * The next branch of frame @f, among the unplaced items of its part: the
 * one of lowest (base, rank)
 * after (f->boff, f->bound), unless its base is at or above the lowest
 * top an unplaced item can reach (then no compact packing goes on), or an
 * item cannot fit under d->h at all.
 */
static uint32_t pd_next(const struct pk_compact *d, const struct pd_frame *f)
{
	const struct packer *pk = d->pk;
	uint64_t minh = UINT64_MAX, bb = UINT64_MAX;
	uint32_t k, best = PD_NONE, sa, sb;

	pd_range(d, f, &sa, &sb);
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		uint64_t b = d->sky.base[i], t;

		if (d->sky.placed[i] || d->sky.slo[i] < sa || d->sky.slo[i] >= sb)
			continue;
		t = b + pk->it[i].size;
		if (t > d->h)
			return PD_NONE;
		if (t < minh)
			minh = t;
		if (b < f->boff || (b == f->boff && f->bound != PD_NONE &&
				    d->rank[i] <= f->bound))
			continue;
		if (b < bb || (b == bb && d->rank[i] < d->rank[best])) {
			bb = b;
			best = i;
		}
	}
	return bb < minh ? best : PD_NONE;
}

/* Item @i leaves (@delta -1) or rejoins (+1) the unplaced: the boundaries
 * inside its lifetime. */
static void pd_cross(struct pk_compact *d, uint32_t i, int delta)
{
	uint32_t b;

	for (b = d->sky.slo[i] + 1; b < d->sky.shi[i]; b++)
		d->cross[b] += (uint32_t)delta;
}

static bool pd_parts_grow(struct pk_compact *d, uint32_t need)
{
	if (d->nparts + need <= d->cap_parts)
		return true;
	/* A part is two words. */
	return !ortmem__grow((void **)&d->parts, &d->cap_parts,
			     (size_t)d->nparts + need, 2 * sizeof(*d->parts), 1);
}

/* Key @c of the preorder for item @i; the crowd is that of @rem. */
static uint64_t pd_key(const struct pk_compact *d, enum pk_ordering c,
		       uint32_t i, const uint64_t *rem)
{
	const struct pk_item *x = &d->pk->it[i];
	unsigned __int128 a = (unsigned __int128)x->size * (x->hi - x->lo);
	uint64_t t = 0;
	uint32_t s;

	if (c == PK_BY_DURATION)
		return x->hi - x->lo;
	if (c == PK_BY_AREA)
		return a >> 64 ? UINT64_MAX : (uint64_t)a;
	/* PK_BY_CROWD */
	for (s = d->sky.slo[i]; s < d->sky.shi[i]; s++)
		if (rem[s] > t)
			t = rem[s];
	return t;
}

/*
 * The unplaced items of [@sa, @sb), just split off, are ordered afresh
 * among the ranks they hold, by the keys of the dive with the crowds of
 * now (what is left unplaced): the parts are new problems.  Logged in
 * d->rr.  False when out of memory.
 */
static bool pd_rerank(struct pk_compact *d, uint32_t sa, uint32_t sb)
{
	uint64_t *key[3] = { d->k1, d->k2, d->k3 };
	uint32_t i, j, c, n = 0;

	for (i = 0; i < d->pk->n; i++)
		if (ortmem__pk_live(&d->pk->it[i]) && !d->sky.placed[i] &&
		    d->sky.slo[i] >= sa && d->sky.slo[i] < sb)
			d->lst[n++] = i;
	if (d->nrr + n > d->cap_rr &&
	    ortmem__grow((void **)&d->rr, &d->cap_rr, (size_t)d->nrr + n,
			 sizeof(*d->rr), 1))
		return false;
	/* The ranks held, ascending. */
	memcpy(d->oldr, d->lst, sizeof(*d->lst) * n);
	for (j = 0; j < n; j++)
		key[0][d->lst[j]] = d->rank[d->lst[j]];
	ortmem__pk_sort_by(d->oldr, n, key[0], d->tmp);
	for (j = 0; j < n; j++)
		d->oldr[j] = d->rank[d->oldr[j]];
	for (j = 0; j < n; j++)
		for (c = 0; c < 3; c++)
			key[c][d->lst[j]] = UINT64_MAX - pd_key(d, d->order[c], d->lst[j], d->sky.rem);
	for (c = 3; c-- > 0;)
		ortmem__pk_sort_by(d->lst, n, key[c], d->tmp);
	for (j = 0; j < n; j++) {
		i = d->lst[j];
		d->rr[d->nrr++] = (struct pd_rr){ i, d->rank[i] };
		d->rank[i] = d->oldr[j];
	}
	return true;
}

/*
 * Cut [@sa, @sb) at the boundaries in @cut (@ncut, increasing) into the
 * parts that hold unplaced items; a split is made when there are two or
 * more.  Return 1 split, 0 not, -1 out of memory.
 */
static int pd_split_at(struct pk_compact *d, uint32_t sa, uint32_t sb,
		       const uint32_t *cut, uint32_t ncut, uint32_t depth)
{
	uint32_t k, j, lo, np = 0, p0 = d->nparts;
	struct pd_split *x;

	for (j = 0; j <= ncut; j++)
		d->pcount[j] = 0;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k], a = 0, z = ncut;

		if (d->sky.placed[i] || d->sky.slo[i] < sa || d->sky.slo[i] >= sb)
			continue;
		while (a < z) {		/* pieces before slo[i] */
			uint32_t mid = (a + z) / 2;

			if (cut[mid] <= d->sky.slo[i])
				a = mid + 1;
			else
				z = mid;
		}
		d->pcount[a]++;
	}
	for (j = 0; j <= ncut; j++)
		np += d->pcount[j] != 0;
	if (np < 2)
		return 0;
	if (!pd_parts_grow(d, np))
		return -ENOMEM;
	for (j = 0, lo = sa; j <= ncut; j++) {
		uint32_t hi = j < ncut ? cut[j] : sb;

		if (d->pcount[j]) {
			d->parts[2 * d->nparts] = lo;
			d->parts[2 * d->nparts + 1] = hi;
			d->pcount[d->nparts - p0] = d->pcount[j];
			d->nparts++;
		}
		lo = hi;
	}
	x = &d->split[d->nsplit++];
	*x = (struct pd_split){ .depth = depth, .part0 = p0, .nparts = np,
				.rr0 = d->nrr, .left = d->pcount[0] };
	return pd_rerank(d, sa, sb) ? 1 : -ENOMEM;
}

/* Count the unplaced items of split @x's current part. */
static void pd_count_part(struct pk_compact *d, struct pd_split *x)
{
	uint32_t sa = d->parts[2 * (x->part0 + x->cur)];
	uint32_t sb = d->parts[2 * (x->part0 + x->cur) + 1], k;

	x->left = 0;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];

		x->left += !d->sky.placed[i] && d->sky.slo[i] >= sa && d->sky.slo[i] < sb;
	}
}

/* Push the first frame of split @xi's current part. */
static void pd_push_start(struct pk_compact *d, uint32_t xi)
{
	d->depth++;
	d->fr[d->depth] = (struct pd_frame){ .item = PD_NONE, .bound = PD_NONE,
					     .split = xi, .start = true };
}

/*
 * After item @i was placed from frame @f (at d->depth): split its part if
 * no unplaced item crosses some boundary in it now, else go on in it,
 * else (the part is done) start the next part, of this split or of the
 * ones around it.  Return -ENOMEM, else 0.
 */
static int pd_after(struct pk_compact *d, struct pd_frame *f, uint32_t i)
{
	struct pd_split *x = &d->split[f->split];
	uint32_t sa, sb, b, ncut = 0, xi;
	int r;

	pd_range(d, f, &sa, &sb);
	for (b = d->sky.slo[i] + 1; b < d->sky.shi[i]; b++)
		if (!d->cross[b] && b > sa && b < sb)
			d->cuts[ncut++] = b;
	if (ncut) {
		r = pd_split_at(d, sa, sb, d->cuts, ncut, d->depth);
		if (r)
			pd_push_start(d, d->nsplit - 1);
		if (r)
			return r < 0 ? r : 0;
	}
	if (x->left) {
		d->depth++;
		d->fr[d->depth] = (struct pd_frame){ .item = PD_NONE,
			.bound = f->bound, .boff = f->boff, .split = f->split };
		return 0;
	}
	/* The part is done; so is each split whose last part it was. */
	for (xi = f->split; ; xi = d->fr[x->depth].split) {
		x = &d->split[xi];
		if (++x->cur < x->nparts) {
			pd_count_part(d, x);
			pd_push_start(d, xi);
			return 0;
		}
		if (x->depth == PD_NONE)
			return 0;	/* all placed: caught before */
	}
}

/* Take back the branch of frame @f (at d->depth). */
static void pd_take_back(struct pk_compact *d, struct pd_frame *f)
{
	struct pd_split *top = &d->split[d->nsplit - 1];

	if (top->depth == d->depth) {
		while (d->nrr > top->rr0) {
			const struct pd_rr *u = &d->rr[--d->nrr];

			d->rank[u->item] = u->rank;
		}
		d->nparts = top->part0;
		d->nsplit--;
	}
	ortmem__sky_unplace(&d->sky, f->item, f->mark);
	pd_cross(d, f->item, 1);
	d->split[f->split].left++;
	d->nplaced--;
	f->busy = false;
}

static void pd_dive_start(struct pk_compact *d)
{
	uint32_t k, ncut = 0, all = d->nsec;

	ortmem__sky_reset(&d->sky, d->h);
	memset(d->cross, 0, sizeof(*d->cross) * (d->nsec + 1));
	for (k = 0; k < d->m; k++)
		pd_cross(d, d->ids[k], 1);
	d->depth = 0;
	d->nplaced = 0;
	d->dive_nodes = 0;
	d->nsplit = 0;
	d->nparts = 0;
	d->nrr = 0;
	for (k = 1; k < d->nsec; k++)
		if (!d->cross[k])
			d->cuts[ncut++] = k;
	/* The root: the parts of all time, or all time as one part. */
	if (pd_split_at(d, 0, all, d->cuts, ncut, PD_NONE) <= 0) {
		d->parts[0] = 0;
		d->parts[1] = all;
		d->nparts = 1;
		d->split[0] = (struct pd_split){ .depth = PD_NONE, .nparts = 1,
						 .left = d->m };
		d->nsplit = 1;
	}
	d->fr[0] = (struct pd_frame){ .item = PD_NONE, .bound = PD_NONE,
				      .split = 0, .start = true };
}

/*
 * Frame @f has no branch left.  Within a part, back to its parent; at the
 * start of a part, back past the whole split to the frame that made it.
 * Return false when the dive is exhausted.
 */
static bool pd_backtrack(struct pk_compact *d, const struct pd_frame *f)
{
	uint32_t to;

	if (!f->start) {
		d->depth--;
		return true;
	}
	to = d->split[f->split].depth;
	if (to == PD_NONE)
		return false;
	while (--d->depth > to)
		pd_take_back(d, &d->fr[d->depth]);
	return true;
}

/*
 * Go on with the current dive for at most @budget nodes (or until the
 * deadline): PK_DIVE_PAUSE leaves it where it is, to resume; PK_DIVE_LIMIT: the dive
 * used up its own node limit.
 */
static enum pk_dive pd_dive(void *search, uint64_t budget, uint64_t deadline)
{
	struct pk_compact *d = search;
	struct packer *pk = d->pk;
	uint64_t used = 0;

	for (;;) {
		struct pd_frame *f = &d->fr[d->depth];
		uint32_t i = PD_NONE, sa, sb;
		int r;

		if (f->busy)
			pd_take_back(d, f);
		if (!f->hatless)
			i = pd_next(d, f);
		if (i == PD_NONE) {
			if (!pd_backtrack(d, f))
				return PK_DIVE_INFEASIBLE;
			continue;
		}
		if (d->dive_nodes >= d->dive_limit)
			return PK_DIVE_LIMIT;
		if (used >= budget)
			return PK_DIVE_PAUSE;
		d->dive_nodes++;
		used++;
		pk->iters++;
		if (ortmem__pk_budget_spent(pk, used, PK_CLOCK_NODES, deadline))
			return PK_DIVE_PAUSE;
		f->boff = d->sky.base[i];
		f->bound = d->rank[i];
		f->item = i;
		f->mark = d->sky.nundo;
		f->busy = true;
		r = ortmem__sky_place(&d->sky, i);
		if (r < 0)
			return PK_DIVE_LIMIT;
		f->hatless = !r;
		pd_cross(d, i, -1);
		d->split[f->split].left--;
		d->stack[d->nplaced++] = i;
		if (d->nplaced == d->m)
			return PK_DIVE_FOUND;
		pd_range(d, f, &sa, &sb);
		if (d->sky.dead || !pd_fits(d, f->boff, sa, sb))
			continue;
		if (pd_after(d, f, i) < 0)
			return PK_DIVE_LIMIT;
	}
}

/*
 * Preorder @r: duration (width), area, crowd (largest first) in the orders
 * of pd_orders; after PD_PLAIN_ROUNDS rounds, each key perturbed at random.
 */
static void pd_order(struct pk_compact *d, uint32_t r)
{
	const struct packer *pk = d->pk;
	static const enum pk_ordering pd_orders[PD_ORDERS][3] = {
		{ PK_BY_DURATION, PK_BY_AREA, PK_BY_CROWD },
		{ PK_BY_CROWD, PK_BY_AREA, PK_BY_DURATION },
		{ PK_BY_CROWD, PK_BY_DURATION, PK_BY_AREA },
	};
	const enum pk_ordering *o = pd_orders[r % PD_ORDERS];
	uint64_t *key[3] = { d->k1, d->k2, d->k3 };
	uint32_t k, c;

	d->order = o;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];

		for (c = 0; c < 3; c++) {
			uint64_t v = pd_key(d, o[c], i, d->sky.rem0);

			if (r >= PD_ORDERS * PD_PLAIN_ROUNDS)
				/* up to +-25 % */
				v = (uint64_t)((double)v * (0.75 + ortmem__pk_rand_unit(d->pk) / 2));
			key[c][i] = UINT64_MAX - v;	/* descending */
		}
	}
	/* Ties by id: from id order, stable sorts, last key first. */
	for (k = 0, c = 0; k < pk->n; k++)
		if (ortmem__pk_live(&pk->it[k]))
			d->ids[c++] = k;
	for (c = 3; c-- > 0;)
		ortmem__pk_sort_by(d->ids, d->m, key[c], d->tmp);
	for (k = 0; k < d->m; k++)
		d->rank[d->ids[k]] = k;
}

/* Dive number @r under @h: the orders in turn, under a node limit
 * doubling each round. */
static void pd_begin(void *search, uint32_t r, uint64_t h)
{
	struct pk_compact *d = search;
	uint32_t round = r / PD_ORDERS;

	d->h = h;
	d->dive_limit = (uint64_t)d->m << (round < 40 ? round + 1 : 40);
	pd_order(d, r);
	pd_dive_start(d);
}

int ortmem__pk_compact_run(struct pk_compact *d, uint64_t h, uint64_t budget,
			   uint64_t deadline)
{
	return ortmem__pk_diver_run(&d->diver, h, budget, deadline);
}

static bool pd_alloc(struct pk_compact *d)
{
	const struct packer *pk = d->pk;
	uint32_t n = pk->n ? pk->n : 1, k;

	if (ortmem__sky_init(&d->sky, d->pk))
		return false;
	d->m = d->sky.m;
	d->nsec = d->sky.nsec;
	d->ids = malloc(sizeof(*d->ids) * n);
	d->rank = calloc(n, sizeof(*d->rank));
	d->k1 = calloc(n, sizeof(*d->k1));
	d->k2 = calloc(n, sizeof(*d->k2));
	d->k3 = calloc(n, sizeof(*d->k3));
	d->tmp = calloc(n, sizeof(*d->tmp));
	d->stack = calloc(n, sizeof(*d->stack));
	d->fr = calloc(n + 1, sizeof(*d->fr));
	d->split = calloc(n + 2, sizeof(*d->split));
	d->cap_rr = n + 16;
	d->rr = malloc(sizeof(*d->rr) * d->cap_rr);
	d->lst = malloc(sizeof(*d->lst) * n);
	d->oldr = malloc(sizeof(*d->oldr) * n);
	d->cross = calloc(d->nsec + 1, sizeof(*d->cross));
	d->cuts = calloc(d->nsec + 1, sizeof(*d->cuts));
	d->pcount = calloc(d->nsec + 1, sizeof(*d->pcount));
	d->cap_parts = d->nsec + 2;
	d->parts = malloc(sizeof(*d->parts) * 2 * (size_t)d->cap_parts);
	if (!d->ids || !d->rank || !d->k1 || !d->k2 || !d->k3 || !d->tmp ||
	    !d->stack || !d->fr || !d->split || !d->rr || !d->lst ||
	    !d->oldr || !d->cross || !d->cuts || !d->pcount || !d->parts)
		return false;
	for (k = 0; k < d->m; k++)
		d->ids[k] = d->sky.ids[k];
	return true;
}

void ortmem__pk_compact_free(struct pk_compact *d)
{
	if (!d)
		return;
	ortmem__sky_fini(&d->sky);
	free(d->ids);
	free(d->rank);
	free(d->k1);
	free(d->k2);
	free(d->k3);
	free(d->tmp);
	free(d->stack);
	free(d->fr);
	free(d->split);
	free(d->rr);
	free(d->lst);
	free(d->oldr);
	free(d->cross);
	free(d->cuts);
	free(d->pcount);
	free(d->parts);
	free(d);
}

/* A search over @pk's live items; NULL when out of memory. */
struct pk_compact *ortmem__pk_compact_new(struct packer *pk)
{
	struct pk_compact *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pk = pk;
	if (!pd_alloc(d)) {
		ortmem__pk_compact_free(d);
		return NULL;
	}
	d->diver = (struct pk_diver){ .sky = &d->sky, .stack = d->stack,
		.search = d, .begin = pd_begin, .dive = pd_dive, .h = UINT64_MAX };
	return d;
}

/*
 * Probe height @h with the compact search until @deadline (or @max_nodes
 * nodes, 0: no limit); keep the packing it finds.  Return an enum
 * pk_probe, or -ENOMEM.
 */
int ortmem__pk_compact(struct packer *pk, uint64_t h, uint64_t deadline,
		       uint64_t max_nodes)
{
	struct pk_compact *d = ortmem__pk_compact_new(pk);
	int ret = d ? PK_PROBE_PAUSED : -ENOMEM;

	if (d && d->m)
		ret = ortmem__pk_compact_run(d, h, max_nodes ? max_nodes : UINT64_MAX,
					     deadline);
	ortmem__pk_compact_free(d);
	return ret;
}
