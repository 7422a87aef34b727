// SPDX-License-Identifier: MIT
/*
 * Decision search: can the items be packed under a height H?  Written from
 * the ideas MiniMalloc (Moffitt, ASPLOS 2023) describes, not from its code.
 *
 * Canonical solutions.  Push any packing down until each item rests at 0
 * or on the top of an item it conflicts with; each item then sits at its
 * "base", the highest top of the items below it that it conflicts with.
 * Time is cut into sections at every start and end; a section's floor is
 * the highest top placed in it, an item's base the highest floor over its
 * sections.  The search fills the lowest free position: the lowest base p
 * of all unplaced items, in the first section s* where an item of base p
 * lives.  Either an item of base p that lives in s* sits there (one branch
 * per item), or none does: then every item of s* must rise, to at least p
 * plus the smallest unplaced size (it can only rest on an item placed
 * from now on, since nothing placed has a top between p and its base), and
 * the floor of s* is raised so (the last branch).  Every pushed-down
 * packing is reached, so an exhausted search proves that none fits.
 *
 * Inference.  A section's unplaced items all live there together, above
 * the lowest base among them, so that base plus their bytes must fit
 * under H; and every item's base plus its size must.
 *
 * Search.  Depth first, iterative (no recursion, whatever the size).  The
 * items of a branch are ordered so that the skyline stays flat (tops that
 * line up with the floors beside them first), then by a key: size then
 * duration, duration then size, or area, perturbed at random after the
 * first restarts; at most PD_WIDTH are kept.  Each dive is bounded in
 * nodes; dives restart with growing limits (the Luby sequence) and new
 * keys.  A probe ends with a packing, a proof that none exists (an
 * exhausted search that never cut a branch list), or its budget.
 *
 * ortmem__pk_decide() wraps probes in a bisection of H between the lower
 * bound and the best height found, always keeping the best packing.
 */
#include <stdlib.h>

#include "plan_internal.h"

/* Candidates kept per node; the rest are cut (the search is then a
 * heuristic, no longer a proof). */
#define PD_WIDTH 6
/* First dive's node limit, times the Luby sequence. */
#define PD_DIVE_NODES 4
#define PD_NONE UINT32_MAX
/* Share of the budget (%) the compact search gets at the lower bound. */
#define PD_COMPACT_SHARE 40

struct pd_cand {
	uint64_t off;		/* offset; for a raise, the new floor */
	uint64_t slack;		/* pd_misfit(): fewer first */
	uint64_t key;		/* then larger key first */
	uint32_t id;
};

struct pd_frame {
	uint32_t nc, k;		/* branches pool[d * (PD_WIDTH + 1) ..], next */
	uint32_t item;		/* placed from this frame, or PD_NONE: a raise */
	uint32_t star;		/* the section of the lowest free position */
	uint32_t mark;		/* undo log position before the branch */
	bool busy;		/* a branch is applied */
};

struct pd_undo {
	uint32_t idx;		/* section */
	uint64_t old;		/* its floor before */
};

struct pd {
	struct packer *pk;
	uint32_t m;		/* live items */
	uint32_t *ids;
	uint32_t nsec;
	uint32_t *slo, *shi;	/* each item's sections [slo, shi) */
	uint64_t *floor;	/* per section: highest placed top */
	uint64_t *rem;		/* per section: unplaced bytes */
	uint64_t *rem0;
	uint64_t *low;		/* per section: lowest offset left (scratch) */
	uint64_t *base;		/* per item: highest floor over its sections */
	bool *placed;
	uint64_t *key;
	struct pd_undo *undo;
	uint32_t nundo;
	struct pd_frame *fr;
	struct pd_cand *pool;
	uint32_t *stack;
	uint64_t h;		/* the height probed */
	uint64_t minsz;
	uint64_t nodes;		/* in this probe */
	bool cut;		/* a candidate list was truncated */
	uint32_t luby_i;
	uint32_t maxdepth;	/* frames */
};

/* Sections and the per-item spans; false when out of memory. */
static bool pd_sections(struct pd *d)
{
	const struct packer *pk = d->pk;
	uint32_t i, k, nt = 0, s, u;
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
	d->low = calloc(d->nsec + 1, sizeof(*d->low));
	if (!d->floor || !d->rem || !d->rem0 || !d->low) {
		free(t);
		return false;
	}
	for (k = 0; k < d->m; k++) {
		i = d->ids[k];
		d->slo[i] = ortmem__pk_section_of(t, s, pk->it[i].lo);
		d->shi[i] = ortmem__pk_section_of(t, s, pk->it[i].hi);
		for (u = d->slo[i]; u < d->shi[i]; u++)
			d->rem0[u] += pk->it[i].size;
	}
	free(t);
	return true;
}

