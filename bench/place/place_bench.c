// SPDX-License-Identifier: MIT
/*
 * make bench-place: bytes moved between the device and the slower tiers by
 * ortmem's placement, against peers computed in the same run on the
 * same schedule:
 *
 *  - Belady (place_belady.c): a simulation of furthest-next-use eviction
 *    (a value leaves the device when the step's live bytes exceed the
 *    budget, the resident value not used at that step whose next use is
 *    furthest going first; written out the first time it leaves, read back
 *    before its next use);
 *  - a lower bound from the gap covering model (GLPK), with x_g whether gap
 *    g is spent off the device and w_b whether buffer b is written out:
 *    min sum w_b size_b + sum x_g size_b (gaps a touch ends) subject to, at
 *    each step, sum over kept gaps <= budget - touches, and w_b >= x_g.
 *    Its LP relaxation, raised by knapsack cover cuts, then by GLPK's
 *    branch and cut (x_g binary): its optimum where proven, else the
 *    bound its search tree proved when stopped.  Each case prints which it
 *    got, "(LP)", "(LP+KC)", "(MIP tree)" or "(MIP)", with the LP and
 *    the cut LP beside it and "model <=": the least cost of an integral
 *    point known (GLPK's incumbent, ortmem's plan, Belady's), so the
 *    model's optimum lies between the bound and that (cover_bound() says
 *    why each is a bound; place_check tests them on tiny graphs);
 *  - for information, Belady with offsets: the same rule run by an
 *    allocator that must find each value a contiguous range (a schedule a
 *    runtime could follow); printed per budget and as a maximum, not on
 *    the last line, which compares against the Belady above;
 *  - for information, Belady compacted (place_compact.c): Belady's own
 *    residency laid out with offsets, the arena compacted where a value
 *    finds no hole, its bytes moved within the arena printed like ortmem's
 *    on-device moves, and tier bytes + moved / 16 for both (like for like:
 *    Belady above assumes compaction is free).
 *
 * Workloads: U-Net inference, ResNet and transformer training steps
 * (activations saved for the backward pass, read twice), transformer
 * inference stacks, random DAGs of 300 and 1,500 nodes.  Budgets: 30 % to
 * 90 % of the all-on-device lower bound, and exactly the largest step's
 * footprint.  Each plan is solved RUNS times: the bytes moved are the
 * median (spread in brackets; the packer's search is timed, so a plan can
 * change from run to run), and so is the time; every plan passes
 * ortmem_plan_validate().  "Moved" counts tier bytes (write-outs and
 * read-backs); the bytes the plan copies within the device arena
 * (ORTMEM_PLAN_XFER_MOVE, no tier crossed) are printed beside them, and so
 * are the tier bytes of the same plan under ORTMEM_PLAN_F_NO_MOVE, solved
 * interleaved with it (the line before the last gives the maxima).  Each
 * solve reports the time its first plan took (first_plan_ns of
 * ortmem_plan_stats): ortmem_plan_new(3) promises a solve within the
 * budget plus that, and a line before the last gives the most a case's
 * median solve took past its first plan, in time budgets (and the slowest
 * solve's).  The first plan is also timed alone (the fastest of
 * FIRST_RUNS solves under a time budget of 1 us), a check on the solve's
 * own figure: the line gives the range of the one over the other.
 *
 * Then, for information, dense graphs (a random tree, wide layers with
 * long skips; 3,000 and 10,000 values; 30 and 90 %): ortmem's tier bytes
 * against Belady's under the time budget and given 1 s, no bound (GLPK on
 * 10,000 values is minutes).  Their budgets count in the last line's
 * solved; their ratios are on a line of their own.
 *
 * For experiments: PLACE_ONLY=name runs one workload (dense: the dense
 * graphs), PLACE_DAGS="n:seed,..."
 * adds random DAGs the bench does not show, PLACE_TF="12t,6i,..." adds
 * transformer stacks of other depths (t: training step, i: inference;
 * counted as structured), PLACE_BUDGET_US=N solves with a
 * time budget of N us instead of the default, and PLACE_QUICK=1 skips GLPK
 * (the bound column is then Belady's bytes).
 */
#include <glpk.h>
#include <inttypes.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>
#include <ortmem/plan.h>

#include "place_bench.h"

