// SPDX-License-Identifier: MIT
/*
 * The packer's driver, its top: the lower bound, a portfolio of greedy
 * orderings placed by best fit (pack_core.c), then the searches that
 * improve on it: exact branch and bound for small instances (pack_bnb.c),
 * the race of probes of the height (pack_race.c) and local search
 * (pack_search.c).  ortmem__pack() is what the planner calls (pack.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

/* What one sweep over the starts and ends tells of an instance. */
struct pk_sizes {
	uint64_t lb;		/* largest total size live at one time */
	uint64_t pairs;		/* conflicting pairs */
	uint64_t cells;		/* item x section of time memberships */
	uint64_t nsec;		/* sections of time */
};

/*
 * The lower bound, and how big the conflict lists and the skyline would
 * be, by one sweep (O(n) after the radix sorts).  Starts and ends sorted
 * apart, then merged: at equal times the ends come first (half-open).
 */
static struct pk_sizes pk_sweep_sizes(const struct pk_item *it, uint32_t n,
				      uint32_t *st, uint32_t *en, uint32_t *tmp,
				      uint64_t *lo, uint64_t *hi)
{
	struct pk_sizes z = { 0, 0, 0, 0 };
	uint32_t i, k = 0, a = 0, b = 0, nact = 0;
	uint64_t cur = 0, last = 0;

	for (i = 0; i < n; i++) {
		lo[i] = it[i].lo;
		hi[i] = it[i].hi;
		if (it[i].size && it[i].hi > it[i].lo)
			st[k] = en[k] = i, k++;
	}
	ortmem__pk_sort_by(st, k, lo, tmp);
	ortmem__pk_sort_by(en, k, hi, tmp);
	while (b < k) {
		bool end = a == k || hi[en[b]] <= lo[st[a]];
		uint64_t t = end ? hi[en[b]] : lo[st[a]];

		/* A new time closes the section [last, t). */
		if ((a || b) && t != last) {
			z.cells += nact;
			z.nsec++;
		}
		last = t;
		if (end) {
			cur -= it[en[b++]].size;
			nact--;
			continue;
		}
		z.pairs += nact++;
		cur += it[st[a++]].size;
		if (cur > z.lb)
			z.lb = cur;
	}
	return z;
}

uint64_t ortmem__pk_lower_bound(const struct pk_item *it, uint32_t n)
{
	uint32_t *st, *en, *tmp;
	uint64_t *lo, *hi, best = UINT64_MAX;

	st = malloc(sizeof(*st) * (n ? n : 1));
	en = malloc(sizeof(*en) * (n ? n : 1));
	tmp = malloc(sizeof(*tmp) * (n ? n : 1));
	lo = malloc(sizeof(*lo) * (n ? n : 1));
	hi = malloc(sizeof(*hi) * (n ? n : 1));
	if (st && en && tmp && lo && hi)
		best = pk_sweep_sizes(it, n, st, en, tmp, lo, hi).lb;
	free(st);
	free(en);
	free(tmp);
	free(lo);
	free(hi);
	return best;
}

/* ---- the portfolio ---- */

/* Sort keys, compared as (k1 desc, k2 desc, id asc). */
static void pk_keys(const struct packer *pk, enum pk_ordering o, uint32_t i,
		    const uint64_t *crowd, uint64_t *k1, uint64_t *k2)
{
	const struct pk_item *x = &pk->it[i];
	uint64_t dur = x->hi > x->lo ? x->hi - x->lo : 0;

	switch (o) {
	case PK_BY_SIZE:
		*k1 = x->size;
		*k2 = dur;
		break;
	case PK_BY_AREA: {
		unsigned __int128 a = (unsigned __int128)x->size * dur;

		*k1 = a >> 64 ? UINT64_MAX : (uint64_t)a;
		*k2 = x->size;
		break;
	}
	case PK_BY_DURATION:
		*k1 = dur;
		*k2 = x->size;
		break;
	case PK_BY_BREADTH:
		*k1 = crowd[i];
		*k2 = x->size;
		break;
	default:
		*k1 = UINT64_MAX - x->lo;
		*k2 = x->size;
		break;
	}
}

/* The largest total live during each item's lifetime, from its conflicts
 * (an upper estimate of the crowd: conflicts need not overlap each other). */
static void pk_crowd(const struct packer *pk, uint64_t *crowd)
{
	uint32_t i, k;

	for (i = 0; i < pk->n; i++) {
		crowd[i] = pk->it[i].size;
		for (k = pk->cidx[i]; k < pk->cidx[i + 1]; k++)
			crowd[i] += pk->it[pk->conf[k]].size;
	}
}

static void pk_order_by(struct packer *pk, enum pk_ordering o,
			const uint64_t *crowd, uint64_t *k1, uint64_t *k2,
			uint32_t *tmp)
{
	uint32_t i, n = pk->n;

	for (i = 0; i < n; i++) {
		pk->order[i] = i;
		pk_keys(pk, o, i, crowd, &k1[i], &k2[i]);
		k1[i] = UINT64_MAX - k1[i];	/* descending */
		k2[i] = UINT64_MAX - k2[i];
	}
	/* Stable sorts: secondary key first, then primary. */
	ortmem__pk_sort_by(pk->order, n, k2, tmp);
	ortmem__pk_sort_by(pk->order, n, k1, tmp);
}

