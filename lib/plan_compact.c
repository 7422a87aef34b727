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
 * Inference.  Time is cut into sections at every start and end.  A
 * section's floor is at least the highest top placed in it and the lowest
 * base of its unplaced items (bases only rise along a path); its unplaced
 * items all live there together above max(floor, last offset placed), so
 * that plus their bytes must fit under H.  Bases rise incrementally along
 * the conflict lists, floors in the sections whose items' bases rose; both
 * are undone from one log, so a node costs O(items + sections).
 *
 * Search.  Depth first, iterative (no recursion, whatever the size).  The
 * preorders: width (duration), area, crowd (the largest total of the
 * sections an item lives in) in three orders, then perturbed at random.
 * Each dive is bounded in nodes; the three orders run in turn under a
 * limit that doubles each round.  A probe ends with a packing, a proof
 * that none exists, or its budget.
 *
 * ortmem__pk_decide() runs it at the lower bound first, where inference
 * prunes most, before its own bisection.
 */
#include <stdlib.h>

#include "plan_internal.h"

#define PD_NONE UINT32_MAX
/* Orders tried in turn at one node limit. */
#define PD_ORDERS 3
/* Rounds of the plain orders before they are perturbed. */
#define PD_PLAIN_ROUNDS 12

struct pd_frame {
	uint32_t item;		/* placed from this frame, or PD_NONE */
	uint32_t bound;		/* rank of the last tried (or parent) item */
	uint64_t boff;		/* its offset: candidates come after (boff, bound) */
	uint32_t mark;		/* undo log position before the branch */
	bool busy;		/* a branch is applied */
	bool hatless;		/* the item placed has no unplaced conflict */
};

/* Undo log entry: a base (kind 0) or a section floor (kind 1). */
struct pd_undo {
	uint32_t idx;
	uint32_t kind;
	uint64_t old;
};

struct pd {
	struct packer *pk;
	uint32_t m;		/* live items */
	uint32_t *ids;		/* live items in the current preorder */
	uint32_t *rank;		/* per item: its place in ids */
	uint32_t nsec;
	uint32_t *slo, *shi;	/* each item's sections [slo, shi) */
	uint32_t *sidx, *smem;	/* section members, CSR: the unplaced first */
	uint32_t *scnt;		/* per section: unplaced members */
	uint32_t *ioff, *spos;	/* spos[ioff[i] + s - slo[i]]: i's place in s */
	uint64_t *floor;	/* per section */
	uint64_t *rem;		/* per section: unplaced bytes */
	uint64_t *rem0;
	uint32_t *stamp;	/* per section: last node that touched it */
	uint32_t *touched;	/* sections touched by this node */
	uint64_t *base;		/* per item */
	uint64_t *crowd;	/* per item: largest rem0 over its sections */
	bool *placed;
	uint64_t *k1, *k2, *k3;	/* sort keys (scratch) */
	uint32_t *tmp;
	struct pd_undo *undo;
	uint32_t nundo;
	size_t cap_undo;
	struct pd_frame *fr;
	uint32_t *stack;
	uint32_t now;		/* stamp of the current node */
	uint64_t h;		/* the height probed */
	uint64_t nodes;		/* in this probe */
	uint32_t round;		/* restarts in this probe */
};

/* Sections, the per-item spans, section members and crowds; false when
 * out of memory. */
static bool pd_sections(struct pd *d)
{
	const struct packer *pk = d->pk;
	uint32_t i, k, nt = 0, s, u, tot = 0;
	uint64_t *t = malloc(sizeof(*t) * 2 * (size_t)(d->m ? d->m : 1));

	if (!t)
		return false;
	for (k = 0; k < d->m; k++) {
		t[nt++] = pk->it[d->ids[k]].lo;
		t[nt++] = pk->it[d->ids[k]].hi;
	}
	s = ortmem__pk_section_times(t, nt);
	d->nsec = s ? s - 1 : 0;
	d->floor = calloc(d->nsec + 1, sizeof(*d->floor));
	d->rem = calloc(d->nsec + 1, sizeof(*d->rem));
	d->rem0 = calloc(d->nsec + 1, sizeof(*d->rem0));
	d->stamp = calloc(d->nsec + 1, sizeof(*d->stamp));
	d->touched = calloc(d->nsec + 1, sizeof(*d->touched));
	d->sidx = calloc(d->nsec + 2, sizeof(*d->sidx));
	d->scnt = calloc(d->nsec + 1, sizeof(*d->scnt));
	if (!d->floor || !d->rem || !d->rem0 || !d->stamp || !d->touched ||
	    !d->sidx || !d->scnt) {
		free(t);
		return false;
	}
	for (k = 0; k < d->m; k++) {
		i = d->ids[k];
		d->slo[i] = ortmem__pk_section_of(t, s, pk->it[i].lo);
		d->shi[i] = ortmem__pk_section_of(t, s, pk->it[i].hi);
		tot += d->shi[i] - d->slo[i];
		for (u = d->slo[i]; u < d->shi[i]; u++) {
			d->rem0[u] += pk->it[i].size;
			d->sidx[u + 2]++;
		}
	}
	free(t);
	d->smem = malloc(sizeof(*d->smem) * (tot ? tot : 1));
	d->spos = malloc(sizeof(*d->spos) * (tot ? tot : 1));
	if (!d->smem || !d->spos)
		return false;
	for (u = 0; u < d->nsec; u++)
		d->sidx[u + 2] += d->sidx[u + 1];
	for (k = 0, tot = 0; k < d->m; k++) {
		i = d->ids[k];
		d->crowd[i] = 0;
		d->ioff[i] = tot;
		tot += d->shi[i] - d->slo[i];
		for (u = d->slo[i]; u < d->shi[i]; u++) {
			d->spos[d->ioff[i] + u - d->slo[i]] = d->sidx[u + 1];
			d->smem[d->sidx[u + 1]++] = i;
			if (d->rem0[u] > d->crowd[i])
				d->crowd[i] = d->rem0[u];
		}
	}
	return true;
}

