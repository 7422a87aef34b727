// SPDX-License-Identifier: MIT
/*
 * The first plan, cheap on any graph: a sweep in order of start time,
 * O(n log n) whatever the number of conflicting pairs.
 *
 * Placed in order of start, the items an item conflicts with among those
 * placed before it are exactly the ones live at its start.  So a sweep
 * over the starts and ends keeps the free address ranges below the top of
 * the live items, and an end frees its range, merged with the free ranges
 * beside it (or lowers the top).  The ranges are blocks of a list in
 * address order, beside the live items' blocks, and a treap indexes them
 * by (length, address), so each event costs O(log n), never a look at
 * every live item.  An item is seated in one of two ways:
 *
 *  - best fit: the smallest free range that holds it (the lowest of equal
 *    ones), else on top.  This is the same packing as best fit in start
 *    order over the conflict lists (ortmem__pk_place_from() with that
 *    order), which is why the order is kept for the searches that start
 *    from it;
 *  - by ends: among the few tightest ranges that hold it, an exact fit
 *    first, then the side of a range whose neighbour (the item below or
 *    above) ends nearest its own end.  The two then leave together and
 *    their ranges merge into one, where best fit leaves a long-lived item
 *    beside a short one and the range they leave split.  It is the rule
 *    the placement's allocator seats by (ol_fit_end() in plan_online.c),
 *    here with the items' own ends.
 *
 * The first plan is the sweep by ends; then, while the budget holds one
 * more sweep, best fit and the sweep by ends over other numbers of
 * ranges; the lowest is kept.  Measured in
 * Documentation/lib/planner.rst ("The first plan of a dense graph").
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

/* A treap over (k1, k2) keys, nodes in one array, 0 = none. */
struct ft_node {
	uint64_t k1, k2;
	uint64_t val;		/* the free range's block */
	uint32_t prio, l, r;
};

struct ft_pool {
	struct ft_node *nd;	/* nd[0] unused */
	uint32_t *free_ids, nfree, used;
	uint64_t rng;
};

static bool ft_less(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2)
{
	return a1 < b1 || (a1 == b1 && a2 < b2);
}

/* Split @t into keys < (k1, k2) (@lo) and >= (@hi). */
static void ft_split(struct ft_node *nd, uint32_t t, uint64_t k1, uint64_t k2,
		     uint32_t *lo, uint32_t *hi)
{
	uint32_t *a = lo, *b = hi;

	/* Iterative: the treap's depth is O(log n) only in expectation. */
	while (t) {
		if (ft_less(nd[t].k1, nd[t].k2, k1, k2)) {
			*a = t;
			a = &nd[t].r;
			t = nd[t].r;
		} else {
			*b = t;
			b = &nd[t].l;
			t = nd[t].l;
		}
	}
	*a = *b = 0;
}

static uint32_t ft_merge(struct ft_node *nd, uint32_t a, uint32_t b)
{
	uint32_t root = 0, *link = &root;

	while (a && b) {
		if (nd[a].prio > nd[b].prio) {
			*link = a;
			link = &nd[a].r;
			a = nd[a].r;
		} else {
			*link = b;
			link = &nd[b].l;
			b = nd[b].l;
		}
	}
	*link = a ? a : b;
	return root;
}

static void ft_insert(struct ft_pool *p, uint32_t *root, uint64_t k1,
		      uint64_t k2, uint64_t val)
{
	uint32_t x = p->nfree ? p->free_ids[--p->nfree] : ++p->used, a, b;

	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	p->nd[x] = (struct ft_node){ k1, k2, val, (uint32_t)p->rng, 0, 0 };
	ft_split(p->nd, *root, k1, k2, &a, &b);
	*root = ft_merge(p->nd, ft_merge(p->nd, a, x), b);
}

