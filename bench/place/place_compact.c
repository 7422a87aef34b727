// SPDX-License-Identifier: MIT
/*
 * make bench-place: Belady's own cost of compaction, like for like with
 * ortmem's on-device moves.  The bench's Belady ignores offsets: it
 * assumes the arena compacts for free.  Here its residency (the same
 * decisions as belady(): the same tier bytes) is laid out with offsets,
 * each value a step brings onto the device taking the best-fitting free
 * range of [0, budget); where none holds it (the free bytes always
 * suffice: Belady keeps every step within the budget), the arena is
 * compacted before the step with the fewest bytes moved that this
 * compactor finds:
 *
 *  1. the window of the value's size with the fewest bytes of residents
 *     in its way (windows start at 0 or at a resident's end, or end at a
 *     resident's start or the ceiling: any other slides to one of these),
 *     its residents relocated, the largest first, to the tightest free
 *     range outside it (a range an earlier move of the step left counts
 *     as free: the moves run in order; never onto its own source);
 *  2. where no window clears so, or a slide moves fewer bytes: the run
 *     of free gaps (between residents sorted by address) holding the
 *     value whose residents between them weigh least, slid down so the
 *     gaps merge above them (pc_slide_best()); a run always exists, so
 *     this always opens the room, but it may copy a buffer onto part of
 *     its own range.
 *
 * It counts what ortmem's move contract before slides (one move per gap,
 * a step's moves independent, never onto their own source) could not
 * express: moves that land on another move's source of the same step
 * ("ordered"), a second move of a value between two of its touches
 * ("second"), and moves onto part of their own source ("self").  Since
 * slides, ortmem's moves run in order of destination and may overlap
 * their own source (ortmem_plan_transfers(3)); a second move in a gap it
 * still cannot make.  No library code.
 */
#include <stdlib.h>
#include <string.h>

#include "place_bench.h"

/* Windows tried, the fewest bytes in the way first, before sliding: the
 * bench's time (each try fits its movers in O(residents^2)). */
#define PC_WINDOWS 32

struct pc {
	const struct graph *g;
	const struct model *m;
	uint64_t budget;
	uint64_t *addr;
	bool *res, *wr, *fresh, *moved_gap;
	uint32_t *live, n_live;
	uint64_t (*src)[2];	/* this compaction's move sources */
	uint32_t n_src;
	struct compact_info *ci;
};

static void *pc_zalloc(size_t n, size_t size)
{
	return memset(xrealloc(NULL, n * size), 0, n * size);
}

static bool pc_meets(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	return a0 < b1 && b0 < a1;
}

/* Is [a, a + size) clear of every resident but @skip and of @nx extra ranges? */
static bool pc_clear(const struct pc *p, uint64_t a, uint64_t size, uint32_t skip,
		     uint64_t (*x)[2], uint32_t nx)
{
	uint32_t i;

	if (a + size > p->budget)
		return false;
	for (i = 0; i < p->n_live; i++) {
		uint32_t v = p->live[i];

		if (v != skip && pc_meets(a, a + size, p->addr[v], p->addr[v] + p->m->asz[v]))
			return false;
	}
	for (i = 0; i < nx; i++)
		if (pc_meets(a, a + size, x[i][0], x[i][1]))
			return false;
	return true;
}

/* The tightest range holding @size clear of the residents (but @skip) and
 * of @nx extra ranges, or UINT64_MAX; candidates start at 0 or at the end
 * of something in the way. */
static uint64_t pc_fit(const struct pc *p, uint64_t size, uint32_t skip,
		       uint64_t (*x)[2], uint32_t nx)
{
	uint64_t best = UINT64_MAX, best_len = UINT64_MAX, a, len, e;
	uint32_t i, j;

	for (i = 0; i <= p->n_live + nx; i++) {
		if (!i)
			a = 0;
		else if (i <= p->n_live)
			a = p->live[i - 1] == skip ? UINT64_MAX :
			    p->addr[p->live[i - 1]] + p->m->asz[p->live[i - 1]];
		else
			a = x[i - 1 - p->n_live][1];
		if (a == UINT64_MAX || !pc_clear(p, a, size, skip, x, nx))
			continue;
		for (len = p->budget - a, j = 0; j < p->n_live; j++) {
			uint32_t v = p->live[j];

			if (v != skip && p->addr[v] >= a && p->addr[v] - a < len)
				len = p->addr[v] - a;
		}
		for (j = 0; j < nx; j++)
			if (x[j][0] >= a && x[j][0] - a < len)
				len = x[j][0] - a;
		e = len;
		if (e < best_len) {
			best_len = e;
			best = a;
		}
	}
	return best;
}

