/* SPDX-License-Identifier: MIT */
/*
 * stress.c's tools for a failing seed (ORTMEM_STRESS_DUMP=seed): print
 * the graph and options, and shrink them greedily while the failure stays
 * the same.  Included by stress.c after the generator and run_one().
 */
#ifndef SELFTESTS_PLAN_STRESS_REDUCE_H
#define SELFTESTS_PLAN_STRESS_REDUCE_H

/* Print @g and @o as the calls that build them (to make a test). */
static void dump(const struct gen *g, const struct ortmem_plan_opts *o)
{
	uint32_t i, k;

	fprintf(stderr, "opts: align %llu %llu %llu budget %llu %llu %llu tiers %u flags %u threads %u iter %llu us %llu seed %llu move_ratio %u\n",
		(unsigned long long)o->align[0], (unsigned long long)o->align[1],
		(unsigned long long)o->align[2], (unsigned long long)o->budget[0],
		(unsigned long long)o->budget[1], (unsigned long long)o->budget[2], o->tiers,
		o->flags, o->threads, (unsigned long long)o->max_iterations,
		(unsigned long long)o->time_budget_us, (unsigned long long)o->seed, o->move_ratio);
	for (i = 0; i < g->nv; i++)
		fprintf(stderr, "v%u size %llu%s%s view_of %d def %d\n", i,
			(unsigned long long)g->v[i].size, g->v[i].output ? " OUT" : "",
			g->v[i].symbolic ? (g->v[i].defer ? " SYM-DEFER" : " SYM") : "",
			g->v[i].view_of, g->v[i].def);
	for (i = 0; i < g->nn; i++) {
		fprintf(stderr, "n%u in", i);
		for (k = 0; k < g->nd[i].n_in; k++)
			fprintf(stderr, " %u", g->nd[i].in[k]);
		fprintf(stderr, " out");
		for (k = 0; k < g->nd[i].n_out; k++)
			fprintf(stderr, " %u", g->nd[i].out[k]);
		if (g->nd[i].hint_out >= 0)
			fprintf(stderr, " hint %d<-%d", g->nd[i].hint_out, g->nd[i].hint_in);
		fprintf(stderr, "\n");
	}
}

/* Does @g under @o still fail the way @why did? */
static bool still_fails(const struct gen *g, const struct ortmem_plan_opts *o, const char *why)
{
	struct run r = { 0 };

	const char *a = r.why, *b = why;

	run_one(&r, g, *o);
	/* the same message but for its figures */
	for (;; a++, b++) {
		while (*a >= '0' && *a <= '9')
			a++;
		while (*b >= '0' && *b <= '9')
			b++;
		if (*a != *b)
			return false;
		if (!*a)
			return true;
	}
}

/* Drop node @i: its outputs become graph inputs, later nodes move down. */
static void drop_node(struct gen *g, uint32_t i)
{
	uint32_t v;

	for (v = 0; v < g->nv; v++) {
		if (g->v[v].def == (int)i)
			g->v[v].def = -1;
		else if (g->v[v].def > (int)i)
			g->v[v].def--;
	}
	memmove(&g->nd[i], &g->nd[i + 1], sizeof(g->nd[0]) * (g->nn - i - 1));
	g->nn--;
}

/* Shrink a failing case greedily: fewer nodes, edges, hints, flags. */
static void reduce(struct gen *g, struct ortmem_plan_opts *o, const char *why)
{
	static struct gen t;
	struct ortmem_plan_opts to;
	bool progress = true;
	uint32_t i, k, v;

	while (progress) {
		progress = false;
		for (k = 0; k < 7; k++) {
			to = *o;
			switch (k) {
			case 0: to.threads = 1; break;
			case 1: to.max_iterations = 0; break;
			case 2: to.flags = 0; break;
			case 3: to.tiers = 0; break;
			case 4: to.align[0] = to.align[1] = to.align[2] = 0; break;
			case 5: to.time_budget_us = 1; break;
			default: to.seed = 0; break;
			}
			if (memcmp(&to, o, sizeof(to)) && still_fails(g, &to, why))
				*o = to, progress = true;
		}
		fprintf(stderr, "reduce: %u nodes\n", g->nn);
		for (i = g->nn; i-- > 0;) {
			t = *g;
			drop_node(&t, i);
			if (still_fails(&t, o, why))
				*g = t, progress = true;
		}
		for (i = 0; i < g->nn; i++)
			for (k = g->nd[i].n_in; k-- > 0;) {
				struct gnode *nd;

				t = *g;
				nd = &t.nd[i];
				if (nd->hint_in == (int)nd->in[k])
					nd->hint_in = nd->hint_out = -1;
				memmove(&nd->in[k], &nd->in[k + 1], sizeof(nd->in[0]) * (nd->n_in - k - 1));
				nd->n_in--;
				if (still_fails(&t, o, why))
					*g = t, progress = true;
			}
		for (i = 0; i < g->nn; i++)
			if (g->nd[i].hint_out >= 0) {
				t = *g;
				t.nd[i].hint_out = t.nd[i].hint_in = -1;
				if (still_fails(&t, o, why))
					*g = t, progress = true;
			}
		for (v = 0; v < g->nv; v++) {
			uint64_t cand[] = { 0, 1, 256, 4096, g->v[v].size / 2,
					    g->v[v].size & ~(g->v[v].size - 1) };

			t = *g;
			t.v[v].output = t.v[v].symbolic = false;
			if ((g->v[v].output || g->v[v].symbolic) && still_fails(&t, o, why))
				*g = t, progress = true;
			t = *g;
			t.v[v].view_of = -1;
			if (g->v[v].view_of >= 0 && still_fails(&t, o, why))
				*g = t, progress = true;
			for (k = 0; k < sizeof(cand) / sizeof(cand[0]); k++) {
				if (cand[k] >= g->v[v].size)
					continue;
				t = *g;
				t.v[v].size = cand[k];
				if (still_fails(&t, o, why)) {
					*g = t, progress = true;
					break;
				}
			}
		}
	}
}

#endif
