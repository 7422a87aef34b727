// SPDX-License-Identifier: MIT
/*
 * make bench-place: the lower bound on bytes moved, from the gap covering
 * model solved by GLPK: its LP relaxation, raised by knapsack cover cuts,
 * then GLPK's branch and cut, whose proven bound is kept even when it does
 * not close in time.  Why each is a lower bound: cover_bound().
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "place_bench.h"

/* The model's columns and rows while it is built, in GLPK's 1-based form. */
struct cover {
	glp_prob *lp;
	int *ia, *ja, nz, cap;
	double *ar;
	uint64_t *deficit;	/* per step: bytes that must be off the device */
	struct cover_gap {
		int col;		/* x_g */
		uint64_t bytes;		/* its buffer's, aligned */
		uint32_t lo, end;	/* off the device for steps [lo, end) */
	} *gap;
	int n_gap;
	uint32_t *s_idx, *s_gap;	/* per step: the gaps that span it, CSR */
};

static void cover_nz(struct cover *c, int row, int col, double a)
{
	if (c->nz + 1 >= c->cap) {
		c->cap = c->cap ? c->cap * 2 : 4096;
		c->ia = xrealloc(c->ia, sizeof(int) * (size_t)c->cap);
		c->ja = xrealloc(c->ja, sizeof(int) * (size_t)c->cap);
		c->ar = xrealloc(c->ar, sizeof(double) * (size_t)c->cap);
	}
	c->nz++;
	c->ia[c->nz] = row;
	c->ja[c->nz] = col;
	c->ar[c->nz] = a;
}

/* First step of @v's life: its first touch (an output lives to the end). */
static uint32_t life_lo(const struct model *m, uint32_t v)
{
	return m->t_idx[v] < m->t_idx[v + 1] ? m->t_step[m->t_idx[v]] : m->hi[v];
}

/* Per step, the gaps that span it (CSR over c->s_idx, c->s_gap). */
static void cover_steps(struct cover *c, uint32_t n)
{
	uint32_t s, *fill;
	int i;

	c->s_idx = calloc(n + 1, sizeof(*c->s_idx));
	for (i = 0; i < c->n_gap; i++)
		for (s = c->gap[i].lo; s < c->gap[i].end; s++)
			c->s_idx[s + 1] += c->deficit[s] > 0;
	for (s = 0; s < n; s++)
		c->s_idx[s + 1] += c->s_idx[s];
	c->s_gap = xrealloc(NULL, sizeof(*c->s_gap) * (c->s_idx[n] + 1));
	fill = xrealloc(NULL, sizeof(*fill) * (n + 1));
	memcpy(fill, c->s_idx, sizeof(*fill) * (n + 1));
	for (i = 0; i < c->n_gap; i++)
		for (s = c->gap[i].lo; s < c->gap[i].end; s++)
			if (c->deficit[s])
				c->s_gap[fill[s]++] = (uint32_t)i;
	free(fill);
}

/*
 * Row s (1-based s + 1): the bytes of the gaps spent off the device at step
 * s must reach its deficit, the live bytes over the budget.  A gap that
 * spans no step with a deficit gets no column: off the device it frees
 * nothing and costs bytes, so it is 0 in every optimum (of the LP and the
 * MIP alike).
 */
static void cover_build(struct cover *c, const struct graph *g, const struct model *m)
{
	uint32_t *wcol = calloc(g->n_vals, sizeof(*wcol)), v, k, s, end;
	int col, row;

	c->gap = xrealloc(NULL, sizeof(*c->gap) * (m->t_idx[g->n_vals] + 1));	/* <= touches */

	glp_set_obj_dir(c->lp, GLP_MIN);
	glp_add_rows(c->lp, (int)m->n);
	for (s = 0; s < m->n; s++)
		glp_set_row_bnds(c->lp, (int)s + 1, GLP_LO, (double)c->deficit[s] / MiB, 0);
	for (v = 0; v < g->n_vals; v++)
		for (k = m->t_idx[v]; k < m->t_idx[v + 1]; k++) {
			bool tail = k + 1 == m->t_idx[v + 1], useful = false;

			end = tail ? m->hi[v] : m->t_step[k + 1];
			for (s = m->t_step[k] + 1; s < end; s++)
				useful |= c->deficit[s] > 0;
			if (!useful)
				continue;
			if (!wcol[v]) {
				wcol[v] = (uint32_t)glp_add_cols(c->lp, 1);
				glp_set_col_bnds(c->lp, (int)wcol[v], GLP_DB, 0, 1);
				glp_set_obj_coef(c->lp, (int)wcol[v], (double)g->size[v] / MiB);
			}
			col = glp_add_cols(c->lp, 1);
			c->gap[c->n_gap++] = (struct cover_gap){ col, m->asz[v], m->t_step[k] + 1, end };
			glp_set_col_kind(c->lp, col, GLP_BV);	/* simplex ignores it */
			glp_set_obj_coef(c->lp, col, tail ? 0 : (double)g->size[v] / MiB);
			for (s = m->t_step[k] + 1; s < end; s++)
				if (c->deficit[s])
					cover_nz(c, (int)s + 1, col, (double)m->asz[v] / MiB);
			row = glp_add_rows(c->lp, 1);	/* w_v - x_g >= 0 */
			glp_set_row_bnds(c->lp, row, GLP_LO, 0, 0);
			cover_nz(c, row, (int)wcol[v], 1.0);
			cover_nz(c, row, col, -1.0);
		}
	glp_load_matrix(c->lp, c->nz, c->ia, c->ja, c->ar);
	free(wcol);
	cover_steps(c, m->n);
}

