// SPDX-License-Identifier: MIT
/*
 * The skyline of a partial packing, kept incrementally for the searches
 * that place items at their bases (pack_compact.c, pack_dive.c).
 *
 * Time is cut into sections at every start and end.  An unplaced item's
 * base is the lowest offset it may take: the highest top of the placed
 * items it conflicts with, or higher where a search has said so (a raise).
 * A section's floor is the highest top placed in it, raised to the lowest
 * base of its unplaced members: nothing can go lower there any more.
 *
 * Placing an item raises the bases of its unplaced conflicts (along the
 * packer's conflict lists) and the floors of the sections those live in;
 * a raise lifts the bases of one section's members.  Only the sections
 * touched are looked at again, so a step costs O(conflicts + the members
 * of the sections touched), not O(items x sections).  Every change is
 * logged, and undone back to a mark, last first.
 *
 * Each section lists its members with the unplaced ones first: placing
 * swaps the item past them, and undoing (LIFO) only moves the count back.
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

/* The spans, the member lists and the bytes per section. */
static int sky_sections(struct pk_sky *k, uint64_t *t)
{
	const struct packer *pk = k->pk;
	uint32_t i, j, nt = 0, s, u, tot = 0;

	for (j = 0; j < k->m; j++) {
		t[nt++] = pk->it[k->ids[j]].lo;
		t[nt++] = pk->it[k->ids[j]].hi;
	}
	s = ortmem__pk_section_times(t, nt);
	k->nsec = s ? s - 1 : 0;
	k->floor = calloc(k->nsec + 1, sizeof(*k->floor));
	k->rem = calloc(k->nsec + 1, sizeof(*k->rem));
	k->rem0 = calloc(k->nsec + 1, sizeof(*k->rem0));
	k->stamp = calloc(k->nsec + 1, sizeof(*k->stamp));
	k->nlog = calloc(k->nsec + 1, sizeof(*k->nlog));
	k->cover = calloc(k->nsec + 1, sizeof(*k->cover));
	k->nat = calloc(k->nsec + 1, sizeof(*k->nat));
	k->ntop = calloc(k->nsec + 1, sizeof(*k->ntop));
	k->touched = calloc(k->nsec + 1, sizeof(*k->touched));
	k->sidx = calloc(k->nsec + 2, sizeof(*k->sidx));
	k->scnt = calloc(k->nsec + 1, sizeof(*k->scnt));
	if (!k->floor || !k->rem || !k->rem0 || !k->stamp || !k->nlog || !k->cover || !k->nat || !k->ntop || !k->touched ||
	    !k->sidx || !k->scnt)
		return -ENOMEM;
	for (j = 0; j < k->m; j++) {
		i = k->ids[j];
		k->slo[i] = ortmem__pk_section_of(t, s, pk->it[i].lo);
		k->shi[i] = ortmem__pk_section_of(t, s, pk->it[i].hi);
		tot += k->shi[i] - k->slo[i];
		for (u = k->slo[i]; u < k->shi[i]; u++) {
			k->rem0[u] += pk->it[i].size;
			k->sidx[u + 2]++;
		}
	}
	k->smem = malloc(sizeof(*k->smem) * (tot ? tot : 1));
	k->spos = malloc(sizeof(*k->spos) * (tot ? tot : 1));
	if (!k->smem || !k->spos)
		return -ENOMEM;
	for (u = 0; u < k->nsec; u++)
		k->sidx[u + 2] += k->sidx[u + 1];
	for (j = 0, tot = 0; j < k->m; j++) {
		i = k->ids[j];
		k->ioff[i] = tot;
		tot += k->shi[i] - k->slo[i];
		for (u = k->slo[i]; u < k->shi[i]; u++) {
			k->spos[k->ioff[i] + u - k->slo[i]] = k->sidx[u + 1];
			k->smem[k->sidx[u + 1]++] = i;
		}
	}
	return 0;
}

