/* SPDX-License-Identifier: MIT */
/*
 * From an inferred model to a solved ortmem plan of its main graph
 * (plan_model.c), and the three ways to print it (out_*.c).
 */
#ifndef ORTMEM_PLAN_PLAN_MODEL_H
#define ORTMEM_PLAN_PLAN_MODEL_H

#include <stdio.h>

#include <ortmem/ortmem.h>

#include "model.h"

struct pm_opts {
	bool fold;		/* constants are weights, not activations */
	bool views;		/* Reshape & co. alias their input */
	struct ortmem_plan_opts plan;
};

struct pm_result {
	int status;		/* 0 planned, -ORTMEM_E_PLAN_DEFERRED, or an error */
	struct ortmem_plan *plan;
	uint32_t n_steps;
	uint32_t *step_node;	/* node id of each step */
	uint32_t n_pvals;
	int64_t *pval_value;	/* md value of each plan value; -1: a body's peak */
	int32_t *pval_node;	/* for a body's peak: its node */
	uint64_t *pval_size;	/* bytes (a body's peak: its size) */
	uint32_t *pval_root;	/* the buffer a view aliases; itself otherwise */
	uint64_t naive_bytes;
	uint64_t weights_bytes;
	uint64_t peak_live;	/* lower bound, no alignment */
	uint32_t n_deferred;
	int64_t *deferred;	/* md values whose size is unknown */
	uint32_t n_unknown_ops;
	uint32_t *unknown_ops;	/* node ids */
	struct ortmem_plan_stats st;
	bool top_refused;	/* the main graph's solve failed (steps are its) */
	bool validated;		/* solved under ORTMEM_PLAN_F_VALIDATE, and it passed */
	char err[MD_ERR_LEN];
};

int pm_build(const struct md_model *m, const struct pm_opts *o,
	     struct pm_result *r);
void pm_free(struct pm_result *r);
/* Is @v a buffer's owner in the plan (not a view, not folded)? */
bool pm_is_view_op(const char *op);

/* Per plan value: the first and last step its buffer is live (views
 * counted on their root; -1 when never), in @lo/@hi (n_pvals each). */
int pm_intervals(const struct md_model *m, const struct pm_result *r,
		 int64_t *lo, int64_t *hi);

void out_table(FILE *f, const struct md_model *m, const struct pm_result *r);
void out_json(FILE *f, const struct md_model *m, const struct pm_result *r);
int out_svg(FILE *f, const struct md_model *m, const struct pm_result *r,
	    const char *title);

#endif /* ORTMEM_PLAN_PLAN_MODEL_H */