static void pc_move(struct pc *p, uint32_t v, uint64_t to)
{
	uint64_t from = p->addr[v], z = p->m->asz[v];
	uint32_t i;

	if (to == from)
		return;
	p->addr[v] = to;
	if (p->fresh[v])
		return;		/* placed at this step: not written yet, no copy */
	for (i = 0; i < p->n_src; i++)
		if (pc_meets(to, to + z, p->src[i][0], p->src[i][1])) {
			p->ci->ordered++;
			break;
		}
	if (pc_meets(to, to + z, from, from + z))
		p->ci->self++;
	p->ci->second += p->moved_gap[v];
	p->moved_gap[v] = true;
	p->ci->moved += p->g->size[v];
	p->src[p->n_src][0] = from;
	p->src[p->n_src++][1] = from + z;
}

/* Step 1 on window [a, a + size), all or nothing: false when a resident in
 * its way finds no range (the residents are then where they were). */
static bool pc_window(struct pc *p, uint64_t a, uint64_t size, uint64_t *was)
{
	uint64_t x[1][2] = { { a, a + size } }, to;
	uint32_t i, j, n = 0, *way = xrealloc(NULL, sizeof(*way) * (p->n_live + 1));
	bool ok = true;

	for (i = 0; i < p->n_live; i++) {
		uint32_t v = p->live[i];

		was[v] = p->addr[v];
		if (!pc_meets(a, a + size, p->addr[v], p->addr[v] + p->m->asz[v]))
			continue;
		for (j = n++; j && p->m->asz[way[j - 1]] < p->m->asz[v]; j--)
			way[j] = way[j - 1];
		way[j] = v;
	}
	/* in order: each mover's source stays in the way until it moves (so
	 * never onto its own), then is free for the movers after it */
	for (i = 0; i < n; i++) {
		uint32_t v = way[i];

		to = pc_fit(p, p->m->asz[v], UINT32_MAX, x, 1);
		if (to == UINT64_MAX) {
			ok = false;
			break;
		}
		p->addr[v] = to;
	}
	for (i = 0; i < n; i++) {	/* commit or undo */
		uint32_t v = way[i];

		to = p->addr[v];
		p->addr[v] = was[v];
		if (ok)
			pc_move(p, v, to);
	}
	free(way);
	return ok;
}

static int pc_cmp_addr(const void *x, const void *y, void *u)
{
	const uint64_t *addr = u;
	uint64_t a = addr[*(const uint32_t *)x], b = addr[*(const uint32_t *)y];

	return (a > b) - (a < b);
}

/*
 * The slide that opens @size with the fewest bytes moved: the residents
 * sorted by address, the free gaps between them f_0 (below the first) ..
 * f_n (above the last); a run of gaps f_i .. f_j holding @size merges by
 * sliding the residents between them down, and costs their bytes.  Two
 * pointers: O(residents).  The first resident to slide into *@lo, how
 * many into *@cnt; the bytes, or UINT64_MAX (no run holds it).
 */
static uint64_t pc_slide_best(struct pc *p, uint64_t size, uint32_t *lo, uint32_t *cnt)
{
	uint64_t best = UINT64_MAX, free_run = 0, bytes = 0;
	uint32_t i, j, n = p->n_live;

	qsort_r(p->live, n, sizeof(*p->live), pc_cmp_addr, p->addr);
#define GAP(g) ((g) == 0 ? p->addr[p->live[0]] : (g) == n ? \
		p->budget - p->addr[p->live[n - 1]] - p->m->asz[p->live[n - 1]] : \
		p->addr[p->live[g]] - p->addr[p->live[(g) - 1]] - p->m->asz[p->live[(g) - 1]])
	if (!n)
		return UINT64_MAX;
	/* gaps i .. j - 1 in the run, residents i .. j - 2 between them */
	for (i = 0, j = 0; i <= n; i++) {
		while (j <= n && free_run < size) {
			free_run += GAP(j);
			if (j > i)
				bytes += p->fresh[p->live[j - 1]] ? 0 : p->m->asz[p->live[j - 1]];
			j++;
		}
		if (free_run >= size && bytes < best) {
			best = bytes;
			*lo = i;
			*cnt = j - 1 - i;
		}
		if (j == i + 1) {	/* the run is gap i alone: start afresh */
			free_run = bytes = 0;
			j = i + 1;
			continue;
		}
		free_run -= GAP(i);
		if (i + 1 < j)
			bytes -= p->fresh[p->live[i]] ? 0 : p->m->asz[p->live[i]];
	}
