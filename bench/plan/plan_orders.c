// SPDX-License-Identifier: MIT
/*
 * bench/plan/plan_orders.c - can a search over placement orders reach a
 * good packing?  (issue 17, fifth session; Documentation/lib/planner-search.rst,
 * "Searching over orders")
 *
 * Usage: plan_orders PACKING.csv [budget_us] [seed]
 *
 * PACKING.csv has the columns id,lower,upper,size,offset (an instance with
 * an offset per buffer, as bench/plan/records/ holds).  Every order below
 * is placed by the packer's own greedy decoder, best fit in that order over
 * the conflict lists (ortmem__pk_place_from()), and reported over the lower
 * bound (LB):
 *
 *  1. orders by a key: the packing's offsets (which can only give the
 *     packing or a lower one: each item's conflicts placed before it lie
 *     below its old offset), and the keys the packer's portfolio uses;
 *  2. the packing's offset order perturbed: random swaps, swaps of
 *     neighbours, noise on the offsets (a fraction of the height), 200
 *     trials each: how wide is the basin an order search must hit?
 *  3. searches over orders for the budget each: squeaky-wheel priorities
 *     (items that end above the midline between the best and LB move
 *     ahead), the packer's iterated local search over the order from the
 *     best key order, and the same local search started from the packing
 *     the packer's race finds in the budget.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pack/pack_internal.h"

#define TRIALS 200

struct orders {
	struct packer pk;
	struct pk_item *it;
	uint64_t *given;	/* the packing's offsets */
	uint64_t h;		/* its height */
	uint32_t *ord, *tmp;
	uint64_t *key;
	uint64_t seed;
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double over(uint64_t h, uint64_t base)
{
	return 100.0 * ((double)h - (double)base) / (double)base;
}

