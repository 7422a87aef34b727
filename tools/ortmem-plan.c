// SPDX-License-Identifier: MIT
/*
 * ortmem-plan: plan an ONNX model's activations across the tiers.
 *
 * Reads the model (tools/plan/onnx_load.c), infers every shape
 * (tools/plan/shape*.c), builds the planner's graph with folding and views
 * (tools/plan/plan_model.c), solves it with libortmem and prints a table,
 * JSON, and/or an SVG timeline.  Exit status: 0 planned, 3 deferred (sizes
 * unknown), 1 error, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_model.h"

#define MAX_PINS 256

static const char *const prog = "ortmem-plan";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options] MODEL.onnx\n"
		"  --dim NAME:AXIS=N   pin axis AXIS of graph input NAME to N (repeatable)\n"
		"  --no-fold           count constants and what is computed from them as activations\n"
		"  --no-views          give Reshape, Flatten, Squeeze, Unsqueeze, Identity buffers of their own\n"
		"  --device SIZE       device budget (K, M, G suffixes); with --host/--disk, the placement\n"
		"  --host SIZE         host budget\n"
		"  --disk SIZE         disk budget\n"
		"  --align N           device offsets/sizes rounded to N bytes (default 1: exact sizes)\n"
		"  --time-budget-ms N  the planner's search time (default %d)\n"
		"  --move-ratio N      bytes copied within the device that weigh as one byte moved\n"
		"                      between tiers: the device's copy rate over its host link's\n"
		"                      (a power of two, 1 to %d; default %d)\n"
		"  --json              print JSON instead of a table\n"
		"  --svg FILE          write the memory timeline as SVG\n"
		"  --shapes            print every value's inferred type and shape, then plan\n"
		"  --upper-bounds      size outputs that depend on data (NonZero, Unique, Compress,\n"
		"                      NonMaxSuppression, TopK with k from data) at the most their\n"
		"                      inputs allow, instead of deferring\n"
		"  --validate          check the plan against the planner's validator (offsets,\n"
		"                      tiers, transfers, moves); a plan that fails it is an error\n",
		prog, ORTMEM_PLAN_DEFAULT_BUDGET_US / 1000, ORTMEM_PLAN_MOVE_RATIO_MAX,
		ORTMEM_PLAN_DEFAULT_MOVE_RATIO);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* NAME:AXIS=N; NAME may itself hold ':' (onnx::Flatten_0). */
static int parse_pin(char *arg, struct md_pin *p)
{
	char *eq = strrchr(arg, '='), *colon, *end;
	long long axis, val;

	if (!eq)
		return -1;
	*eq = '\0';
	colon = strrchr(arg, ':');
	if (!colon || colon == arg)
		return -1;
	*colon = '\0';
	errno = 0;
	axis = strtoll(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || axis < 0 || axis >= MD_MAX_RANK)
		return -1;
	val = strtoll(eq + 1, &end, 10);
	if (errno || *end || end == eq + 1 || val < 0)
		return -1;
	p->input = arg;
	p->axis = (int)axis;
	p->value = val;
	return 0;
}