#undef GAP
	return best;
}

/* Room for @size before the step: the window with the fewest bytes in
 * its way whose residents all find a range, unless the best slide moves
 * fewer; else that slide. */
static uint64_t pc_compact(struct pc *p, uint64_t size, uint64_t *was)
{
	uint64_t (*win)[2] = xrealloc(NULL, sizeof(*win) * (2 * p->n_live + 2)), a, cur, slide;
	uint32_t i, j, n = 0, lo = 0, cnt = 0;

	p->ci->compactions++;
	p->n_src = 0;
	/* the windows, by bytes in their way */
	for (i = 0; i <= 2 * p->n_live + 1; i++) {
		uint32_t v = i / 2 ? p->live[i / 2 - 1] : UINT32_MAX;
		uint64_t way = 0;

		if (i % 2 == 0)
			a = v == UINT32_MAX ? 0 : p->addr[v] + p->m->asz[v];
		else if (v == UINT32_MAX)
			a = p->budget >= size ? p->budget - size : UINT64_MAX;
		else
			a = p->addr[v] >= size ? p->addr[v] - size : UINT64_MAX;
		if (a == UINT64_MAX || a + size > p->budget)
			continue;
		for (j = 0; j < p->n_live; j++) {
			uint32_t w = p->live[j];

			if (!p->fresh[w] && pc_meets(a, a + size, p->addr[w], p->addr[w] + p->m->asz[w]))
				way += p->m->asz[w];
		}
		for (j = n; j && win[j - 1][1] > way; j--) {
			win[j][0] = win[j - 1][0];
			win[j][1] = win[j - 1][1];
		}
		win[j][0] = a;
		win[j][1] = way;
		n++;
	}
	slide = pc_slide_best(p, size, &lo, &cnt);
	for (i = 0; i < n && i < PC_WINDOWS && win[i][1] < slide; i++)
		if (pc_window(p, win[i][0], size, was)) {
			a = win[i][0];
			free(win);
			return a;
		}
	free(win);
	if (slide == UINT64_MAX)
		return UINT64_MAX;
	p->ci->slides++;
	qsort_r(p->live, p->n_live, sizeof(*p->live), pc_cmp_addr, p->addr);
	cur = lo ? p->addr[p->live[lo - 1]] + p->m->asz[p->live[lo - 1]] : 0;
	for (i = lo; i < lo + cnt; i++) {
		pc_move(p, p->live[i], cur);
		cur += p->m->asz[p->live[i]];
	}
	return cur;
}

/* Belady's decisions at step @s, as belady() takes them: the values the
 * step brings in (@in), those it sends off (@gone); its tier bytes. */
static uint64_t pc_belady_step(struct pc *p, uint32_t s, uint64_t *used,
			       uint32_t *in, uint32_t *n_in, uint32_t *gone, uint32_t *n_gone)
{
	const struct g_node *nd = &p->g->nodes[s];
	const struct model *m = p->m;
	uint64_t moved = 0;
	uint32_t k, v;

	*n_in = *n_gone = 0;
	for (k = 0; k < nd->n_in + nd->n_out; k++) {
		v = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
		if (!p->g->size[v] || p->res[v])
			continue;
		if (k < nd->n_in)
			moved += p->g->size[v];
		p->res[v] = true;
		*used += m->asz[v];
		in[(*n_in)++] = v;
	}
	while (*used > p->budget) {
		uint32_t best = UINT32_MAX, far = 0, nu;

		for (v = 0; v < p->g->n_vals; v++) {
			if (!p->res[v] || model_next_use(m, v, s - 1) == s)
				continue;
			nu = model_next_use(m, v, s);
			if (best == UINT32_MAX || nu > far ||
			    (nu == far && m->asz[v] > m->asz[best])) {
				best = v;
				far = nu;
			}
		}
		if (best == UINT32_MAX)
			return UINT64_MAX;
		p->res[best] = false;
		*used -= m->asz[best];
		if (!p->wr[best])
			moved += p->g->size[best];
		p->wr[best] = true;
		gone[(*n_gone)++] = best;
	}
	return moved;
}

