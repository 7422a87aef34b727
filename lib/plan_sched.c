// SPDX-License-Identifier: MIT
/*
 * Probes of the height, raced in turns.
 *
 * Whether a packing fits under a height H is decided by a search whose
 * run time, at one H, is heavy-tailed: it may answer in a millisecond or
 * not in a minute, and no one can tell which beforehand.  A bisection that
 * gives each probe a fixed share of the budget loses that share on every
 * probe below the optimum that cannot answer in time.  So three searches
 * take turns, a slice of nodes each, each resuming where it paused:
 *
 *  - the complete compact search (plan_compact.c) at the proven bound,
 *    which settles many instances outright and can prove the bound
 *    infeasible (then the bound rises by one grain);
 *  - heuristic dives (plan_decide.c) at the proven bound, which find a
 *    packing there on other instances;
 *  - heuristic dives below the best height: a bisection between the best
 *    and a soft floor, each probe given up after a node budget (the soft
 *    floor then rises past it).  When the soft floor meets the best, it
 *    falls back to the proven bound and the budget doubles: every height
 *    is tried again, with twice the patience.
 *
 * The first packing at the proven bound ends the race: it is optimal.
 * Budgets and slices are counted in nodes, so that a run under an
 * iteration limit is reproducible.
 */
#include <stdlib.h>
#include <stdio.h>

#include "plan_internal.h"

/* Turns per round: bound (compact), bound (dives), below the best. */
enum { PS_COMPACT, PS_LOW, PS_DOWN, PS_ARMS };
static uint32_t ps_turns[PS_ARMS] = { 1, 1, 2 };

struct ps {
	struct packer *pk;
	struct pk_compact *cmp;
	struct pk_dives *low, *down;
	uint32_t m;		/* live items */
	uint64_t g;		/* every compact height is a multiple */
	uint64_t proven;	/* no packing fits below */
	uint64_t slice;		/* nodes per turn */
	uint64_t target;	/* below the best: height probed, 0: none */
	uint64_t soft;		/* probes below it gave up this cycle */
	uint64_t budget;	/* nodes a probe gets this cycle */
	uint64_t spent;		/* nodes spent on the target */
};

static uint64_t ps_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static bool ps_over(const struct ps *s)
{
	const struct packer *pk = s->pk;

	return s->proven >= pk->best_h ||
	       (pk->opts.max_iter && pk->iters >= pk->opts.max_iter) ||
	       ortmem__now_ns() >= pk->opts.deadline_ns;
}

/* The bound is infeasible: raise it one grain. */
static void ps_raise(struct ps *s, uint64_t h)
{
	if (h + s->g > s->proven)
		s->proven = h + s->g;
}

/* Bisect between the soft floor and the best; a new cycle when they meet. */
static void ps_target(struct ps *s)
{
	uint64_t lo = s->soft > s->proven ? s->soft : s->proven;
	uint64_t best = s->pk->best_h;

	if (lo >= best) {
		s->soft = s->proven;
		s->budget *= 2;
		lo = s->proven;
	}
	s->target = lo + ((best - lo) / s->g - 1) / 2 * s->g;
	s->spent = 0;
}

static void ps_down(struct ps *s)
{
	struct packer *pk = s->pk;
	uint64_t before = pk->iters, turn;
	int r;

	if (!s->target || s->target >= pk->best_h)
		ps_target(s);
	turn = s->budget - s->spent < s->slice ? s->budget - s->spent : s->slice;
	r = ortmem__pk_dives_run(s->down, s->target, turn, pk->opts.deadline_ns);
	s->spent += pk->iters - before;
	if (r == 0)
		ps_raise(s, s->target);
	if (r == 0 || (r < 0 && s->spent >= s->budget))
		s->soft = s->target + s->g;
	if ((r >= 0 || s->spent >= s->budget) && getenv("PK_TRACE"))
		fprintf(stderr, "    down %llu r=%d spent %llu budget %llu soft %llu\n", (unsigned long long)s->target, r, (unsigned long long)s->spent, (unsigned long long)s->budget, (unsigned long long)s->soft);
	if (r >= 0 || s->spent >= s->budget)
		s->target = 0;
}

