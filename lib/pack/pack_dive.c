// SPDX-License-Identifier: MIT
/*
 * Heuristic dives: can the items be packed under a height H?  Written from
 * the ideas MiniMalloc (Moffitt, ASPLOS 2023) describes, not from its code.
 *
 * Canonical solutions.  Push any packing down until each item rests at 0
 * or on the top of an item it conflicts with; each item then sits at its
 * base (pack_sky.c).  The search fills the lowest free position: the
 * lowest base p of all unplaced items, in the first section s* where an
 * item of base p lives, first in a sweep of the sections that starts at
 * the pivot and goes right, then left of it backwards (a pivot of 0: from
 * the left).  With ortmem__pk_dives_pivot() the pivot is the section
 * where the most bytes are live, which has the least room to spare: it
 * is packed first, not with what the choices made left of it leave.
 * Either an item of base p that lives in s* sits there (one branch per
 * item), or none does: then every item of s* must
 * rise, to at least p plus the smallest unplaced size (it can only rest on
 * an item placed from now on, since nothing placed has a top between p
 * and its base), and their bases are raised so (the last branch).  Every
 * pushed-down packing is reached, so an exhausted search proves that none
 * fits.
 *
 * Inference (pack_sky.c).  A section's unplaced items all live there
 * together, above its floor, so that floor plus their bytes must fit under
 * H; and every item's base plus its size must.
 *
 * Search.  Depth first, iterative (no recursion, whatever the size).  The
 * items of a branch are ordered so that the skyline stays flat (tops that
 * line up with the floors beside them first, and in half the dives fewer
 * slivers of the lowest level left beside them: pd_misfit()), then by a
 * key: size then duration, duration then size, or area, perturbed at
 * random after the first restarts; at most PD_WIDTH are kept.  Each dive
 * is bounded in nodes; dives restart with growing limits (the Luby
 * sequence) and new keys.  A probe ends with a packing, a proof that none exists (an
 * exhausted search that never cut a branch list), or its budget; it can
 * pause and resume (pack_race.c races it against other probes).
 *
 * Large neighbourhoods.  With ortmem__pk_dives_from_best(), every other
 * dive starts from the best packing found so far, its items under a random
 * line kept where they are, and packs only the rest (pd_replay()): the
 * search then looks near the best packing as well as afresh.
 */
#include <stdlib.h>

#include "pack_internal.h"

/* Candidates kept per node; the rest are cut (the search is then a
 * heuristic, no longer a proof). */
#define PD_WIDTH 6
/* First dive's node limit, times the Luby sequence. */
#define PD_DIVE_NODES 4
#define PD_NONE UINT32_MAX
/* A two-part key: the major part weighs 2^32 minor ones. */
#define PD_KEY_MAJOR 4294967296.0
/* Keys from here (near 2^64, as a double) are clamped to UINT64_MAX. */
#define PD_KEY_SATURATE 1.8e19

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

struct pk_dives {
	struct packer *pk;
	struct pk_sky sky;
	uint64_t *key;		/* per item: branch order after the misfit */
	struct pd_frame *fr;
	struct pd_cand *pool;
	uint32_t *stack;	/* the items placed, in order */
	uint32_t *byoff, *tmp;	/* the best packing's items by offset */
	uint32_t *bysize;	/* the live items, smallest first */
	uint64_t *offkey;	/* sort keys: the best packing's offsets */
	bool from_best;		/* odd dives start from the best packing */
	uint32_t pivot;		/* positions filled from this section out */
	bool cut;		/* a candidate list was truncated */
	bool slivers;		/* this dive's branch order (pd_order()) */
	uint32_t maxdepth;	/* frames */
	struct pk_diver diver;	/* restarts, pauses */
	/* where a paused dive resumes */
	uint32_t depth, nplaced;
	uint64_t dive_nodes, dive_limit;
};

/*
 * How badly item @i, placed at its base p with its top at @top, fits the
 * skyline beside it: the sides whose floor does not line up with @top (0
 * to 2: the skyline stays flatter when they do); with @slivers, twice
 * that plus the sides whose floor is still p, a sliver of the lowest level
 * left uncovered.  The items that fill such a sliver from p must live
 * within it, so where items live long a short one is hard to fill and
 * usually ends in a raise, space lost; a step to another level leaves no
 * such constraint.  Where items are short-lived, slivers fill and the
 * weight only steers the dive away from good seats: half the dives weigh
 * them (pd_order()).  Documentation/lib/planner-search.rst, "Slivers of
 * the lowest level".
 */