int ortmem__sky_init(struct pk_sky *k, struct packer *pk)
{
	uint32_t n = pk->n ? pk->n : 1, i;
	uint64_t *t;
	int ret;

	memset(k, 0, sizeof(*k));
	k->pk = pk;
	k->ids = malloc(sizeof(*k->ids) * n);
	k->slo = calloc(n, sizeof(*k->slo));
	k->shi = calloc(n, sizeof(*k->shi));
	k->ioff = calloc(n, sizeof(*k->ioff));
	k->base = calloc(n, sizeof(*k->base));
	k->off = calloc(n, sizeof(*k->off));
	k->placed = calloc(n, sizeof(*k->placed));
	k->lifted = calloc(n, sizeof(*k->lifted));
	k->lgroup = calloc(n, sizeof(*k->lgroup));
	t = malloc(sizeof(*t) * 2 * (size_t)n);
	if (!k->ids || !k->slo || !k->shi || !k->ioff || !k->base ||
	    !k->off || !k->placed || !k->lifted || !k->lgroup || !t) {
		free(t);
		return -ENOMEM;
	}
	for (i = 0; i < pk->n; i++)
		if (ortmem__pk_live(&pk->it[i]))
			k->ids[k->m++] = i;
	ret = sky_sections(k, t);
	free(t);
	if (ret)
		return ret;
	/* Grows when a path logs more (rarely). */
	k->cap_undo = 4 * ((size_t)k->m + k->nsec) + 16;
	k->undo = malloc(sizeof(*k->undo) * k->cap_undo);
	return k->undo ? 0 : -ENOMEM;
}

void ortmem__sky_fini(struct pk_sky *k)
{
	free(k->ids);
	free(k->slo);
	free(k->shi);
	free(k->ioff);
	free(k->base);
	free(k->off);
	free(k->placed);
	free(k->floor);
	free(k->rem);
	free(k->rem0);
	free(k->stamp);
	free(k->nlog);
	free(k->cover);
	free(k->lifted);
	free(k->lgroup);
	free(k->nat);
	free(k->ntop);
	free(k->touched);
	free(k->sidx);
	free(k->scnt);
	free(k->smem);
	free(k->spos);
	free(k->undo);
	memset(k, 0, sizeof(*k));
}

void ortmem__sky_reset(struct pk_sky *k, uint64_t h)
{
	uint32_t j;

	k->h = h;
	memset(k->floor, 0, sizeof(*k->floor) * (k->nsec + 1));
	memcpy(k->rem, k->rem0, sizeof(*k->rem) * (k->nsec + 1));
	for (j = 0; j < k->nsec; j++)
		k->nat[j] = k->scnt[j] = k->sidx[j + 1] - k->sidx[j];
	for (j = 0; j < k->m; j++) {
		k->placed[k->ids[j]] = false;
		k->base[k->ids[j]] = 0;
	}
	k->nundo = 0;
	/* Dead from the start: a section's bytes, or an item, over @h. */
	k->dead = false;
	for (j = 0; j < k->nsec; j++)
		k->dead |= k->rem0[j] > h;
	for (j = 0; j < k->m; j++)
		k->dead |= k->pk->it[k->ids[j]].size > h;
}

/* The log is full: grow it; false when it cannot (rare, kept apart). */
static __attribute__((noinline)) bool sky_log_grow(struct pk_sky *k)
{
	return !ortmem__grow((void **)&k->undo, &k->cap_undo,
			     (size_t)k->nundo + 1, sizeof(*k->undo), 1);
}

/* Log a value before it changes; false when the log cannot grow. */
static inline bool sky_log(struct pk_sky *k, uint32_t idx, uint32_t kind,
			   uint64_t old)
{
	/* The test stays here: this runs at every step of the searches. */
	if (__builtin_expect(k->nundo == k->cap_undo, 0) && !sky_log_grow(k))
		return false;
	k->undo[k->nundo++] = (struct pk_sky_undo){ idx, kind, old };
	return true;
}

/*
 * Log section @s's count of members at the floor before it changes; once a
 * step is enough (k->nlog): the undo goes back to a step's start, and many
 * lifted items leave the same section's floor in one step.
 */
static inline bool sky_log_nat(struct pk_sky *k, uint32_t s)
{
	if (k->nlog[s] == k->now)
		return true;
	k->nlog[s] = k->now;
	return sky_log(k, s, PK_SKY_NAT, k->nat[s]);
}

/*
 * A new step: the sections' stamps of older steps no longer count.  After
 * 2^32 steps (an hour or so of search) the numbers would come round again,
 * so the stamps are cleared then.
 */
static void sky_step(struct pk_sky *k)
{
	if (++k->now)
		return;
	memset(k->stamp, 0, sizeof(*k->stamp) * (k->nsec + 1));
	memset(k->nlog, 0, sizeof(*k->nlog) * (k->nsec + 1));
	k->now = 1;
}

/* Move item @i past the unplaced members of section @s. */
static void sky_unlist(struct pk_sky *k, uint32_t i, uint32_t s)
{
	uint32_t *pi = &k->spos[k->ioff[i] + s - k->slo[i]];
	uint32_t last = k->sidx[s] + --k->scnt[s], j = k->smem[last];

	k->spos[k->ioff[j] + s - k->slo[j]] = *pi;
	k->smem[*pi] = j;
	k->smem[last] = i;
	*pi = last;
}

