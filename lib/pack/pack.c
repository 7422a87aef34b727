// SPDX-License-Identifier: MIT
/*
 * Offset packing: the lower bound, best-fit placement of buffers in a given
 * order against the buffers already placed that overlap them in time, and
 * a portfolio of orderings.  The search that improves on the portfolio is
 * in pack_search.c (local search) and pack_bnb.c (exact).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "plan/plan_internal.h"

/* Above this many conflicting pairs only the start-time sweep runs. */
#define PK_MAX_CONFLICTS (1u << 25)

uint64_t ortmem__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* ---- conflict lists ---- */

static bool pk_live(const struct pk_item *x)
{
	return x->size && x->hi > x->lo;
}

/* Conflict lists by a start-time sweep; -E2BIG when there are too many. */
static int pk_build_conflicts(struct packer *pk)
{
	/* Scratch: the packer's arrays, written over later anyway. */
	uint32_t n = pk->n, *ids = pk->order, *tmp = pk->rank;
	uint32_t *act = pk->best_order, *deg = pk->t32[1];
	uint32_t nact = 0, i, j, k;
	uint64_t *key = pk->t64[0], total = 0;
	int ret = -ENOMEM;

	memset(deg, 0, sizeof(*deg) * (n + 1));
	for (i = 0; i < n; i++) {
		ids[i] = i;
		key[i] = pk->it[i].lo;
	}
	ortmem__pk_sort_by(ids, n, key, tmp);
	/* Two passes: count, then fill. */
	for (int pass = 0; pass < 2; pass++) {
		nact = 0;
		for (k = 0; k < n; k++) {
			const struct pk_item *x = &pk->it[ids[k]];

			if (!pk_live(x))
				continue;
			for (j = 0; j < nact;) {
				if (pk->it[act[j]].hi <= x->lo) {
					act[j] = act[--nact];
					continue;
				}
				if (pass) {
					pk->conf[deg[act[j]]++] = ids[k];
					pk->conf[deg[ids[k]]++] = act[j];
				} else {
					deg[act[j]]++;
					deg[ids[k]]++;
					total += 2;
				}
				j++;
			}
			act[nact++] = ids[k];
		}
		if (!pass) {
			if (total > PK_MAX_CONFLICTS) {
				ret = -E2BIG;
				goto out;
			}
			pk->cidx = malloc(sizeof(*pk->cidx) * (n + 1));
			pk->conf = malloc(sizeof(*pk->conf) * (total ? total : 1));
			if (!pk->cidx || !pk->conf)
				goto out;
			pk->cidx[0] = 0;
			for (i = 0; i < n; i++)
				pk->cidx[i + 1] = pk->cidx[i] + deg[i];
			for (i = 0; i < n; i++)
				deg[i] = pk->cidx[i];
		}
	}
	pk->have_conf = true;
	ret = 0;
out:
	return ret;
}

/* ---- placement ---- */

static void pk_sort_gaps(uint64_t (*g)[2], uint32_t d)
{
	uint32_t i, j;

	/* Small lists: insertion sort beats qsort's call overhead. */
	for (i = 1; i < d; i++) {
		uint64_t a = g[i][0], b = g[i][1];

		for (j = i; j > 0 && g[j - 1][0] > a; j--) {
			g[j][0] = g[j - 1][0];
			g[j][1] = g[j - 1][1];
		}
		g[j][0] = a;
		g[j][1] = b;
	}
}

static int pk_gap_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Best fit among the (sorted) occupied ranges @g: the smallest hole that
 * holds @size, else on top of them all. */
static uint64_t pk_best_fit(uint64_t (*g)[2], uint32_t d, uint64_t size)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = UINT64_MAX;
	uint32_t k;

	if (d < 24)
		pk_sort_gaps(g, d);
	else
		qsort(g, d, sizeof(*g), pk_gap_cmp);
	for (k = 0; k < d; k++) {
		if (g[k][0] > cur) {
			uint64_t len = g[k][0] - cur;

			if (len >= size && len < best_len) {
				best_len = len;
				best = cur;
			}
		}
		if (g[k][1] > cur)
			cur = g[k][1];
	}
	return best != UINT64_MAX ? best : cur;
}

/*
 * Re-place the items at positions [from, n) of pk->order, each at its best
 * fit against the conflicting items placed before it.  Return the height.
 */