static void ps_turn(struct ps *s, int arm)
{
	uint64_t deadline = s->pk->opts.deadline_ns;
	int r;

	switch (arm) {
	case PS_COMPACT:
		r = ortmem__pk_compact_run(s->cmp, s->proven, s->slice, deadline);
		break;
	case PS_LOW:
		r = ortmem__pk_dives_run(s->low, s->proven, s->slice, deadline);
		break;
	default:
		ps_down(s);
		return;
	}
	if (r == 0)
		ps_raise(s, s->proven);
}

static void ps_race(struct ps *s)
{
	while (!ps_over(s))
		for (int arm = 0; arm < PS_ARMS && !ps_over(s); arm++)
			for (uint32_t t = 0; t < ps_turns[arm] && !ps_over(s); t++)
				ps_turn(s, arm);
}

/* Tests: every height from the bound up, the compact search alone; the
 * portfolio's packing is dropped, so that only this search counts. */
static void ps_compact_only(struct ps *s)
{
	struct packer *pk = s->pk;

	pk->best_h = UINT64_MAX;
	while (!ortmem__pk_compact(pk, s->proven, pk->opts.deadline_ns, 0))
		s->proven += s->g;
}

/*
 * Race the probes until the best height is proven optimal or the budget
 * is spent; return true when it is proven.
 */
bool ortmem__pk_decide(struct packer *pk)
{
	struct ps s = { .pk = pk };
	uint32_t i;

	for (i = 0; i < pk->n; i++) {
		if (!ortmem__pk_live(&pk->it[i]))
			continue;
		s.g = ps_gcd(s.g, pk->it[i].size);
		s.m++;
	}
	if (!s.m)
		return false;
	/* Every compact height is a sum of sizes: a multiple of g. */
	s.proven = (pk->lb + s.g - 1) / s.g * s.g;
	if (pk->opts.compact_only) {
		ps_compact_only(&s);
		return s.proven >= pk->best_h;
	}
	s.slice = 4 * (uint64_t)s.m > 1024 ? 4 * (uint64_t)s.m : 1024;
	s.budget = 8 * (uint64_t)s.m;
	s.soft = s.proven;
	if (getenv("PK_TURNS"))
		sscanf(getenv("PK_TURNS"), "%u,%u,%u", &ps_turns[0], &ps_turns[1], &ps_turns[2]);
	if (getenv("PK_B0"))
		s.budget = strtoull(getenv("PK_B0"), NULL, 10) * s.m;
	s.cmp = ortmem__pk_compact_new(pk);
	s.low = ortmem__pk_dives_new(pk);
	s.down = ortmem__pk_dives_new(pk);
	/* A dive costs about ortmem__pk_dives_work() ns: when that is over a
	 * quarter of the budget, leave the time to the local search. */
	if (s.low && !pk->opts.max_iter &&
	    ortmem__now_ns() + 4 * ortmem__pk_dives_work(s.low) >= pk->opts.deadline_ns) {
		ortmem__pk_compact_free(s.cmp);
		s.cmp = NULL;
	}
	if (getenv("PK_H") && s.cmp) {
		uint64_t hh = strtoull(getenv("PK_H"), NULL, 10);
		fprintf(stderr, "%s %d\n", getenv("PK_COMPACT") ? "compact" : "dives",
			getenv("PK_COMPACT") ? ortmem__pk_compact_run(s.cmp, hh, UINT64_MAX, pk->opts.deadline_ns) :
			ortmem__pk_dives_run(s.low, hh, UINT64_MAX, pk->opts.deadline_ns));
	} else if (s.cmp && s.low && s.down)
		ps_race(&s);
	ortmem__pk_compact_free(s.cmp);
	ortmem__pk_dives_free(s.low);
	ortmem__pk_dives_free(s.down);
	return s.proven >= pk->best_h;
}
