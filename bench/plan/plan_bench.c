// SPDX-License-Identifier: MIT
/*
 * bench-plan: the offset packer on MiniMalloc-format CSVs (arena over the
 * lower bound, time), the planner against the seed's slot-sum scheme and
 * one-buffer-per-value on graphs with sharing, a 100k-node graph, and
 * dense graphs (many buffers live at once) against the time budget.
 *
 *   plan_bench BUDGET_US [FILE.csv...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double bench_csv(const char *path, uint64_t budget_us)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .time_budget_us = budget_us, .align = { 1, 0, 0 },
		    .flags = ORTMEM_PLAN_F_VALIDATE);
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan_buffer *b = NULL;
	size_t n = 0, cap = 0;
	unsigned long long id, lo, hi, sz;
	char line[256];
	uint64_t *off;
	double t0, pct;
	FILE *f = fopen(path, "r");

	if (!f || !fgets(line, sizeof(line), f)) {
		fprintf(stderr, "plan_bench: %s: cannot read\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu,%llu,%llu,%llu", &id, &lo, &hi, &sz) != 4)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			b = realloc(b, cap * sizeof(*b));
			if (!b)
				exit(1);
		}
		b[n++] = (struct ortmem_plan_buffer){ lo, hi, sz };
	}
	fclose(f);
	off = malloc((n + 1) * sizeof(*off));
	t0 = now_ms();
	if (!off || ortmem_plan_pack(b, n, &o, off, &st)) {
		fprintf(stderr, "plan_bench: %s: %s\n", path, ortmem_last_error_message());
		exit(1);
	}
	pct = 100.0 * (st.arena_over_lb - 1.0);
	printf("%-24s n=%-5zu LB %9llu arena %9llu  +%5.2f%% over LB  %7.1f ms%s\n",
	       strrchr(path, '/') ? strrchr(path, '/') + 1 : path, n,
	       (unsigned long long)st.lower_bound,
	       (unsigned long long)st.arena[ORTMEM_TIER_DEVICE], pct, now_ms() - t0,
	       st.optimal ? "  optimal" : "");
	free(b);
	free(off);
	return pct;
}

/* A random DAG with local edges and skip connections, as in real models. */
struct graph {
	int nv;
	uint64_t *size;
	int *last;	/* last reader, or the producer */
};