/* Read id,lower,upper,size,offset rows; ids 0..n-1, each once. */
static int load(const char *path, struct orders *o)
{
	FILE *f = fopen(path, "r");
	char line[256];
	uint32_t cap = 0, n = 0, row = 1;

	if (!f) {
		fprintf(stderr, "plan_orders: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || !strstr(line, "offset")) {
		fprintf(stderr, "plan_orders: %s: want a header id,lower,upper,size,offset\n", path);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long id, lo, hi, sz, off;

		row++;
		if (sscanf(line, "%llu,%llu,%llu,%llu,%llu", &id, &lo, &hi, &sz, &off) != 5 ||
		    hi < lo || off + sz < off || id != n) {
			fprintf(stderr, "plan_orders: %s line %u: want id,lower,upper,size,offset "
				"with ids 0, 1, ... in order, lower <= upper\n", path, row);
			fclose(f);
			return -1;
		}
		if (n == cap) {
			struct pk_item *it;
			uint64_t *given;

			cap = cap ? 2 * cap : 256;
			it = realloc(o->it, sizeof(*o->it) * cap);
			o->it = it ? it : o->it;
			given = realloc(o->given, sizeof(*o->given) * cap);
			o->given = given ? given : o->given;
			if (!it || !given || cap > UINT32_MAX / 2) {
				fprintf(stderr, "plan_orders: %s: out of memory at line %u\n", path, row);
				fclose(f);
				return -1;
			}
		}
		o->it[n] = (struct pk_item){ lo, hi, sz };
		o->given[n++] = off;
	}
	fclose(f);
	o->pk.n = n;
	if (!n)
		fprintf(stderr, "plan_orders: %s has no buffers\n", path);
	return n ? 0 : -1;
}

/* The conflict lists, and the given packing checked against them. */
static int setup(struct orders *o)
{
	struct packer *pk = &o->pk;
	uint32_t n = pk->n;

	pk->it = o->it;
	pk->lb = ortmem__pk_lower_bound(o->it, n);
	pk->best_h = UINT64_MAX;
	pk->opts.deadline_ns = UINT64_MAX;
	o->ord = malloc(sizeof(*o->ord) * n);
	o->tmp = malloc(sizeof(*o->tmp) * n);
	o->key = malloc(sizeof(*o->key) * n);
	if (!o->ord || !o->tmp || !o->key || ortmem__pk_alloc(pk) ||
	    ortmem__pk_build_conflicts(pk, false))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		if (!ortmem__pk_live(&o->it[i]))
			continue;
		if (o->given[i] + o->it[i].size > o->h)
			o->h = o->given[i] + o->it[i].size;
		for (uint32_t c = pk->cidx[i]; c < pk->cidx[i + 1]; c++) {
			uint32_t j = pk->conf[c];

			if (o->given[i] < o->given[j] + o->it[j].size &&
			    o->given[j] < o->given[i] + o->it[i].size) {
				fprintf(stderr, "plan_orders: buffers %u and %u overlap\n", i, j);
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Place @ord by best fit: the height. */
static uint64_t decode(struct orders *o, const uint32_t *ord)
{
	memcpy(o->pk.order, ord, sizeof(*ord) * o->pk.n);
	return ortmem__pk_place_from(&o->pk, 0);
}

/* o->ord: the ids by o->key, smallest first (stable). */
static void order_by_key(struct orders *o)
{
	for (uint32_t i = 0; i < o->pk.n; i++)
		o->ord[i] = i;
	ortmem__pk_sort_by(o->ord, o->pk.n, o->key, o->tmp);
}

/* 1. Orders by a key; the best one stays in o->pk's best packing. */
static void by_keys(struct orders *o)
{
	static const char *const names[] = {
		"offset, lowest first", "offset, highest first", "size, largest first",
		"duration, longest first", "area, largest first", "start, earliest first",
	};

	for (int k = 0; k < 6; k++) {
		uint64_t h;

		for (uint32_t i = 0; i < o->pk.n; i++) {
			const struct pk_item *x = &o->it[i];

			o->key[i] = k == 0 ? o->given[i] : k == 1 ? ~o->given[i] :
				    k == 2 ? ~x->size : k == 3 ? ~(x->hi - x->lo) :
				    k == 4 ? ~(x->size * (x->hi - x->lo)) : x->lo;
		}
		order_by_key(o);
		h = decode(o, o->ord);
		if (k >= 2)
			ortmem__pk_keep_if_best(&o->pk, h);
		printf("order by %-24s %10llu  %+6.2f%% over LB\n", names[k],
		       (unsigned long long)h, over(h, o->pk.lb));
	}
}

/* Perturb the offset order (o->ord on entry is the offset order). */
static void perturb(struct orders *o, uint32_t *p, int kind, double level)
{
	uint32_t n = o->pk.n;

	if (kind == 2) {
		for (uint32_t i = 0; i < n; i++)
			o->key[i] = o->given[i] +
				    (uint64_t)((double)(xs(&o->seed) % 1024) / 1024 * level * (double)o->h);
		order_by_key(o);
		memcpy(p, o->ord, sizeof(*p) * n);
		return;
	}
	for (int s = 0; s < (int)level; s++) {
		uint32_t a = (uint32_t)(xs(&o->seed) % (n - 1)), b, t;

		b = kind == 0 ? (uint32_t)(xs(&o->seed) % n) : a + 1;
		t = p[a];
		p[a] = p[b];
		p[b] = t;
	}
}

/* 2. The basin around the given packing's order. */
static void basin(struct orders *o)
{
	static const double levels[3][4] = {
		{ 1, 2, 4, 8 }, { 1, 4, 16, 64 }, { 0.001, 0.003, 0.01, 0.03 },
	};
	static const char *const kinds[3] = {
		"random swaps", "swaps of neighbours", "offset noise (x height)",
	};
	uint32_t n = o->pk.n, *base = malloc(sizeof(*base) * n), *p = malloc(sizeof(*p) * n);

	if (!base || !p || n < 2)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		o->key[i] = o->given[i];
	order_by_key(o);
	memcpy(base, o->ord, sizeof(*base) * n);
	for (int k = 0; k < 3; k++)
		for (int l = 0; l < 4; l++) {
			double sum = 0;
			int same = 0;

			for (int t = 0; t < TRIALS; t++) {
				uint64_t h;

				memcpy(p, base, sizeof(*p) * n);
				perturb(o, p, k, levels[k][l]);
				h = decode(o, p);
				sum += over(h, o->h);
				same += h <= o->h;
			}
			printf("%-24s %6g: mean %+6.2f%% over the packing, %3d/%d as low\n",
			       kinds[k], levels[k][l], sum / TRIALS, same, TRIALS);
		}
out:
	free(base);
	free(p);
}

/* 3a. Squeaky wheel: items ending above the midline move ahead. */
static void squeaky(struct orders *o, uint64_t budget_ns)
{
	uint32_t n = o->pk.n;
	double *prio = calloc(n, sizeof(*prio)), most = 1;
	uint64_t best = UINT64_MAX, decodes = 0, end = ortmem__now_ns() + budget_ns;

	if (!prio)
		return;
	for (uint32_t i = 0; i < n; i++) {
		prio[i] = (double)o->it[i].size * (double)(o->it[i].hi - o->it[i].lo);
		most = prio[i] > most ? prio[i] : most;
	}
	for (uint32_t i = 0; i < n; i++)
		prio[i] /= most;
	while (ortmem__now_ns() < end) {
		uint64_t h, mid;

		for (uint32_t i = 0; i < n; i++)
			o->key[i] = UINT64_MAX - (uint64_t)(prio[i] * 1073741824.0);
		order_by_key(o);
		h = decode(o, o->ord);
		decodes++;
		best = h < best ? h : best;
		mid = best - (best - o->pk.lb) / 2;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t top = o->pk.off[i] + o->it[i].size;

			if (o->it[i].size && top > mid)
				prio[i] += (double)(top - mid) / (double)(h - mid + 1) *
					   ((double)(xs(&o->seed) % 1024) / 1024);
		}
	}
	printf("squeaky wheel           %10llu  %+6.2f%% over LB, %llu orders placed\n",
	       (unsigned long long)best, over(best, o->pk.lb), (unsigned long long)decodes);
	free(prio);
}

/* 3b. The packer's local search over the order from its best order. */
static uint64_t local_search(struct orders *o, uint64_t budget_ns, const char *from)
{
	o->pk.iters = 0;
	o->pk.rng = o->seed | 1;
	o->pk.opts.deadline_ns = ortmem__now_ns() + budget_ns;
	ortmem__pk_local_search(&o->pk);
	/* the decoder may place again: the deadline it met is forgotten */
	o->pk.opts.deadline_ns = UINT64_MAX;
	o->pk.timed_out = false;
	o->pk.work = 0;
	printf("local search from %-6s %10llu  %+6.2f%% over LB, %llu moves\n", from,
	       (unsigned long long)o->pk.best_h, over(o->pk.best_h, o->pk.lb),
	       (unsigned long long)o->pk.iters);
	return o->pk.best_h;
}

/* 3c. The race's packing in the budget, then the local search from it. */
static void race_then_search(struct orders *o, uint64_t budget_ns)
{
	uint32_t n = o->pk.n;
	uint64_t *off = calloc(n, sizeof(*off)), h;
	struct pk_opts opts = { .deadline_ns = ortmem__now_ns() + budget_ns,
				.seed = o->seed, .threads = 1 };
	struct pk_result res = { 0 };

	if (!off || ortmem__pack(o->it, n, &opts, off, &res)) {
		free(off);
		return;
	}
	printf("the race (one thread)   %10llu  %+6.2f%% over LB\n",
	       (unsigned long long)res.height, over(res.height, o->pk.lb));
	for (uint32_t i = 0; i < n; i++)
		o->key[i] = off[i];
	order_by_key(o);
	o->pk.best_h = UINT64_MAX;
	h = decode(o, o->ord);
	ortmem__pk_keep_if_best(&o->pk, h);
	h = local_search(o, budget_ns, "race");
	printf("plan orders: race +%.2f%%, then local search over its order +%.2f%% over LB\n",
	       over(res.height, o->pk.lb), over(h, o->pk.lb));
	free(off);
}

static void orders_free(struct orders *o)
{
	ortmem__pk_free(&o->pk);
	free(o->it);
	free(o->given);
	free(o->ord);
	free(o->tmp);
	free(o->key);
}

int main(int argc, char **argv)
{
	struct orders o = { 0 };
	uint64_t budget_ns;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: plan_orders PACKING.csv [budget_us] [seed]\n");
		return 2;
	}
	budget_ns = 1000 * (argc > 2 ? strtoull(argv[2], NULL, 0) : 1000000);
	o.seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
	o.seed = o.seed ? o.seed : 1;
	if (load(argv[1], &o) || setup(&o)) {
		fprintf(stderr, "plan_orders: %s: not a valid packing\n", argv[1]);
		orders_free(&o);
		return 1;
	}
	printf("%s: %u buffers, LB %llu, the packing %llu (%+.2f%%)\n", argv[1], o.pk.n,
	       (unsigned long long)o.pk.lb, (unsigned long long)o.h, over(o.h, o.pk.lb));
	by_keys(&o);
	basin(&o);
	squeaky(&o, budget_ns);
	local_search(&o, budget_ns, "keys");
	race_then_search(&o, budget_ns);
	orders_free(&o);
	return 0;
}