#define RUNS 5
/* Solves timing the first plan alone, the fastest kept (noise only adds) */
#define FIRST_RUNS 3
/* On-device bytes per tier byte in the like-for-like figure: the library's
 * default weight (ORTMEM_PLAN_DEFAULT_MOVE_RATIO), a device copy at 16x a
 * host link. */
#define MOVE_RATIO ((double)ORTMEM_PLAN_DEFAULT_MOVE_RATIO)

/* Diffusion-style U-Net: three blocks a level, each output kept as a skip
 * that the decoder reads at the same level on the way up. */
static void unet(struct graph *g)
{
	uint32_t skip[16], n = 0, x, l, b;
	uint64_t sz = 16 * MiB;

	g->name = "unet-infer";
	x = g_input(g, sz);
	for (l = 0; l < 4; l++, sz /= 2) {
		for (b = 0; b < 3; b++)
			x = skip[n++] = op1(g, x, sz);
		if (l < 3)
			x = op1(g, x, sz / 2);		/* down-sample */
	}
	x = op1(g, x, sz * 2);				/* middle */
	for (l = 4; l-- > 0;) {
		sz *= 2;
		for (b = 0; b < 3; b++)
			x = op2(g, x, skip[--n], sz);	/* conv over (x, skip) */
		if (l)
			x = op1(g, x, sz * 2);		/* up-sample */
	}
	g->output[op1(g, x, sz / 4)] = true;
}

/* Backward of a saved chain: gradients flow back, each step reading the
 * gradient and the activation saved for it. */
static void backward(struct graph *g, const uint32_t *saved, uint32_t n, uint32_t loss)
{
	uint32_t grad = loss;

	while (n--)
		grad = op2(g, grad, saved[n], g->size[saved[n]]);
	g->output[grad] = true;
}

static void resnet_train(struct graph *g)
{
	uint32_t saved[256], n = 0, x, b, st;
	uint64_t sz = 24 * MiB;

	g->name = "resnet-train";
	x = g_input(g, sz);
	for (st = 0; st < 4; st++, sz /= 2)
		for (b = 0; b < 3; b++) {
			uint32_t in = x, y;

			y = saved[n++] = op1(g, in, sz);	/* conv */
			y = saved[n++] = op1(g, y, sz);		/* bn+relu */
			y = saved[n++] = op1(g, y, sz);		/* conv */
			x = saved[n++] = op2(g, y, in, sz);	/* add */
		}
	backward(g, saved, n, op1(g, x, 4096));
}

static uint32_t tf_layer(struct graph *g, uint32_t x, uint64_t d, uint32_t *saved, uint32_t *n)
{
	uint32_t ln, qkv, sc, pr, at, o, r, ln2, up, ge, dn;

	ln = op1(g, x, d);
	qkv = op1(g, ln, 3 * d);
	sc = op1(g, qkv, 2 * d);		/* attention scores */
	pr = op1(g, sc, 2 * d);			/* softmax */
	at = op2(g, pr, qkv, d);
	o = op1(g, at, d);
	r = op2(g, o, x, d);
	ln2 = op1(g, r, d);
	up = op1(g, ln2, 4 * d);
	ge = op1(g, up, 4 * d);
	dn = op1(g, ge, d);
	if (saved) {
		uint32_t keep[] = { ln, qkv, pr, at, r, ln2, up, ge };

		memcpy(saved + *n, keep, sizeof(keep));
		*n += sizeof(keep) / sizeof(keep[0]);
	}
	return op2(g, dn, r, d);
}

static void transformer(struct graph *g, uint32_t layers, bool train)
{
	uint32_t *saved = xrealloc(NULL, sizeof(*saved) * 8 * (layers + 1)), n = 0, x, l;
	uint64_t d = 4 * MiB;

	x = g_input(g, d);
	for (l = 0; l < layers; l++)
		x = tf_layer(g, x, d, train ? saved : NULL, &n);
	if (train)
		backward(g, saved, n, op1(g, x, 4096));
	else
		g->output[op1(g, x, d / 4)] = true;
	free(saved);
}