/* The layout's own check: the residents disjoint, under the budget. */
static bool pc_check(struct pc *p)
{
	uint32_t i;

	qsort_r(p->live, p->n_live, sizeof(*p->live), pc_cmp_addr, p->addr);
	for (i = 0; i < p->n_live; i++) {
		uint64_t end = p->addr[p->live[i]] + p->m->asz[p->live[i]];

		if (end > p->budget || (i + 1 < p->n_live && end > p->addr[p->live[i + 1]]))
			return false;
	}
	return true;
}

static void pc_drop(struct pc *p, uint32_t v)
{
	uint32_t i;

	for (i = 0; i < p->n_live; i++)
		if (p->live[i] == v) {
			p->live[i] = p->live[--p->n_live];
			return;
		}
}

void belady_compact(const struct graph *g, const struct model *m, uint64_t budget,
		    struct compact_info *ci)
{
	uint32_t nv = g->n_vals, *in = xrealloc(NULL, sizeof(*in) * (MAX_IO * 2 + 1));
	uint32_t *gone = xrealloc(NULL, sizeof(*gone) * (nv + 1)), n_in, n_gone, s, i, k, v;
	struct pc p = { .g = g, .m = m, .budget = budget, .ci = ci };
	uint64_t used = 0, t, *was = xrealloc(NULL, sizeof(*was) * (nv + 1));

	memset(ci, 0, sizeof(*ci));
	p.addr = pc_zalloc(nv + 1, sizeof(*p.addr));
	p.res = pc_zalloc(nv + 1, 1);
	p.wr = pc_zalloc(nv + 1, 1);
	p.fresh = pc_zalloc(nv + 1, 1);
	p.moved_gap = pc_zalloc(nv + 1, 1);
	p.live = xrealloc(NULL, sizeof(*p.live) * (nv + 1));
	p.src = xrealloc(NULL, sizeof(*p.src) * (nv + 1));
	for (s = 0; s < m->n && ci->tier != UINT64_MAX; s++) {
		const struct g_node *nd = &g->nodes[s];

		for (i = 0; i < p.n_live;)	/* lives that ended leave */
			if (m->hi[p.live[i]] <= s) {
				used -= m->asz[p.live[i]];
				p.res[p.live[i]] = false;
				p.live[i] = p.live[--p.n_live];
			} else {
				i++;
			}
		t = pc_belady_step(&p, s, &used, in, &n_in, gone, &n_gone);
		if (t == UINT64_MAX) {
			ci->tier = UINT64_MAX;
			break;
		}
		ci->tier += t;
		for (i = 0; i < n_gone; i++)
			pc_drop(&p, gone[i]);
		for (i = 0; i < n_in; i++) {
			uint64_t at;

			at = pc_fit(&p, m->asz[in[i]], UINT32_MAX, NULL, 0);
			if (at == UINT64_MAX)
				at = pc_compact(&p, m->asz[in[i]], was);
			if (at == UINT64_MAX) {
				ci->tier = UINT64_MAX;	/* a bug: Belady fits in bytes */
				break;
			}
			p.addr[in[i]] = at;
			p.fresh[in[i]] = true;
			p.live[p.n_live++] = in[i];
		}
		for (i = 0; i < n_in; i++)
			p.fresh[in[i]] = false;
		if (ci->tier != UINT64_MAX && !pc_check(&p))
			ci->bad++;
		for (k = 0; k < nd->n_in + nd->n_out; k++) {	/* a touch ends the gap */
			v = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
			p.moved_gap[v] = false;
		}
	}
	free(p.addr);
	free(p.res);
	free(p.wr);
	free(p.fresh);
	free(p.moved_gap);
	free(p.live);
	free(p.src);
	free(in);
	free(gone);
	free(was);
}
