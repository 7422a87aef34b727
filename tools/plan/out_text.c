// SPDX-License-Identifier: MIT
/*
 * The table and the JSON of a plan.  JSON strings are escaped byte by
 * byte: value names come from the file and may hold anything.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_model.h"

static const char *const tier_names[ORTMEM_TIER_COUNT] = { "device", "host", "disk" };

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Name of plan value @p: its ONNX name, or "<body peak of NODE>". */
static const char *pval_name(const struct md_model *m, const struct pm_result *r,
			     uint32_t p, char *buf, size_t len)
{
	if (r->pval_value[p] >= 0)
		return m->values[r->pval_value[p]].name;
	snprintf(buf, len, "body peak of %s", md_node_label(m, (uint32_t)r->pval_node[p]));
	return buf;
}

static void print_unknowns(FILE *f, const struct md_model *m, const struct pm_result *r)
{
	uint32_t k, j;

	for (k = 0; k < r->n_unknown_ops; k++) {
		const struct md_node *n = &m->nodes[r->unknown_ops[k]];

		fprintf(f, "  unknown op %s%s%s at node '%s'; its outputs:", n->p->op_type,
			n->p->domain && *n->p->domain ? " of domain " : "",
			n->p->domain ? n->p->domain : "", md_node_label(m, r->unknown_ops[k]));
		for (j = 0; j < n->n_out; j++)
			if (n->out[j] >= 0)
				fprintf(f, " '%s'", m->values[n->out[j]].name);
		fputc('\n', f);
	}
	for (k = 0; k < r->n_deferred; k++) {
		const struct md_value *v = &m->values[r->deferred[k]];

		fprintf(f, "  unknown size: '%s' (from %s node '%s')\n", v->name,
			m->nodes[v->producer].p->op_type, md_node_label(m, (uint32_t)v->producer));
	}
}

/* Has a graph input a dim (or rank) the model leaves open? */
static bool symbolic_inputs(const struct md_model *m)
{
	const struct md_graph *g = &m->graphs[0];
	uint32_t i;
	int32_t k;

	for (i = 0; i < g->n_inputs; i++) {
		const struct md_value *x = &m->values[g->inputs[i]];

		if (x->rank < 0)
			return true;
		for (k = 0; k < x->rank; k++)
			if (x->dims[k] < 0)
				return true;
	}
	return false;
}

/* Outputs of ops whose size depends on data (NonZero, TopK with k from
 * data, ...): sized at their most under --upper-bounds, else unknown. */
static void print_data_dep(FILE *f, const struct md_model *m)
{
	uint32_t v;
	uint64_t b;
	bool unsized = false;

	for (v = 0; v < m->n_values; v++) {
		const struct md_value *x = &m->values[v];
		const struct md_node *n;

		if (!x->data_dep || x->producer < 0)
			continue;
		n = &m->nodes[x->producer];
		if (md_value_bytes(x, &b))
			unsized |= !x->sized_zero;
		else if (x->bounded)
			fprintf(f, "upper bound: '%s' (from %s node '%s') sized at its most, %" PRIu64
				" bytes; its size depends on the data\n", x->name, n->p->op_type,
				md_node_label(m, (uint32_t)x->producer), b);
	}
	if (unsized && !m->upper_bounds)
		fprintf(f, "some sizes depend on the data: plan them at their most with --upper-bounds\n");
}