static void build(struct ortmem_plan *p, struct graph *g, int nodes, uint64_t seed)
{
	int i;

	g->nv = nodes;
	g->size = malloc(sizeof(*g->size) * nodes);
	g->last = malloc(sizeof(*g->last) * nodes);
	for (i = 0; i < nodes; i++) {
		uint32_t in[2], out = (uint32_t)i, nin = 0;

		g->size[i] = 1024 * (1 + rnd(&seed) % 512);
		g->last[i] = i;
		ortmem_plan_add_value(p, g->size[i], i == nodes - 1 ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (i) {
			in[nin++] = (uint32_t)(i - 1);
			if (i > 8 && rnd(&seed) % 4 == 0)
				in[nin++] = (uint32_t)(i - 2 - (int)(rnd(&seed) % 7));
		}
		for (uint32_t k = 0; k < nin; k++)
			g->last[in[k]] = i;
		ortmem_plan_add_node(p, in, nin, &out, 1);
	}
	g->last[nodes - 1] = nodes;
}

/* The seed's scheme: a slot per output, best-fit reuse of retired slots. */
static uint64_t slot_sum(const struct graph *g)
{
	uint64_t *cap = calloc(g->nv, sizeof(*cap)), sum = 0;
	int *slot = malloc(sizeof(*slot) * g->nv), *free_ = malloc(sizeof(int) * g->nv);
	int nslots = 0, nfree = 0, i, k, best;

	for (i = 0; i < g->nv; i++) {
		for (best = -1, k = 0; k < nfree; k++)
			if (cap[free_[k]] >= g->size[i] &&
			    (best < 0 || cap[free_[k]] < cap[free_[best]]))
				best = k;
		if (best < 0 && nfree) {	/* grow the largest retired slot */
			for (best = 0, k = 1; k < nfree; k++)
				if (cap[free_[k]] > cap[free_[best]])
					best = k;
		}
		if (best >= 0) {
			slot[i] = free_[best];
			free_[best] = free_[--nfree];
			if (cap[slot[i]] < g->size[i])
				cap[slot[i]] = g->size[i];
		} else {
			slot[i] = nslots;
			cap[nslots++] = g->size[i];
		}
		/* retire, after the node, the values it read for the last time */
		for (k = 0; k < i; k++)
			if (g->last[k] == i)
				free_[nfree++] = slot[k];
	}
	for (k = 0; k < nslots; k++)
		sum += cap[k];
	free(cap);
	free(slot);
	free(free_);
	return sum;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A 100k-node graph, planned from scratch RUNS_100K times (a new plan each
 * time); the median is reported, the first (cold) run is printed too.
 */
#define RUNS_100K 5
static double bench_100k(void)
{
	double t[RUNS_100K];
	int r;

	for (r = 0; r < RUNS_100K; r++) {
		ORTMEM_OPTS(ortmem_plan_stats, st);
		struct ortmem_plan *p;
		struct graph g;
		double t0;

		ortmem_plan_new(NULL, &p);
		build(p, &g, 100000, 5);
		t0 = now_ms();
		if (ortmem_plan_solve(p) || ortmem_plan_stats(p, &st))
			exit(1);
		t[r] = now_ms() - t0;
		printf("graph 100000 nodes, run %d: arena %llu LB %llu (+%.2f%%) in %.1f ms\n",
		       r + 1, (unsigned long long)st.arena[0],
		       (unsigned long long)st.lower_bound,
		       100.0 * (st.arena_over_lb - 1), t[r]);
		ortmem_plan_free(p);
		free(g.size);
		free(g.last);
	}
	qsort(t, RUNS_100K, sizeof(t[0]), cmp_double);
	return t[RUNS_100K / 2];
}

/*
 * Dense graphs, where many buffers are live at once, against the time
 * budget: a random recursive tree (node i reads one random earlier value),
 * wide layers with long skip connections (layers of DENSE_WIDTH nodes,
 * each reading its place in the layer before and a random value of any
 * earlier layer), and a chain with skip connections (node i reads i - 1
 * and a random earlier value).  For each: the first plan alone
 * (max_iterations = 1) and a solve under the default budget, interleaved,
 * DENSE_RUNS times each; medians, with the spread.
 */
enum dense_shape { DENSE_TREE, DENSE_LAYERS, DENSE_SKIP, DENSE_SHAPES };
static const char *const dense_name[] = { "random tree", "wide layers+skips", "chain+skips" };
#define DENSE_WIDTH 64
#define DENSE_RUNS 5

static void build_dense(struct ortmem_plan *p, int n, enum dense_shape shape, uint64_t seed)
{
	for (int i = 0; i < n; i++) {
		uint32_t in[2], out = (uint32_t)i, nin = 0;
		int below = shape == DENSE_LAYERS ? i - i % DENSE_WIDTH : i;

		ortmem_plan_add_value(p, 1024 * (1 + rnd(&seed) % 512),
				      i == n - 1 ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (i && shape == DENSE_SKIP)
			in[nin++] = (uint32_t)(i - 1);
		if (i >= DENSE_WIDTH && shape == DENSE_LAYERS)
			in[nin++] = (uint32_t)(i - DENSE_WIDTH);
		if (below) {
			in[nin] = (uint32_t)(rnd(&seed) % (uint64_t)below);
			nin += !nin || in[nin] != in[0];
		}
		ortmem_plan_add_node(p, in, nin, &out, 1);
	}
}

/* One solve (under a device budget of @dev bytes, 0: none); its time, its
 * arena over LB and (when asked) its stats. */
static double dense_solve_dev(int n, enum dense_shape shape, uint64_t max_iter,
			      uint64_t dev, double *over_lb, struct ortmem_plan_stats *out)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = max_iter, .budget = { dev, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan *p;
	double t0, t;

	if (ortmem_plan_new(&o, &p))
		exit(1);
	build_dense(p, n, shape, 77 + (uint64_t)n);
	t0 = now_ms();
	if (ortmem_plan_solve(p) || ortmem_plan_stats(p, &st)) {
		fprintf(stderr, "plan_bench: dense: %s\n", ortmem_last_error_message());
		exit(1);
	}
	t = now_ms() - t0;
	*over_lb = st.arena_over_lb;
	if (out)
		*out = st;
	ortmem_plan_free(p);
	return t;
}

static double dense_solve(int n, enum dense_shape shape, uint64_t max_iter,
			  double *over_lb)
{
	return dense_solve_dev(n, shape, max_iter, 0, over_lb, NULL);
}

/*
 * The same graphs under a device budget of @pct % of their lower bound:
 * the placement's first plan (max_iterations = 1) and a solve under the
 * default budget, interleaved, DENSE_RUNS times each; medians and range,
 * and the bytes the solve moves between tiers.  Returns the solve's time
 * past its first plan (medians), in time budgets.
 */
static double bench_dense_dev(int n, enum dense_shape shape, unsigned int pct)
{
	double first[DENSE_RUNS], total[DENSE_RUNS], r;
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t dev;

	dense_solve_dev(n, shape, 1, 0, &r, &st);
	dev = st.lower_bound / 100 * pct;
	for (int k = 0; k < DENSE_RUNS; k++) {
		first[k] = dense_solve_dev(n, shape, 1, dev, &r, NULL);
		total[k] = dense_solve_dev(n, shape, 0, dev, &r, &st);
	}
	qsort(first, DENSE_RUNS, sizeof(first[0]), cmp_double);
	qsort(total, DENSE_RUNS, sizeof(total[0]), cmp_double);
	printf("dense %-17s %6d values, device budget %u %%: first plan %6.1f ms (%.1f..%.1f), total %6.1f ms (%.1f..%.1f, budget %d ms), %.1f MiB moved\n",
	       dense_name[shape], n, pct, first[DENSE_RUNS / 2], first[0], first[DENSE_RUNS - 1],
	       total[DENSE_RUNS / 2], total[0], total[DENSE_RUNS - 1],
	       ORTMEM_PLAN_DEFAULT_BUDGET_US / 1000, st.spill_bytes / 1048576.0);
	/* medians of both: the first plan's own time spreads by half */
	return (total[DENSE_RUNS / 2] - first[DENSE_RUNS / 2]) /
	       (ORTMEM_PLAN_DEFAULT_BUDGET_US / 1e3);
}

struct dense_fig {
	double first, total, over_lb;
};

static struct dense_fig bench_dense(int n, enum dense_shape shape)
{
	double first[DENSE_RUNS], total[DENSE_RUNS], r1, r;
	struct dense_fig f;

	for (int k = 0; k < DENSE_RUNS; k++) {
		first[k] = dense_solve(n, shape, 1, &r1);
		total[k] = dense_solve(n, shape, 0, &r);
	}
	qsort(first, DENSE_RUNS, sizeof(first[0]), cmp_double);
	qsort(total, DENSE_RUNS, sizeof(total[0]), cmp_double);
	f = (struct dense_fig){ first[DENSE_RUNS / 2], total[DENSE_RUNS / 2], r };
	printf("dense %-17s %6d values: first plan %7.1f ms (%.1f..%.1f) %.3fx LB, total %7.1f ms (%.1f..%.1f, budget %d ms) %.3fx LB\n",
	       dense_name[shape], n, f.first, first[0], first[DENSE_RUNS - 1], r1,
	       f.total, total[0], total[DENSE_RUNS - 1],
	       ORTMEM_PLAN_DEFAULT_BUDGET_US / 1000, r);
	return f;
}

/*
 * Random lifetimes packed by ortmem_plan_pack() (no graph): starts spread
 * over the span, lengths short (up to 1/50 of it), medium (up to 1/5) or
 * heavy-tailed (a product of two uniforms), sizes from 256 B to 256 KiB.
 * Thousands of buffers live at once, so the first plan is the sweep in
 * start order (lib/pack/pack_first.c); its arena over LB, and a solve's
 * under the default budget, three seeds each.  Returns the worst first
 * plan.
 */
enum life_shape { LIFE_SHORT, LIFE_MEDIUM, LIFE_HEAVY, LIFE_SHAPES };
static const char *const life_name[] = { "short", "medium", "heavy-tailed" };
#define LIFE_SPAN 1000000
#define LIFE_SEEDS 3

/* Arena over LB of the first plan (@max_iter 1) or of a solve under the
 * default budget (0). */
static double life_pack(uint32_t n, enum life_shape shape, uint64_t seed, uint64_t max_iter)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .max_iterations = max_iter, .align = { 1, 0, 0 });
	ORTMEM_OPTS(ortmem_plan_stats, st);
	struct ortmem_plan_buffer *b = malloc(sizeof(*b) * n);
	uint64_t *off = malloc(sizeof(*off) * (n + 1)), lo, len;

	if (!b || !off)
		exit(1);
	for (uint32_t i = 0; i < n; i++) {
		lo = rnd(&seed) % LIFE_SPAN;
		if (shape == LIFE_SHORT)
			len = 1 + rnd(&seed) % (LIFE_SPAN / 50);
		else if (shape == LIFE_MEDIUM)
			len = 1 + rnd(&seed) % (LIFE_SPAN / 5);
		else
			len = 1 + (rnd(&seed) % 1000) * (rnd(&seed) % 1000) / 2;
		b[i] = (struct ortmem_plan_buffer){ lo, lo + len,
			(1ull << (rnd(&seed) % 7)) * (1 + rnd(&seed) % 16) * 256 };
	}
	if (ortmem_plan_pack(b, n, &o, off, &st)) {
		fprintf(stderr, "plan_bench: lifetimes: %s\n", ortmem_last_error_message());
		exit(1);
	}
	free(b);
	free(off);
	return st.arena_over_lb;
}

static double bench_lifetimes(void)
{
	static const uint32_t sizes[] = { 10000, 100000 };
	double worst = 0;

	for (int k = 0; k < 2; k++)
		for (int sh = 0; sh < LIFE_SHAPES; sh++) {
			double r[LIFE_SEEDS], d[LIFE_SEEDS];

			for (int s = 0; s < LIFE_SEEDS; s++) {
				r[s] = life_pack(sizes[k], sh, 1 + (uint64_t)s, 1);
				d[s] = life_pack(sizes[k], sh, 1 + (uint64_t)s, 0);
			}
			qsort(r, LIFE_SEEDS, sizeof(r[0]), cmp_double);
			qsort(d, LIFE_SEEDS, sizeof(d[0]), cmp_double);
			printf("lifetimes %-12s %6u buffers: first plan %.3fx LB (%.3f..%.3f), budget %d ms %.3fx (%.3f..%.3f)\n",
			       life_name[sh], sizes[k], r[LIFE_SEEDS / 2], r[0], r[LIFE_SEEDS - 1],
			       ORTMEM_PLAN_DEFAULT_BUDGET_US / 1000, d[LIFE_SEEDS / 2], d[0],
			       d[LIFE_SEEDS - 1]);
			worst = r[LIFE_SEEDS - 1] > worst ? r[LIFE_SEEDS - 1] : worst;
		}
	return worst;
}

int main(int argc, char **argv)
{
	uint64_t budget = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	double worst = 0, ratio_min = 1e9, t100k, past_dev = 0;
	struct dense_fig d10k = { 0, 0, 0 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int i;

	/* The planner's default: one racer per online CPU, at most 4. */
	printf("planner: %llu ms per instance, %ld racers (one per online CPU, at most %d)\n",
	       (unsigned long long)(budget / 1000),
	       cpus < 1 ? 1 : cpus < ORTMEM_PLAN_DEFAULT_THREADS_MAX ? cpus :
	       ORTMEM_PLAN_DEFAULT_THREADS_MAX, ORTMEM_PLAN_DEFAULT_THREADS_MAX);

	for (i = 2; i < argc; i++) {
		double pct = bench_csv(argv[i], budget);

		if (pct > worst)
			worst = pct;
	}
	for (i = 0; i < 8; i++) {
		ORTMEM_OPTS(ortmem_plan_opts, o, .align = { 1024, 0, 0 });
		ORTMEM_OPTS(ortmem_plan_stats, st);
		struct ortmem_plan *p;
		struct graph g;
		uint64_t ss;

		ortmem_plan_new(&o, &p);
		build(p, &g, 200 + 400 * i, 1000 + i);
		if (ortmem_plan_solve(p) || ortmem_plan_stats(p, &st))
			return 1;
		ss = slot_sum(&g);
		printf("graph %-5d naive %10llu slot-sum %10llu ours %10llu LB %10llu  slot-sum/ours %.2fx\n",
		       g.nv, (unsigned long long)st.naive_bytes, (unsigned long long)ss,
		       (unsigned long long)st.arena[0], (unsigned long long)st.lower_bound,
		       (double)ss / st.arena[0]);
		if ((double)ss / st.arena[0] < ratio_min)
			ratio_min = (double)ss / st.arena[0];
		ortmem_plan_free(p);
		free(g.size);
		free(g.last);
	}
	t100k = bench_100k();
	for (i = 0; i < 3; i++) {
		static const int sizes[] = { 3000, 10000, 100000 };

		for (int sh = 0; sh < DENSE_SHAPES; sh++) {
			struct dense_fig f = bench_dense(sizes[i], sh);

			/* The 10k line: the worst of the shapes, figure by figure. */
			if (sizes[i] == 10000) {
				d10k.first = f.first > d10k.first ? f.first : d10k.first;
				d10k.total = f.total > d10k.total ? f.total : d10k.total;
				d10k.over_lb = f.over_lb > d10k.over_lb ? f.over_lb : d10k.over_lb;
			}
		}
	}
	for (int sh = 0; sh < DENSE_SHAPES; sh++)
		for (unsigned int pct = 30; pct <= 90; pct += 60) {
			double past = bench_dense_dev(10000, sh, pct);

			past_dev = past > past_dev ? past : past_dev;
		}
	printf("plan dense under a device budget: 10k values, solve past the first plan %.2fx the budget (max, medians)\n",
	       past_dev);
	printf("plan lifetimes: first plan %.3fx LB (max; 10k and 100k buffers)\n",
	       bench_lifetimes());
	printf("plan dense: 10k values first plan %.0f ms, total %.0f ms (budget %d ms), arena %.2fx LB\n",
	       d10k.first, d10k.total, ORTMEM_PLAN_DEFAULT_BUDGET_US / 1000, d10k.over_lb);
	printf("plan: minimalloc max +%.1f%% over LB, slot-sum %.2fx, 100k nodes %.0f ms\n",
	       worst, ratio_min, t100k);
	return 0;
}
