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

/*
 * Largest total size live at one time (UINT64_MAX when out of memory).
 * Starts and ends sorted apart, then merged: at equal times the ends come
 * first (half-open lifetimes).
 */
static uint64_t pk_lb_in(const struct pk_item *it, uint32_t n, uint32_t *st,
			 uint32_t *en, uint32_t *tmp, uint64_t *lo, uint64_t *hi)
{
	uint32_t i, k = 0, a = 0, b = 0;
	uint64_t cur = 0, best = 0;

	for (i = 0; i < n; i++) {
		lo[i] = it[i].lo;
		hi[i] = it[i].hi;
		if (it[i].size && it[i].hi > it[i].lo)
			st[k] = en[k] = i, k++;
	}
	ortmem__pk_sort_by(st, k, lo, tmp);
	ortmem__pk_sort_by(en, k, hi, tmp);
	while (a < k) {
		if (hi[en[b]] <= lo[st[a]]) {
			cur -= it[en[b++]].size;
			continue;
		}
		cur += it[st[a++]].size;
		if (cur > best)
			best = cur;
	}
	return best;
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
		best = pk_lb_in(it, n, st, en, tmp, lo, hi);
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
	for (o = 0; o < PK_PORTFOLIO; o++) {
		/* The first ordering always runs; the rest while time lasts. */
		if (o && (pk->best_h <= pk->lb ||
			  ortmem__now_ns() >= pk->opts.deadline_ns))
			break;
		pk_order_by(pk, o, crowd, k1, k2, tmp);
		ortmem__pk_keep_if_best(pk, ortmem__pk_place_from(pk, 0));
		pk->iters++;
	}
	return 0;
}

/* How many items pack exactly in the time budget (see pack_bnb.c). */
#define PK_BNB_MAX_N 64
/* Up to how many items the race of probes runs (its nodes cost O(n)). */
#define PK_RACE_MAX_N 20000

/*
 * ortmem__pack() - Give each item an offset; items that overlap in time
 * get disjoint address ranges.  Sizes must already be aligned.
 */
int ortmem__pack(const struct pk_item *it, uint32_t n,
		 const struct pk_opts *opts, uint64_t *off,
		 struct pk_result *res)
{
	struct packer pk = { .n = n, .it = it, .opts = *opts };
	int ret;

	pk.best_h = UINT64_MAX;
	pk.rng = opts->seed ? opts->seed : 0x9e3779b97f4a7c15ull;
	ret = ortmem__pk_alloc(&pk);
	if (ret)
		goto out;
	/* The bound in the packer's arrays: a big instance pays for every
	 * fresh page, so the scratch is shared by the phases. */
	pk.lb = pk_lb_in(it, n, pk.order, pk.rank, pk.best_order, pk.t64[0], pk.t64[1]);
	ret = ortmem__pk_build_conflicts(&pk);
	if (ret == -E2BIG) {
		ret = ortmem__pk_place_sweep(&pk);
		pk.iters = 1;
	} else if (!ret) {
		ret = pk_portfolio(&pk);
		if (!ret && pk.best_h > pk.lb && n <= PK_BNB_MAX_N &&
		    !opts->compact_only)
			res->optimal = ortmem__pk_bnb(&pk), pk.placed = false;
		if (!ret && (pk.best_h > pk.lb || opts->compact_only) &&
		    !res->optimal && n <= PK_RACE_MAX_N)
			res->optimal = ortmem__pk_race(&pk), pk.placed = false;
		if (!ret && pk.best_h > pk.lb && !res->optimal)
			ortmem__pk_local_search(&pk);
	}
	if (ret)
		goto out;
	if (n)
		memcpy(off, pk.best_off, sizeof(*off) * n);
	res->height = pk.best_h;
	res->lb = pk.lb;
	res->iters = pk.iters;
	if (pk.best_h <= pk.lb)
		res->optimal = true;
out:
	ortmem__pk_free(&pk);
	return ret;
}
