// SPDX-License-Identifier: MIT
/*
 * The first plan, cheap on any graph: best fit in order of start time,
 * O(n log n) whatever the number of conflicting pairs.
 *
 * Placed in order of start, the items an item conflicts with among those
 * placed before it are exactly the ones live at its start.  So a sweep
 * over the starts and ends keeps the free address ranges below the top of
 * the live items: an item takes the smallest free range that holds it
 * (the lowest of equal ones), else goes on top; an end frees its range,
 * merged with its free neighbours (or lowers the top).  Two treaps index
 * the free ranges, by address (to merge) and by (length, address) (best
 * fit), so each event costs O(log n), never a look at every live item.
 * This is the same packing as best fit in start order over the conflict
 * lists (ortmem__pk_place_from() with that order), which is why the order
 * is kept as the best order for the searches that start from it.
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

/* A treap over (k1, k2) keys, nodes in one array, 0 = none. */
struct ft_node {
	uint64_t k1, k2;
	uint64_t val;		/* by address: the range's end */
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

/* The node of the largest key < (k1, k2), or 0. */
static uint32_t ft_below(const struct ft_node *nd, uint32_t t, uint64_t k1, uint64_t k2)
{
	uint32_t best = 0;

	while (t) {
		if (ft_less(nd[t].k1, nd[t].k2, k1, k2)) {
			best = t;
			t = nd[t].r;
		} else {
			t = nd[t].l;
		}
	}
	return best;
}

/* The free ranges below the top of the live items. */
struct ft_free {
	struct ft_pool pool;
	uint32_t by_addr, by_len;
	uint64_t top;
};

static void ff_add(struct ft_free *f, uint64_t a, uint64_t b)
{
	ft_insert(&f->pool, &f->by_addr, a, 0, b);
	ft_insert(&f->pool, &f->by_len, b - a, a, 0);
}

static void ff_del(struct ft_free *f, uint64_t a, uint64_t b)
{
	ft_erase(&f->pool, &f->by_addr, a, 0);
	ft_erase(&f->pool, &f->by_len, b - a, a);
}

/* Best fit: the smallest free range that holds @size, else the top. */
static uint64_t ff_take(struct ft_free *f, uint64_t size)
{
	uint32_t x = ft_ceil(f->pool.nd, f->by_len, size, 0);
	uint64_t a, b;

	if (!x) {
		a = f->top;
		f->top += size;
		return a;
	}
	a = f->pool.nd[x].k2;
	b = a + f->pool.nd[x].k1;
	ff_del(f, a, b);
	if (b > a + size)
		ff_add(f, a + size, b);
	return a;
}

/* Free [a, b): merged with the free ranges beside it, or the top lowers. */
static void ff_give(struct ft_free *f, uint64_t a, uint64_t b)
{
	const struct ft_node *nd = f->pool.nd;
	uint32_t x = ft_below(nd, f->by_addr, a, 0);
	uint32_t y = ft_ceil(nd, f->by_addr, b, 0);

	if (x && nd[x].val == a) {
		uint64_t xa = nd[x].k1;

		ff_del(f, xa, a);
		a = xa;
	}
	if (b == f->top) {
		f->top = a;
		return;
	}
	if (y && nd[y].k1 == b) {
		uint64_t yb = nd[y].val;

		ff_del(f, b, yb);
		b = yb;
	}
	ff_add(f, a, b);
}

/*
 * Best fit in order of start (ties by id), into pk->off and pk->order,
 * kept as the best packing.
 */
int ortmem__pk_first_plan(struct packer *pk)
{
	uint32_t n = pk->n, *st = pk->order, *en = pk->best_order, *tmp = pk->rank;
	uint32_t k = 0, a = 0, b = 0, i;
	uint64_t *lo = pk->t64[0], *hi = pk->t64[1], last;
	struct ft_free f = { .pool.rng = 0x2545f4914f6cdd1dull };

	/* Two free ranges at most per live item, each in both treaps. */
	f.pool.nd = malloc(sizeof(*f.pool.nd) * (4 * (size_t)n + 2));
	f.pool.free_ids = malloc(sizeof(*f.pool.free_ids) * (4 * (size_t)n + 2));
	if (!f.pool.nd || !f.pool.free_ids) {
		free(f.pool.nd);
		free(f.pool.free_ids);
		return -ENOMEM;
	}
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
			i = en[b++];
			ff_give(&f, pk->off[i], pk->off[i] + pk->it[i].size);
			continue;
		}
		i = st[a++];
		pk->off[i] = ff_take(&f, pk->it[i].size);
	}
	free(f.pool.nd);
	free(f.pool.free_ids);
	/* The order placed: the live items by start, the others after. */
	for (i = 0, a = k; i < n; i++)
		if (!ortmem__pk_live(&pk->it[i]))
			st[a++] = i;
	pk->placed = false;
	pk->iters++;
	/* The next budget check looks at the clock. */
	pk->work = PK_CLOCK_WORK;
	pk->best_h = UINT64_MAX;
	for (i = 0, last = 0; i < n; i++)
		if (pk->off[i] + pk->it[i].size > last && ortmem__pk_live(&pk->it[i]))
			last = pk->off[i] + pk->it[i].size;
	ortmem__pk_keep_if_best(pk, last);
	return 0;
}