/* Remove the node of key (k1, k2), which is there. */
static void ft_erase(struct ft_pool *p, uint32_t *root, uint64_t k1, uint64_t k2)
{
	uint32_t *link = root;

	while (*link && (p->nd[*link].k1 != k1 || p->nd[*link].k2 != k2))
		link = ft_less(k1, k2, p->nd[*link].k1, p->nd[*link].k2) ?
		       &p->nd[*link].l : &p->nd[*link].r;
	if (!*link)
		return;
	p->free_ids[p->nfree++] = *link;
	*link = ft_merge(p->nd, p->nd[*link].l, p->nd[*link].r);
}

/* The node of the smallest key >= (k1, k2), or 0. */
static uint32_t ft_ceil(const struct ft_node *nd, uint32_t t, uint64_t k1, uint64_t k2)
{
	uint32_t best = 0;

	while (t) {
		if (ft_less(nd[t].k1, nd[t].k2, k1, k2)) {
			t = nd[t].r;
		} else {
			best = t;
			t = nd[t].l;
		}
	}
	return best;
}

/*
 * The address space below the top of the live items, bottom up: a list of
 * blocks, each a live item (block id = item id) or a free range (ids from
 * n on), linked to the blocks beside it, so a range knows its neighbours
 * and a freed item merges with the free ranges beside it in O(1).  The
 * free ranges are also in a treap by (length, address), for the fits.  A
 * free range always has an item above it (the top lowers instead).
 */
#define FS_NONE UINT32_MAX

struct fs_block {
	uint64_t a, b;		/* [a, b) */
	uint32_t prev, next;	/* the blocks below and above, or FS_NONE */
};

struct ft_free {
	struct ft_pool pool;
	uint32_t by_len;
	uint64_t top;
	struct fs_block *bk;
	uint32_t n, last;	/* items; the highest block */
	uint32_t *spare, nspare;	/* free-range ids not in use */
	const struct pk_item *it;
};

static bool fs_is_range(const struct ft_free *f, uint32_t x)
{
	return x != FS_NONE && x >= f->n;
}

/* Link block @x between @prev and @next (FS_NONE: the floor, the top). */
static void fs_link(struct ft_free *f, uint32_t x, uint32_t prev, uint32_t next)
{
	f->bk[x].prev = prev;
	f->bk[x].next = next;
	if (prev != FS_NONE)
		f->bk[prev].next = x;
	if (next != FS_NONE)
		f->bk[next].prev = x;
	else
		f->last = x;
}

static void fs_range_add(struct ft_free *f, uint64_t a, uint64_t b,
			 uint32_t prev, uint32_t next)
{
	uint32_t x = f->spare[--f->nspare];

	f->bk[x].a = a;
	f->bk[x].b = b;
	fs_link(f, x, prev, next);
	ft_insert(&f->pool, &f->by_len, b - a, a, x);
}

/* Take free range @x out of the treap and give its id back. */
static void fs_range_drop(struct ft_free *f, uint32_t x)
{
	ft_erase(&f->pool, &f->by_len, f->bk[x].b - f->bk[x].a, f->bk[x].a);
	f->spare[f->nspare++] = x;
}

/* How far the end of block @x (an item; the floor never ends) lies from @end. */
static uint64_t fs_end_gap(const struct ft_free *f, uint32_t x, uint64_t end)
{
	uint64_t e;

	if (x == FS_NONE)
		return UINT64_MAX;
	e = f->it[x].hi;
	return e > end ? e - end : end - e;
}

/*
 * Among the @holes tightest free ranges that hold @size (from treap node
 * @t on): the exact fits first, then the side of a range whose
 * neighbour ends nearest @end, then the tightest, the lowest.  Returns
 * the range's block; *@up says whether the item goes at its top.
 */