void out_table(FILE *f, const struct md_model *m, const struct pm_result *r)
{
	uint64_t moved[ORTMEM_TIER_COUNT] = { 0 }, all = 0;
	struct ortmem_plan_moves mv;
	uint32_t s;
	int t;

	if (r->status == -ORTMEM_E_PLAN_DEFERRED) {
		fprintf(f, "status: deferred (%u value(s) of unknown size, %u unknown op(s))\n",
			r->n_deferred, r->n_unknown_ops);
		print_unknowns(f, m, r);
		fprintf(f, "naive (known sizes) %" PRIu64 " bytes, weights %" PRIu64 " bytes\n",
			r->naive_bytes, r->weights_bytes);
		if (symbolic_inputs(m))
			fprintf(f, "pin symbolic input dims with --dim NAME:AXIS=N\n");
		print_data_dep(f, m);
		return;
	}
	/* Bytes moved per tier: what goes to and comes from that tier. */
	for (s = 0; s < r->n_steps; s++) {
		mv.sz = sizeof(mv);
		if (ortmem_plan_step_moves(r->plan, s, &mv))
			continue;
		for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
			moved[t] += mv.prefetch[t] + mv.spill[t];
			all += mv.prefetch[t] + mv.spill[t];
		}
	}
	fprintf(f, "status: planned, %u steps, %" PRIu64 " buffers\n", r->n_steps, r->st.n_buffers);
	fprintf(f, "%-8s %14s %14s %8s %14s\n", "tier", "arena", "lower bound", "arena/LB", "moved");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		uint64_t a = r->st.arena[t], lb = r->st.tier_lower_bound[t];

		fprintf(f, "%-8s %14" PRIu64 " %14" PRIu64 " %8.4f %14" PRIu64 "\n", tier_names[t],
			a, lb, lb ? (double)a / (double)lb : 1.0, moved[t]);
	}
	fprintf(f, "%-8s %14" PRIu64 " %14" PRIu64 " %8.4f %14" PRIu64 "%s\n", "all",
		r->st.arena[0] + r->st.arena[1] + r->st.arena[2], r->st.lower_bound,
		r->st.arena_over_lb, all, r->st.optimal ? "  (optimal)" : "");
	fprintf(f, "naive    %14" PRIu64 "  (one buffer per planned value)\n"
		"weights  %14" PRIu64 "  (initializers and folded constants)\n"
		"moved    %14" PRIu64 "  (prefetch %" PRIu64 ", spill %" PRIu64 ")\n",
		r->naive_bytes, r->weights_bytes, all, r->st.prefetch_bytes, r->st.spill_bytes);
	if (r->st.move_bytes)
		fprintf(f, "within   %14" PRIu64 "  (moved within the device arena, between no tiers)\n",
			r->st.move_bytes);
	if (r->validated)
		fprintf(f, "validated: offsets, tiers, transfers and moves checked\n");
	print_data_dep(f, m);
	if (r->st.arena[0] + r->st.arena[1] + r->st.arena[2] != r->st.lower_bound)
		fprintf(f, "the arenas are %.2f%% over the lower bound (%" PRIu64 " bytes)%s\n",
			(r->st.arena_over_lb - 1.0) * 100.0,
			r->st.arena[0] + r->st.arena[1] + r->st.arena[2] - r->st.lower_bound,
			r->st.arena[0] == r->st.tier_lower_bound[0] ?
			"; each tier's arena is at its own bound, the budgets split the buffers" : "");
}

static void json_buffers(FILE *f, const struct md_model *m, const struct pm_result *r)
{
	int64_t *lo = calloc(r->n_pvals + 1, sizeof(*lo)), *hi = calloc(r->n_pvals + 1, sizeof(*hi));
	/* The views of each buffer, as linked lists: one pass, not n^2. */
	uint32_t *first_view = malloc(sizeof(uint32_t) * (r->n_pvals + 1));
	uint32_t *next_view = malloc(sizeof(uint32_t) * (r->n_pvals + 1));
	uint32_t p, q;
	char buf[600];
	bool first = true;

	fprintf(f, "  \"buffers\": [");
	if (!lo || !hi || !first_view || !next_view || pm_intervals(m, r, lo, hi))
		goto out;
	memset(first_view, 0xff, sizeof(uint32_t) * (r->n_pvals + 1));
	for (q = r->n_pvals; q-- > 0;)
		if (r->pval_root[q] != q && r->pval_value[q] >= 0) {
			next_view[q] = first_view[r->pval_root[q]];
			first_view[r->pval_root[q]] = q;
		}
	for (p = 0; p < r->n_pvals; p++) {
		uint64_t off, size = 0;
		int tier = ortmem_plan_offset(r->plan, p, &off);
		bool views = false;

		if (tier < 0 || r->pval_root[p] != p)
			continue;	/* a graph input, or a view */
		size = r->pval_size[p];
		fprintf(f, "%s\n    {\"value\": ", first ? "" : ",");
		json_str(f, pval_name(m, r, p, buf, sizeof(buf)));
		fprintf(f, ", \"first_step\": %lld, \"last_step\": %lld, \"size\": %" PRIu64
			", \"tier\": \"%s\", \"offset\": %" PRIu64,
			(long long)lo[p], (long long)hi[p], size, tier_names[tier % ORTMEM_TIER_COUNT], off);
		for (q = first_view[p]; q != UINT32_MAX; q = next_view[q]) {
			fprintf(f, "%s", views ? ", " : ", \"views\": [");
			json_str(f, m->values[r->pval_value[q]].name);
			views = true;
		}
		fprintf(f, "%s}", views ? "]" : "");
		first = false;
	}
out:
	fprintf(f, "\n  ],\n");
	free(lo);
	free(hi);
	free(first_view);
	free(next_view);
}