static void pd_reset(struct pd *d)
{
	uint32_t k;

	memset(d->floor, 0, sizeof(*d->floor) * (d->nsec + 1));
	memcpy(d->rem, d->rem0, sizeof(*d->rem) * (d->nsec + 1));
	for (k = 0; k < d->nsec; k++)
		d->scnt[k] = d->sidx[k + 1] - d->sidx[k];
	for (k = 0; k < d->m; k++) {
		d->placed[d->ids[k]] = false;
		d->base[d->ids[k]] = 0;
	}
	d->nundo = 0;
}

/* Log a value before it changes; false when the log cannot grow. */
static bool pd_log(struct pd *d, uint32_t idx, uint32_t kind, uint64_t old)
{
	if (d->nundo == d->cap_undo) {
		struct pd_undo *u = realloc(d->undo, sizeof(*u) * 2 * d->cap_undo);

		if (!u)
			return false;
		d->undo = u;
		d->cap_undo *= 2;
	}
	d->undo[d->nundo++] = (struct pd_undo){ idx, kind, old };
	return true;
}

static void pd_touch(struct pd *d, uint32_t i, uint32_t *nt)
{
	uint32_t s;

	for (s = d->slo[i]; s < d->shi[i]; s++)
		if (d->stamp[s] != d->now) {
			d->stamp[s] = d->now;
			d->touched[(*nt)++] = s;
		}
}

/* Move item @i past the unplaced members of section @s. */
static void pd_unlist(struct pd *d, uint32_t i, uint32_t s)
{
	uint32_t *pi = &d->spos[d->ioff[i] + s - d->slo[i]];
	uint32_t last = d->sidx[s] + --d->scnt[s], j = d->smem[last];

	d->spos[d->ioff[j] + s - d->slo[j]] = *pi;
	d->smem[*pi] = j;
	d->smem[last] = i;
	*pi = last;
}

/*
 * Place item @i at its base: floors of its sections to its top, bases of
 * its unplaced conflicts up to it, then the floor of every section whose
 * items changed up to the lowest base left there.  Return 1 when an
 * unplaced item conflicts with @i, 0 when none does, -1 out of memory.
 */
static int pd_place(struct pd *d, uint32_t i)
{
	struct packer *pk = d->pk;
	uint64_t size = pk->it[i].size, top = d->base[i] + size;
	uint32_t s, k, nt = 0;
	int hat = 0;

	pk->off[i] = d->base[i];
	d->placed[i] = true;
	d->now++;
	for (s = d->slo[i]; s < d->shi[i]; s++) {
		if (!pd_log(d, s, 1, d->floor[s]))
			return -1;
		d->floor[s] = top;
		d->rem[s] -= size;
		pd_unlist(d, i, s);
	}
	pd_touch(d, i, &nt);
	for (k = pk->cidx[i]; k < pk->cidx[i + 1]; k++) {
		uint32_t j = pk->conf[k];

		if (d->placed[j])
			continue;
		hat = 1;
		if (d->base[j] >= top)
			continue;
		if (!pd_log(d, j, 0, d->base[j]))
			return -1;
		d->base[j] = top;
		pd_touch(d, j, &nt);
	}
	while (nt) {
		uint64_t low = UINT64_MAX;

		s = d->touched[--nt];
		for (k = d->sidx[s]; k < d->sidx[s] + d->scnt[s]; k++) {
			uint32_t j = d->smem[k];

			if (d->base[j] < low)
				low = d->base[j];
		}
		if (low != UINT64_MAX && low > d->floor[s]) {
			if (!pd_log(d, s, 1, d->floor[s]))
				return -1;
			d->floor[s] = low;
		}
	}
	return hat;
}