struct run {
	uint64_t moved;		/* the median of the runs */
	uint64_t moved_lo, moved_hi;
	uint64_t dmove;		/* bytes moved within the device arena, that run */
	uint64_t nomove;	/* the median with ORTMEM_PLAN_F_NO_MOVE */
	double ms[RUNS];
	double nomove_ms[RUNS];	/* solve times with ORTMEM_PLAN_F_NO_MOVE */
	double first_ms;	/* the fastest of FIRST_RUNS solves under 1 us */
	/* each solve's own first plan (first_plan_ns), and its time past it */
	double in_first_ms[RUNS], past_ms[RUNS];
	int ok;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The solves' time budget (0: the default; PLACE_BUDGET_US); 1 us while
 * ortmem_run() times the first plan alone. */
static uint64_t time_budget_us;
/* The solves' ortmem_plan_opts.move_ratio (0: the default, MOVE_RATIO). */
static uint32_t move_ratio;
/* For information, each case solved again at these move ratios (a copy
 * within the device at 32x a host link: H100-class HBM over PCIe 5; and
 * nearly free): how many tier bytes the placement trades for copies. */
static const uint32_t alt_ratio[] = { 32, 128, 1024 };
#define N_ALT (sizeof(alt_ratio) / sizeof(alt_ratio[0]))
#define ALT_RUNS 3

static double budget_ms(void)
{
	return (double)(time_budget_us ? time_budget_us : ORTMEM_PLAN_DEFAULT_BUDGET_US) / 1e3;
}

static struct ortmem_plan *build_plan_flags(const struct graph *g, uint64_t budget,
					   uint32_t flags)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { budget, 0, 0 },
		    .align = { ALIGN, 64, 4096 }, .flags = flags);
	struct ortmem_plan *p = NULL;
	uint32_t v, s;

	o.time_budget_us = time_budget_us;
	o.move_ratio = move_ratio;

	if (ortmem_plan_new(&o, &p))
		return NULL;
	for (v = 0; v < g->n_vals; v++)
		ortmem_plan_add_value(p, g->size[v], g->output[v] ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
	for (s = 0; s < g->n_nodes; s++)
		ortmem_plan_add_node(p, g->nodes[s].in, g->nodes[s].n_in,
				     g->nodes[s].out, g->nodes[s].n_out);
	return p;
}

static struct ortmem_plan *build_plan(const struct graph *g, uint64_t budget)
{
	return build_plan_flags(g, budget, 0);
}

static uint64_t all_on_device_bound(const struct graph *g)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p = build_plan(g, 0);

	if (!p || ortmem_plan_solve(p) || ortmem_plan_stats(p, &st)) {
		fprintf(stderr, "place_bench: %s: %s\n", g->name, ortmem_last_error_message());
		exit(1);
	}
	ortmem_plan_free(p);
	return st.lower_bound;
}

/* One solve with @flags, validated: its stats, or false (reported). */
static bool solve_once(const struct graph *g, uint64_t budget, uint32_t flags,
		       struct ortmem_plan_stats *st)
{
	struct ortmem_plan *p = build_plan_flags(g, budget, flags);
	bool ok = p && !ortmem_plan_solve(p) && !ortmem_plan_stats(p, st) &&
		  !ortmem_plan_validate(p);

	if (!ok)
		fprintf(stderr, "place_bench: %s at %" PRIu64 "%s: %s\n", g->name, budget,
			flags ? " (no moves)" : "", ortmem_last_error_message());
	ortmem_plan_free(p);
	return ok;
}

/*
 * One plan, RUNS times: tier bytes (the median: the packer's search is
 * timed, so a plan can differ from one run to the next), with the bytes
 * that run moved within the arena, times; and interleaved with each, the
 * same plan under ORTMEM_PLAN_F_NO_MOVE (what the placement moved without
 * moves), the median of its tier bytes.  Every plan validated.
 */