static uint32_t fs_by_ends(struct ft_free *f, uint32_t t, uint64_t size,
			   uint64_t end, uint32_t holes, bool *up)
{
	const struct ft_node *nd = f->pool.nd;
	/* the tightest come first: exact fits, if any, before the others */
	bool exact = nd[t].k1 == size;
	uint64_t best_gap = UINT64_MAX, g;
	uint32_t best = (uint32_t)nd[t].val, k, x;

	*up = false;
	for (k = 0; t && k < holes && (nd[t].k1 == size) == exact; k++) {
		x = (uint32_t)nd[t].val;
		g = fs_end_gap(f, f->bk[x].prev, end);
		if (g < best_gap) {
			best = x;
			best_gap = g;
			*up = false;
		}
		g = fs_end_gap(f, f->bk[x].next, end);
		if (g < best_gap) {
			best = x;
			best_gap = g;
			*up = true;
		}
		t = ft_ceil(nd, f->by_len, nd[t].k1, nd[t].k2 + 1);
	}
	return best;
}

/*
 * Seat item @i: best fit (the smallest free range that holds it, the
 * lowest of equal ones, at its bottom; @holes 0), or by ends over the
 * @holes tightest ranges (fs_by_ends()); on top when no range holds it.
 * Returns its offset.
 */
static uint64_t fs_take(struct ft_free *f, uint32_t i, uint32_t holes)
{
	uint64_t size = f->it[i].size, a, b;
	uint32_t t = ft_ceil(f->pool.nd, f->by_len, size, 0), x, prev, next;
	bool up = false;

	if (!t) {
		a = f->top;
		f->top += size;
		f->bk[i].a = a;
		f->bk[i].b = a + size;
		fs_link(f, i, f->last, FS_NONE);
		return a;
	}
	x = holes ? fs_by_ends(f, t, size, f->it[i].hi, holes, &up) : (uint32_t)f->pool.nd[t].val;
	a = f->bk[x].a;
	b = f->bk[x].b;
	prev = f->bk[x].prev;
	next = f->bk[x].next;
	fs_range_drop(f, x);
	f->bk[i].a = up ? b - size : a;
	f->bk[i].b = f->bk[i].a + size;
	fs_link(f, i, prev, next);
	/* what the item leaves of the range, below or above it */
	if (b - a > size && up)
		fs_range_add(f, a, b - size, prev, i);
	else if (b - a > size)
		fs_range_add(f, a + size, b, i, next);
	return f->bk[i].a;
}

/* Item @i leaves: its range merges with the free ranges beside it, or the
 * top lowers. */
static void fs_give(struct ft_free *f, uint32_t i)
{
	uint64_t a = f->bk[i].a, b = f->bk[i].b;
	uint32_t prev = f->bk[i].prev, next = f->bk[i].next, x;

	if (fs_is_range(f, prev)) {
		x = prev;
		a = f->bk[x].a;
		prev = f->bk[x].prev;
		fs_range_drop(f, x);
	}
	if (next == FS_NONE) {
		f->top = a;
		f->last = prev;
		if (prev != FS_NONE)
			f->bk[prev].next = FS_NONE;
		return;
	}
	if (fs_is_range(f, next)) {
		x = next;
		b = f->bk[x].b;
		next = f->bk[x].next;
		fs_range_drop(f, x);
	}
	fs_range_add(f, a, b, prev, next);
}

/*
 * A sweep in order of start (ties by id) that seats each item best fit or
 * by ends, into pk->off; pk->order gets the live items by start, or by
 * offset when by ends (placed again by best fit in that order, no item
 * rises: see ortmem__pk_settle()), the others after.  Sets *@height;
 * 0 or -ENOMEM.
 */
