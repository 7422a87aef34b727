// SPDX-License-Identifier: MIT
/*
 * make bench-place: the graphs (built op by op, random DAGs) and the gap
 * model derived from them, shared by the bench and its bound's check.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place_bench.h"

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "place_bench: out of memory\n");
		exit(1);
	}
	return p;
}

static uint32_t g_val(struct graph *g, uint64_t size, bool output)
{
	if (g->n_vals == g->cap_vals) {
		g->cap_vals = g->cap_vals ? g->cap_vals * 2 : 64;
		g->size = xrealloc(g->size, sizeof(*g->size) * g->cap_vals);
		g->output = xrealloc(g->output, sizeof(*g->output) * g->cap_vals);
	}
	g->size[g->n_vals] = size;
	g->output[g->n_vals] = output;
	return g->n_vals++;
}

/* A node reading @n_in values, producing one new value of @size. */
static uint32_t g_op(struct graph *g, const uint32_t *in, uint32_t n_in, uint64_t size)
{
	struct g_node *nd;
	uint32_t v = g_val(g, size, false);

	if (g->n_nodes == g->cap_nodes) {
		g->cap_nodes = g->cap_nodes ? g->cap_nodes * 2 : 64;
		g->nodes = xrealloc(g->nodes, sizeof(*g->nodes) * g->cap_nodes);
	}
	nd = &g->nodes[g->n_nodes++];
	memset(nd, 0, sizeof(*nd));
	memcpy(nd->in, in, sizeof(*in) * n_in);
	nd->n_in = n_in;
	nd->out[0] = v;
	nd->n_out = 1;
	return v;
}

uint32_t op1(struct graph *g, uint32_t a, uint64_t size)
{
	return g_op(g, &a, 1, size);
}

uint32_t op2(struct graph *g, uint32_t a, uint32_t b, uint64_t size)
{
	uint32_t in[2] = { a, b };

	return g_op(g, in, 2, size);
}

uint32_t g_input(struct graph *g, uint64_t size)
{
	return op1(g, g_val(g, 0, false), size);	/* a producer of the input */
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random DAG: each node reads 1-3 earlier values, mostly recent ones, and
 * now and then one from far back (a skip connection). */
void random_dag(struct graph *g, uint32_t n, uint64_t seed)
{
	uint32_t *outs = xrealloc(NULL, sizeof(*outs) * n), i, k, v;

	for (i = 0; i < n; i++) {
		uint32_t in[3], nin = i ? 1 + (uint32_t)(rnd(&seed) % 3) : 1;
		uint64_t size = (1 + rnd(&seed) % 64) * 64 * 1024;

		for (k = 0; k < nin && i; k++) {
			uint32_t back = rnd(&seed) % 4 ? 1 + (uint32_t)(rnd(&seed) % 8) :
				1 + (uint32_t)(rnd(&seed) % i);

			in[k] = outs[back > i ? 0 : i - back];
		}
		if (!i)
			in[0] = g_val(g, 0, false);
		v = g_op(g, in, nin, size);
		outs[i] = v;
		g->output[v] = rnd(&seed) % 50 == 0;
	}
	g->output[outs[n - 1]] = true;
	free(outs);
}

/* Dense graph (thousands of values live at once): a random recursive tree
 * (node i reads one random earlier value; @layers 0), or wide layers of
 * DENSE_WIDTH with long skips (node i reads the one DENSE_WIDTH before and
 * a random value below its layer).  Sizes 1-512 KiB, as make bench-plan's. */
void dense_graph(struct graph *g, uint32_t n, bool layers, uint64_t seed)
{
	uint32_t *outs = xrealloc(NULL, sizeof(*outs) * n), i;

	outs[0] = g_input(g, 1024 * (1 + rnd(&seed) % 512));
	for (i = 1; i < n; i++) {
		uint32_t below = layers ? i - i % DENSE_WIDTH : i;
		uint64_t size = 1024 * (1 + rnd(&seed) % 512);
		uint32_t far = below ? outs[rnd(&seed) % below] : outs[i - 1];

		outs[i] = layers && i >= DENSE_WIDTH && outs[i - DENSE_WIDTH] != far ?
			  op2(g, outs[i - DENSE_WIDTH], far, size) : op1(g, far, size);
	}
	g->output[outs[n - 1]] = true;
	free(outs);
}

/* ---- the gap model, from the graph (no library code) ---- */

void model_build(const struct graph *g, struct model *m)
{
	uint32_t v, s, k, *last = xrealloc(NULL, sizeof(*last) * g->n_vals), total = 0;
	int pass;

	m->n = g->n_nodes;
	m->t_idx = calloc(g->n_vals + 1, sizeof(*m->t_idx));
	m->hi = calloc(g->n_vals, sizeof(*m->hi));
	m->asz = calloc(g->n_vals, sizeof(*m->asz));
	m->foot = calloc(m->n + 1, sizeof(*m->foot));
	m->t_step = NULL;
	for (v = 0; v < g->n_vals; v++)
		m->asz[v] = (g->size[v] + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
	for (pass = 0; pass < 2; pass++) {
		memset(last, 0xff, sizeof(*last) * g->n_vals);
		for (s = 0; s < m->n; s++) {
			const struct g_node *nd = &g->nodes[s];

			for (k = 0; k < nd->n_in + nd->n_out; k++) {
				v = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
				if (!g->size[v] || last[v] == s)
					continue;
				last[v] = s;
				if (pass) {
					m->t_step[m->t_idx[v]++] = s;
					m->foot[s] += m->asz[v];
				} else {
					m->t_idx[v + 1]++;
					total++;
				}
				if (m->hi[v] < s + 1)
					m->hi[v] = s + 1;
			}
		}
		if (pass)
			break;
		for (v = 0; v < g->n_vals; v++)
			m->t_idx[v + 1] += m->t_idx[v];
		m->t_step = xrealloc(NULL, sizeof(*m->t_step) * (total + 1));
	}
	for (v = g->n_vals; v > 0; v--)
		m->t_idx[v] = m->t_idx[v - 1];
	m->t_idx[0] = 0;
	for (v = 0; v < g->n_vals; v++)
		if (g->output[v] && g->size[v])
			m->hi[v] = m->n;
	m->max_foot = 0;
	for (s = 0; s < m->n; s++)
		if (m->foot[s] > m->max_foot)
			m->max_foot = m->foot[s];
	free(last);
}

/* Next touch of @v after step @s, or UINT32_MAX. */
uint32_t model_next_use(const struct model *m, uint32_t v, uint32_t s)
{
	uint32_t k;

	for (k = m->t_idx[v]; k < m->t_idx[v + 1]; k++)
		if (m->t_step[k] > s)
			return m->t_step[k];
	return UINT32_MAX;
}

void model_free(struct model *m)
{
	free(m->t_idx);
	free(m->t_step);
	free(m->hi);
	free(m->asz);
	free(m->foot);
}

void graph_free(struct graph *g)
{
	free(g->size);
	free(g->output);
	free(g->nodes);
	memset(g, 0, sizeof(*g));
}
