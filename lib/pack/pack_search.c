// SPDX-License-Identifier: MIT
/*
 * Iterated local search over the placement order.  A move changes the
 * order (an item that reaches the top moves earlier, or two items swap),
 * the suffix of the order from the first changed position is placed again
 * by best fit, and the move is kept when the height is not worse and fewer
 * or as many items reach the top.  Sideways moves let the search walk
 * plateaus; after a long walk without progress it restarts from the best
 * order, shaken.  The pseudo-random generator is seeded, so a run with an
 * iteration limit is reproducible.
 */
#include <stdlib.h>

#include "pack_internal.h"

/* Moves without a new best before a restart from the best order. */
#define LS_STALL 4000

static uint32_t ls_below(struct packer *pk, uint32_t bound)
{
	return bound ? (uint32_t)(ortmem__pk_rand(pk) % bound) : 0;
}

/* Items whose top reaches @h: their positions in the order go to @pos. */
static uint32_t ls_critical(struct packer *pk, uint64_t h, uint32_t *pos)
{
	uint32_t i, c = 0;

	for (i = 0; i < pk->n; i++)
		if (pk->it[i].size && pk->off[i] + pk->it[i].size == h)
			pos[c++] = pk->rank[i];
	return c;
}

/* Move the item at position @from to position @to (< @from). */
static void ls_move(uint32_t *order, uint32_t from, uint32_t to)
{
	uint32_t x = order[from];

	memmove(&order[to + 1], &order[to], sizeof(*order) * (from - to));
	order[to] = x;
}

static void ls_swap(uint32_t *order, uint32_t a, uint32_t b)
{
	uint32_t x = order[a];

	order[a] = order[b];
	order[b] = x;
}

/* Propose a move on pk->order; return the first position it changed. */
static uint32_t ls_propose(struct packer *pk, uint32_t *crit, uint32_t ncrit)
{
	uint32_t n = pk->n, r = ls_below(pk, 8), a, b;

	if (r < 5 && ncrit) {
		a = crit[ls_below(pk, ncrit)];
		if (a == 0)
			return n;
		b = r < 2 ? 0 : ls_below(pk, a);
		ls_move(pk->order, a, b);
		return b;
	}
	a = ls_below(pk, n);
	b = ls_below(pk, n);
	if (a == b)
		return n;
	if (r < 7) {
		ls_swap(pk->order, a, b);
	} else {
		if (a < b)
			ls_swap(pk->order, a, b);
		ls_move(pk->order, a > b ? a : b, a < b ? a : b);
	}
	return a < b ? a : b;
}

static void ls_restart(struct packer *pk, uint32_t shakes)
{
	uint32_t k;

	memcpy(pk->order, pk->best_order, sizeof(*pk->order) * pk->n);
	for (k = 0; k < shakes; k++)
		ls_swap(pk->order, ls_below(pk, pk->n), ls_below(pk, pk->n));
}

struct ls_state {
	uint32_t *saved_order;
	uint64_t *saved_off;
	uint64_t *saved_hpre;
	uint32_t *crit;
};

static void ls_save(struct packer *pk, struct ls_state *s)
{
	memcpy(s->saved_order, pk->order, sizeof(*pk->order) * pk->n);
	memcpy(s->saved_off, pk->off, sizeof(*pk->off) * pk->n);
	memcpy(s->saved_hpre, pk->hpre, sizeof(*pk->hpre) * pk->n);
}

static void ls_undo(struct packer *pk, struct ls_state *s, uint32_t from)
{
	uint32_t p;

	memcpy(&pk->order[from], &s->saved_order[from],
	       sizeof(*pk->order) * (pk->n - from));
	memcpy(&pk->hpre[from], &s->saved_hpre[from],
	       sizeof(*pk->hpre) * (pk->n - from));
	for (p = from; p < pk->n; p++) {
		uint32_t i = pk->order[p];

		pk->rank[i] = p;
		pk->off[i] = s->saved_off[i];
	}
}

static void ls_walk(struct packer *pk, struct ls_state *s)
{
	uint64_t h, nh, since_best = 0, shakes = 2;
	uint32_t ncrit, nc, from;

	/* The portfolio's last plan is often the best: no need to place it
	 * again (a big graph pays milliseconds for it). */
	if (ortmem__pk_out_of_time(pk))
		return;
	if (pk->placed && pk->hpre[pk->n - 1] == pk->best_h &&
	    !memcmp(pk->order, pk->best_order, sizeof(*pk->order) * pk->n)) {
		h = pk->best_h;
	} else {
		memcpy(pk->order, pk->best_order, sizeof(*pk->order) * pk->n);
		h = ortmem__pk_place_from(pk, 0);
	}
	ncrit = ls_critical(pk, h, s->crit);
	while (!ortmem__pk_out_of_time(pk)) {
		pk->iters++;
		ls_save(pk, s);
		from = ls_propose(pk, s->crit, ncrit);
		if (from >= pk->n)
			continue;
		/* a move that ends higher is undone: no need to finish it */
		nh = ortmem__pk_place_from_under(pk, from, h);
		nc = nh == h ? ls_critical(pk, nh, s->crit) : 0;
		if (nh < h || (nh == h && nc <= ncrit)) {
			if (nh < h)
				nc = ls_critical(pk, nh, s->crit);
			if (nh < pk->best_h)
				since_best = 0;
			ortmem__pk_keep_if_best(pk, nh);
			h = nh;
			ncrit = nc;
		} else {
			ls_undo(pk, s, from);
			ncrit = ls_critical(pk, h, s->crit);
		}
		if (++since_best >= LS_STALL) {
			since_best = 0;
			ls_restart(pk, (uint32_t)shakes);
			shakes = shakes < pk->n / 4 ? shakes + 1 : 2;
			h = ortmem__pk_place_from(pk, 0);
			ncrit = ls_critical(pk, h, s->crit);
		}
	}
}

void ortmem__pk_local_search(struct packer *pk)
{
	/* The packer's scratch: the portfolio is done with it. */
	struct ls_state s = { .saved_order = pk->t32[0], .saved_off = pk->t64[0],
			      .saved_hpre = pk->t64[1], .crit = pk->t32[1] };

	if (pk->n < 2)
		return;
	ls_walk(pk, &s);
}
