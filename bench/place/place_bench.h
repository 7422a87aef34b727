/* SPDX-License-Identifier: MIT */
/*
 * make bench-place: what place_bench.c (graphs, ortmem, Belady) shares with
 * place_bound.c (the lower bound), split so each file stays readable.
 */
#ifndef PLACE_BENCH_H
#define PLACE_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_IO 8
#define MiB (1024ull * 1024)

struct g_node {
	uint32_t in[MAX_IO], n_in;
	uint32_t out[MAX_IO], n_out;
};

struct graph {
	const char *name;
	bool structured;
	uint64_t *size;
	bool *output;
	uint32_t n_vals, cap_vals;
	struct g_node *nodes;
	uint32_t n_nodes, cap_nodes;
};

/* The gap model, from the graph (no library code). */
struct model {
	uint32_t n;			/* steps */
	uint32_t *t_idx, *t_step;	/* touches per value, CSR */
	uint32_t *hi;
	uint64_t *asz;
	uint64_t *foot;			/* touched bytes per step */
	uint64_t max_foot, live_max;
};

#define ALIGN 256	/* the device tier's alignment, in the plans and the model */

void *xrealloc(void *p, size_t n);
uint32_t op1(struct graph *g, uint32_t a, uint64_t size);
uint32_t op2(struct graph *g, uint32_t a, uint32_t b, uint64_t size);
uint32_t g_input(struct graph *g, uint64_t size);
void random_dag(struct graph *g, uint32_t n, uint64_t seed);
#define DENSE_WIDTH 64
void dense_graph(struct graph *g, uint32_t n, bool layers, uint64_t seed);
void graph_free(struct graph *g);
void model_build(const struct graph *g, struct model *m);
void model_free(struct model *m);
/* The next touch of value @v after step @s, or UINT32_MAX. */
uint32_t model_next_use(const struct model *m, uint32_t v, uint32_t s);

/* Belady's rule (place_belady.c): furthest-next-use eviction simulated
 * without offsets, and run by an allocator with offsets; bytes moved
 * (UINT64_MAX: does not fit). */
uint64_t belady(const struct graph *g, const struct model *m, uint64_t budget);
uint64_t belady_offsets(const struct graph *g, const struct model *m, uint64_t budget);

/* Belady's residency laid out with offsets and compacted (place_compact.c):
 * its tier bytes (belady()'s; UINT64_MAX: does not fit), the bytes it copies
 * within the arena, how many compactions (of which slides), and how many of
 * its moves land on another move's source of the step, move a value a
 * second time between two touches, or land on part of their own source.
 * The bench fails when a layout overlaps or its tier bytes are not
 * belady()'s. */
struct compact_info {
	uint64_t tier, moved;
	uint32_t compactions, slides, ordered, second, self;
	uint32_t bad;		/* steps whose layout overlaps or overruns (a bug) */
};

void belady_compact(const struct graph *g, const struct model *m, uint64_t budget,
		    struct compact_info *ci);

/* Which bound a case got (see cover_bound()). */
enum bound_kind { BOUND_NONE, BOUND_LP, BOUND_KC, BOUND_TREE, BOUND_MIP, BOUND_KINDS };

/*
 * Effort on the bound, per case; none of these affects its validity, only
 * how high it gets and the bench's time (24-29 s of a 29-36 s run on the
 * shared 2-core machine).  No more is spent once the bound is within
 * MIP_CLOSE of the best plan known (1 %: the last line's ratios, printed
 * to two decimals, would barely move).  Knapsack cover cuts: at most
 * KC_ROUNDS rounds or KC_MS, stopping after KC_STALL_ROUNDS rounds that
 * each raise the LP by less than KC_STALL (relative); a cut is added when
 * violated by more than KC_TOL of its right-hand side (well above GLPK's feasibility
 * tolerance of 1e-7, so a cut the LP meets up to rounding is not added
 * again).  The branch and cut then runs MIP_MS at most, stopping once its
 * bound has not risen for MIP_STALL_MS (where it rises, it does so in the
 * first few hundred milliseconds; on the training graphs it never does).
 */
#define MIP_MS 2000
#define MIP_STALL_MS 500
#define MIP_CLOSE 1.01
#define KC_ROUNDS 50
#define KC_MS 2000
#define KC_TOL 1e-4
#define KC_STALL 1e-4
#define KC_STALL_ROUNDS 3

/* What cover_bound() found, in bytes. */
struct bound_info {
	double lp;		/* the LP optimum (-1: the simplex failed) */
	double kc;		/* the LP with the knapsack cover cuts */
	double bound;		/* the bound returned: the best proven */
	double incumbent;	/* the MIP's best integral point (-1: none) */
	enum bound_kind kind;
	int n_cuts;		/* knapsack cover cuts added */
	double ms;		/* time taken (set by the bench) */
};

double cover_bound(const struct graph *g, const struct model *m, uint64_t budget,
		   double best, struct bound_info *bi);
const char *bound_kind_name(enum bound_kind k);
bool bound_check(const struct graph *g, uint64_t budget, const struct bound_info *bi,
		 uint64_t moved, uint64_t bel);

#endif