/*
 * Item @j's base rose from @old in the sections [@lo, @hi), none of them
 * the placed item's own; false when out of memory.  A section's floor is
 * the lowest base of its members (the tops placed there are below them),
 * so it can only move where @j held that lowest base.  (Listing those
 * sections first without a branch, then dealing with them, was slower.)
 */
static bool sky_lift_out(struct pk_sky *k, uint64_t old, uint32_t lo,
			 uint32_t hi, uint32_t *nt)
{
	const uint64_t *floor = k->floor;
	uint32_t s, now = k->now;

	for (s = lo; s < hi; s++) {
		if (__builtin_expect(floor[s] != old, 1) || k->stamp[s] == now)
			continue;
		if (k->nat[s] > 1) {
			if (!sky_log_nat(k, s))
				return false;
			k->nat[s]--;	/* others still hold the floor */
		} else {
			k->stamp[s] = now;
			k->touched[(*nt)++] = s;
		}
	}
	return true;
}

/*
 * Raise item @j's base to @v; false when out of memory.  In the sections
 * of the item being placed, [own_lo, own_hi), @j is one more member at the
 * new floor: counted as +1 over its part of that span in k->ntop, a
 * difference array summed once the lifts are done (in ortmem__sky_place()).
 * Its other sections wait for sky_lift_groups(), with the items lifted
 * from the same base, when there is a group for it.
 */
static bool sky_lift(struct pk_sky *k, uint32_t j, uint64_t v, uint32_t *nt)
{
	uint64_t old = k->base[j];
	uint32_t lo = k->slo[j], hi = k->shi[j], g;
	uint32_t a = lo > k->own_lo ? lo : k->own_lo;
	uint32_t b = hi < k->own_hi ? hi : k->own_hi;

	if (!sky_log(k, j, PK_SKY_BASE, old))
		return false;
	k->base[j] = v;
	if (v + k->pk->it[j].size > k->h)
		k->dead = true;
	if (a >= b)
		return sky_lift_out(k, old, lo, hi, nt);
	k->ntop[a]++;
	k->ntop[b]--;
	for (g = 0; g < k->ngroup && k->gbase[g] != old; g++)
		;
	if (g == PK_SKY_GROUPS)
		return sky_lift_out(k, old, lo, a, nt) &&
		       sky_lift_out(k, old, b, hi, nt);
	if (g == k->ngroup)
		k->gbase[k->ngroup++] = old;
	k->lifted[k->nlifted] = j;
	k->lgroup[k->nlifted++] = g;
	return true;
}

/*
 * The sections outside the placed item's own of the items lifted from one
 * base @old, listed in k->lifted under group @g.  Where the floor is @old
 * and c of them lived there, c members left the floor: as if each had
 * been seen by sky_lift_out() in turn (the count goes down while others
 * hold the floor, else the section is settled).  The items lifted at one
 * step come from few bases (2 or 3 on D, of 18 lifted), so a section is
 * looked at once a group instead of once an item.
 */
static bool sky_lift_group(struct pk_sky *k, uint32_t g, uint32_t *nt)
{
	uint64_t old = k->gbase[g];
	uint32_t lo = UINT32_MAX, hi = 0, q, s, c = 0, now = k->now;
	uint32_t *cover = k->cover;

	for (q = 0; q < k->nlifted; q++) {
		uint32_t j = k->lifted[q];

		if (k->lgroup[q] != g)
			continue;
		cover[k->slo[j]]++;
		cover[k->shi[j]]--;
		lo = k->slo[j] < lo ? k->slo[j] : lo;
		hi = k->shi[j] > hi ? k->shi[j] : hi;
	}
	for (s = lo; s < hi; s++) {
		c += cover[s];
		cover[s] = 0;
		if (!c || k->floor[s] != old || k->stamp[s] == now ||
		    s - k->own_lo < k->own_hi - k->own_lo)
			continue;
		if (k->nat[s] > c) {
			if (!sky_log_nat(k, s))
				return false;
			k->nat[s] -= c;	/* others still hold the floor */
		} else {
			k->stamp[s] = now;
			k->touched[(*nt)++] = s;
		}
	}
	cover[hi] = 0;
	return true;
}

static bool sky_lift_groups(struct pk_sky *k, uint32_t *nt)
{
	uint32_t g;

	for (g = 0; g < k->ngroup; g++)
		if (!sky_lift_group(k, g, nt))
			return false;
	return true;
}

