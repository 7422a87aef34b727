// SPDX-License-Identifier: MIT
/*
 * make bench-place: the lower bound on bytes moved, from the gap covering
 * model solved by GLPK (the LP relaxation, then the MIP where it closes).
 */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "place_bench.h"

/*
 * The gap covering model (GLPK): its LP relaxation, then the same model
 * with integral gap columns.  Sets *lp_out to the LP optimum (-1 if the
 * simplex failed) and *kind to the bound returned.  @best: the fewest bytes
 * of a feasible plan known (ortmem's, Belady's), to skip a needless MIP.
 *
 * Why the MIP optimum is a lower bound on any feasible plan: map a plan to
 * the model by setting x_g = 1 when the buffer is off the device at any
 * step of gap g and w_v = 1 when v is ever written out.  The plan pays a
 * read-back for every non-tail gap with x_g = 1 (the buffer is on the
 * device at the gap's closing touch) and one write per written buffer, so
 * its bytes are >= the objective; a buffer off for part of a gap is counted
 * off for all of it, which only frees device bytes, so every step's
 * covering row holds (offsets and alignment waste are ignored, which again
 * only helps the model).  That point is integral and feasible, so the MIP
 * optimum is <= the plan's bytes, and >= the LP optimum (a relaxation of
 * it).  Only the x_g must be integral: a fractional x_g would count a gap
 * partly off, which no plan can do.  w_v needs no integrality constraint:
 * with the x_g integral its only rows are w_v >= x_g and w_v <= 1 and its
 * cost is positive, so any optimum has w_v = max x_g, already 0 or 1;
 * leaving it continuous spares the branch and bound a column per buffer.
 */
double cover_bound(const struct graph *g, const struct model *m, uint64_t budget,
			  double best, double *lp_out, enum bound_kind *kind)
{
	glp_prob *lp = glp_create_prob();
	int *ia = NULL, *ja = NULL, nz = 0, cap = 0, col, row, ret, n_gap = 0;
	double *ar = NULL, obj = -1, mip;
	uint32_t v, k, s, end, *wcol = calloc(g->n_vals, sizeof(*wcol));
	uint64_t *need = calloc(m->n, sizeof(*need));
	glp_smcp parm;
	glp_iocp iparm;

#define NZ(r, c, a) do { if (nz + 1 >= cap) { cap = cap ? cap * 2 : 4096; \
	ia = xrealloc(ia, sizeof(int) * cap); ja = xrealloc(ja, sizeof(int) * cap); \
	ar = xrealloc(ar, sizeof(double) * cap); } \
	nz++; ia[nz] = (r); ja[nz] = (c); ar[nz] = (a); } while (0)

	*kind = BOUND_NONE;
	glp_set_obj_dir(lp, GLP_MIN);
	/* rows 1..n: covering per step, scaled to MiB for the solver */
	glp_add_rows(lp, (int)m->n);
	for (v = 0; v < g->n_vals; v++)
		for (s = m->t_idx[v] < m->t_idx[v + 1] ? m->t_step[m->t_idx[v]] : m->hi[v];
		     s < m->hi[v]; s++)
			need[s] += m->asz[v];
	for (s = 0; s < m->n; s++)
		glp_set_row_bnds(lp, (int)s + 1, GLP_LO,
				 need[s] > budget ? (double)(need[s] - budget) / MiB : 0, 0);
	for (v = 0; v < g->n_vals; v++)
		for (k = m->t_idx[v]; k < m->t_idx[v + 1]; k++) {
			bool tail = k + 1 == m->t_idx[v + 1];

			end = tail ? m->hi[v] : m->t_step[k + 1];
			if (end <= m->t_step[k] + 1)
				continue;
			if (!wcol[v]) {
				wcol[v] = (uint32_t)glp_add_cols(lp, 1);
				glp_set_col_bnds(lp, (int)wcol[v], GLP_DB, 0, 1);
				glp_set_obj_coef(lp, (int)wcol[v], (double)g->size[v] / MiB);
			}
			col = glp_add_cols(lp, 1);
			n_gap++;
			glp_set_col_kind(lp, col, GLP_BV);	/* simplex ignores it */
			glp_set_obj_coef(lp, col, tail ? 0 : (double)g->size[v] / MiB);
			for (s = m->t_step[k] + 1; s < end; s++)
				NZ((int)s + 1, col, (double)m->asz[v] / MiB);
			row = glp_add_rows(lp, 1);	/* w_v - x_g >= 0 */
			glp_set_row_bnds(lp, row, GLP_LO, 0, 0);
			NZ(row, (int)wcol[v], 1.0);
			NZ(row, col, -1.0);
		}
	glp_load_matrix(lp, nz, ia, ja, ar);
	glp_init_smcp(&parm);
	parm.msg_lev = GLP_MSG_OFF;
	parm.presolve = GLP_ON;
	ret = glp_simplex(lp, &parm);
	*lp_out = ret == 0 && glp_get_status(lp) == GLP_OPT ? glp_get_obj_val(lp) * MiB : -1;
	if (*lp_out < 0)
		goto out;
	obj = *lp_out;
	*kind = BOUND_LP;
	if (obj * MIP_CLOSE >= best) {
		*kind = BOUND_LP_CLOSE;
		goto out;
	}
	if (n_gap > MIP_MAX_COLS) {
		*kind = BOUND_MIP_SKIP;
		goto out;
	}
	glp_init_iocp(&iparm);
	iparm.msg_lev = GLP_MSG_OFF;
	iparm.presolve = GLP_ON;
	iparm.tm_lim = MIP_MS;
	iparm.mip_gap = 0;
	ret = glp_intopt(lp, &iparm);
	mip = glp_mip_obj_val(lp) * MiB;
	if (ret == 0 && glp_mip_status(lp) == GLP_OPT) {
		obj = mip;	/* the caller checks it against the LP */
		*kind = BOUND_MIP;
	} else {
		*kind = BOUND_MIP_TIME;	/* GLP_ETMLIM, or any failure: not proven */
	}
