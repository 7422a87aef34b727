// SPDX-License-Identifier: MIT
/*
 * Probes of a height H that decide the most crowded time first.
 *
 * The dives (pack_dive.c) fill the lowest free position in the leftmost
 * section, so the sections where the most bytes are live, which have the
 * least room to spare under H, are packed with whatever the earlier
 * choices left.  This probe turns that around, in two levels:
 *
 *  1. the *window*: the sections around the step where the most bytes are
 *     live (the lower bound's step), grown outward while a section's room
 *     under H is at most twice the peak's (H - live <= 2 (H - LB)), the
 *     neighbour with more bytes live first.  Its items, their lifetimes cut
 *     to the window (two items live in the window overlap there iff they
 *     overlap at all: lifetimes are intervals), are a small instance of its
 *     own, packed under H by dives;
 *  2. each window packing found is pushed down (settled) and kept where it
 *     is while dives pack the rest of the items under H around it
 *     (ortmem__pk_dives_seed()).  Listed by offset, each item of a settled
 *     packing rests on an item it conflicts with or at 0, which is where
 *     the skyline puts it.  When the extension gives up after its node
 *     budget, that window packing is taken as wrong and the next one is
 *     searched; the extension's budget grows by half each time, as the
 *     race's probes below the best do.
 *
 * Nothing here is chosen from an instance: the window is the set of
 * sections at most twice as tight as the peak, which is the whole instance
 * when its live bytes are flat.  A probe that fails proves nothing (the
 * window packing was a choice).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "pack_internal.h"

/* The first node budget of an extension, per item (as PS_BUDGET0). */
#define PW_BUDGET0 32

struct pk_window {
	struct packer *pk;
	struct packer sub;	/* the window's items, cut to it */
	struct pk_item *sit;
	uint32_t *map;		/* sub item -> item */
	uint32_t *ids;		/* scratch: the items of a packing */
	struct pk_dives *inner;	/* level 1: the window under h */
	struct pk_dives *ext;	/* level 2: the rest around it */
	uint64_t *seed;		/* per item: its window offset, or UINT64_MAX */
	uint64_t h;		/* the height the window was cut for */
	uint64_t budget;	/* nodes an extension gets */
	uint64_t spent;		/* nodes spent on the current extension */
	uint64_t nwin;	/* DEBUG */
	bool seeded;		/* an extension is under way */
	bool whole;		/* the window holds every item: no level 2 */
};

/* Live bytes per section of time ([t[s], t[s + 1])), by a difference array
 * over the sorted event times @t (@nt of them). */
static void pw_profile(const struct packer *pk, const uint64_t *t, uint32_t nt,
		       uint64_t *live)
{
	uint32_t i, s;
	uint64_t cur = 0;

	memset(live, 0, sizeof(*live) * nt);
	for (i = 0; i < pk->n; i++) {
		const struct pk_item *x = &pk->it[i];

		if (!ortmem__pk_live(x))
			continue;
		live[ortmem__pk_section_of(t, nt, x->lo)] += x->size;
		live[ortmem__pk_section_of(t, nt, x->hi)] -= x->size;
	}
	for (s = 0; s < nt; s++) {
		cur += live[s];
		live[s] = cur;
	}
}

/* The window for @h: sections [*a, *b) grown from the peak while their
 * room under h is at most twice the peak's. */
static void pw_span(const uint64_t *live, uint32_t nsec, uint64_t lb, uint64_t h,
		    uint32_t *a, uint32_t *b)
{
	uint64_t room = h > lb ? 2 * (h - lb) : 0;
	uint32_t s, peak = 0;

	for (s = 1; s < nsec; s++)
		if (live[s] > live[peak])
			peak = s;
	*a = peak;
	*b = peak + 1;
	for (;;) {
		bool left = *a > 0 && live[*a - 1] + room >= h;
		bool right = *b < nsec && live[*b] + room >= h;

		if (left && right) {
			if (live[*a - 1] >= live[*b])
				right = false;
			else
				left = false;
		}
		if (left)
			(*a)--;
		else if (right)
			(*b)++;
		else
			break;
	}
}

static void pw_drop_sub(struct pk_window *w)
{
	ortmem__pk_dives_free(w->inner);
	w->inner = NULL;
	if (w->sub.order)
		ortmem__pk_free(&w->sub);
	memset(&w->sub, 0, sizeof(w->sub));
}