static void ortmem_run(const struct graph *g, uint64_t budget, struct run *r)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t moved[RUNS][2], nomove[RUNS];
	int i;

	r->ok = 1;
	for (i = 0; i < RUNS; i++) {
		if (!solve_once(g, budget, 0, &st)) {
			r->ok = 0;
			return;
		}
		moved[i][0] = st.prefetch_bytes + st.spill_bytes;
		moved[i][1] = st.move_bytes;
		r->ms[i] = (double)st.solve_ns / 1e6;
		r->in_first_ms[i] = (double)st.first_plan_ns / 1e6;
		r->past_ms[i] = (double)(st.solve_ns - st.first_plan_ns) / 1e6;
		if (!solve_once(g, budget, ORTMEM_PLAN_F_NO_MOVE, &st)) {
			r->ok = 0;
			return;
		}
		nomove[i] = st.prefetch_bytes + st.spill_bytes;
		r->nomove_ms[i] = (double)st.solve_ns / 1e6;
	}
	/* what the solve costs whatever the budget (ortmem_plan_new(3)) */
	r->first_ms = INFINITY;
	for (i = 0; i < FIRST_RUNS; i++) {
		uint64_t keep = time_budget_us;
		bool ok;

		time_budget_us = 1;
		ok = solve_once(g, budget, 0, &st);
		time_budget_us = keep;
		if (!ok) {
			r->ok = 0;
			return;
		}
		r->first_ms = fmin(r->first_ms, (double)st.solve_ns / 1e6);
	}
	qsort(r->nomove_ms, RUNS, sizeof(r->nomove_ms[0]), cmp_d);
	qsort(r->ms, RUNS, sizeof(r->ms[0]), cmp_d);
	qsort(r->in_first_ms, RUNS, sizeof(r->in_first_ms[0]), cmp_d);
	qsort(r->past_ms, RUNS, sizeof(r->past_ms[0]), cmp_d);
	qsort(moved, RUNS, sizeof(moved[0]), cmp_u64);	/* by tier bytes */
	qsort(nomove, RUNS, sizeof(nomove[0]), cmp_u64);
	r->moved = moved[RUNS / 2][0];
	r->dmove = moved[RUNS / 2][1];
	r->moved_lo = moved[0][0];
	r->moved_hi = moved[RUNS - 1][0];
	r->nomove = nomove[RUNS / 2];
}

/* Bounds that failed bound_check(): a wrong model, reported at the end */
static uint32_t bound_bad;
/* Cases whose compacted Belady failed its checks (place_compact.c) */
static uint32_t compact_bad;

struct totals {
	double x_struct, x_rand, y, y_off;
	double dmove, y_nomove;	/* move bytes / tier bytes; no moves x Belady */
	double bel_dmove;	/* Belady's compaction: move bytes / its tier bytes */
	double y_like;		/* (tier + moved / 16) over Belady's, compacted */
	double t_max;
	/* (solve - its first plan) / time budget: the median solve's, the
	 * slowest solve's; the first plan in a solve over the one alone */
	double past, past_max, first_lo, first_hi;
	uint32_t solved, feasible, kinds[BOUND_KINDS];
	double bound_ms;	/* time spent on the bounds */
	double y_dense, y_dense_1s;	/* dense graphs: x Belady, default budget and 1 s */
	/* at each alt_ratio: tier bytes x Belady; (tier + moved / ratio) x
	 * Belady's compacted, weighed alike */
	double y_alt[N_ALT], like_alt[N_ALT];
};

/* The fewest bytes the covering model's optimum can be: its best integral
 * point known (GLPK's incumbent, ortmem's plan, Belady's). */
static double model_up(const struct bound_info *bi, uint64_t moved, uint64_t bel)
{
	double up = fmin((double)moved, (double)bel);

	return bi->incumbent >= 0 ? fmin(up, bi->incumbent) : up;
}

/* The lower bound of one case (timed, checked); PLACE_QUICK: Belady's bytes. */
static double case_bound(const struct graph *g, const struct model *m, uint64_t budget,
			 uint64_t moved, uint64_t bel, struct bound_info *bi, struct totals *tot)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (getenv("PLACE_QUICK"))	/* no GLPK: Belady stands in */
		*bi = (struct bound_info){ .lp = (double)bel, .kc = (double)bel,
					   .bound = (double)bel, .incumbent = -1 };
	else
		cover_bound(g, m, budget, fmin((double)moved, (double)bel), bi);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	bi->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (bi->kind != BOUND_NONE)
		bound_bad += bound_check(g, budget, bi, moved, bel);
	tot->kinds[bi->kind]++;
	tot->bound_ms += bi->ms;
	return bi->bound;
}

/*
 * For information: @g at @budget solved ALT_RUNS times at each alt_ratio,
 * the median tier bytes against Belady's (@bel) and, weighed at the same
 * ratio, against Belady's compacted (@ci); printed on one line, the maxima
 * into @tot.
 */