uint64_t ortmem__pk_place_from(struct packer *pk, uint32_t from)
{
	uint64_t h = from ? pk->hpre[from - 1] : 0;
	uint32_t p, k, d;

	/* Nothing of the suffix is placed yet: a rank left from an earlier
	 * order would make a later item an obstacle. */
	for (p = from; p < pk->n; p++)
		pk->rank[pk->order[p]] = UINT32_MAX;
	for (p = from; p < pk->n; p++) {
		uint32_t i = pk->order[p];
		const struct pk_item *x = &pk->it[i];

		pk->rank[i] = p;
		if (!pk_live(x)) {
			pk->off[i] = 0;
			pk->hpre[p] = h;
			continue;
		}
		d = 0;
		for (k = pk->cidx[i]; k < pk->cidx[i + 1]; k++) {
			uint32_t j = pk->conf[k];

			if (pk->rank[j] < p) {
				pk->gap[d][0] = pk->off[j];
				pk->gap[d][1] = pk->off[j] + pk->it[j].size;
				d++;
			}
		}
		pk->off[i] = pk_best_fit(pk->gap, d, x->size);
		if (pk->off[i] + x->size > h)
			h = pk->off[i] + x->size;
		pk->hpre[p] = h;
	}
	pk->placed = true;
	return h;
}

/*
 * Without conflict lists (too many pairs): sweep by start time, keeping the
 * live placed items, which are exactly an item's placed conflicts.
 */
static int pk_place_sweep(struct packer *pk)
{
	uint32_t n = pk->n, *ids, *tmp, *act, nact = 0, j, k, d;
	uint64_t *key, h = 0;
	int ret = -ENOMEM;

	ids = malloc(sizeof(*ids) * n);
	tmp = malloc(sizeof(*tmp) * n);
	act = malloc(sizeof(*act) * n);
	key = calloc(n ? n : 1, sizeof(*key));
	if (!ids || !tmp || !act || !key)
		goto out;
	for (k = 0; k < n; k++) {
		ids[k] = k;
		key[k] = pk->it[k].lo;
	}
	ortmem__pk_sort_by(ids, n, key, tmp);
	for (k = 0; k < n; k++) {
		const struct pk_item *x = &pk->it[ids[k]];

		pk->off[ids[k]] = 0;
		if (!pk_live(x))
			continue;
		d = 0;
		for (j = 0; j < nact;) {
			if (pk->it[act[j]].hi <= x->lo) {
				act[j] = act[--nact];
				continue;
			}
			pk->gap[d][0] = pk->off[act[j]];
			pk->gap[d][1] = pk->off[act[j]] + pk->it[act[j]].size;
			d++;
			j++;
		}
		pk->off[ids[k]] = pk_best_fit(pk->gap, d, x->size);
		if (pk->off[ids[k]] + x->size > h)
			h = pk->off[ids[k]] + x->size;
		act[nact++] = ids[k];
	}
	memcpy(pk->best_off, pk->off, sizeof(*pk->off) * n);
	pk->best_h = h;
	ret = 0;
out:
	free(ids);
	free(tmp);
	free(act);
	free(key);
	return ret;
}

/* ---- the portfolio ---- */

/* Most crowded lifetime first, then by size: the two greedy orders that
 * do best on model graphs (Pisarchyk and Lee, 2020); a big graph may have
 * time for no other. */
enum pk_ordering {
	PK_BY_BREADTH,		/* most crowded lifetime first, then largest */
	PK_BY_SIZE,		/* largest first, then longest */
	PK_BY_AREA,		/* size x duration */
	PK_BY_DURATION,		/* longest first, then largest */
	PK_BY_START,		/* earliest first: a sweep in time */
	PK_ORDERINGS
};

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

void ortmem__pk_keep_if_best(struct packer *pk, uint64_t h)
{
	if (h >= pk->best_h)
		return;
	pk->best_h = h;
	memcpy(pk->best_off, pk->off, sizeof(*pk->off) * pk->n);
	memcpy(pk->best_order, pk->order, sizeof(*pk->order) * pk->n);
}

void ortmem__pk_keep_placed(struct packer *pk, const uint32_t *placed,
			    uint32_t m)
{
	uint64_t top = 0;
	uint32_t k, p;

	for (k = 0; k < m; k++) {
		uint32_t i = placed[k];

		if (pk->off[i] + pk->it[i].size > top)
			top = pk->off[i] + pk->it[i].size;
	}
	memcpy(pk->order, placed, sizeof(*pk->order) * m);
	for (k = 0, p = m; k < pk->n; k++)
		if (!ortmem__pk_live(&pk->it[k])) {
			pk->off[k] = 0;
			pk->order[p++] = k;
		}
	ortmem__pk_keep_if_best(pk, top);
}

bool ortmem__pk_out_of_time(struct packer *pk)
{
	if (pk->best_h <= pk->lb)
		return true;
	if (pk->opts.max_iter && pk->iters >= pk->opts.max_iter)
		return true;
	/* The clock is cheap (vDSO) but not free: look every 16 plans, or at
	 * each when a plan takes longer than the clock (big instances). */
	if (((pk->iters & 15) == 0 || pk->n > 4096) &&
	    ortmem__now_ns() >= pk->opts.deadline_ns)
		return true;
	return false;
}

