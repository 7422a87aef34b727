// SPDX-License-Identifier: MIT
/*
 * The packer's floor: its arrays (and clones of them for other threads),
 * the conflict lists, best-fit placement of items in a given order against
 * the conflicting items already placed, keeping the best packing, and the
 * budget check.  Every search calls down into this file; it calls only the
 * sort (pack_sort.c).  The driver that runs the searches is pack.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "pack_internal.h"

/* ---- the budget ---- */

bool ortmem__pk_deadline_passed(struct packer *pk)
{
	if (pk->timed_out)
		return true;
	if (pk->work < PK_CLOCK_WORK || pk->deadline_off)
		return false;
	pk->work = 0;
	pk->timed_out = ortmem__now_ns() >= pk->opts.deadline_ns;
	return pk->timed_out;
}

/* ---- conflict lists ---- */

/*
 * Conflict lists by a start-time sweep (O(n + pairs)): -ETIME when
 * @timed and the deadline passed first.
 */
int ortmem__pk_build_conflicts(struct packer *pk, bool timed)
{
	/* Scratch: the packer's arrays, written over later anyway; never
	 * the best packing, which may already hold the first plan. */
	uint32_t n = pk->n, *ids = pk->order, *tmp = pk->rank;
	uint32_t *act = pk->t32[0], *deg = pk->t32[1];
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

			if (!ortmem__pk_live(x))
				continue;
			pk->work += nact + 1;
			if (timed && ortmem__pk_deadline_passed(pk)) {
				ret = -ETIME;
				goto out;
			}
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
	if (ret) {
		free(pk->cidx);
		free(pk->conf);
		pk->cidx = NULL;
		pk->conf = NULL;
	}
	return ret;
}

/* ---- placement ---- */

/* Best fit among the (sorted) occupied ranges @g: the smallest hole that
 * holds @size, else on top of them all. */
static uint64_t pk_best_fit(uint64_t (*g)[2], uint32_t d, uint64_t size)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = UINT64_MAX;
	uint32_t k;

	ortmem__sort_pairs(g, d, false);
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
 * fit against the conflicting items placed before it.  Return the height,
 * or, as soon as it passes @limit, that height (the rest left unplaced):
 * a caller that keeps only packings at most @limit high need not see the
 * rest, and most of the local search's moves are not kept.
 */
uint64_t ortmem__pk_place_from_under(struct packer *pk, uint32_t from, uint64_t limit)
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
		if (!ortmem__pk_live(x)) {
			pk->off[i] = 0;
			pk->hpre[p] = h;
			if (h > limit)
				break;
			continue;
		}
		/* A placement of a dense graph may take long: the clock is
		 * looked at along the way, not only between placements. */
		pk->work += pk->cidx[i + 1] - pk->cidx[i] + 1;
		if (ortmem__pk_deadline_passed(pk)) {
			pk->placed = false;
			return UINT64_MAX;
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
		if (h > limit)
			break;
	}
	pk->placed = p == pk->n;
	return h;
}

uint64_t ortmem__pk_place_from(struct packer *pk, uint32_t from)
{
	return ortmem__pk_place_from_under(pk, from, UINT64_MAX);
}

void ortmem__pk_keep_if_best(struct packer *pk, uint64_t h)
{
	if (h >= pk->best_h)
		return;
	if (pk->best_h == UINT64_MAX)
		pk->first_at = ortmem__now_ns();
	pk->best_h = h;
	memcpy(pk->best_off, pk->off, sizeof(*pk->off) * pk->n);
	memcpy(pk->best_order, pk->order, sizeof(*pk->order) * pk->n);
}

/* ---- settling a packing ---- */

/* The lowest offset where @size fits among the (sorted) occupied ranges
 * @g: first fit, never above where the item was (see pk_settle_pass). */
static uint64_t pk_first_fit(uint64_t (*g)[2], uint32_t d, uint64_t size)
{
	uint64_t cur = 0;
	uint32_t k;

	ortmem__sort_pairs(g, d, false);
	for (k = 0; k < d && g[k][0] < cur + size; k++)
		if (g[k][1] > cur)
			cur = g[k][1];
	return cur;
}