struct cli {
	struct md_pin pins[MAX_PINS];
	size_t n_pins;
	struct pm_opts o;
	bool json;
	bool shapes;
	bool upper_bounds;
	const char *svg;
	const char *model;
};

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longs[] = {
		{ "dim", required_argument, NULL, 'd' },
		{ "no-fold", no_argument, NULL, 'F' },
		{ "no-views", no_argument, NULL, 'V' },
		{ "device", required_argument, NULL, 'D' },
		{ "host", required_argument, NULL, 'H' },
		{ "disk", required_argument, NULL, 'K' },
		{ "align", required_argument, NULL, 'a' },
		{ "time-budget-ms", required_argument, NULL, 't' },
		{ "move-ratio", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "svg", required_argument, NULL, 's' },
		{ "shapes", no_argument, NULL, 'S' },
		{ "upper-bounds", no_argument, NULL, 'U' },
		{ "validate", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t v;
	int opt, tier;

	c->o.fold = c->o.views = true;
	c->o.plan.sz = sizeof(c->o.plan);
	c->o.plan.align[ORTMEM_TIER_DEVICE] = 1;
	while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (opt) {
		case 'd':
			if (c->n_pins == MAX_PINS || parse_pin(optarg, &c->pins[c->n_pins])) {
				fprintf(stderr, "%s: --dim wants NAME:AXIS=N (a graph input, an axis, a size >= 0), at most %d of them\n",
					prog, MAX_PINS);
				return 2;
			}
			c->n_pins++;
			break;
		case 'F': c->o.fold = false; break;
		case 'V': c->o.views = false; break;
		case 'D': case 'H': case 'K':
			tier = opt == 'D' ? ORTMEM_TIER_DEVICE : opt == 'H' ? ORTMEM_TIER_HOST : ORTMEM_TIER_DISK;
			if (parse_size(optarg, &v) || !v) {
				fprintf(stderr, "%s: '%s' is not a size; give bytes with an optional K, M, G or T suffix, e.g. 2G\n",
					prog, optarg);
				return 2;
			}
			c->o.plan.budget[tier] = v;
			break;
		case 'a':
			if (parse_size(optarg, &v) || !v || (v & (v - 1))) {
				fprintf(stderr, "%s: --align wants a power of two, e.g. 256\n", prog);
				return 2;
			}
			c->o.plan.align[ORTMEM_TIER_DEVICE] = v;
			break;
		case 't':
			if (parse_size(optarg, &v) || !v || v > 3600ull * 1000) {
				fprintf(stderr, "%s: --time-budget-ms wants milliseconds, 1 to 3600000\n", prog);
				return 2;
			}
			c->o.plan.time_budget_us = v * 1000;
			break;
		case 'm':
			if (parse_size(optarg, &v) || !v || (v & (v - 1)) ||
			    v > ORTMEM_PLAN_MOVE_RATIO_MAX) {
				fprintf(stderr, "%s: --move-ratio wants a power of two from 1 to %d (a device copy's rate over a host link's, e.g. 32), not '%s'\n",
					prog, ORTMEM_PLAN_MOVE_RATIO_MAX, optarg);
				return 2;
			}
			c->o.plan.move_ratio = (uint32_t)v;
			break;
		case 'j': c->json = true; break;
		case 'S': c->shapes = true; break;
		case 'U': c->upper_bounds = true; break;
		case 'v': c->o.plan.flags |= ORTMEM_PLAN_F_VALIDATE; break;
		case 's': c->svg = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	c->model = argv[optind];
	return 0;
}

/* One line a value: graph, name, element type, dims (? unknown). */
static void print_shapes(const struct md_model *m)
{
	uint32_t v;
	int32_t k;

	for (v = 0; v < m->n_values; v++) {
		const struct md_value *x = &m->values[v];

		printf("shape g%u %s elem=%d%s ", x->graph, x->name, x->elem,
		       x->is_const ? " const" : "");
		if (x->rank < 0) {
			printf("rank?\n");
			continue;
		}
		putchar('[');
		for (k = 0; k < x->rank; k++) {
			if (x->dims[k] < 0)
				printf("%s?", k ? "," : "");
			else
				printf("%s%lld", k ? "," : "", (long long)x->dims[k]);
		}
		printf("]%s\n", x->has_data ? " (contents known)" : "");
	}
}

static int write_svg(const struct cli *c, const struct md_model *m,
		     const struct pm_result *r)
{
	FILE *f = fopen(c->svg, "w");
	const char *base = strrchr(c->model, '/');
	int ret;

	if (!f) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, c->svg, strerror(errno));
		return 1;
	}
	ret = out_svg(f, m, r, base ? base + 1 : c->model);
	if (fclose(f) || ret) {
		fprintf(stderr, "%s: writing %s failed\n", prog, c->svg);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cli c;
	Onnx__ModelProto *proto = NULL;
	struct md_model m;
	struct pm_result r;
	char err[MD_ERR_LEN];
	int ret;

	ret = parse_args(argc, argv, &c);
	if (ret)
		return ret;
	ret = md_load_file(c.model, &proto, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", prog, c.model, err);
		return 1;
	}
	ret = md_build(&m, proto);
	m.upper_bounds = c.upper_bounds;
	if (!ret)
		ret = md_infer(&m, c.pins, c.n_pins);
	if (ret) {
		fprintf(stderr, "%s: %s: %s\n", prog, c.model, m.err);
		if (c.shapes)
			print_shapes(&m);
		md_free(&m);
		md_proto_free(proto);
		return 1;
	}
	if (c.shapes)
		print_shapes(&m);
	ret = pm_build(&m, &c.o, &r);
	if (ret && ret != -ORTMEM_E_PLAN_DEFERRED) {
		fprintf(stderr, "%s: %s: planning failed: %s\n", prog, c.model, r.err);
		pm_free(&r);
		md_free(&m);
		md_proto_free(proto);
		return 1;
	}
	if (c.json)
		out_json(stdout, &m, &r);
	else
		out_table(stdout, &m, &r);
	if (c.svg && !ret)
		ret = write_svg(&c, &m, &r);
	else if (c.svg)
		fprintf(stderr, "%s: no SVG: the plan is deferred\n", prog);
	if (!ret && r.status == -ORTMEM_E_PLAN_DEFERRED)
		ret = 3;
	if (r.status == -ORTMEM_E_PLAN_DEFERRED)
		ret = 3;
	pm_free(&r);
	md_free(&m);
	md_proto_free(proto);
	return ret;
}