static void ratio_runs(const struct graph *g, uint64_t budget, uint64_t bel,
		       const struct compact_info *ci, struct totals *tot)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t run[ALT_RUNS][2];
	unsigned a, i;

	printf("        move ratio");
	for (a = 0; a < N_ALT; a++) {
		double y, like_o, like_b;

		move_ratio = alt_ratio[a];
		for (i = 0; i < ALT_RUNS; i++) {
			if (!solve_once(g, budget, 0, &st)) {
				move_ratio = 0;
				printf(" %u: REFUSED\n", alt_ratio[a]);
				return;
			}
			run[i][0] = st.prefetch_bytes + st.spill_bytes;
			run[i][1] = st.move_bytes;
		}
		move_ratio = 0;
		qsort(run, ALT_RUNS, sizeof(run[0]), cmp_u64);
		y = bel ? (double)run[ALT_RUNS / 2][0] / (double)bel :
		    (run[ALT_RUNS / 2][0] ? INFINITY : 1.0);
		like_o = (double)run[ALT_RUNS / 2][0] + (double)run[ALT_RUNS / 2][1] / alt_ratio[a];
		like_b = (double)ci->tier + (double)ci->moved / alt_ratio[a];
		tot->y_alt[a] = fmax(tot->y_alt[a], y);
		if (ci->tier != UINT64_MAX)
			tot->like_alt[a] = fmax(tot->like_alt[a], like_b > 0 ? like_o / like_b :
						(like_o > 0 ? INFINITY : 1.0));
		printf("%s %u: moved %.1f MiB (%.3fx Belady), on the device %.1f MiB,"
		       " tier+moved/%u %.3fx Belady compacted's", a ? ";" : "", alt_ratio[a],
		       (double)run[ALT_RUNS / 2][0] / MiB, y, (double)run[ALT_RUNS / 2][1] / MiB,
		       alt_ratio[a], like_b > 0 ? like_o / like_b : 0.0);
	}
	printf("\n");
}

