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
 *  - the complete compact search (pack_compact.c) at the proven bound,
 *    which settles many instances outright and can prove the bound
 *    infeasible (then the bound rises by one grain);
 *  - heuristic dives (pack_dive.c) at the proven bound, which find a
 *    packing there on other instances;
 *  - heuristic dives a step below the best height (never more than half
 *    way to the bound, which the other two probe): a success doubles the
 *    step, a probe that gives up after its node budget halves it and
 *    grows the budget by half, so the probes stay where they can still
 *    succeed and grow patient where they do not.  Every other dive
 *    starts from the best packing's lower part (pack_dive.c).  This one
 *    gets most of the turns, and more as the rounds go by (the other two
 *    play in square rounds only).
 *
 * The first packing at the proven bound ends the race: it is optimal.
 *
 * A decision (pk_opts.target: any height up to it will do) races the
 * probes at the target alone, every round, on one thread, and ends when
 * one finds a packing there or the compact search proves there is none:
 * nothing below the best is wanted.  On the placement's slack guides at
 * the largest step's budget (Documentation/lib/placement-history.rst,
 * "Packing the guide itself") this finds
 * in 5-10 ms the packing the full race does not find in 50.
 * Budgets and slices are counted in nodes, so that a run under an
 * iteration limit is reproducible.
 *
 * With more than one thread (and no iteration limit), each helper races
 * the probes below the best on its own copy of the packer, with its own
 * seed, a smaller first step and a step that grows by half on success
 * (a spread of policies is steadier than one).  The racers share the best
 * height and the proven bound, so that each probes below the best any of
 * them found, and all stop when one proves it.  The best packing of all
 * is kept.  When the step where the most bytes are live lies in the later
 * half of time, every other helper races on the items with time turned
 * around (pack_mirror.c).  Every racer's dives fill from the step where
 * the most bytes are live outward (ortmem__pk_dives_pivot()): right of it
 * first, so the mirror's racer sweeps the other way.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "pack_internal.h"

/* Turns per round: bound (compact), bound (dives), below the best. */
enum { PS_COMPACT, PS_LOW, PS_DOWN, PS_ARMS };
static const uint32_t ps_turns[PS_ARMS] = { 1, 1, 4 };
/*
 * The bound's turns thin out: they are played in the rounds r that are
 * squares (0, 1, 4, 9, ...), so in R rounds they get about sqrt(R) turns
 * against 4R below the best.  A probe at the bound answers at once or
 * takes far longer (the run time of one is heavy-tailed), so an instance
 * whose bound is in reach has it from the first rounds, and one whose
 * bound is out of reach soon stops paying for it, yet a complete search
 * there that needs N turns still gets them, after N^2 rounds.
 */
/* The first budget of a probe below the best, in nodes per item. */
#define PS_BUDGET0 32
/* The fewest nodes a turn of a probe gets. */
#define PS_SLICE_MIN 1024u
/* Most racers (threads) in one search. */
#define PS_MAX_THREADS 64

struct ps_shared {
	_Atomic uint64_t best;	/* the lowest height any racer found */
	_Atomic uint64_t proven;
};

struct ps {
	struct packer *pk;
	struct ps_shared *sh;
	struct pk_compact *cmp;	/* NULL: this racer leaves the bound alone */
	struct pk_dives *low, *down;
	uint32_t m;		/* live items */
	uint64_t g;		/* every compact height is a multiple */
	uint64_t proven;	/* no packing fits below */
	uint64_t best;		/* the lowest height known to any racer */
	uint64_t slice;		/* nodes per turn */
	uint64_t target;	/* below the best: height probed, 0: none */
	uint64_t step;		/* how far below the best to probe */
	uint64_t budget;	/* nodes a probe below the best gets */
	uint64_t spent;		/* nodes spent on the target */
	uint32_t up;		/* the step after a success, in quarters */
};