/* Undo back to @mark, and item @i's placement. */
static void pd_unplace(struct pd *d, uint32_t i, uint32_t mark)
{
	uint64_t size = d->pk->it[i].size;
	uint32_t s;

	while (d->nundo > mark) {
		const struct pd_undo *u = &d->undo[--d->nundo];

		if (u->kind)
			d->floor[u->idx] = u->old;
		else
			d->base[u->idx] = u->old;
	}
	/* LIFO: @i is still just past the unplaced members. */
	for (s = d->slo[i]; s < d->shi[i]; s++) {
		d->rem[s] += size;
		d->scnt[s]++;
	}
	d->placed[i] = false;
}

/* Every section's unplaced items live there together, above its floor and
 * the offset @off just placed: their bytes must fit above. */
static bool pd_fits(const struct pd *d, uint64_t off)
{
	uint32_t s;

	for (s = 0; s < d->nsec; s++) {
		uint64_t f = d->floor[s] > off ? d->floor[s] : off;

		if (d->rem[s] && f + d->rem[s] > d->h)
			return false;
	}
	return true;
}

/*
 * The next branch of frame @f: the unplaced item of lowest (base, rank)
 * after (f->boff, f->bound), unless its base is at or above the lowest
 * top an unplaced item can reach (then no compact packing goes on), or an
 * item cannot fit under d->h at all.
 */
static uint32_t pd_next(const struct pd *d, const struct pd_frame *f)
{
	const struct packer *pk = d->pk;
	uint64_t minh = UINT64_MAX, bb = UINT64_MAX;
	uint32_t k, best = PD_NONE;

	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		uint64_t b = d->base[i], t;

		if (d->placed[i])
			continue;
		t = b + pk->it[i].size;
		if (t > d->h)
			return PD_NONE;
		if (t < minh)
			minh = t;
		if (b < bb && (b > f->boff ||
			       (b == f->boff && (f->bound == PD_NONE || k > f->bound)))) {
			bb = b;
			best = i;
		}
	}
	return bb < minh ? best : PD_NONE;
}

enum pd_result { PD_FOUND, PD_INFEASIBLE, PD_LIMIT };

/* One dive from scratch under @limit nodes (and the deadline). */
static enum pd_result pd_dive(struct pd *d, uint64_t limit, uint64_t deadline)
{
	struct packer *pk = d->pk;
	uint32_t depth = 0, placed = 0;
	uint64_t nodes = 0;

	pd_reset(d);
	d->fr[0] = (struct pd_frame){ .item = PD_NONE, .bound = PD_NONE };
	for (;;) {
		struct pd_frame *f = &d->fr[depth];
		uint32_t i = PD_NONE;
		int r;

		if (f->busy) {
			pd_unplace(d, f->item, f->mark);
			placed--;
			f->busy = false;
		}
		if (!f->hatless)
			i = pd_next(d, f);
		if (i == PD_NONE) {
			if (!depth)
				return PD_INFEASIBLE;
			depth--;
			continue;
		}
		if (++nodes > limit)
			return PD_LIMIT;
		pk->iters++;
		d->nodes++;
		if ((nodes & 63) == 0 &&
		    ((pk->opts.max_iter && pk->iters >= pk->opts.max_iter) ||
		     ortmem__now_ns() >= deadline))
			return PD_LIMIT;
		f->boff = d->base[i];
		f->bound = d->rank[i];
		f->item = i;
		f->mark = d->nundo;
		f->busy = true;
		r = pd_place(d, i);
		if (r < 0)
			return PD_LIMIT;
		f->hatless = !r;
		d->stack[placed++] = i;
		if (placed == d->m)
			return PD_FOUND;
		if (!pd_fits(d, f->boff))
			continue;
		depth++;
		d->fr[depth] = (struct pd_frame){ .item = PD_NONE,
			.bound = f->bound, .boff = f->boff };
	}
}

/*
 * Preorder @r: width, area, crowd (largest first) in the orders WAT, TAW,
 * TWA; after PD_PLAIN_ROUNDS rounds, each key perturbed at random.
 */