out:
	glp_delete_prob(lp);
	free(ia);
	free(ja);
	free(ar);
	free(wcol);
	free(need);
	return obj;
#undef NZ
}

static const char *const kind_name[] = {
	[BOUND_NONE] = "(none)", [BOUND_LP] = "(LP)", [BOUND_MIP] = "(MIP)",
	[BOUND_MIP_TIME] = "(LP, MIP time)", [BOUND_MIP_SKIP] = "(LP, too big)",
	[BOUND_LP_CLOSE] = "(LP, <1%)",
};

const char *bound_kind_name(enum bound_kind k)
{
	return kind_name[k];
}

/*
 * The MIP optimum must lie between the LP optimum (its relaxation) and the
 * bytes of every feasible plan: ortmem's (validated) and Belady's both map
 * to integral points of the covering model.  Outside that range the model
 * is wrong, so say so loudly rather than print a ratio against it.  The
 * slack covers GLPK's tolerances on values scaled to MiB.
 */
bool mip_check(const struct graph *g, uint64_t budget, double mip, double lp,
	       uint64_t moved, uint64_t bel)
{
	double eps = 1e-6 * fmax((double)MiB, lp);

	if (mip + eps >= lp && mip <= (double)moved + eps &&
	    (bel == UINT64_MAX || mip <= (double)bel + eps))
		return false;
	printf("!!! WARNING: %s at %.1f MiB: MIP bound %.1f outside [LP %.1f, min(ortmem %.1f,"
	       " Belady %.1f)]: the covering model is wrong\n", g->name, (double)budget / MiB,
	       mip / MiB, lp / MiB, (double)moved / MiB,
	       bel == UINT64_MAX ? -1.0 : (double)bel / MiB);
	return true;
}
