// SPDX-License-Identifier: MIT
/*
 * bench/plan/plan_same.c - the offset packer's node rate, and a trace of
 * what it finds under a node budget, to check that a change made the
 * search faster without changing what it searches (issue 17;
 * Documentation/lib/planner-search.rst, "Nodes a second").
 *
 *   plan_same trace NODES FILE.csv...   one line per instance and seed:
 *       the arena, the iterations and a hash of every offset, packed with
 *       max_iterations = NODES on one thread (deterministic); after the
 *       files, random instances of three shapes, never seen by the packer's
 *       authors.  Two libraries are the same search when their traces are
 *       equal (bench/plan/same.sh builds this against both and compares).
 *   plan_same rate BUDGET_US FILE.csv...  one thread for the budget: the
 *       arena over LB and the search's nodes a second of CPU.
 *   plan_same race BUDGET_US FILE.csv...  the same with the default
 *       threads, as bench-plan packs them (the nodes are every racer's).
 *
 * FILE.csv is MiniMalloc's format: id,lower,upper,size.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>

/* Seeds per instance in a trace: the first restarts differ from the rest. */
#define SAME_SEEDS 2
/* Random instances in a trace, per shape. */
#define SAME_RANDOM 4

struct inst {
	struct ortmem_plan_buffer *b;
	size_t n;
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void die(const char *what, const char *name)
{
	fprintf(stderr, "plan_same: %s: %s\n", name, what);
	exit(1);
}

static void inst_add(struct inst *x, size_t *cap, uint64_t lo, uint64_t hi,
		     uint64_t sz)
{
	if (x->n == *cap) {
		*cap = *cap ? 2 * *cap : 256;
		x->b = realloc(x->b, *cap * sizeof(*x->b));
		if (!x->b)
			die("out of memory", "read");
	}
	x->b[x->n++] = (struct ortmem_plan_buffer){ lo, hi, sz };
}

static struct inst read_csv(const char *path)
{
	unsigned long long id, lo, hi, sz;
	struct inst x = { NULL, 0 };
	char line[256];
	size_t cap = 0;
	FILE *f = fopen(path, "r");

	if (!f || !fgets(line, sizeof(line), f))
		die("cannot read", path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llu,%llu,%llu,%llu", &id, &lo, &hi, &sz) == 4)
			inst_add(&x, &cap, lo, hi, sz);
	fclose(f);
	return x;
}

/*
 * A random instance of 120 to 250 buffers over 400 steps.  Shape 0: short
 * lives, sizes over two orders of magnitude; 1: a few long lives among
 * many short ones (skip connections); 2: a 1 MiB x 400-step rectangle cut
 * at random, guillotine-wise on a 1 KiB grid, into buffers: it packs
 * exactly at its lower bound, and finding that packing is hard, as on the
 * benchmark's files.
 */
static struct inst random_inst(int shape, uint64_t seed)
{
	struct inst x = { NULL, 0 };
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t cap = 0, n = 120 + xs(&s) % 131, i;

	if (shape == 2) {
		inst_add(&x, &cap, 0, 400, 1024);	/* in KiB until the end */
		while (x.n < n) {
			struct ortmem_plan_buffer *r = &x.b[xs(&s) % x.n], c = *r;
			bool in_time = xs(&s) % 2;
			uint64_t len = in_time ? c.upper - c.lower : c.size, cut;

			if (len < 2)
				continue;
			cut = 1 + xs(&s) % (len - 1);
			if (in_time) {
				r->upper = c.lower + cut;
				inst_add(&x, &cap, c.lower + cut, c.upper, c.size);
			} else {
				r->size = cut;
				inst_add(&x, &cap, c.lower, c.upper, c.size - cut);
			}
		}
		for (i = 0; i < x.n; i++)
			x.b[i].size *= 1024;
		return x;
	}
	for (i = 0; i < n; i++) {
		uint64_t lo = xs(&s) % 400, len, sz;

		if (shape == 0) {
			len = 1 + xs(&s) % 20;
			sz = 64 + xs(&s) % 8192;
		} else {
			len = xs(&s) % 8 ? 1 + xs(&s) % 10 : 50 + xs(&s) % 300;
			sz = 256 * (1 + xs(&s) % 64);
		}
		inst_add(&x, &cap, lo, lo + len, sz);
	}
	return x;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	int k;