void out_json(FILE *f, const struct md_model *m, const struct pm_result *r)
{
	bool planned = r->status == 0, first;
	uint32_t k, s;
	int t;

	fprintf(f, "{\n  \"status\": \"%s\",\n", planned ? "planned" : "deferred");
	fprintf(f, "  \"naive_bytes\": %" PRIu64 ",\n  \"weights_bytes\": %" PRIu64 ",\n",
		r->naive_bytes, r->weights_bytes);
	fprintf(f, "  \"lower_bound_bytes\": %" PRIu64 ",\n", planned ? r->st.lower_bound : 0);
	fprintf(f, "  \"arena_bytes\": %" PRIu64 ",\n",
		planned ? r->st.arena[0] + r->st.arena[1] + r->st.arena[2] : 0);
	fprintf(f, "  \"steps\": %u,\n", r->n_steps);
	fprintf(f, "  \"deferred\": [");
	for (k = 0; k < r->n_deferred; k++) {
		fprintf(f, "%s", k ? ", " : "");
		json_str(f, m->values[r->deferred[k]].name);
	}
	fprintf(f, "],\n  \"upper_bounded\": [");
	for (k = 0, first = true; k < m->n_values; k++)
		if (m->values[k].data_dep && m->values[k].bounded) {
			fprintf(f, "%s", first ? "" : ", ");
			json_str(f, m->values[k].name);
			first = false;
		}
	fprintf(f, "],\n  \"unknown_ops\": [");
	for (k = 0; k < r->n_unknown_ops; k++) {
		const struct md_node *n = &m->nodes[r->unknown_ops[k]];

		fprintf(f, "%s{\"op\": ", k ? ", " : "");
		json_str(f, n->p->op_type);
		fprintf(f, ", \"node\": ");
		json_str(f, md_node_label(m, r->unknown_ops[k]));
		fputc('}', f);
	}
	fprintf(f, "]");
	if (!planned) {
		fprintf(f, "\n}\n");
		return;
	}
	fprintf(f, ",\n  \"tiers\": {");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		fprintf(f, "%s\"%s\": {\"arena_bytes\": %" PRIu64 ", \"lower_bound_bytes\": %" PRIu64 "}",
			t ? ", " : "", tier_names[t], r->st.arena[t], r->st.tier_lower_bound[t]);
	fprintf(f, "},\n  \"arena_over_lb\": %.6f,\n  \"optimal\": %s,\n  \"validated\": %s,\n",
		r->st.arena_over_lb, r->st.optimal ? "true" : "false", r->validated ? "true" : "false");
	fprintf(f, "  \"device_move_bytes\": %" PRIu64 ",\n", r->st.move_bytes);
	fprintf(f, "  \"solve_us\": %" PRIu64 ",\n  \"first_plan_us\": %" PRIu64 ",\n",
		r->st.solve_ns / 1000, r->st.first_plan_ns / 1000);
	json_buffers(f, m, r);
	fprintf(f, "  \"moves\": [");
	for (s = 0; s < r->n_steps; s++) {
		struct ortmem_plan_moves mv;

		mv.sz = sizeof(mv);
		if (ortmem_plan_step_moves(r->plan, s, &mv))
			memset(&mv, 0, sizeof(mv));
		fprintf(f, "%s\n    {\"step\": %u, \"node\": ", s ? "," : "", s);
		json_str(f, md_node_label(m, r->step_node[s]));
		fprintf(f, ", \"op\": ");
		json_str(f, m->nodes[r->step_node[s]].p->op_type);
		fprintf(f, ", \"prefetch\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "]"
			", \"spill\": [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "], \"device_move\": %" PRIu64 "}",
			mv.prefetch[0], mv.prefetch[1], mv.prefetch[2],
			mv.spill[0], mv.spill[1], mv.spill[2], mv.device_move);
	}
	fprintf(f, "\n  ]\n}\n");
}