static void bench_graph(struct graph *g, struct totals *tot)
{
	static const int pct[] = { 30, 40, 50, 60, 70, 80, 90, 0 };
	uint64_t lb = all_on_device_bound(g), budget, bel, bel_off;
	struct model m;
	unsigned i;

	model_build(g, &m);
	printf("%-16s %5u nodes, all-on-device bound %.1f MiB, largest step %.1f MiB\n",
	       g->name, g->n_nodes, (double)lb / MiB, (double)m.max_foot / MiB);
	for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		struct run r = { 0 };
		double bound, x, y;
		struct bound_info bi;
		struct compact_info ci;
		double like_o, like_b;

		budget = pct[i] ? lb * (uint64_t)pct[i] / 100 : m.max_foot;
		if (budget < m.max_foot) {
			printf("  %3d%% %9.1f MiB: below the largest step, infeasible\n",
			       pct[i], (double)budget / MiB);
			continue;
		}
		tot->feasible++;
		ortmem_run(g, budget, &r);
		if (!r.ok) {
			printf("  %3d%% %9.1f MiB: REFUSED\n", pct[i], (double)budget / MiB);
			continue;
		}
		tot->solved++;
		bel = belady(g, &m, budget);
		bel_off = belady_offsets(g, &m, budget);
		belady_compact(g, &m, budget, &ci);
		if (ci.bad || ci.tier != bel) {
			printf("!!! WARNING: %s at %" PRIu64 ": Belady compacted overlaps at %u steps,"
			       " or moves %" PRIu64 " tier bytes, not %" PRIu64 "\n",
			       g->name, budget, ci.bad, ci.tier, bel);
			compact_bad++;
		}
		bound = case_bound(g, &m, budget, r.moved, bel, &bi, tot);
		x = bound > 0 ? (double)r.moved / bound : (r.moved ? INFINITY : 1.0);
		y = bel ? (double)r.moved / (double)bel : (r.moved ? INFINITY : 1.0);
		if (g->structured)
			tot->x_struct = fmax(tot->x_struct, x);
		else
			tot->x_rand = fmax(tot->x_rand, x);
		tot->y = fmax(tot->y, y);
		tot->dmove = fmax(tot->dmove, r.moved ? (double)r.dmove / (double)r.moved :
				  (r.dmove ? INFINITY : 0.0));
		tot->y_nomove = fmax(tot->y_nomove, bel ? (double)r.nomove / (double)bel :
				     (r.nomove ? INFINITY : 1.0));
		tot->t_max = fmax(tot->t_max, r.ms[RUNS / 2]);
		tot->past = fmax(tot->past, r.past_ms[RUNS / 2] / budget_ms());
		tot->past_max = fmax(tot->past_max, r.past_ms[RUNS - 1] / budget_ms());
		if (r.first_ms > 0) {
			double f = r.in_first_ms[RUNS / 2] / r.first_ms;

			tot->first_lo = tot->first_lo > 0 ? fmin(tot->first_lo, f) : f;
			tot->first_hi = fmax(tot->first_hi, f);
		}
		/* like for like: both sides' moves within the arena at 1/16 */
		like_o = (double)r.moved + (double)r.dmove / MOVE_RATIO;
		like_b = (double)ci.tier + (double)ci.moved / MOVE_RATIO;
		if (ci.tier != UINT64_MAX) {
			tot->bel_dmove = fmax(tot->bel_dmove, ci.tier ? (double)ci.moved / (double)ci.tier :
					      (ci.moved ? INFINITY : 0.0));
			tot->y_like = fmax(tot->y_like, like_b > 0 ? like_o / like_b :
					   (like_o > 0 ? INFINITY : 1.0));
		}
		tot->y_off = fmax(tot->y_off, bel_off && bel_off != UINT64_MAX ?
				  (double)r.moved / (double)bel_off : (r.moved ? INFINITY : 1.0));
		printf("  %3d%% %9.1f MiB: moved %10.1f MiB [%.1f-%.1f], Belady %10.1f, bound %10.1f %-12s"
		       " [LP %.1f, +KC %.1f, model <= %.1f] %5.0f ms  (%.3fx bound, %.3fx Belady)  solve %.2f ms [%.2f-%.2f]"
		       "  Belady+offsets %.1f (%.3fx)  on-device moves %.1f MiB, no moves %.1f MiB (%.3fx Belady, solve %.2f ms)"
		       "  first plan %.2f ms (alone %.2f), past it %.2f ms [%.2f-%.2f]\n",
		       pct[i] ? pct[i] : 0, (double)budget / MiB, (double)r.moved / MiB,
		       (double)r.moved_lo / MiB, (double)r.moved_hi / MiB, (double)bel / MiB, bound / MiB,
		       bound_kind_name(bi.kind), bi.lp / MiB, bi.kc / MiB,
		       model_up(&bi, r.moved, bel) / MiB, bi.ms, x, y, r.ms[RUNS / 2], r.ms[0],
		       r.ms[RUNS - 1], bel_off == UINT64_MAX ? -1.0 : (double)bel_off / MiB,
		       bel_off && bel_off != UINT64_MAX ? (double)r.moved / (double)bel_off : 0.0,
		       (double)r.dmove / MiB, (double)r.nomove / MiB,
		       bel ? (double)r.nomove / (double)bel : 0.0, r.nomove_ms[RUNS / 2],
		       r.in_first_ms[RUNS / 2], r.first_ms, r.past_ms[RUNS / 2], r.past_ms[0],
		       r.past_ms[RUNS - 1]);
		printf("        Belady compacted: %.1f MiB moved on the device (%u compactions, %u slides;"
		       " moves %u ordered, %u second in a gap, %u onto their source);"
		       " tier+moved/16 %.1f against ortmem's %.1f (%.3fx)\n",
		       (double)ci.moved / MiB, ci.compactions, ci.slides, ci.ordered, ci.second, ci.self,
		       like_b / MiB, like_o / MiB, like_b > 0 ? like_o / like_b : 0.0);
		ratio_runs(g, budget, bel, &ci, tot);
	}
	model_free(&m);
}

/* The median tier bytes of @runs (at most RUNS) solves, their spread in
 * @lo and @hi, and their median time. */
static uint64_t dense_moved(const struct graph *g, uint64_t budget, int runs, double *ms,
			    uint64_t *lo, uint64_t *hi)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t moved[RUNS];
	double t[RUNS];
	int i;

	for (i = 0; i < runs; i++) {
		if (!solve_once(g, budget, 0, &st))
			return UINT64_MAX;
		moved[i] = st.prefetch_bytes + st.spill_bytes;
		t[i] = (double)st.solve_ns / 1e6;
	}
	qsort(moved, (size_t)runs, sizeof(*moved), cmp_u64);
	qsort(t, (size_t)runs, sizeof(*t), cmp_d);
	*ms = t[runs / 2];
	*lo = moved[0];
	*hi = moved[runs - 1];
	return moved[runs / 2];
}