static int fs_sweep(struct packer *pk, uint32_t holes, uint64_t *height)
{
	/* scratch only: the best packing and its order stay as they are */
	uint32_t n = pk->n, *st = pk->order, *en = pk->t32[0], *tmp = pk->rank;
	uint32_t k = 0, a = 0, b = 0, i;
	uint64_t *lo = pk->t64[0], *hi = pk->t64[1], last = 0;
	int ret = -ENOMEM;
	struct ft_free f = { .pool.rng = 0x2545f4914f6cdd1dull, .n = n,
			     .last = FS_NONE, .it = pk->it };

	/* A free range lies below each live item but the first: n + 1 at
	 * most, each in the treap (ids from n). */
	f.pool.nd = malloc(sizeof(*f.pool.nd) * ((size_t)n + 2));
	f.pool.free_ids = malloc(sizeof(*f.pool.free_ids) * ((size_t)n + 2));
	f.bk = malloc(sizeof(*f.bk) * (2 * (size_t)n + 1));
	f.spare = malloc(sizeof(*f.spare) * ((size_t)n + 1));
	if (!f.pool.nd || !f.pool.free_ids || !f.bk || !f.spare)
		goto out;
	for (i = 0; i <= n; i++)
		f.spare[f.nspare++] = 2 * n - i;
	for (i = 0; i < n; i++) {
		lo[i] = pk->it[i].lo;
		hi[i] = pk->it[i].hi;
		pk->off[i] = 0;
		if (ortmem__pk_live(&pk->it[i]))
			st[k] = en[k] = i, k++;
	}
	ortmem__pk_sort_by(st, k, lo, tmp);
	ortmem__pk_sort_by(en, k, hi, tmp);
	while (a < k) {
		/* Ends first at equal times: lifetimes are half-open. */
		if (hi[en[b]] <= lo[st[a]]) {
			fs_give(&f, en[b++]);
			continue;
		}
		i = st[a++];
		pk->off[i] = fs_take(&f, i, holes);
		if (pk->off[i] + pk->it[i].size > last)
			last = pk->off[i] + pk->it[i].size;
	}
	if (holes)
		ortmem__pk_sort_by(st, k, pk->off, tmp);
	/* The live items first, the others after. */
	for (i = 0, a = k; i < n; i++)
		if (!ortmem__pk_live(&pk->it[i]))
			st[a++] = i;
	ret = 0;
out:
	free(f.pool.nd);
	free(f.pool.free_ids);
	free(f.bk);
	free(f.spare);
	*height = last;
	return ret;
}

int ortmem__pk_sweep(struct packer *pk, uint32_t holes)
{
	uint64_t h;
	int ret = fs_sweep(pk, holes, &h);

	if (ret)
		return ret;
	pk->placed = false;
	pk->iters++;
	/* The next budget check looks at the clock. */
	pk->work = PK_CLOCK_WORK;
	ortmem__pk_keep_if_best(pk, h);
	return 0;
}

/*
 * The other sweeps the first plan's time left goes to, best fit first,
 * then by ends over more or fewer ranges: the flat part of the measured
 * curve first (planner.rst, "The first plan of a dense graph").  Each is a
 * greedy that one different seat sends elsewhere, so the lowest of a few
 * is lower than any one of them.
 */
static const uint32_t fs_more[] = { PK_SWEEP_BEST_FIT, 3, 6, 2, 8, 5, 12 };

int ortmem__pk_first_plan(struct packer *pk)
{
	uint64_t t0 = ortmem__now_ns(), took;
	int ret = ortmem__pk_sweep(pk, PK_SWEEP_BY_ENDS);
	uint32_t q;

	took = ortmem__now_ns() - t0;
	for (q = 0; !ret && q < sizeof(fs_more) / sizeof(fs_more[0]); q++) {
		/* nothing more where it meets the bound or the target */
		if (pk->best_h <= pk->lb || pk->best_h <= pk->opts.target ||
		    (pk->opts.max_iter && pk->iters >= pk->opts.max_iter))
			break;
		/* one more sweep, where the time left holds it */
		if (ortmem__now_ns() + took >= pk->opts.deadline_ns)
			break;
		ret = ortmem__pk_sweep(pk, fs_more[q]);
	}
	return ret;
}