static int pk_portfolio(struct packer *pk)
{
	uint32_t *tmp = pk->t32[0];
	uint64_t *k1 = pk->t64[0], *k2 = pk->t64[1], *crowd = pk->t64[2];
	int o;

	pk_crowd(pk, crowd);
	for (o = 0; o < PK_ORDERINGS; o++) {
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

/* What pk_alloc() allocated: a clone's own arrays. */
static void pk_free_own(struct packer *pk)
{
	free(pk->order);
	free(pk->rank);
	free(pk->off);
	free(pk->hpre);
	free(pk->gap);
	free(pk->best_order);
	free(pk->best_off);
	for (int k = 0; k < 3; k++)
		free(pk->t64[k]);
	free(pk->t32[0]);
	free(pk->t32[1]);
}

static void pk_free(struct packer *pk)
{
	free(pk->cidx);
	free(pk->conf);
	pk_free_own(pk);
}

static int pk_alloc(struct packer *pk)
{
	uint32_t n = pk->n ? pk->n : 1;

	pk->order = malloc(sizeof(*pk->order) * n);
	pk->rank = malloc(sizeof(*pk->rank) * n);
	pk->off = calloc(n, sizeof(*pk->off));
	pk->hpre = malloc(sizeof(*pk->hpre) * n);
	pk->gap = malloc(sizeof(*pk->gap) * n);
	pk->best_order = malloc(sizeof(*pk->best_order) * n);
	pk->best_off = calloc(n, sizeof(*pk->best_off));
	for (int k = 0; k < 3; k++)
		pk->t64[k] = malloc(sizeof(*pk->t64[k]) * n);
	pk->t32[0] = malloc(sizeof(*pk->t32[0]) * (n + 1ull));
	pk->t32[1] = malloc(sizeof(*pk->t32[1]) * (n + 1ull));
	if (!pk->t64[0] || !pk->t64[1] || !pk->t64[2] || !pk->t32[0] || !pk->t32[1])
		return -ENOMEM;
	if (!pk->order || !pk->rank || !pk->off || !pk->hpre || !pk->gap ||
	    !pk->best_order || !pk->best_off)
		return -ENOMEM;
	return 0;
}

int ortmem__pk_clone(struct packer *dst, const struct packer *src, uint64_t seed)
{
	*dst = (struct packer){ .n = src->n, .it = src->it, .lb = src->lb,
		.cidx = src->cidx, .conf = src->conf, .have_conf = src->have_conf,
		.best_h = src->best_h, .rng = seed ? seed : 1, .opts = src->opts };
	if (pk_alloc(dst)) {
		pk_free_own(dst);
		return -ENOMEM;
	}
	if (src->n) {
		memcpy(dst->best_off, src->best_off, sizeof(*dst->best_off) * src->n);
		memcpy(dst->best_order, src->best_order, sizeof(*dst->best_order) * src->n);
	}
	return 0;
}

void ortmem__pk_clone_take(struct packer *pk, const struct packer *clone)
{
	pk->iters += clone->iters;
	if (clone->best_h >= pk->best_h)
		return;
	pk->best_h = clone->best_h;
	memcpy(pk->best_off, clone->best_off, sizeof(*pk->best_off) * pk->n);
	memcpy(pk->best_order, clone->best_order, sizeof(*pk->best_order) * pk->n);
}

void ortmem__pk_clone_free(struct packer *clone)
{
	pk_free_own(clone);
}

/* How many items pack exactly in the time budget (see pack_bnb.c). */
#define PK_BNB_MAX_N 64
/* Up to how many items the decision search runs (its nodes cost O(n)). */
#define PK_DECIDE_MAX_N 20000

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
	ret = pk_alloc(&pk);
	if (ret)
		goto out;
	/* The bound in the packer's arrays: a big instance pays for every
	 * fresh page, so the scratch is shared by the phases. */
	pk.lb = pk_lb_in(it, n, pk.order, pk.rank, pk.best_order, pk.t64[0], pk.t64[1]);
	ret = pk_build_conflicts(&pk);
	if (ret == -E2BIG) {
		ret = pk_place_sweep(&pk);
		pk.iters = 1;
	} else if (!ret) {
		ret = pk_portfolio(&pk);
		if (!ret && pk.best_h > pk.lb && n <= PK_BNB_MAX_N &&
		    !opts->compact_only)
			res->optimal = ortmem__pk_bnb(&pk), pk.placed = false;
		if (!ret && (pk.best_h > pk.lb || opts->compact_only) &&
		    !res->optimal && n <= PK_DECIDE_MAX_N)
			res->optimal = ortmem__pk_decide(&pk), pk.placed = false;
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
	pk_free(&pk);
	return ret;
}