	for (k = 0; k < 8; k++, v >>= 8)
		h = (h ^ (v & 0xff)) * 0x100000001b3ull;
	return h;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pack(const struct inst *x, const char *name, uint64_t budget_us,
		 uint64_t nodes, uint64_t seed, uint32_t threads,
		 struct ortmem_plan_stats *st, uint64_t *hash)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .time_budget_us = budget_us,
		    .max_iterations = nodes, .seed = seed, .threads = threads,
		    .align = { 1, 0, 0 }, .flags = ORTMEM_PLAN_F_VALIDATE);
	uint64_t *off = malloc((x->n + 1) * sizeof(*off));
	size_t i;

	if (!off || ortmem_plan_pack(x->b, x->n, &o, off, st))
		die(ortmem_last_error_message(), name);
	*hash = 0xcbf29ce484222325ull;
	for (i = 0; i < x->n; i++)
		*hash = fnv(*hash, off[i]);
	free(off);
}

static void trace(const struct inst *x, const char *name, uint64_t nodes)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t seed, hash;

	for (seed = 1; seed <= SAME_SEEDS; seed++) {
		double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);

		/* a budget no run reaches: the nodes decide */
		pack(x, name, 600000000, nodes, seed, 1, &st, &hash);
		/* the time on stderr: the trace on stdout is compared */
		cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
		fprintf(stderr, "%-20s seed %llu %9llu nodes %7.3f s of CPU %8.0f nodes/s\n",
			name, (unsigned long long)seed,
			(unsigned long long)st.iterations, cpu,
			(double)st.iterations / cpu);
		printf("%-20s seed %llu arena %10llu iterations %9llu offsets %016llx\n",
		       name, (unsigned long long)seed,
		       (unsigned long long)st.arena[ORTMEM_TIER_DEVICE],
		       (unsigned long long)st.iterations, (unsigned long long)hash);
	}
}

static void rate(const struct inst *x, const char *name, uint64_t budget_us,
		 uint32_t threads)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t hash;
	double t0 = clock_s(CLOCK_MONOTONIC), dt;
	double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);

	pack(x, name, budget_us, 0, 1, threads, &st, &hash);
	dt = clock_s(CLOCK_MONOTONIC) - t0;
	cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	printf("%-20s +%5.2f%% over LB  %9llu nodes  %6.3f s (CPU %5.3f s)  %8.0f nodes/s of CPU%s\n",
	       name, 100.0 * (st.arena_over_lb - 1.0),
	       (unsigned long long)st.iterations, dt, cpu,
	       (double)st.iterations / cpu, st.optimal ? "  optimal" : "");
}

int main(int argc, char **argv)
{
	bool is_trace = argc > 2 && !strcmp(argv[1], "trace");
	bool is_race = argc > 2 && !strcmp(argv[1], "race");
	uint64_t v;
	int a, shape, r;

	if (argc < 3 || (!is_trace && !is_race && strcmp(argv[1], "rate")))
		die("usage: plan_same trace NODES|rate BUDGET_US|race BUDGET_US FILE.csv...",
		    "args");
	v = strtoull(argv[2], NULL, 0);
	for (a = 3; a < argc; a++) {
		struct inst x = read_csv(argv[a]);
		const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];

		if (is_trace)
			trace(&x, name, v);
		else
			rate(&x, name, v, is_race ? 0 : 1);
		free(x.b);
	}
	for (shape = 0; is_trace && shape < 3; shape++)
		for (r = 0; r < SAME_RANDOM; r++) {
			struct inst x = random_inst(shape, (uint64_t)(shape * 100 + r));
			char name[32];

			snprintf(name, sizeof(name), "random-%d-%d", shape, r);
			trace(&x, name, v);
			free(x.b);
		}
	return 0;
}