static void pd_order(struct pd *d, uint32_t r)
{
	const struct packer *pk = d->pk;
	static const char orders[PD_ORDERS][4] = { "WAT", "TAW", "TWA" };
	const char *o = orders[r % PD_ORDERS];
	uint64_t *key[3] = { d->k1, d->k2, d->k3 };
	uint32_t k, c;

	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		const struct pk_item *x = &pk->it[i];
		unsigned __int128 a = (unsigned __int128)x->size * (x->hi - x->lo);

		for (c = 0; c < 3; c++) {
			uint64_t v = o[c] == 'W' ? x->hi - x->lo :
				     o[c] == 'A' ? (a >> 64 ? UINT64_MAX : (uint64_t)a) :
				     d->crowd[i];

			if (r >= PD_ORDERS * PD_PLAIN_ROUNDS)
				/* up to +-25 % */
				v = (uint64_t)((double)v * (0.75 + (double)(ortmem__pk_rand(d->pk) % 1024) / 2048));
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

/* Probe height @h until @deadline (or @max_nodes); keep what it finds. */
static enum pd_result pd_probe(struct pd *d, uint64_t h, uint64_t deadline,
			       uint64_t max_nodes)
{
	struct packer *pk = d->pk;
	enum pd_result r = PD_LIMIT;
	uint32_t restart;

	d->h = h;
	d->nodes = 0;
	for (restart = 0; ; restart++) {
		uint32_t round = restart / PD_ORDERS;
		uint64_t limit = (uint64_t)d->m << (round < 40 ? round + 1 : 40);

		if (max_nodes && d->nodes >= max_nodes)
			break;
		if (max_nodes && limit > max_nodes - d->nodes)
			limit = max_nodes - d->nodes;
		pd_order(d, restart);
		r = pd_dive(d, limit, deadline);
		if (r != PD_LIMIT)
			break;
		if (ortmem__now_ns() >= deadline ||
		    (pk->opts.max_iter && pk->iters >= pk->opts.max_iter))
			break;
	}
	if (r == PD_FOUND)
		ortmem__pk_keep_placed(pk, d->stack, d->m);
	return r;
}

static bool pd_alloc(struct pd *d)
{
	const struct packer *pk = d->pk;
	uint32_t n = pk->n ? pk->n : 1, k;

	d->ids = malloc(sizeof(*d->ids) * n);
	d->rank = calloc(n, sizeof(*d->rank));
	d->slo = calloc(n, sizeof(*d->slo));
	d->shi = calloc(n, sizeof(*d->shi));
	d->base = calloc(n, sizeof(*d->base));
	d->crowd = calloc(n, sizeof(*d->crowd));
	d->ioff = calloc(n, sizeof(*d->ioff));
	d->placed = calloc(n, sizeof(*d->placed));
	d->k1 = calloc(n, sizeof(*d->k1));
	d->k2 = calloc(n, sizeof(*d->k2));
	d->k3 = calloc(n, sizeof(*d->k3));
	d->tmp = calloc(n, sizeof(*d->tmp));
	d->stack = calloc(n, sizeof(*d->stack));
	d->fr = calloc(n + 1, sizeof(*d->fr));
	if (!d->ids || !d->rank || !d->slo || !d->shi || !d->base ||
	    !d->crowd || !d->ioff || !d->placed || !d->k1 || !d->k2 || !d->k3 ||
	    !d->tmp || !d->stack || !d->fr)
		return false;
	for (k = 0; k < pk->n; k++)
		if (ortmem__pk_live(&pk->it[k]))
			d->ids[d->m++] = k;
	if (!pd_sections(d))
		return false;
	/* Grows when a path logs more (rarely). */
	d->cap_undo = 4 * ((size_t)d->m + d->nsec) + 16;
	d->undo = malloc(sizeof(*d->undo) * d->cap_undo);
	return d->undo;
}

static void pd_free(struct pd *d)
{
	free(d->ids);
	free(d->rank);
	free(d->slo);
	free(d->shi);
	free(d->sidx);
	free(d->smem);
	free(d->scnt);
	free(d->ioff);
	free(d->spos);
	free(d->floor);
	free(d->rem);
	free(d->rem0);
	free(d->stamp);
	free(d->touched);
	free(d->base);
	free(d->crowd);
	free(d->placed);
	free(d->k1);
	free(d->k2);
	free(d->k3);
	free(d->tmp);
	free(d->undo);
	free(d->fr);
	free(d->stack);
}

/*
 * Probe height @h with the compact search until @deadline (or @max_nodes
 * nodes); keep the packing it finds.  Return 1 when one fits, 0 when
 * proven that none does, -1 when out of budget (or memory).
 */
int ortmem__pk_compact(struct packer *pk, uint64_t h, uint64_t deadline,
		       uint64_t max_nodes)
{
	struct pd d = { .pk = pk };
	int ret = -1;

	if (pd_alloc(&d) && d.m) {
		enum pd_result r = pd_probe(&d, h, deadline, max_nodes);

		ret = r == PD_FOUND ? 1 : r == PD_INFEASIBLE ? 0 : -1;
	}
	pd_free(&d);
	return ret;
}