static void pd_reset(struct pd *d)
{
	uint32_t k;

	memset(d->floor, 0, sizeof(*d->floor) * (d->nsec + 1));
	memcpy(d->rem, d->rem0, sizeof(*d->rem) * (d->nsec + 1));
	for (k = 0; k < d->m; k++)
		d->placed[d->ids[k]] = false;
	d->nundo = 0;
}

static void pd_set_floor(struct pd *d, uint32_t s, uint64_t v)
{
	if (v > d->floor[s]) {
		d->undo[d->nundo++] = (struct pd_undo){ s, d->floor[s] };
		d->floor[s] = v;
	}
}

static void pd_place(struct pd *d, uint32_t i, uint64_t off)
{
	struct packer *pk = d->pk;
	uint64_t size = pk->it[i].size;
	uint32_t s;

	pk->off[i] = off;
	d->placed[i] = true;
	for (s = d->slo[i]; s < d->shi[i]; s++) {
		d->rem[s] -= size;
		pd_set_floor(d, s, off + size);
	}
}

/* Undo the floors back to @mark, and item @i's placement (PD_NONE: a
 * raise). */
static void pd_undo(struct pd *d, uint32_t i, uint32_t mark)
{
	struct packer *pk = d->pk;
	uint32_t s;

	while (d->nundo > mark) {
		const struct pd_undo *u = &d->undo[--d->nundo];

		d->floor[u->idx] = u->old;
	}
	if (i == PD_NONE)
		return;
	for (s = d->slo[i]; s < d->shi[i]; s++)
		d->rem[s] += pk->it[i].size;
	d->placed[i] = false;
}

/*
 * Bases (highest floor over each unplaced item's sections), the lowest
 * base of each section, and the pruning test: a section's unplaced items
 * all live together, above its lowest base, so that base plus their bytes
 * must fit under d->h.  Return true to prune; else set *@p to the lowest
 * base of all.
 */
static bool pd_infer(struct pd *d, uint64_t *p)
{
	const struct packer *pk = d->pk;
	uint32_t s, k;

	*p = UINT64_MAX;
	d->minsz = UINT64_MAX;
	for (s = 0; s < d->nsec; s++)
		d->low[s] = UINT64_MAX;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		uint64_t b = 0;

		if (d->placed[i])
			continue;
		for (s = d->slo[i]; s < d->shi[i]; s++)
			if (d->floor[s] > b)
				b = d->floor[s];
		if (b + pk->it[i].size > d->h)
			return true;
		d->base[i] = b;
		if (pk->it[i].size < d->minsz)
			d->minsz = pk->it[i].size;
		if (b < *p)
			*p = b;
		for (s = d->slo[i]; s < d->shi[i]; s++)
			if (b < d->low[s])
				d->low[s] = b;
	}
	for (s = 0; s < d->nsec; s++)
		if (d->rem[s] && d->low[s] + d->rem[s] > d->h)
			return true;
	return false;
}

/* Sides of an item on top at @top that would not line up with the floor
 * beside it (0 to 2): the skyline stays flatter when they do. */
static uint64_t pd_misfit(const struct pd *d, uint32_t i, uint64_t top)
{
	return 2 - (d->slo[i] > 0 && d->floor[d->slo[i] - 1] == top) -
	       (d->shi[i] < d->nsec && d->floor[d->shi[i]] == top);
}

static bool pd_before(const struct pd_cand *a, const struct pd_cand *b)
{
	if (a->slack != b->slack)
		return a->slack < b->slack;
	if (a->key != b->key)
		return a->key > b->key;
	return a->id < b->id;
}

/*
 * Frame @f's branches for the lowest free position: height p (the lowest
 * base), in the first section s* where an item of base p lives.  Either
 * one of the items of base p over s* takes it (the PD_WIDTH first by key),
 * or none does: then every item over s* rises, to at least p plus the
 * smallest size (it can only rest on an item placed from now on) or to its
 * own base if lower, so s*'s floor is raised to that (the last branch).
 */
static uint32_t pd_expand(struct pd *d, struct pd_frame *f, struct pd_cand *c)
{
	const struct packer *pk = d->pk;
	uint32_t k, nc = 0, j, star = UINT32_MAX;
	uint64_t p, raise;

	if (pd_infer(d, &p))
		return 0;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];

		if (!d->placed[i] && d->base[i] == p && d->slo[i] < star)
			star = d->slo[i];
	}
	/* The first section of the leftmost such item has floor <= p; any
	 * section left of it has no item of base p. */
	raise = p + d->minsz;
	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		struct pd_cand x;

		if (d->placed[i] || d->slo[i] > star || d->shi[i] <= star)
			continue;
		if (d->base[i] != p) {
			if (d->base[i] < raise)
				raise = d->base[i];
			continue;
		}
		x = (struct pd_cand){ p, 0, d->key[i], i };
		x.slack = pd_misfit(d, i, p + pk->it[i].size);
		if (nc == PD_WIDTH) {
			d->cut = true;
			if (!pd_before(&x, &c[nc - 1]))
				continue;
			nc--;
		}
		for (j = nc; j > 0 && pd_before(&x, &c[j - 1]); j--)
			c[j] = c[j - 1];
		c[j] = x;
		nc++;
	}
	f->star = star;
	c[nc++] = (struct pd_cand){ raise, 0, 0, PD_NONE };
	return nc;
}