static void cover_free(struct cover *c)
{
	glp_delete_prob(c->lp);
	free(c->gap);
	free(c->s_idx);
	free(c->s_gap);
	free(c->ia);
	free(c->ja);
	free(c->ar);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The LP optimum in bytes, or -1 if the simplex failed. */
static double cover_lp(struct cover *c)
{
	glp_smcp parm;
	int ret;

	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	ret = glp_simplex(c->lp, &parm);
	return ret == 0 && glp_get_status(c->lp) == GLP_OPT ? glp_get_obj_val(c->lp) * MiB : -1;
}

/* Gaps of one step, most off first (x), then the biggest. */
struct kc_item {
	double x;		/* in the LP point */
	uint64_t bytes;
	int col;
};

static int kc_cmp(const void *p, const void *q)
{
	const struct kc_item *i = p, *j = q;

	if (i->x != j->x)
		return i->x < j->x ? 1 : -1;
	return (i->bytes < j->bytes) - (i->bytes > j->bytes);
}

/* Left of a knapsack cover inequality with residue @r at the LP point. */
static double kc_lhs(const struct kc_item *it, uint32_t from, uint32_t m, uint64_t r)
{
	double lhs = 0;
	uint32_t j;

	for (j = from; j < m && lhs < (double)r; j++)
		lhs += (double)(it[j].bytes < r ? it[j].bytes : r) * it[j].x;
	return lhs;
}

/*
 * A knapsack cover inequality of step s: for any set A of the gaps that
 * span s, with r = d - a(A) > 0 (d the deficit, a(A) their bytes),
 *	sum over g not in A of min(a_g, r) x_g >= r.
 * Valid at every integral point of the model: the gaps in A free at most
 * a(A), so those outside must free r; if one of them is off with a_g >= r,
 * its term alone is r, else no coefficient of an off gap was lowered.  The
 * LP, though, can no longer cover a residue of 1 MiB with a tenth of a
 * 10 MiB gap (with A empty this is the row with each a_g capped at d).
 * Separation: A runs over the prefixes of the gaps sorted by x, most off
 * first (a gap the LP sends off whole frees its bytes anyway; the
 * fractional ones are where the LP cheats); the most violated relative to
 * r is added as a row if by more than KC_TOL.  In bytes, so r is exact.
 */
static bool kc_step(struct cover *c, uint32_t s, struct kc_item *it, int *ind, double *val)
{
	uint32_t m = c->s_idx[s + 1] - c->s_idx[s], k, best_k = UINT32_MAX;
	uint64_t freed = 0, r;
	double best = KC_TOL;
	int row;

	for (k = 0; k < m; k++) {
		const struct cover_gap *gp = &c->gap[c->s_gap[c->s_idx[s] + k]];

		it[k] = (struct kc_item){ glp_get_col_prim(c->lp, gp->col), gp->bytes, gp->col };
	}
	qsort(it, m, sizeof(*it), kc_cmp);
	for (k = 0; k < m && freed < c->deficit[s]; freed += it[k++].bytes) {
		r = c->deficit[s] - freed;
		if (1 - kc_lhs(it, k, m, r) / (double)r > best) {
			best = 1 - kc_lhs(it, k, m, r) / (double)r;
			best_k = k;
		}
	}
	if (best_k == UINT32_MAX)
		return false;
	for (k = 0, freed = 0; k < best_k; k++)
		freed += it[k].bytes;
	r = c->deficit[s] - freed;
	for (k = best_k; k < m; k++) {
		ind[k - best_k + 1] = it[k].col;
		val[k - best_k + 1] = (double)(it[k].bytes < r ? it[k].bytes : r) / MiB;
	}
	row = glp_add_rows(c->lp, 1);
	glp_set_mat_row(c->lp, row, (int)(m - best_k), ind, val);
	glp_set_row_bnds(c->lp, row, GLP_LO, (double)r / MiB, 0);
	return true;
}

/*
 * Knapsack cover cuts at the root: rounds of kc_step() over every step with
 * a deficit, the LP solved again after each (dual simplex from the last
 * basis: the new rows only cut the old point off), until none is violated
 * or an effort limit (place_bench.h).  Returns the optimum in bytes of the
 * last LP solved to optimality (each is a valid bound), @obj if none was.
 */
static double kc_cuts(struct cover *c, uint32_t n, double obj, double best, int *n_cuts)
{
	uint32_t s, most = 0;
	struct kc_item *it;
	int *ind, round, added, stall = 0;
	double *val, t0, now;
	glp_smcp parm;

	for (s = 0; s < n; s++)
		if (c->s_idx[s + 1] - c->s_idx[s] > most)
			most = c->s_idx[s + 1] - c->s_idx[s];
	it = xrealloc(NULL, sizeof(*it) * (most + 1));
	ind = xrealloc(NULL, sizeof(*ind) * (most + 2));
	val = xrealloc(NULL, sizeof(*val) * (most + 2));
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.meth = GLP_DUALP;
	t0 = now_ms();
	for (round = 0; round < KC_ROUNDS && stall < KC_STALL_ROUNDS &&
	     obj * MIP_CLOSE < best && now_ms() - t0 < KC_MS; round++) {
		for (s = 0, added = 0; s < n; s++)
			if (c->deficit[s])
				added += kc_step(c, s, it, ind, val);
		*n_cuts += added;
		if (!added || glp_simplex(c->lp, &parm) || glp_get_status(c->lp) != GLP_OPT)
			break;
		now = glp_get_obj_val(c->lp) * MiB;
		stall = now > obj * (1 + KC_STALL) ? 0 : stall + 1;
		obj = now;
	}
	free(it);
	free(ind);
	free(val);
	return obj;
}

/* What the branch and cut has proven so far, and when it last rose. */
struct tree_info {
	double bound;		/* MiB; -INFINITY until a node is solved */
	double t_rise;		/* ms, now_ms() */
};

/*
 * The branch and cut's proven global bound so far: the best local bound
 * over the active nodes (every integral point of the model lies in some
 * active node's box, or was cut off as no better than the incumbent, less
 * GLPK's default tol_obj of 1e-7 relative), and no more than the incumbent.
 * It only rises as the search goes on, so the highest seen is kept.  The search stops once that bound has not risen
 * for MIP_STALL_MS (the training graphs: many equal-cost fractional covers,
 * the bound stays at the LP however long it runs).
 */
static void tree_bound_cb(glp_tree *t, void *info)
{
	struct tree_info *ti = info;
	glp_prob *p = glp_ios_get_prob(t);
	int node = glp_ios_best_node(t);
	double b;

	if (!node)
		return;
	b = glp_ios_node_bound(t, node);
	if (glp_mip_status(p) == GLP_FEAS)	/* GLPK prunes within tol_obj of it */
		b = fmin(b, glp_mip_obj_val(p) - 1e-7 * (1 + fabs(glp_mip_obj_val(p))));
	if (b > ti->bound + 1e-9 * fabs(b)) {
		ti->bound = b;
		ti->t_rise = now_ms();
	}
	if (now_ms() - ti->t_rise > MIP_STALL_MS)
		glp_ios_terminate(t);
}

/*
 * Branch and cut from the LP with its cuts (bi->bound): the bound it proves
 * in MIP_MS at most, and its best integral point (bi->incumbent: the
 * model's optimum lies between the two).
 */
static void cover_mip(struct cover *c, struct bound_info *bi)
{
	struct tree_info ti = { -INFINITY, now_ms() };
	glp_iocp iparm;
	int ret, st;

	glp_init_iocp(&iparm);
	iparm.msg_lev = GLP_MSG_OFF;
	iparm.presolve = GLP_OFF;	/* the tree then works on this very model */
	iparm.tm_lim = MIP_MS;
	iparm.mip_gap = 0;
	iparm.mir_cuts = GLP_ON;
	iparm.cb_func = tree_bound_cb;
	iparm.cb_info = &ti;
	ret = glp_intopt(c->lp, &iparm);
	st = glp_mip_status(c->lp);
	if (st == GLP_OPT || st == GLP_FEAS)
		bi->incumbent = glp_mip_obj_val(c->lp) * MiB;
	if (ret == 0 && st == GLP_OPT) {
		bi->kind = BOUND_MIP;
		bi->bound = bi->incumbent;
	} else if (ti.bound * MiB > bi->bound * (1 + 1e-9)) {	/* stopped: what it proved */
		bi->kind = BOUND_TREE;
		bi->bound = ti.bound * MiB;
	}
}

/*
 * The gap covering model: x_g whether gap g is spent off the device, w_v
 * whether value v is written out; min sum w_v size_v + sum x_g size_v (gaps a
 * touch closes) s.t. at each step the off gaps cover the deficit, and
 * w_v >= x_g.  Returns the best proven lower bound on the bytes of any
 * feasible plan, and fills @bi: each stage's value (the LP is the floor the
 * caller checks the bound against; -1 if the simplex failed), the kind of
 * bound returned, the MIP's incumbent.  @best: the fewest bytes of a
 * feasible plan known (ortmem's, Belady's): once the bound is within
 * MIP_CLOSE of it, no more is spent.
 *
 * Why the model's integral optimum is a lower bound on any feasible plan:
 * map a plan to the model by setting x_g = 1 when the buffer is off the
 * device at any step of gap g and w_v = 1 when v is ever written out.  The
 * plan pays a read-back for every non-tail gap with x_g = 1 (the buffer is
 * on the device at the gap's closing touch) and one write per written
 * buffer, so its bytes are >= the objective; a buffer off for part of a gap
 * is counted off for all of it, which only frees device bytes, so every
 * step's covering row holds (offsets and alignment waste are ignored, which
 * again only helps the model).  That point is integral and feasible.  w_v
 * needs no integrality constraint: with the x_g integral its only rows are
 * w_v >= x_g and w_v <= 1 and its cost is positive, so any optimum has
 * w_v = max x_g.
 *
 * Each bound below is the optimum of a relaxation of that integral model,
 * so each is <= the bytes of every plan: the LP; the LP with knapsack cover
 * cuts (kc_step(): each holds at every integral point); GLPK's branch and
 * cut from there (its MIR cuts are valid for the integral points too): the
 * optimum where it closes in MIP_MS, else the global bound of its tree
 * (tree_bound_cb()).
 */
double cover_bound(const struct graph *g, const struct model *m, uint64_t budget,
		   double best, struct bound_info *bi)
{
	struct cover c = { .lp = glp_create_prob() };
	uint64_t *deficit = calloc(m->n, sizeof(*deficit));
	uint32_t v, s;

	memset(bi, 0, sizeof(*bi));
	bi->incumbent = -1;
	bi->kind = BOUND_NONE;
	for (v = 0; v < g->n_vals; v++)
		for (s = life_lo(m, v); s < m->hi[v]; s++)
			deficit[s] += m->asz[v];
	for (s = 0; s < m->n; s++)
		deficit[s] = deficit[s] > budget ? deficit[s] - budget : 0;
	c.deficit = deficit;
	cover_build(&c, g, m);
	bi->bound = bi->kc = bi->lp = cover_lp(&c);
	if (bi->lp < 0)
		goto out;
	bi->kind = BOUND_LP;
	if (bi->lp * MIP_CLOSE < best) {
		bi->bound = bi->kc = kc_cuts(&c, m->n, bi->lp, best, &bi->n_cuts);
		if (bi->kc > bi->lp * (1 + 1e-9))
			bi->kind = BOUND_KC;
	}
	if (bi->bound * MIP_CLOSE < best)
		cover_mip(&c, bi);
out:
	cover_free(&c);
	free(deficit);
	return bi->bound;
}

static const char *const kind_name[] = {
	[BOUND_NONE] = "(none)", [BOUND_LP] = "(LP)", [BOUND_KC] = "(LP+KC)",
	[BOUND_TREE] = "(MIP tree)", [BOUND_MIP] = "(MIP)",
};

const char *bound_kind_name(enum bound_kind k)
{
	return kind_name[k];
}

/*
 * Every bound must lie between the LP optimum (a relaxation of each) and
 * the bytes of every integral point of the covering model known: GLPK's
 * incumbent, ortmem's plan (validated) and Belady's, which both map to
 * integral points.  Outside that range the model or a cut is wrong, so say
 * so loudly rather than print a ratio against it.  The slack covers GLPK's
 * tolerances on values scaled to MiB.
 */
bool bound_check(const struct graph *g, uint64_t budget, const struct bound_info *bi,
		 uint64_t moved, uint64_t bel)
{
	double eps = 1e-6 * fmax((double)MiB, bi->lp), b = bi->bound;

	if (b + eps >= bi->lp && b <= (double)moved + eps &&
	    (bel == UINT64_MAX || b <= (double)bel + eps) &&
	    (bi->incumbent < 0 || b <= bi->incumbent + eps))
		return false;
	printf("!!! WARNING: %s at %.1f MiB: bound %.1f %s outside [LP %.1f, min(ortmem %.1f,"
	       " Belady %.1f, incumbent %.1f)]: the covering model is wrong\n", g->name,
	       (double)budget / MiB, b / MiB, bound_kind_name(bi->kind), bi->lp / MiB,
	       (double)moved / MiB, bel == UINT64_MAX ? -1.0 : (double)bel / MiB,
	       bi->incumbent / MiB);
	return true;
}