/* Raise the floors of the @nt touched sections to their lowest base, and
 * see whether their unplaced bytes still fit above. */
static bool sky_settle(struct pk_sky *k, uint32_t nt)
{
	while (nt) {
		uint32_t s = k->touched[--nt], j, at = 0;
		uint64_t low = UINT64_MAX;

		for (j = k->sidx[s]; j < k->sidx[s] + k->scnt[s]; j++) {
			uint64_t b = k->base[k->smem[j]];

			if (b < low) {
				low = b;
				at = 0;
			}
			at += b == low;
		}
		if (low != UINT64_MAX && low > k->floor[s]) {
			if (!sky_log(k, s, PK_SKY_FLOOR, k->floor[s]))
				return false;
			k->floor[s] = low;
		}
		if (!sky_log_nat(k, s))
			return false;
		k->nat[s] = at;
		if (k->rem[s] && k->floor[s] + k->rem[s] > k->h)
			k->dead = true;
	}
	return true;
}

int ortmem__sky_place(struct pk_sky *k, uint32_t i)
{
	const struct packer *pk = k->pk;
	uint64_t size = pk->it[i].size, top = k->base[i] + size;
	uint32_t s, c, nt = 0, at;
	int hat = 0;

	k->off[i] = k->base[i];
	k->placed[i] = true;
	k->dead = top > k->h;
	sky_step(k);
	for (s = k->slo[i]; s < k->shi[i]; s++) {
		if (!sky_log(k, s, PK_SKY_FLOOR, k->floor[s]))
			return -ENOMEM;
		k->floor[s] = top;
		k->rem[s] -= size;
		sky_unlist(k, i, s);
	}
	/* Its sections' members all conflict with @i and rise to @top at
	 * least: where one is lifted to exactly @top, that is the floor, else
	 * the section is settled below. */
	k->own_lo = k->slo[i];
	k->own_hi = k->shi[i];
	k->ngroup = k->nlifted = 0;
	memset(&k->ntop[k->own_lo], 0,
	       sizeof(*k->ntop) * (k->own_hi - k->own_lo + 1));
	for (c = pk->cidx[i]; c < pk->cidx[i + 1]; c++) {
		uint32_t j = pk->conf[c];

		if (k->placed[j])
			continue;
		hat = 1;
		if (k->base[j] < top && !sky_lift(k, j, top, &nt))
			return -ENOMEM;
	}
	if (!sky_lift_groups(k, &nt))
		return -ENOMEM;
	for (s = k->own_lo, at = 0; s < k->own_hi; s++) {
		at += k->ntop[s];
		if (!at) {
			k->stamp[s] = k->now;
			k->touched[nt++] = s;
			continue;
		}
		if (!sky_log_nat(k, s))
			return -ENOMEM;
		/* at least these; one more held it already: then a rescan */
		k->nat[s] = at;
		if (k->rem[s] && top + k->rem[s] > k->h)
			k->dead = true;
	}
	k->own_lo = k->own_hi = 0;
	if (!sky_settle(k, nt))
		return -ENOMEM;
	return hat;
}

int ortmem__sky_raise(struct pk_sky *k, uint32_t s, uint64_t v)
{
	uint32_t j, nt = 0;

	k->dead = false;
	sky_step(k);
	for (j = k->sidx[s]; j < k->sidx[s] + k->scnt[s]; j++) {
		uint32_t x = k->smem[j];

		if (k->base[x] < v && !sky_lift(k, x, v, &nt))
			return -ENOMEM;
	}
	return sky_settle(k, nt) ? 0 : -ENOMEM;
}

void ortmem__sky_undo(struct pk_sky *k, uint32_t mark)
{
	/* by kind, in the order of enum PK_SKY_*: a log entry's array */
	uint64_t *const vals[] = { k->base, k->floor, k->nat };

	while (k->nundo > mark) {
		const struct pk_sky_undo *u = &k->undo[--k->nundo];

		vals[u->kind][u->idx] = u->old;
	}
}

void ortmem__sky_unplace(struct pk_sky *k, uint32_t i, uint32_t mark)
{
	uint64_t size = k->pk->it[i].size;
	uint32_t s;

	ortmem__sky_undo(k, mark);
	/* LIFO: @i is still just past the unplaced members. */
	for (s = k->slo[i]; s < k->shi[i]; s++) {
		k->rem[s] += size;
		k->scnt[s]++;
	}
	k->placed[i] = false;
}
