// SPDX-License-Identifier: MIT
/*
 * Exact branch and bound for small instances, in the manner of MiniMalloc
 * (Moffitt, ASPLOS 2023), written from its published description.
 *
 * Every packing can be pushed down until each buffer rests at 0 or on a
 * buffer it conflicts with; listing buffers by offset, each then sits at
 * the highest top of the earlier ones it conflicts with.  So the search
 * only chooses the next buffer: its offset follows, and a choice whose
 * offset is below the previous one (or equal with a smaller id) is not in
 * canonical order and is skipped.  A section of time (between two
 * consecutive start or end times) bounds the height from below: its
 * unplaced buffers all stack above max(its highest placed top, the current
 * offset).  The search stops at the deadline with the best plan found.
 */
#include <stdlib.h>

#include "pack_internal.h"

struct bnb {
	struct packer *pk;
	uint32_t m;		/* items with a size and a lifetime */
	uint32_t *ids;		/* those items */
	bool *placed;
	uint32_t *stack;	/* placement order */
	uint32_t nsec;
	uint32_t *slo, *shi;	/* each item's sections [slo, shi) */
	uint64_t *floor;	/* per section: highest placed top */
	uint64_t *rem;		/* per section: unplaced bytes */
	uint64_t (*undo)[2];	/* (section, old floor) */
	uint32_t nundo;
	uint64_t (*cand)[3];	/* per depth: candidates (off, size, id) */
	bool aborted;
};

static int bnb_cand_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	if (x[1] != y[1])
		return x[1] > y[1] ? -1 : 1;
	return (x[2] > y[2]) - (x[2] < y[2]);
}

static bool bnb_prune(struct bnb *b, uint64_t cur)
{
	uint32_t s;

	for (s = 0; s < b->nsec; s++) {
		uint64_t f = b->floor[s] > cur ? b->floor[s] : cur;

		if (b->rem[s] && f + b->rem[s] >= b->pk->best_h)
			return true;
	}
	return false;
}

static void bnb_place(struct bnb *b, uint32_t i, uint64_t off)
{
	struct packer *pk = b->pk;
	uint64_t top = off + pk->it[i].size;
	uint32_t s;

	pk->off[i] = off;
	b->placed[i] = true;
	for (s = b->slo[i]; s < b->shi[i]; s++) {
		b->rem[s] -= pk->it[i].size;
		if (top > b->floor[s]) {
			b->undo[b->nundo][0] = s;
			b->undo[b->nundo][1] = b->floor[s];
			b->nundo++;
			b->floor[s] = top;
		}
	}
}

static void bnb_unplace(struct bnb *b, uint32_t i, uint32_t mark)
{
	uint32_t s;

	while (b->nundo > mark) {
		b->nundo--;
		b->floor[b->undo[b->nundo][0]] = b->undo[b->nundo][1];
	}
	for (s = b->slo[i]; s < b->shi[i]; s++)
		b->rem[s] += b->pk->it[i].size;
	b->placed[i] = false;
}

/* Offset item @i would take now: the highest top of its placed conflicts. */
static uint64_t bnb_offset(struct bnb *b, uint32_t i)
{
	struct packer *pk = b->pk;
	uint64_t off = 0;
	uint32_t k;

	for (k = pk->cidx[i]; k < pk->cidx[i + 1]; k++) {
		uint32_t j = pk->conf[k];

		if (b->placed[j] && pk->off[j] + pk->it[j].size > off)
			off = pk->off[j] + pk->it[j].size;
	}
	return off;
}

static void bnb_leaf(struct bnb *b)
{
	struct packer *pk = b->pk;
	uint64_t h = 0;
	uint32_t k, p;

	for (k = 0; k < b->m; k++) {
		uint32_t i = b->ids[k];

		if (pk->off[i] + pk->it[i].size > h)
			h = pk->off[i] + pk->it[i].size;
	}
	if (h >= pk->best_h)
		return;
	memcpy(pk->order, b->stack, sizeof(*b->stack) * b->m);
	for (k = 0, p = b->m; k < pk->n; k++)
		if (!pk->it[k].size || pk->it[k].hi <= pk->it[k].lo)
			pk->order[p++] = k;
	ortmem__pk_keep_if_best(pk, h);
}