/*
 * One pass over the @m live items of pk->order, a packing of height @h in
 * pk->off: turn it upside down (offset h - top), then place each item,
 * lowest offset first, at the lowest offset where it fits against those
 * placed before it.  Every item already placed lay wholly below the next
 * one and moved only down, so the next one's offset is still free: no
 * item rises, and the new height is at most @h.  Returns it, or
 * UINT64_MAX when the deadline passed (pk->off is then unchanged).
 */
static uint64_t pk_settle_pass(struct packer *pk, uint32_t m, uint64_t h)
{
	uint32_t *ids = pk->t32[0], *tmp = pk->t32[1], p, k;
	uint64_t *key = pk->t64[0], *newoff = pk->t64[1], top = 0;

	for (p = 0; p < m; p++) {
		uint32_t i = pk->order[p];

		ids[p] = i;
		key[i] = h - pk->off[i] - pk->it[i].size;
		pk->rank[i] = UINT32_MAX;
	}
	ortmem__pk_sort_by(ids, m, key, tmp);
	for (p = 0; p < m; p++) {
		uint32_t i = ids[p], d = 0;

		pk->work += pk->cidx[i + 1] - pk->cidx[i] + 1;
		if (ortmem__pk_deadline_passed(pk))
			return UINT64_MAX;
		for (k = pk->cidx[i]; k < pk->cidx[i + 1]; k++) {
			uint32_t j = pk->conf[k];

			if (pk->rank[j] < p) {
				pk->gap[d][0] = newoff[j];
				pk->gap[d][1] = newoff[j] + pk->it[j].size;
				d++;
			}
		}
		newoff[i] = pk_first_fit(pk->gap, d, pk->it[i].size);
		pk->rank[i] = p;
		if (newoff[i] + pk->it[i].size > top)
			top = newoff[i] + pk->it[i].size;
	}
	for (p = 0; p < m; p++) {
		pk->order[p] = ids[p];
		pk->off[ids[p]] = newoff[ids[p]];
	}
	return top;
}

/* Passes without a lower height before settling stops; most found
 * packings stop falling within a few (the height only falls). */
#define PK_SETTLE_STALL 2
#define PK_SETTLE_MAX 16

/*
 * Settle the packing of the @m live items first in pk->order (height @h):
 * pushed down from either side in turn until it stops falling; the new
 * height (pk->order is then those items by offset).  A search
 * that packs under a height stops as soon as everything fits under it, so
 * what it finds often has room to fall; this costs a few best-fit
 * placements, not a search.
 */
uint64_t ortmem__pk_settle(struct packer *pk, uint32_t m, uint64_t h)
{
	uint32_t pass, stall = 0;

	if (!pk->have_conf)
		return h;
	for (pass = 0; pass < PK_SETTLE_MAX && stall < PK_SETTLE_STALL; pass++) {
		uint64_t nh = pk_settle_pass(pk, m, h);

		if (nh == UINT64_MAX)
			break;
		stall = nh < h ? 0 : stall + 1;
		h = nh;
	}
	return h;
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
	ortmem__pk_keep_if_best(pk, ortmem__pk_settle(pk, m, top));
}

bool ortmem__pk_out_of_time(struct packer *pk)
{
	if (pk->best_h <= pk->lb || pk->best_h <= pk->opts.target)
		return true;
	if (pk->opts.max_iter && pk->iters >= pk->opts.max_iter)
		return true;
	/* The clock is cheap (vDSO) but not free: it is looked at after so
	 * much work (conflicts inspected), whatever the size of a plan. */
	pk->work++;
	return ortmem__pk_deadline_passed(pk);
}

/* What ortmem__pk_alloc() allocated: a clone's own arrays. */
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

void ortmem__pk_free(struct packer *pk)
{
	free(pk->cidx);
	free(pk->conf);
	pk_free_own(pk);
}

int ortmem__pk_alloc(struct packer *pk)
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
	if (ortmem__pk_alloc(dst)) {
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
