// SPDX-License-Identifier: MIT
/*
 * make bench-place: the Belady baselines the placement is measured
 * against, on the gap model (place_graph.c): furthest-next-use eviction
 * simulated without offsets (the baseline), and the same rule run
 * by an allocator with offsets (for information).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "place_bench.h"

/* Furthest-next-use eviction; bytes moved (UINT64_MAX: does not fit). */
uint64_t belady(const struct graph *g, const struct model *m, uint64_t budget)
{
	bool *res = calloc(g->n_vals, 1), *wr = calloc(g->n_vals, 1);
	uint64_t moved = 0, used = 0;
	uint32_t s, v, k;

	for (s = 0; s < m->n; s++) {
		const struct g_node *nd = &g->nodes[s];

		/* values whose life ended leave */
		for (v = 0; v < g->n_vals; v++)
			if (res[v] && m->hi[v] <= s) {
				res[v] = false;
				used -= m->asz[v];
			}
		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			v = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
			if (!g->size[v] || res[v])
				continue;
			if (k < nd->n_in)
				moved += g->size[v];	/* read back */
			res[v] = true;
			used += m->asz[v];
		}
		while (used > budget) {
			uint32_t best = UINT32_MAX, far = 0, nu;

			for (v = 0; v < g->n_vals; v++) {
				if (!res[v] || model_next_use(m, v, s - 1) == s)
					continue;
				nu = model_next_use(m, v, s);
				if (best == UINT32_MAX || nu > far ||
				    (nu == far && m->asz[v] > m->asz[best])) {
					best = v;
					far = nu;
				}
			}
			if (best == UINT32_MAX) {
				moved = UINT64_MAX;
				goto out;
			}
			res[best] = false;
			used -= m->asz[best];
			if (!wr[best])
				moved += g->size[best];
			wr[best] = true;
		}
	}
out:
	free(res);
	free(wr);
	return moved;
}

/*
 * Belady's rule run by an allocator (for information: a schedule a runtime
 * could follow, which the plain simulation above is not): each value a
 * step touches that is not on the device takes the best-fitting free range
 * of [0, budget); when none holds it, the resident value not used at the
 * step whose next use is furthest leaves, and the fit is tried again.
 * When only the step's own values are left, those already resident are
 * moved (read back) and everything is laid out from offset 0.
 */
struct bo {
	uint64_t *addr;
	bool *res, *wr, *pin;
	uint32_t *live, n_live;
	uint64_t budget;
	const struct model *m;
};

static int bo_cmp_addr(const void *x, const void *y, void *u)
{
	const struct bo *b = u;
	uint64_t a1 = b->addr[*(const uint32_t *)x], a2 = b->addr[*(const uint32_t *)y];

	return (a1 > a2) - (a1 < a2);
}

static uint64_t bo_fit(struct bo *b, uint64_t size)
{
	uint64_t cur = 0, best = UINT64_MAX, best_len = UINT64_MAX, next, len;
	uint32_t i;

	qsort_r(b->live, b->n_live, sizeof(*b->live), bo_cmp_addr, b);
	for (i = 0; i <= b->n_live; i++) {
		next = i < b->n_live ? b->addr[b->live[i]] : b->budget;
		len = next > cur ? next - cur : 0;
		if (len >= size && len < best_len) {
			best_len = len;
			best = cur;
		}
		if (i < b->n_live && b->addr[b->live[i]] + b->m->asz[b->live[i]] > cur)
			cur = b->addr[b->live[i]] + b->m->asz[b->live[i]];
	}
	return best;
}

static void bo_leave(struct bo *b, uint32_t i, const struct graph *g, uint64_t *moved)
{
	uint32_t v = b->live[i];

	b->res[v] = false;
	b->live[i] = b->live[--b->n_live];
	if (!b->wr[v] && moved)
		*moved += g->size[v];
	b->wr[v] = true;
}

uint64_t belady_offsets(const struct graph *g, const struct model *m, uint64_t budget)
{
	struct bo b = { .budget = budget, .m = m };
	uint64_t moved = 0, at;
	uint32_t s, k, i, v;

	b.addr = calloc(g->n_vals, sizeof(*b.addr));
	b.res = calloc(g->n_vals, 1);
	b.wr = calloc(g->n_vals, 1);
	b.pin = calloc(g->n_vals, 1);
	b.live = calloc(g->n_vals, sizeof(*b.live));
	for (s = 0; s < m->n; s++) {
		const struct g_node *nd = &g->nodes[s];

		for (i = 0; i < b.n_live;)
			if (m->hi[b.live[i]] <= s)
				b.res[b.live[i]] = false, b.live[i] = b.live[--b.n_live];
			else
				i++;
		for (k = 0; k < nd->n_in + nd->n_out; k++)
			b.pin[k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in]] = true;
		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			v = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
			if (!g->size[v] || b.res[v])
				continue;
			while ((at = bo_fit(&b, m->asz[v])) == UINT64_MAX) {
				uint32_t best = UINT32_MAX, far = 0, nu;

				for (i = 0; i < b.n_live; i++) {
					if (b.pin[b.live[i]])
						continue;
					nu = model_next_use(m, b.live[i], s);
					if (best == UINT32_MAX || nu > far) {
						best = i;
						far = nu;
					}
				}
				if (best == UINT32_MAX)
					break;
				bo_leave(&b, best, g, &moved);
			}
			if (at == UINT64_MAX) {
				/* only this step's values left: lay them out again */
				for (i = 0, at = 0; i < b.n_live; i++)
					at += m->asz[b.live[i]];
				if (at + m->asz[v] > budget) {
					moved = UINT64_MAX;
					goto out;
				}
				for (i = 0, at = 0; i < b.n_live; i++) {
					if (!b.wr[b.live[i]])
						moved += g->size[b.live[i]];
					b.wr[b.live[i]] = true;
					moved += g->size[b.live[i]];	/* read back at its new offset */
					b.addr[b.live[i]] = at;
					at += m->asz[b.live[i]];
				}
			}
			if (k < nd->n_in)
				moved += g->size[v];	/* read back */
			b.addr[v] = at;
			b.res[v] = true;
			b.live[b.n_live++] = v;
		}
		for (k = 0; k < nd->n_in + nd->n_out; k++)
			b.pin[k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in]] = false;
	}
out:
	free(b.addr);
	free(b.res);
	free(b.wr);
	free(b.pin);
	free(b.live);
	return moved;
}