/*
 * For information (not in the last line: the workloads are the
 * ones above): graphs where thousands of buffers are live at once, whose
 * first plan is the dense one (Documentation/lib/placement.rst, "Dense
 * graphs"), against Belady, under the default time budget and given 1 s.
 */
static void bench_dense(struct totals *tot)
{
	static const int pct[] = { 30, 90 };
	static const uint32_t nv[] = { 3000, 10000 };
	unsigned i, j, layers;

	for (j = 0; j < 2; j++)
		for (layers = 0; layers < 2; layers++) {
			struct graph g = { 0 };
			struct model m;
			uint64_t lb;

			dense_graph(&g, nv[j], layers, 1 + j * 2 + layers);
			g.name = layers ? "dense layers" : "dense tree";
			lb = all_on_device_bound(&g);
			model_build(&g, &m);
			for (i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
				uint64_t budget = lb * (uint64_t)pct[i] / 100, keep = time_budget_us;
				uint64_t bel = belady(&g, &m, budget), moved, moved_1s, lo, hi, x;
				double ms, ms_1s;

				moved = dense_moved(&g, budget, RUNS, &ms, &lo, &hi);
				time_budget_us = 1000000;
				moved_1s = dense_moved(&g, budget, 1, &ms_1s, &x, &x);
				time_budget_us = keep;
				tot->feasible += 2;
				if (moved == UINT64_MAX || moved_1s == UINT64_MAX || !bel) {
					printf("%-13s %5u values %3d%%: REFUSED\n", g.name, nv[j], pct[i]);
					continue;
				}
				tot->solved += 2;
				tot->y_dense = fmax(tot->y_dense, (double)moved / (double)bel);
				tot->y_dense_1s = fmax(tot->y_dense_1s, (double)moved_1s / (double)bel);
				printf("%-13s %5u values %3d%% %8.1f MiB: moved %8.1f MiB [%.1f-%.1f], Belady"
				       " %8.1f (%.3fx), solve %.1f ms; given 1 s %8.1f (%.3fx), %.0f ms\n",
				       g.name, nv[j], pct[i], (double)budget / MiB, (double)moved / MiB,
				       (double)lo / MiB, (double)hi / MiB, (double)bel / MiB, (double)moved / (double)bel, ms,
				       (double)moved_1s / MiB, (double)moved_1s / (double)bel, ms_1s);
			}
			model_free(&m);
			graph_free(&g);
		}
}

/* What a list in the environment left unread: an entry it cannot use. */
static void env_rest(const char *var, const char *rest)
{
	if (rest && *rest) {
		fprintf(stderr, "place_bench: %s: cannot read \"%s\" (see the list's format at the top of place_bench.c)\n",
			var, rest);
		exit(2);
	}
}

/* PLACE_DAGS="n:seed,...": further random DAGs (graphs the bench's two
 * do not show; the placement must not be tuned to those). */
static void extra_dags(struct totals *tot, bool run)
{
	const char *e = getenv("PLACE_DAGS");
	static char name[64];
	unsigned n;
	unsigned long long seed;
	int used;

	while (e && sscanf(e, "%u:%llu%n", &n, &seed, &used) == 2 && n) {
		if (run) {
			struct graph g = { 0 };

			random_dag(&g, n, seed);
			snprintf(name, sizeof(name), "dag-%u/%llu", n, seed);
			g.name = name;
			bench_graph(&g, tot);
			graph_free(&g);
		}
		e += used;
		e += *e == ',';
	}
	env_rest("PLACE_DAGS", e);
}

/* PLACE_TF="layers[ti],...": further transformer stacks, t for a training
 * step (activations saved for the backward pass), i for inference;
 * structured workloads the bench's three do not show. */
static void extra_transformers(struct totals *tot, bool run)
{
	const char *e = getenv("PLACE_TF");
	static char name[64];
	unsigned layers;
	char kind;
	int used;

	while (e && sscanf(e, "%u%c%n", &layers, &kind, &used) == 2 && layers &&
	       (kind == 't' || kind == 'i')) {
		if (run) {
			struct graph g = { 0 };

			transformer(&g, layers, kind == 't');
			snprintf(name, sizeof(name), "tf%u-%s", layers, kind == 't' ? "train" : "infer");
			g.name = name;
			g.structured = true;
			bench_graph(&g, tot);
			graph_free(&g);
		}
		e += used;
		e += *e == ',';
	}
	env_rest("PLACE_TF", e);
}