enum pd_result { PD_FOUND, PD_INFEASIBLE, PD_LIMIT };

/* One dive from scratch under @limit nodes (and the deadline). */
static enum pd_result pd_dive(struct pd *d, uint64_t limit, uint64_t deadline)
{
	struct packer *pk = d->pk;
	uint32_t depth = 0, placed = 0;
	uint64_t nodes = 0;

	pd_reset(d);
	d->fr[0] = (struct pd_frame){ .item = PD_NONE, .busy = false };
	d->fr[0].nc = pd_expand(d, &d->fr[0], d->pool);
	for (;;) {
		struct pd_frame *f = &d->fr[depth], *nf;
		const struct pd_cand *c;

		if (f->busy) {
			pd_undo(d, f->item, f->mark);
			placed -= f->item != PD_NONE;
			f->busy = false;
		}
		if (f->k == f->nc) {
			if (!depth)
				return d->cut ? PD_LIMIT : PD_INFEASIBLE;
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
		c = &d->pool[(size_t)depth * (PD_WIDTH + 1) + f->k++];
		f->mark = d->nundo;
		f->item = c->id;
		f->busy = true;
		if (c->id == PD_NONE) {
			pd_set_floor(d, f->star, c->off);
		} else {
			pd_place(d, c->id, c->off);
			d->stack[placed++] = c->id;
			if (placed == d->m)
				return PD_FOUND;
		}
		if (depth + 1 >= d->maxdepth) {
			d->cut = true;	/* too many raises on one path */
			continue;
		}
		nf = &d->fr[depth + 1];
		*nf = (struct pd_frame){ .item = PD_NONE, .busy = false };
		nf->nc = pd_expand(d, nf, &d->pool[(size_t)(depth + 1) * (PD_WIDTH + 1)]);
		depth++;
	}
}

/* The Luby sequence 1 1 2 1 1 2 4 1 1 2 ...: restart limits. */
static uint64_t pd_luby(uint32_t i)
{
	uint64_t size = 1, seq = 0;

	while (size < (uint64_t)i + 1) {
		seq++;
		size = 2 * size + 1;
	}
	while (size - 1 != i) {
		size = (size - 1) / 2;
		seq--;
		i %= (uint32_t)size;
	}
	return 1ull << seq;
}

/* Keys for restart @r: size then duration, duration then size, area,
 * then each perturbed at random. */
static void pd_keys(struct pd *d, uint32_t r)
{
	const struct packer *pk = d->pk;
	uint32_t k, kind = r % 3;

	for (k = 0; k < d->m; k++) {
		uint32_t i = d->ids[k];
		const struct pk_item *x = &pk->it[i];
		uint64_t dur = x->hi - x->lo, size = x->size;
		double v;

		if (r >= 3) {
			/* noise of up to +-50% on each factor */
			size = (uint64_t)((double)size * (0.5 + (double)(ortmem__pk_rand(d->pk) % 1024) / 1024));
			dur = (uint64_t)((double)dur * (0.5 + (double)(ortmem__pk_rand(d->pk) % 1024) / 1024));
		}
		v = kind == 0 ? (double)size * 4294967296.0 + (double)dur :
		    kind == 1 ? (double)dur * 4294967296.0 + (double)size :
		    (double)size * (double)dur;
		d->key[i] = v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
	}
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
		uint64_t limit = PD_DIVE_NODES * (uint64_t)d->m * pd_luby(d->luby_i++);

		if (max_nodes && d->nodes >= max_nodes)
			break;
		if (max_nodes && limit > max_nodes - d->nodes)
			limit = max_nodes - d->nodes;
		pd_keys(d, restart);
		d->cut = false;
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

static uint64_t pd_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static bool pd_alloc(struct pd *d)
{
	const struct packer *pk = d->pk;
	uint32_t n = pk->n ? pk->n : 1, k;
	size_t undo = 1;

	d->ids = malloc(sizeof(*d->ids) * n);
	d->slo = calloc(n, sizeof(*d->slo));
	d->shi = calloc(n, sizeof(*d->shi));
	d->base = calloc(n, sizeof(*d->base));
	d->placed = calloc(n, sizeof(*d->placed));
	d->key = calloc(n, sizeof(*d->key));
	d->stack = calloc(n, sizeof(*d->stack));
	if (!d->ids || !d->slo || !d->shi || !d->base ||
	    !d->placed || !d->key || !d->stack)
		return false;
	d->minsz = UINT64_MAX;
	for (k = 0; k < pk->n; k++) {
		if (!ortmem__pk_live(&pk->it[k]))
			continue;
		d->ids[d->m++] = k;
		if (pk->it[k].size < d->minsz)
			d->minsz = pk->it[k].size;
	}
	if (!pd_sections(d))
		return false;
	/* A path places every item and raises floors; past this depth it is
	 * cut.  Each placement logs at most its sections, a raise one. */
	d->maxdepth = 2 * (d->m + d->nsec) + 2;
	undo += d->maxdepth;
	for (k = 0; k < d->m; k++)
		undo += d->shi[d->ids[k]] - d->slo[d->ids[k]];
	d->undo = malloc(sizeof(*d->undo) * undo);
	d->fr = calloc(d->maxdepth, sizeof(*d->fr));
	d->pool = calloc((size_t)d->maxdepth * (PD_WIDTH + 1), sizeof(*d->pool));
	return d->undo && d->fr && d->pool;
}

static void pd_free(struct pd *d)
{
	free(d->ids);
	free(d->slo);
	free(d->shi);
	free(d->floor);
	free(d->rem);
	free(d->rem0);
	free(d->low);
	free(d->base);
	free(d->placed);
	free(d->key);
	free(d->undo);
	free(d->fr);
	free(d->pool);
	free(d->stack);
}

/*
 * Bisect the height between the lower bound and the best packing, each
 * probe with a share of the time left.  Return true when the best height
 * is proven optimal.
 */
bool ortmem__pk_decide(struct packer *pk)
{
	struct pd d = { .pk = pk };
	uint64_t lo = pk->lb, g = 0, h, now, share, max_nodes = 0, proven = 0;
	uint64_t work;
	uint32_t k;

	if (!pd_alloc(&d) || !d.m)
		goto out;
	for (k = 0, work = d.nsec; k < d.m; k++) {
		g = pd_gcd(g, pk->it[d.ids[k]].size);
		work += 2 * (d.shi[d.ids[k]] - d.slo[d.ids[k]]) + 1;
	}
	/* One dive costs about m nodes of @work steps (~1 ns each): when
	 * that is over a quarter of the budget, leave it to the local search. */
	work *= d.m;
	if (!pk->opts.max_iter &&
	    ortmem__now_ns() + 4 * work >= pk->opts.deadline_ns)
		goto out;
	/* Every canonical height is a sum of sizes: a multiple of g. */
	lo = (lo + g - 1) / g * g;
	proven = lo;
	/* Tests: every height from the bound up, until one fits; the
	 * portfolio's packing is dropped, so that only this search counts. */
	if (pk->opts.compact_only) {
		pk->best_h = UINT64_MAX;
		while (!ortmem__pk_compact(pk, proven, pk->opts.deadline_ns, 0))
			proven += g;
		goto out;
	}
	/* The compact search at the bound first: inference prunes most
	 * there, and it settles many instances outright. */
	now = ortmem__now_ns();
	if (now < pk->opts.deadline_ns) {
		int c;

		share = (pk->opts.deadline_ns - now) / 100 * PD_COMPACT_SHARE;
		if (pk->opts.max_iter)
			max_nodes = (pk->opts.max_iter - pk->iters) / 100 * PD_COMPACT_SHARE + 1;
		c = ortmem__pk_compact(pk, lo, now + share, max_nodes);
		if (!c)
			proven = lo = lo + g;
	}
	while (proven < pk->best_h) {
		uint64_t span, probes = 1;
		enum pd_result r;

		now = ortmem__now_ns();
		if (now >= pk->opts.deadline_ns ||
		    (pk->opts.max_iter && pk->iters >= pk->opts.max_iter))
			break;
		/* Bisection over: spend what is left just below the best. */
		if (lo >= pk->best_h)
			lo = pk->best_h - g;
		span = (pk->best_h - lo) / g;
		while ((1ull << probes) <= span && probes < 64)
			probes++;
		share = (pk->opts.deadline_ns - now) / probes;
		if (pk->opts.max_iter)
			max_nodes = (pk->opts.max_iter - pk->iters) / probes + 1;
		h = lo + (span - 1) / 2 * g;
		r = pd_probe(&d, h, now + share, max_nodes);
		/* Not proven on PD_LIMIT: the search just gives up below. */
		if (r != PD_FOUND)
			lo = h + g;
		if (r == PD_INFEASIBLE && h + g > proven)
			proven = h + g;
	}
out:
	pd_free(&d);
	return proven >= pk->best_h;
}