static int pk_portfolio(struct packer *pk)
{
	uint32_t *tmp = pk->t32[0];
	uint64_t *k1 = pk->t64[0], *k2 = pk->t64[1], *crowd = pk->t64[2];
	int o;

	pk_crowd(pk, crowd);
	/* Without a first plan yet (best_h UINT64_MAX), the first ordering
	 * is it and runs whatever the time; then these run while time
	 * lasts, and a placement stops half way when the deadline passes. */
	for (o = 0; o < PK_PORTFOLIO; o++) {
		if (pk->best_h == UINT64_MAX) {
			pk->deadline_off = true;
		} else if (ortmem__pk_out_of_time(pk)) {
			break;
		}
		pk_order_by(pk, o, crowd, k1, k2, tmp);
		/* one that reaches the best height would not be kept */
		ortmem__pk_keep_if_best(pk, ortmem__pk_place_from_under(pk, 0, pk->best_h - 1));
		pk->deadline_off = false;
		pk->iters++;
	}
	return 0;
}

/* How many items pack exactly in the time budget (see pack_bnb.c). */
#define PK_BNB_MAX_N 64
/*
 * Most conflicting pairs the lists may hold (256 MiB of them); a graph
 * with more keeps its first plan.
 */
#define PK_MAX_PAIRS (1u << 25)
/* Up to how many items the race of probes runs (its nodes cost O(n)). */
#define PK_RACE_MAX_N 20000

/*
 * The first plan, which every call makes whatever its budget: it must be
 * cheap on any graph, O(n log n) plus the conflicts it inspects.  When
 * there are at most n log2 n conflicting pairs, inspecting all of them is
 * within that: the conflict lists, and the most crowded lifetimes first
 * by best fit (the ordering that does best on model graphs).  Denser
 * graphs get a sweep in start order (pack_first.c), which looks at no
 * pair.  1: the lists are built and the portfolio's first
 * ordering must run; 0: the sweep's plan is made; or an error.
 */
static int pk_first_plan(struct packer *pk)
{
	uint64_t log2n = 64 - (uint64_t)__builtin_clzll((uint64_t)pk->n | 1);

	if (pk->pairs <= (uint64_t)pk->n * log2n && pk->pairs <= PK_MAX_PAIRS) {
		int ret = ortmem__pk_build_conflicts(pk, false);

		return ret ? ret : 1;
	}
	return ortmem__pk_first_plan(pk);
}

/*
 * ortmem__pack() - Give each item an offset; items that overlap in time
 * get disjoint address ranges.  Sizes must already be aligned.
 */
int ortmem__pack(const struct pk_item *it, uint32_t n,
		 const struct pk_opts *opts, uint64_t *off,
		 struct pk_result *res)
{
	struct packer pk = { .n = n, .it = it, .opts = *opts };
	uint64_t t0 = ortmem__now_ns();
	struct pk_sizes z;
	int ret;

	pk.best_h = UINT64_MAX;
	pk.rng = opts->seed ? opts->seed : 0x9e3779b97f4a7c15ull;
	ret = ortmem__pk_alloc(&pk);
	if (ret)
		goto out;
	/* The sweep in the packer's arrays: a big instance pays for every
	 * fresh page, so the scratch is shared by the phases. */
	z = pk_sweep_sizes(it, n, pk.order, pk.rank, pk.best_order, pk.t64[0], pk.t64[1]);
	pk.lb = z.lb;
	pk.pairs = z.pairs;
	pk.cells = z.cells;
	pk.nsec = z.nsec;
	ret = pk_first_plan(&pk);
	if (ret == 1) {
		ret = 0;
		goto portfolio;
	}
	if (ret || pk.pairs > PK_MAX_PAIRS ||
	    (ortmem__pk_out_of_time(&pk) && !opts->compact_only))
		goto done;
	/* Everything else improves on the first plan while time lasts. */
	ret = ortmem__pk_build_conflicts(&pk, true);
	if (ret == -ETIME) {
		ret = 0;
		goto done;
	}
portfolio:
	if (!ret)
		ret = pk_portfolio(&pk);
	if (!ret && pk.best_h > pk.lb && n <= PK_BNB_MAX_N &&
	    !opts->compact_only)
		res->optimal = ortmem__pk_bnb(&pk), pk.placed = false;
	if (!ret && (pk.best_h > pk.lb || opts->compact_only) &&
	    !res->optimal && n <= PK_RACE_MAX_N && pk.best_h > opts->target)
		res->optimal = ortmem__pk_race(&pk) && !opts->target, pk.placed = false;
	if (!ret && pk.best_h > pk.lb && !res->optimal && pk.best_h > opts->target)
		ortmem__pk_local_search(&pk);
done:
	if (ret)
		goto out;
	if (n)
		memcpy(off, pk.best_off, sizeof(*off) * n);
	res->height = pk.best_h;
	res->lb = pk.lb;
	res->iters = pk.iters;
	res->first_ns = pk.first_at > t0 ? pk.first_at - t0 : 0;
	if (pk.best_h <= pk.lb)
		res->optimal = true;
out:
	ortmem__pk_free(&pk);
	return ret;
}