/* Cut the window for height @h and set up its search: 0 or -ENOMEM. */
static int pw_cut(struct pk_window *w, uint64_t h)
{
	struct packer *pk = w->pk;
	uint32_t nt = 0, i, a, b, m = 0, live_items = 0;
	uint64_t *t = malloc(sizeof(*t) * (2 * (size_t)pk->n + 1));
	uint64_t *live = malloc(sizeof(*live) * (2 * (size_t)pk->n + 1));
	int ret = -ENOMEM;

	pw_drop_sub(w);
	if (!t || !live)
		goto out;
	for (i = 0; i < pk->n; i++) {
		if (!ortmem__pk_live(&pk->it[i]))
			continue;
		t[nt++] = pk->it[i].lo;
		t[nt++] = pk->it[i].hi;
		live_items++;
	}
	nt = ortmem__pk_section_times(t, nt);
	pw_profile(pk, t, nt, live);
	pw_span(live, nt ? nt - 1 : 0, pk->lb, h, &a, &b);
	for (i = 0; i < pk->n; i++) {
		const struct pk_item *x = &pk->it[i];

		w->seed[i] = UINT64_MAX;
		if (!ortmem__pk_live(x) || x->hi <= t[a] || x->lo >= t[b])
			continue;
		w->sit[m] = (struct pk_item){ x->lo > t[a] ? x->lo : t[a],
					      x->hi < t[b] ? x->hi : t[b], x->size };
		w->map[m++] = i;
	}
	w->whole = m == live_items;
	w->sub = (struct packer){ .n = m, .it = w->sit, .opts = pk->opts,
				  .rng = ortmem__pk_rand(pk) | 1 };
	w->sub.best_h = UINT64_MAX;
	if (ortmem__pk_alloc(&w->sub) || ortmem__pk_build_conflicts(&w->sub, false))
		goto out;
	w->sub.lb = ortmem__pk_lower_bound(w->sit, m);
	w->inner = ortmem__pk_dives_new(&w->sub);
	if (!w->inner)
		goto out;
	w->h = h;
	if (getenv("PW_DEBUG"))
		fprintf(stderr, "window h %llu sections [%u,%u) of %u, items %u of %u, sub lb %llu\n",
			(unsigned long long)h, a, b, nt - 1, m, live_items, (unsigned long long)w->sub.lb);
	ret = 0;
out:
	free(t);
	free(live);
	return ret;
}

/* Level 1: the next window packing under h, for at most @budget nodes. */
static int pw_inner(struct pk_window *w, uint64_t budget, uint64_t deadline)
{
	struct packer *pk = w->pk;
	uint64_t before = w->sub.iters;
	uint32_t j;
	int r;

	w->sub.best_h = UINT64_MAX;	/* any packing under h will do */
	w->sub.opts.deadline_ns = deadline;
	r = ortmem__pk_dives_run(w->inner, w->h, budget, deadline);
	pk->iters += w->sub.iters - before;
	w->spent += w->sub.iters - before;
	if (r != PK_PROBE_FOUND)
		return r;
	for (j = 0; j < w->sub.n; j++)
		w->seed[w->map[j]] = w->sub.best_off[j];
	if (w->whole) {
		/* The window is every item: that is a packing of them all. */
		for (j = 0; j < w->sub.n; j++) {
			w->ids[j] = w->map[j];
			pk->off[w->map[j]] = w->sub.best_off[j];
		}
		ortmem__pk_keep_placed(pk, w->ids, w->sub.n);
		return PK_PROBE_FOUND;
	}
	ortmem__pk_dives_seed(w->ext, w->seed);
	w->seeded = true;
	w->nwin++;
	return PK_PROBE_PAUSED;
}

int ortmem__pk_window_run(struct pk_window *w, uint64_t h, uint64_t budget,
			  uint64_t deadline)
{
	struct packer *pk = w->pk;
	uint64_t start = pk->iters;
	int r;

	if (h != w->h) {
		w->seeded = false;
		w->spent = 0;
		if (pw_cut(w, h))
			return -ENOMEM;
	}
	while (pk->iters - start < budget) {
		uint64_t left = budget - (pk->iters - start);

		if (!w->seeded) {
			r = pw_inner(w, left, deadline);
			/* the window alone does not fit (a proof), or the
			 * window is every item and fits */
			if (r == PK_PROBE_INFEASIBLE || r == PK_PROBE_FOUND || r < 0)
				return r;
		} else {
			uint64_t before = pk->iters;
			uint64_t turn = w->budget - w->spent < left ?
					w->budget - w->spent : left;

			r = ortmem__pk_dives_run(w->ext, h, turn, deadline);
			w->spent += pk->iters - before;
			if (r == PK_PROBE_FOUND)
				return r;
			if (r < 0)
				return r;
			if (w->spent >= w->budget) {
				/* That window packing did not extend: the next. */
				w->seeded = false;
				w->spent = 0;
				w->budget += w->budget / 2;
			}
		}
		if (ortmem__pk_budget_spent(pk, 0, 1, deadline))
			break;
	}
	return PK_PROBE_PAUSED;
}

struct pk_window *ortmem__pk_window_new(struct packer *pk)
{
	struct pk_window *w = calloc(1, sizeof(*w));
	uint32_t n = pk->n ? pk->n : 1, i, m = 0;

	if (!w)
		return NULL;
	w->pk = pk;
	w->h = UINT64_MAX;
	for (i = 0; i < pk->n; i++)
		m += ortmem__pk_live(&pk->it[i]);
	w->budget = PW_BUDGET0 * (uint64_t)(m ? m : 1);
	w->sit = malloc(sizeof(*w->sit) * n);
	w->map = malloc(sizeof(*w->map) * n);
	w->seed = malloc(sizeof(*w->seed) * n);
	w->ids = malloc(sizeof(*w->ids) * n);
	w->ext = ortmem__pk_dives_new(pk);
	if (!w->sit || !w->map || !w->seed || !w->ids || !w->ext) {
		ortmem__pk_window_free(w);
		return NULL;
	}
	return w;
}

void ortmem__pk_window_free(struct pk_window *w)
{
	if (!w)
		return;
	if (getenv("PW_DEBUG"))
		fprintf(stderr, "window packings %llu budget %llu\n", (unsigned long long)w->nwin, (unsigned long long)w->budget);
	pw_drop_sub(w);
	ortmem__pk_dives_free(w->ext);
	free(w->sit);
	free(w->map);
	free(w->seed);
	free(w->ids);
	free(w);
}