static void bnb_dfs(struct bnb *b, uint32_t depth, uint64_t cur, uint32_t last)
{
	struct packer *pk = b->pk;
	uint64_t (*cand)[3] = &b->cand[(size_t)depth * b->m];
	uint32_t k, nc = 0;

	if (depth == b->m) {
		bnb_leaf(b);
		return;
	}
	pk->iters++;
	pk->work += b->m;
	if (b->aborted || ortmem__pk_out_of_time(pk)) {
		b->aborted = pk->best_h > pk->lb;
		return;
	}
	if (bnb_prune(b, cur))
		return;
	for (k = 0; k < b->m; k++) {
		uint32_t i = b->ids[k];
		uint64_t off;

		if (b->placed[i])
			continue;
		off = bnb_offset(b, i);
		if (off < cur || (off == cur && depth && i < last))
			continue;
		if (off + pk->it[i].size >= pk->best_h)
			continue;
		cand[nc][0] = off;
		cand[nc][1] = pk->it[i].size;
		cand[nc][2] = i;
		nc++;
	}
	qsort(cand, nc, sizeof(*cand), bnb_cand_cmp);
	for (k = 0; k < nc && !b->aborted; k++) {
		uint32_t i = (uint32_t)cand[k][2], mark = b->nundo;

		bnb_place(b, i, cand[k][0]);
		b->stack[depth] = i;
		bnb_dfs(b, depth + 1, cand[k][0], i);
		bnb_unplace(b, i, mark);
		if (pk->best_h <= pk->lb)
			break;
	}
}

static bool bnb_setup(struct bnb *b, uint64_t *times)
{
	struct packer *pk = b->pk;
	uint32_t i, nt = 0, s, t;

	for (i = 0; i < pk->n; i++) {
		if (!pk->it[i].size || pk->it[i].hi <= pk->it[i].lo)
			continue;
		b->ids[b->m++] = i;
		times[nt++] = pk->it[i].lo;
		times[nt++] = pk->it[i].hi;
	}
	s = ortmem__pk_section_times(times, nt);
	b->nsec = s ? s - 1 : 0;
	for (i = 0; i < b->m; i++) {
		uint32_t x = b->ids[i];

		b->slo[x] = ortmem__pk_section_of(times, s, pk->it[x].lo);
		b->shi[x] = ortmem__pk_section_of(times, s, pk->it[x].hi);
		for (t = b->slo[x]; t < b->shi[x]; t++)
			b->rem[t] += pk->it[x].size;
	}
	return true;
}

bool ortmem__pk_bnb(struct packer *pk)
{
	struct bnb b = { .pk = pk };
	uint32_t n = pk->n ? pk->n : 1;
	uint64_t *times = malloc(sizeof(*times) * 2 * n);
	bool done = false;

	b.ids = malloc(sizeof(*b.ids) * n);
	b.placed = calloc(n, sizeof(*b.placed));
	b.stack = malloc(sizeof(*b.stack) * n);
	b.slo = calloc(n, sizeof(*b.slo));
	b.shi = calloc(n, sizeof(*b.shi));
	b.floor = calloc(2 * n, sizeof(*b.floor));
	b.rem = calloc(2 * n, sizeof(*b.rem));
	b.undo = malloc(sizeof(*b.undo) * 2 * n * n);
	b.cand = malloc(sizeof(*b.cand) * (size_t)n * n);
	if (times && b.ids && b.placed && b.stack && b.slo && b.shi &&
	    b.floor && b.rem && b.undo && b.cand && bnb_setup(&b, times)) {
		bnb_dfs(&b, 0, 0, 0);
		done = !b.aborted;
	}
	free(times);
	free(b.ids);
	free(b.placed);
	free(b.stack);
	free(b.slo);
	free(b.shi);
	free(b.floor);
	free(b.rem);
	free(b.undo);
	free(b.cand);
	return done;
}