int main(void)
{
	struct totals tot = { 0 };
	struct graph g = { 0 };
	int w;

	extra_dags(&tot, false);	/* the lists read whole before any run */
	extra_transformers(&tot, false);
	glp_term_out(GLP_OFF);
	if (getenv("PLACE_BUDGET_US"))
		time_budget_us = strtoull(getenv("PLACE_BUDGET_US"), NULL, 10);
	for (w = 0; w < 7; w++) {
		g.structured = w < 5;
		switch (w) {
		case 0: unet(&g); break;
		case 1: resnet_train(&g); break;
		case 2: transformer(&g, 8, true); g.name = "tf8-train"; break;
		case 3: transformer(&g, 24, true); g.name = "tf24-train"; break;
		case 4: transformer(&g, 24, false); g.name = "tf24-infer"; break;
		case 5: random_dag(&g, 300, 7); g.name = "dag-300"; break;
		default: random_dag(&g, 1500, 11); g.name = "dag-1500"; break;
		}
		/* PLACE_ONLY=name: one workload (profiling) */
		if (!getenv("PLACE_ONLY") || !strcmp(getenv("PLACE_ONLY"), g.name))
			bench_graph(&g, &tot);
		graph_free(&g);
	}
	extra_dags(&tot, true);
	extra_transformers(&tot, true);
	if (!getenv("PLACE_ONLY") || !strcmp(getenv("PLACE_ONLY"), "dense"))
		bench_dense(&tot);
	printf("structured: %.2fx bound (max); random DAGs: %.2fx bound (max); "
	       "%.2fx Belady with offsets (max, for information)\n",
	       tot.x_struct, tot.x_rand, tot.y_off);
	printf("bound: %u MIP optimum, %u MIP tree, %u LP+KC, %u LP; %.1f s on the bounds\n",
	       tot.kinds[BOUND_MIP], tot.kinds[BOUND_TREE], tot.kinds[BOUND_KC],
	       tot.kinds[BOUND_LP], tot.bound_ms / 1e3);
	printf("place: moved on the device %.2fx the tier bytes (max), without moves %.2fx Belady (max)\n",
	       tot.dmove, tot.y_nomove);
	printf("place: Belady compacted moves on the device %.2fx its tier bytes (max); "
	       "tier + moved/16 %.2fx Belady's compacted (max)\n", tot.bel_dmove, tot.y_like);
	printf("place: solve time past its first plan %.2fx the time budget of %.1f ms (max of the"
	       " medians; slowest solve %.2fx); its first plan %.2f-%.2fx the first plan alone\n",
	       tot.past, budget_ms(), tot.past_max, tot.first_lo, tot.first_hi);
	printf("place dense (for information; their budgets count in the last line's solved, not in"
	       " its ratios): %.2fx Belady (max) in the time budget, %.2fx given 1 s\n",
	       tot.y_dense, tot.y_dense_1s);
	printf("place: at move ratios");
	for (w = 0; w < (int)N_ALT; w++)
		printf("%s %u", w ? "," : "", alt_ratio[w]);
	printf(" (for information; the last line's is %d): moved", (int)MOVE_RATIO);
	for (w = 0; w < (int)N_ALT; w++)
		printf("%s %.2fx", w ? "," : "", tot.y_alt[w]);
	printf(" Belady (max); tier + moved/ratio");
	for (w = 0; w < (int)N_ALT; w++)
		printf("%s %.2fx", w ? "," : "", tot.like_alt[w]);
	printf(" Belady's compacted (max)\n");
	if (bound_bad)
		printf("!!! WARNING: %u bound(s) failed the sanity check, see above\n", bound_bad);
	printf("place: moved %.2fx bound (max), %.2fx Belady (max), %u/%u feasible budgets solved, %.1f ms max\n",
	       fmax(tot.x_struct, tot.x_rand), tot.y, tot.solved, tot.feasible, tot.t_max);
	return tot.solved == tot.feasible && !bound_bad && !compact_bad ? 0 : 1;
}
