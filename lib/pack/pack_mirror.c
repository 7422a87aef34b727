// SPDX-License-Identifier: MIT
/*
 * Time turned around, for a helper racer (pack_race.c).
 *
 * Packing is symmetric in time: the items with t -> end - t conflict in
 * the same pairs, so the conflict lists and every packing hold for both.
 * The searches over the skyline are not: the dives fill the lowest free
 * position in the leftmost section first, so whatever lies early in time
 * is packed while the most freedom is left.  The step where the most
 * bytes are live (the lower bound's step) is where a packing has the
 * least room to spare, so a racer is better off starting from the end of
 * time nearer to it (fail first).  When that step lies in the later half,
 * helpers race on the mirror.
 */
#include <stdlib.h>

#include "pack_internal.h"

struct pm_event {
	uint64_t t;
	uint64_t size;
	bool start;
};

static int pm_cmp(const void *a, const void *b)
{
	const struct pm_event *x = a, *y = b;

	/* ends first at equal times: lifetimes are half-open */
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (int)x->start - (int)y->start;
}

/*
 * True when the first step where the most bytes are live lies in the later
 * half of [first start, last end).  Out of memory: false (no mirror).
 */
static bool pm_peak_late(const struct packer *pk)
{
	struct pm_event *ev = malloc(sizeof(*ev) * 2 * (pk->n ? pk->n : 1));
	uint64_t lo = UINT64_MAX, hi = 0, peak_t = 0, live = 0, most = 0;
	uint32_t i, ne = 0;

	if (!ev)
		return false;
	for (i = 0; i < pk->n; i++) {
		const struct pk_item *x = &pk->it[i];

		if (!ortmem__pk_live(x))
			continue;
		ev[ne++] = (struct pm_event){ x->lo, x->size, true };
		ev[ne++] = (struct pm_event){ x->hi, x->size, false };
		lo = x->lo < lo ? x->lo : lo;
		hi = x->hi > hi ? x->hi : hi;
	}
	qsort(ev, ne, sizeof(*ev), pm_cmp);
	/* Sizes are counted modulo 2^64, as the lower bound's sweep does: a
	 * total past that is no instance the race takes. */
	for (i = 0; i < ne; i++) {
		live = ev[i].start ? live + ev[i].size : live - ev[i].size;
		if (live > most) {
			most = live;
			peak_t = ev[i].t;
		}
	}
	free(ev);
	return ne && peak_t - lo > (hi - lo) / 2;
}

struct pk_item *ortmem__pk_mirror(const struct packer *pk)
{
	struct pk_item *m;
	uint64_t end = 0;
	uint32_t i;

	if (!pm_peak_late(pk))
		return NULL;
	m = malloc(sizeof(*m) * (pk->n ? pk->n : 1));
	if (!m)
		return NULL;
	for (i = 0; i < pk->n; i++)
		end = pk->it[i].hi > end ? pk->it[i].hi : end;
	for (i = 0; i < pk->n; i++)
		m[i] = (struct pk_item){ end - pk->it[i].hi, end - pk->it[i].lo,
					 pk->it[i].size };
	return m;
}