struct ps_helper {
	pthread_t thread;
	struct packer pk;
	struct ps s;
	bool started;
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

static void ps_atomic_min(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t cur = atomic_load(v);

	while (x < cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

static void ps_atomic_max(_Atomic uint64_t *v, uint64_t x)
{
	uint64_t cur = atomic_load(v);

	while (x > cur && !atomic_compare_exchange_weak(v, &cur, x))
		;
}

/* Tell the others what this racer found, and learn what they did. */
static void ps_sync(struct ps *s)
{
	ps_atomic_min(&s->sh->best, s->pk->best_h);
	ps_atomic_max(&s->sh->proven, s->proven);
	s->best = atomic_load(&s->sh->best);
	s->proven = atomic_load(&s->sh->proven);
}

static bool ps_over(const struct ps *s)
{
	const struct packer *pk = s->pk;

	return s->proven >= s->best ||
	       (pk->opts.target && s->proven > pk->opts.target) ||
	       ortmem__pk_budget_spent(pk, 0, 1, pk->opts.deadline_ns);
}

/* Height @h is infeasible: the bound rises past it. */
static void ps_raise(struct ps *s, uint64_t h)
{
	if (h + s->g > s->proven)
		s->proven = h + s->g;
}

/* Below the best by the step, not below the proven bound. */
static void ps_target(struct ps *s)
{
	uint64_t half = (s->best - s->proven) / 2 / s->g * s->g;

	if (s->step > half)
		s->step = half > s->g ? half : s->g;
	s->target = s->best - s->proven > s->step ? s->best - s->step : s->proven;
	s->spent = 0;
}

static void ps_down(struct ps *s)
{
	struct packer *pk = s->pk;
	uint64_t before = pk->iters, turn;
	int r;

	if (!s->target || s->target >= s->best)
		ps_target(s);
	turn = s->budget - s->spent < s->slice ? s->budget - s->spent : s->slice;
	r = ortmem__pk_dives_run(s->down, s->target, turn, pk->opts.deadline_ns);
	s->spent += pk->iters - before;
	if ((r == PK_PROBE_PAUSED || r < 0) && s->spent < s->budget)
		return;
	if (r == PK_PROBE_INFEASIBLE)
		ps_raise(s, s->target);
	if (r == PK_PROBE_FOUND) {
		/* on the grid, as every height is */
		s->step = (s->step * s->up / 4 + s->g - 1) / s->g * s->g;
	} else {
		if (s->step > s->g)
			s->step = (s->step / 2 + s->g - 1) / s->g * s->g;
		s->budget += s->budget / 2;
	}
	s->target = 0;
}

static void ps_turn(struct ps *s, int arm)
{
	uint64_t deadline = s->pk->opts.deadline_ns;
	int r = PK_PROBE_PAUSED;

	switch (arm) {
	case PS_COMPACT:
		if (s->cmp)
			r = ortmem__pk_compact_run(s->cmp, s->proven, s->slice, deadline);
		break;
	case PS_LOW:
		if (s->cmp)
			r = ortmem__pk_dives_run(s->low, s->proven, s->slice, deadline);
		break;
	default:
		ps_down(s);
		break;
	}
	if (r == PK_PROBE_INFEASIBLE)
		ps_raise(s, s->proven);
	ps_sync(s);
}

static void ps_race(struct ps *s)
{
	uint64_t root = 0, square = 0;

	ps_sync(s);
	for (uint64_t round = 0; !ps_over(s); round++) {
		bool bound = round == square || s->pk->opts.target;

		if (bound) {
			root++;
			square = root * root;
		}
		for (int arm = 0; arm < PS_ARMS && !ps_over(s); arm++) {
			if (arm != PS_DOWN && !bound)
				continue;
			/* a decision: below the best is not what is asked */
			if (arm == PS_DOWN && s->pk->opts.target)
				continue;
			for (uint32_t t = 0; t < ps_turns[arm] && !ps_over(s); t++)
				ps_turn(s, arm);
		}
	}
}

static void *ps_helper_main(void *arg)
{
	ps_race(arg);
	return NULL;
}

/* Set up racer @s on packer @pk; false when out of memory. */
static bool ps_init(struct ps *s, struct packer *pk, const struct ps *proto,
		    bool bound)
{
	*s = *proto;
	s->pk = pk;
	s->low = s->down = NULL;
	s->cmp = bound ? ortmem__pk_compact_new(pk) : NULL;
	s->down = ortmem__pk_dives_new(pk);
	if (s->down) {
		ortmem__pk_dives_from_best(s->down, true);
		ortmem__pk_dives_pivot(s->down, true);
	}
	if (bound)
		s->low = ortmem__pk_dives_new(pk);
	if (s->low)
		ortmem__pk_dives_pivot(s->low, true);
	return s->down && (!bound || (s->cmp && s->low));
}

static void ps_fini(struct ps *s)
{
	ortmem__pk_compact_free(s->cmp);
	ortmem__pk_dives_free(s->low);
	ortmem__pk_dives_free(s->down);
}

/* Start the helpers (as many as can start), race, and keep the best. */
static void ps_run(struct ps *s, uint32_t threads)
{
	struct packer *pk = s->pk;
	struct ps_helper *hp = NULL;
	struct pk_item *mirror = NULL;
	uint32_t t, nh = threads > 1 ? threads - 1 : 0;
	sigset_t all, old;

	if (nh)
		hp = calloc(nh, sizeof(*hp));
	if (hp)
		mirror = ortmem__pk_mirror(pk);
	/* Helpers take no signal: the caller's handlers run where it expects. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Each helper's copy costs a skyline: none starts past the deadline. */
	for (t = 0; hp && t < nh && ortmem__now_ns() < pk->opts.deadline_ns; t++) {
		uint64_t seed = pk->rng ^ (0x9e3779b97f4a7c15ull * (t + 1));

		if (ortmem__pk_clone(&hp[t].pk, pk, seed))
			break;
		/* Every other helper races on the mirror, when there is one. */
		if (mirror && !(t & 1))
			hp[t].pk.it = mirror;
		hp[t].started = ps_init(&hp[t].s, &hp[t].pk, s, false);
		/* Another first step, and a step that grows more slowly: the
		 * racers spread over the heights. */
		hp[t].s.step = s->step >> (t + 1) > s->g ? s->step >> (t + 1) : s->g;
		hp[t].s.up = 6;
		hp[t].started = hp[t].started &&
				!pthread_create(&hp[t].thread, NULL, ps_helper_main, &hp[t].s);
		if (!hp[t].started) {
			ps_fini(&hp[t].s);
			ortmem__pk_clone_free(&hp[t].pk);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	nh = hp ? t : 0;
	ps_race(s);
	for (t = 0; t < nh; t++) {
		pthread_join(hp[t].thread, NULL);
		ortmem__pk_clone_take(pk, &hp[t].pk);
		ps_fini(&hp[t].s);
		ortmem__pk_clone_free(&hp[t].pk);
	}
	free(hp);
	free(mirror);
	ps_sync(s);
}

/* Tests: every height from the bound up, the compact search alone; the
 * portfolio's packing is dropped, so that only this search counts. */
static void ps_compact_only(struct ps *s)
{
	struct packer *pk = s->pk;

	pk->best_h = UINT64_MAX;
	while (ortmem__pk_compact(pk, s->proven, pk->opts.deadline_ns, 0) ==
	       PK_PROBE_INFEASIBLE)
		s->proven += s->g;
}

/*
 * Race the probes until the best height is proven optimal or the budget
 * is spent; return true when it is proven.
 */
bool ortmem__pk_race(struct packer *pk)
{
	struct ps_shared sh;
	struct ps proto = { .pk = pk, .sh = &sh }, s;
	uint32_t i, threads = pk->opts.threads;
	uint64_t work;
	bool ok;

	for (i = 0; i < pk->n; i++) {
		if (!ortmem__pk_live(&pk->it[i]))
			continue;
		proto.g = ps_gcd(proto.g, pk->it[i].size);
		proto.m++;
	}
	if (!proto.m)
		return false;
	/* Every compact height is a sum of sizes: a multiple of g. */
	proto.proven = (pk->lb + proto.g - 1) / proto.g * proto.g;
	/* A decision at the target: the probes at the bound probe there (a
	 * packing found there ends the race, which then proves nothing). */
	if (pk->opts.target / proto.g * proto.g > proto.proven)
		proto.proven = pk->opts.target / proto.g * proto.g;
	if (proto.proven >= pk->best_h)
		return true;
	if (pk->opts.compact_only) {
		ps_compact_only(&proto);
		return proto.proven >= pk->best_h;
	}
	/*
	 * A dive costs about (sections + 2 cells + items) x items ns, a
	 * skyline about its cells: sized by the first plan, before any is
	 * built, so that a dense graph does not spend its budget on them.
	 * The race is set up when one dive fits in the time left: it needed
	 * four until the twenty-first session, which under the default 10 ms
	 * left MiniMalloc's D to the local search (+29.9 % over its bound,
	 * +6.5 % with the race) and the placement's guides of 200-node graphs
	 * unpacked (placement-history-2.rst).
	 */
	work = (pk->nsec + 2 * pk->cells + proto.m) * proto.m;
	if (pk->cells > UINT32_MAX / 4 ||
	    ortmem__now_ns() + work >= pk->opts.deadline_ns)
		return false;
	atomic_init(&sh.best, pk->best_h);
	atomic_init(&sh.proven, proto.proven);
	proto.best = pk->best_h;
	proto.slice = 4 * (uint64_t)proto.m > PS_SLICE_MIN ? 4 * (uint64_t)proto.m :
		      PS_SLICE_MIN;
	proto.budget = PS_BUDGET0 * (uint64_t)proto.m;
	proto.up = 8;
	proto.step = (pk->best_h - proto.proven) / 2 / proto.g * proto.g;
	if (proto.step < proto.g)
		proto.step = proto.g;
	ok = ps_init(&s, pk, &proto, true);
	/* A dive costs about ortmem__pk_dives_work() ns (the skylines' own
	 * count): when not even one fits in what is left, leave the time to
	 * the local search. */
	if (ok && !pk->opts.max_iter &&
	    ortmem__now_ns() + ortmem__pk_dives_work(s.down) >= pk->opts.deadline_ns)
		ok = false;
	/* Helpers make a run depend on timing: none under an iteration limit. */
	if (pk->opts.max_iter || threads < 1)
		threads = 1;
	/* The helpers race below the best only: nothing for a decision. */
	if (pk->opts.target)
		threads = 1;
	if (threads > PS_MAX_THREADS)
		threads = PS_MAX_THREADS;
	if (ok)
		ps_run(&s, threads);
	ps_fini(&s);
	return ok && s.proven >= pk->best_h;
}