static uint64_t pd_misfit(const struct pk_sky *k, uint32_t i, uint64_t top, bool slivers)
{
	uint64_t p = k->base[i];
	bool left = k->slo[i] > 0, right = k->shi[i] < k->nsec;
	uint64_t off_top = 2 - (left && k->floor[k->slo[i] - 1] == top) -
			   (right && k->floor[k->shi[i]] == top);

	if (!slivers)
		return off_top;
	return 2 * off_top + (left && k->floor[k->slo[i] - 1] == p) +
	       (right && k->floor[k->shi[i]] == p);
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
 * The lowest base p of the unplaced items, the smallest size, and s*.  A
 * section's floor is exactly the lowest base of its unplaced members
 * (pack_sky.c), so p is the lowest floor of a section with members left,
 * and s* the first such section in the sweep from the pivot (that is, of
 * the items of base p, the section of its life nearest in the sweep).
 * The smallest size is the first unplaced item by size.
 */
static uint64_t pd_lowest(const struct pk_dives *d, uint64_t *minsz,
			  uint32_t *star)
{
	const struct pk_sky *k = &d->sky;
	uint64_t p = UINT64_MAX;
	uint32_t s, j, r;

	*minsz = UINT64_MAX;
	*star = UINT32_MAX;
	/* the sweep from the pivot: right of it, then left of it backwards;
	 * the first section of the lowest floor in that order */
	for (r = 0; r < k->nsec; r++) {
		s = r < k->nsec - d->pivot ? d->pivot + r : k->nsec - 1 - r;
		if (k->scnt[s] && k->floor[s] < p) {
			p = k->floor[s];
			*star = s;
		}
	}
	for (j = 0; j < k->m; j++)
		if (!k->placed[d->bysize[j]]) {
			*minsz = d->pk->it[d->bysize[j]].size;
			break;
		}
	return p;
}

/*
 * Frame @f's branches for the lowest free position: height p (the lowest
 * base), in the first section s* where an item of base p lives.  Either
 * one of the items of base p over s* takes it (the PD_WIDTH first by key),
 * or none does: then every item over s* rises, to at least p plus the
 * smallest size (it can only rest on an item placed from now on) or to its
 * own base if lower, so s*'s floor is raised to that (the last branch).
 * The candidates are s*'s unplaced members, looked at in any order: the
 * PD_WIDTH kept are the first by pd_before(), a total order.
 */
static uint32_t pd_expand(struct pk_dives *d, struct pd_frame *f, struct pd_cand *c)
{
	const struct pk_sky *k = &d->sky;
	const struct packer *pk = d->pk;
	uint32_t j, nc = 0, star, q;
	uint64_t p, raise, minsz;

	if (k->dead)
		return 0;
	p = pd_lowest(d, &minsz, &star);
	raise = p + minsz;
	/* star is UINT32_MAX when nothing is left: then only the raise */
	for (j = star != UINT32_MAX ? k->sidx[star] : 0;
	     star != UINT32_MAX && j < k->sidx[star] + k->scnt[star]; j++) {
		uint32_t i = k->smem[j];
		struct pd_cand x;

		if (k->base[i] != p) {
			if (k->base[i] < raise)
				raise = k->base[i];
			continue;
		}
		x = (struct pd_cand){ p, 0, d->key[i], i };
		x.slack = pd_misfit(k, i, p + pk->it[i].size, d->slivers);
		if (nc == PD_WIDTH) {
			d->cut = true;
			if (!pd_before(&x, &c[nc - 1]))
				continue;
			nc--;
		}
		for (q = nc; q > 0 && pd_before(&x, &c[q - 1]); q--)
			c[q] = c[q - 1];
		c[q] = x;
		nc++;
	}
	f->star = star;
	c[nc++] = (struct pd_cand){ raise, 0, 0, PD_NONE };
	return nc;
}

/* Apply the next branch of frame @f; false when it completes a packing. */
static bool pd_branch(struct pk_dives *d, struct pd_frame *f)
{
	const struct pd_cand *c = &d->pool[(size_t)d->depth * (PD_WIDTH + 1) + f->k++];

	f->mark = d->sky.nundo;
	f->item = c->id;
	f->busy = true;
	if (c->id == PD_NONE) {
		if (ortmem__sky_raise(&d->sky, f->star, c->off) < 0)
			d->sky.dead = true;	/* out of memory: cut here */
		return true;
	}
	if (ortmem__sky_place(&d->sky, c->id) < 0)
		d->sky.dead = true;
	d->stack[d->nplaced++] = c->id;
	return d->nplaced < d->sky.m;
}

/* Take back the branch of frame @f. */
static void pd_take_back(struct pk_dives *d, struct pd_frame *f)
{
	if (f->item == PD_NONE) {
		ortmem__sky_undo(&d->sky, f->mark);
	} else {
		ortmem__sky_unplace(&d->sky, f->item, f->mark);
		d->nplaced--;
	}
	f->busy = false;
}

/*
 * Go on with the current dive for at most @budget nodes (or until the
 * deadline): PK_DIVE_PAUSE leaves it where it is, to resume.  PK_DIVE_LIMIT: the
 * dive used up its own node limit, or ended having cut branches.
 */
static enum pk_dive pd_dive(void *search, uint64_t budget, uint64_t deadline)
{
	struct pk_dives *d = search;
	struct packer *pk = d->pk;
	uint64_t used = 0;

	for (;;) {
		struct pd_frame *f = &d->fr[d->depth], *nf;

		if (f->busy)
			pd_take_back(d, f);
		if (f->k == f->nc) {
			if (!d->depth)
				return d->cut ? PK_DIVE_LIMIT : PK_DIVE_INFEASIBLE;
			d->depth--;
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
		if (!pd_branch(d, f))
			return PK_DIVE_FOUND;
		if (d->depth + 1 >= d->maxdepth) {
			d->cut = true;	/* too many raises on one path */
			continue;
		}
		nf = &d->fr[d->depth + 1];
		*nf = (struct pd_frame){ .item = PD_NONE, .busy = false };
		nf->nc = pd_expand(d, nf, &d->pool[(size_t)(d->depth + 1) * (PD_WIDTH + 1)]);
		d->depth++;
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
static void pd_keys(struct pk_dives *d, uint32_t r)
{
	static const enum pk_ordering pd_kinds[3] = {
		PK_BY_SIZE, PK_BY_DURATION, PK_BY_AREA,
	};
	const struct packer *pk = d->pk;
	enum pk_ordering kind = pd_kinds[r % 3];
	uint32_t k;

	for (k = 0; k < d->sky.m; k++) {
		uint32_t i = d->sky.ids[k];
		const struct pk_item *x = &pk->it[i];
		uint64_t dur = x->hi - x->lo, size = x->size;
		double v;

		if (r >= 3) {
			/* noise of up to +-50% on each factor */
			size = (uint64_t)((double)size * (0.5 + ortmem__pk_rand_unit(d->pk)));
			dur = (uint64_t)((double)dur * (0.5 + ortmem__pk_rand_unit(d->pk)));
		}
		v = kind == PK_BY_SIZE ? (double)size * PD_KEY_MAJOR + (double)dur :
		    kind == PK_BY_DURATION ? (double)dur * PD_KEY_MAJOR + (double)size :
		    (double)size * (double)dur;
		d->key[i] = v >= PD_KEY_SATURATE ? UINT64_MAX : (uint64_t)v;
	}
}

/*
 * Start from the best packing found so far (large-neighbourhood search):
 * keep its items that lie wholly below a random line under @h where they
 * are, and let the dive pack the rest.  Listed by offset, each item of a
 * pushed-down packing rests at its base, so they are placed in that order.
 * An item whose placement leaves a section's bytes no room under @h is
 * left to the dive instead: there the best packing must change.  Such a
 * dive proves nothing when it fails: it is marked cut.
 */
static void pd_replay(struct pk_dives *d, uint64_t h)
{
	struct packer *pk = d->pk;
	struct pk_sky *k = &d->sky;
	uint64_t line = (uint64_t)((double)h * ortmem__pk_rand_unit(pk));
	uint32_t j;

	for (j = 0; j < k->m; j++) {
		d->byoff[j] = k->ids[j];
		d->offkey[k->ids[j]] = pk->best_off[k->ids[j]];
	}
	ortmem__pk_sort_by(d->byoff, k->m, d->offkey, d->tmp);
	d->cut = true;
	for (j = 0; j < k->m; j++) {
		uint32_t i = d->byoff[j], mark = k->nundo;

		/* As many placements as a dive's nodes: the clock is looked at
		 * as often (past the deadline, the dive ends at once). */
		if (ortmem__pk_budget_spent(pk, j + 1, PK_CLOCK_NODES,
					    pk->opts.deadline_ns)) {
			k->dead = true;
			return;
		}
		if (pk->best_off[i] + pk->it[i].size > line)
			continue;
		if (ortmem__sky_place(k, i) < 0) {
			k->dead = true;	/* out of memory: this dive ends */
			return;
		}
		if (k->dead) {
			ortmem__sky_unplace(k, i, mark);
			k->dead = false;
			continue;
		}
		d->stack[d->nplaced++] = i;
	}
}

/*
 * The branch order of dive @r: weighing slivers or not, two dives of each
 * in turn (so that fresh dives and dives from the best packing, which
 * alternate, both get both).  Which order serves depends on the instance:
 * where items live long (MiniMalloc's D: a third of the time) slivers do
 * not fill and weighing them takes the dives to packings the plain order
 * rarely finds; where many items are short-lived (its K) they fill, and
 * the weight steers the dives from good seats.  Half the dives each keep
 * what each does best.  Learning the order from the dives' depth was
 * tried and left out (planner-search.rst, "Slivers of the lowest level").
 */
static void pd_order(struct pk_dives *d, uint32_t r)
{
	d->slivers = (r / 2) & 1;
}

/* Dive number @r under @h: a new limit from the Luby sequence, new keys. */
static void pd_begin(void *search, uint32_t r, uint64_t h)
{
	struct pk_dives *d = search;

	d->dive_limit = PD_DIVE_NODES * (uint64_t)d->sky.m * pd_luby(r);
	pd_keys(d, r);
	pd_order(d, r);
	ortmem__sky_reset(&d->sky, h);
	d->cut = false;
	d->depth = 0;
	d->nplaced = 0;
	d->dive_nodes = 0;
	if (d->from_best && (r & 1) && d->pk->best_h != UINT64_MAX &&
	    h < d->pk->best_h)
		pd_replay(d, h);
	d->fr[0] = (struct pd_frame){ .item = PD_NONE, .busy = false };
	d->fr[0].nc = pd_expand(d, &d->fr[0], d->pool);
}

int ortmem__pk_dives_run(struct pk_dives *d, uint64_t h, uint64_t budget,
			 uint64_t deadline)
{
	return ortmem__pk_diver_run(&d->diver, h, budget, deadline);
}

static bool pd_alloc(struct pk_dives *d)
{
	uint32_t n = d->pk->n ? d->pk->n : 1, j;

	d->key = calloc(n, sizeof(*d->key));
	d->stack = calloc(n, sizeof(*d->stack));
	d->byoff = calloc(n, sizeof(*d->byoff));
	d->tmp = calloc(n, sizeof(*d->tmp));
	d->offkey = calloc(n, sizeof(*d->offkey));
	d->bysize = calloc(n, sizeof(*d->bysize));
	if (!d->key || !d->stack || !d->byoff || !d->tmp || !d->offkey ||
	    !d->bysize || ortmem__sky_init(&d->sky, d->pk))
		return false;
	for (j = 0; j < d->sky.m; j++) {
		d->bysize[j] = d->sky.ids[j];
		d->offkey[d->sky.ids[j]] = d->pk->it[d->sky.ids[j]].size;
	}
	ortmem__pk_sort_by(d->bysize, d->sky.m, d->offkey, d->tmp);
	/* A path places every item and raises floors; past this depth it is
	 * cut. */
	d->maxdepth = 2 * (d->sky.m + d->sky.nsec) + 2;
	d->fr = calloc(d->maxdepth, sizeof(*d->fr));
	d->pool = calloc((size_t)d->maxdepth * (PD_WIDTH + 1), sizeof(*d->pool));
	return d->fr && d->pool;
}

void ortmem__pk_dives_free(struct pk_dives *d)
{
	if (!d)
		return;
	ortmem__sky_fini(&d->sky);
	free(d->key);
	free(d->stack);
	free(d->byoff);
	free(d->tmp);
	free(d->offkey);
	free(d->bysize);
	free(d->fr);
	free(d->pool);
	free(d);
}

/* A search over @pk's live items; NULL when out of memory. */
struct pk_dives *ortmem__pk_dives_new(struct packer *pk)
{
	struct pk_dives *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->pk = pk;
	if (!pd_alloc(d)) {
		ortmem__pk_dives_free(d);
		return NULL;
	}
	d->diver = (struct pk_diver){ .sky = &d->sky, .stack = d->stack,
		.search = d, .begin = pd_begin, .dive = pd_dive, .h = UINT64_MAX };
	return d;
}

void ortmem__pk_dives_from_best(struct pk_dives *d, bool on)
{
	d->from_best = on;
}

void ortmem__pk_dives_pivot(struct pk_dives *d, bool on)
{
	const struct pk_sky *k = &d->sky;
	uint32_t s;

	d->pivot = 0;
	for (s = 1; on && s < k->nsec; s++)
		if (k->rem0[s] > k->rem0[d->pivot])
			d->pivot = s;
}

uint64_t ortmem__pk_dives_work(const struct pk_dives *d)
{
	const struct pk_sky *k = &d->sky;
	uint64_t work = k->nsec;
	uint32_t j;

	for (j = 0; j < k->m; j++)
		work += 2 * (k->shi[k->ids[j]] - k->slo[k->ids[j]]) + 1;
	return work * k->m;
}
