/* SPDX-License-Identifier: MIT */
/*
 * lib/pack/pack_internal.h - the offset packer's parts, shared by the files
 * of lib/pack/ and the unit tests; never installed.  What the planner may
 * call is pack.h.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   pack_sort.c     radix sort of item ids; sections of time
 *   pack_core.c     the packer's arrays and clones, conflict lists,
 *                   best-fit placement, keeping the best, the budget check
 *   pack_search.c   iterated local search over the placement order
 *   pack_bnb.c      exact branch and bound for small instances
 *   pack_sky.c      the incremental skyline of a partial packing
 *   pack_diver.c    the driver of resumable dives over the skyline
 *   pack_dive.c     heuristic dives: a packing under a height H?
 *   pack_compact.c  the complete compact search under a height H
 *   pack_mirror.c   the items with time turned around, for a helper
 *   pack_race.c     probes of the height raced in turns
 *   pack.c          the driver: lower bound, portfolio, the searches
 */
#ifndef ORTMEM_LIB_PACK_INTERNAL_H
#define ORTMEM_LIB_PACK_INTERNAL_H

#include "internal.h"
#include "pack.h"

/* Internal state of one packing run. */
struct packer {
	uint32_t n;
	const struct pk_item *it;
	uint64_t lb;
	/* conflict lists (CSR): conf[cidx[i] .. cidx[i+1]) */
	uint32_t *cidx;
	uint32_t *conf;
	bool have_conf;
	/* current order, its inverse, offsets, prefix heights */
	uint32_t *order;
	uint32_t *rank;
	uint64_t *off;
	uint64_t *hpre;
	/* order, rank, off and hpre are one placement by place_from() */
	bool placed;
	/* scratch shared by the phases: n (t32: n + 1) entries each */
	uint64_t *t64[3];
	uint32_t *t32[2];
	/* scratch for gap search */
	uint64_t (*gap)[2];
	/* best so far */
	uint32_t *best_order;
	uint64_t *best_off;
	uint64_t best_h;
	uint64_t first_at;	/* when the first plan was kept (0: not yet) */
	uint64_t iters;
	uint64_t rng;
	struct pk_opts opts;
	/* what the later phases cost, counted by the first plan */
	uint64_t pairs;		/* conflicting pairs */
	uint64_t cells;		/* item x section of time memberships */
	uint64_t nsec;		/* sections of time */
	/* conflicts inspected since the clock was last looked at; the
	 * deadline passed (a placement stopped half way) */
	uint64_t work;
	bool timed_out;
	bool deadline_off;	/* the first plan is being made: no deadline */
};

/* The packer's deterministic generator (xorshift64*), seeded by opts. */
static inline uint64_t ortmem__pk_rand(struct packer *pk)
{
	pk->rng ^= pk->rng >> 12;
	pk->rng ^= pk->rng << 25;
	pk->rng ^= pk->rng >> 27;
	return pk->rng * 0x2545f4914f6cdd1dull;	/* xorshift64*'s multiplier */
}

/* A draw in [0, 1), in steps of 1/1024: the searches' noise on keys. */
static inline double ortmem__pk_rand_unit(struct packer *pk)
{
	return (double)(ortmem__pk_rand(pk) % 1024) / 1024;
}

/*
 * The keys items are ordered by, largest first: one encoding for every
 * search.  The portfolio (pack.c) tries the first PK_PORTFOLIO in turn:
 * most crowded lifetime first, then by size, are the two greedy orders that
 * do best on model graphs (Pisarchyk and Lee, 2020), and a big graph may
 * have time for no other.  The dives (pack_dive.c) order by size, duration
 * or area; the compact search (pack_compact.c) by duration, area and crowd.
 */
enum pk_ordering {
	PK_BY_BREADTH,		/* most crowded lifetime first, then largest */
	PK_BY_SIZE,		/* largest first, then longest */
	PK_BY_AREA,		/* size x duration */
	PK_BY_DURATION,		/* longest first, then largest */
	PK_BY_START,		/* earliest first: a sweep in time */
	PK_PORTFOLIO,
	/* the most bytes still unplaced in a section of its lifetime */
	PK_BY_CROWD = PK_PORTFOLIO,
};

/* Nodes of a dive between two looks at the budget. */
#define PK_CLOCK_NODES 64

/*
 * The budget check of every search: true when the iteration limit is
 * reached or @deadline has passed.  The clock is cheap (vDSO) but not
 * free, so both are looked at only when @count is a multiple of @every (a
 * power of two; 1: at each call).
 */
static inline bool ortmem__pk_budget_spent(const struct packer *pk,
					   uint64_t count, uint64_t every,
					   uint64_t deadline)
{
	return (count & (every - 1)) == 0 &&
	       ((pk->opts.max_iter && pk->iters >= pk->opts.max_iter) ||
		ortmem__now_ns() >= deadline);
}

/* An item that takes room: a size and a non-empty lifetime. */
static inline bool ortmem__pk_live(const struct pk_item *x)
{
	return x->size && x->hi > x->lo;
}

/* pack_sort.c: stable sort of @ids by key[id] (radix); @tmp holds n. */
void ortmem__pk_sort_by(uint32_t *ids, uint32_t n, const uint64_t *key,
			uint32_t *tmp);
/*
 * pack_sort.c: sections of time for the exact searches.  Sort and dedupe
 * the @nt event times in @t, returning how many distinct ones remain;
 * then the index of the first time >= @v among them.
 */
uint32_t ortmem__pk_section_times(uint64_t *t, uint32_t nt);
uint32_t ortmem__pk_section_of(const uint64_t *t, uint32_t n, uint64_t v);

/*
 * pack_first.c: a sweep in order of start, O(n log n), looking at no
 * pair: each item seated best fit (@holes PK_SWEEP_BEST_FIT), or by ends
 * over the @holes tightest free ranges that hold it (an exact fit, else
 * beside the neighbour that ends nearest its end); kept if best.  0 or
 * -ENOMEM.
 */
#define PK_SWEEP_BEST_FIT 0
/* The ranges the first plan weighs (Documentation/lib/planner.rst, "The
 * first plan of a dense graph"). */
#define PK_SWEEP_BY_ENDS 4
int ortmem__pk_sweep(struct packer *pk, uint32_t holes);
/* The first plan of a dense instance: the sweep by ends, then best fit
 * and other sweeps by ends while the time left holds one more. */
int ortmem__pk_first_plan(struct packer *pk);
/* pack_core.c: the floor every search calls. */
int ortmem__pk_alloc(struct packer *pk);
void ortmem__pk_free(struct packer *pk);
/*
 * Conflict lists by a start-time sweep, O(n + pairs); -ETIME when @timed
 * and the deadline passed first (nothing is kept).
 */
int ortmem__pk_build_conflicts(struct packer *pk, bool timed);
/*
 * Best fit in pk->order from position @from; the height, or UINT64_MAX
 * when the deadline passed half way (pk->timed_out is set).
 */
uint64_t ortmem__pk_place_from(struct packer *pk, uint32_t from);
/* The same, stopped once the height passes @limit (that height returned,
 * pk->placed false, the rest of the order unplaced). */
uint64_t ortmem__pk_place_from_under(struct packer *pk, uint32_t from, uint64_t limit);
/* Look at the clock once this much work (conflicts inspected) was done. */
#define PK_CLOCK_WORK (1u << 14)
/* The deadline passed (looking at the clock only every PK_CLOCK_WORK). */
bool ortmem__pk_deadline_passed(struct packer *pk);
bool ortmem__pk_out_of_time(struct packer *pk);
void ortmem__pk_keep_if_best(struct packer *pk, uint64_t h);
/*
 * The packing in pk->off of the @m live items first in pk->order, of
 * height @h, pushed down from either side in turn until it stops falling
 * (first fit by offset: no item rises).  Returns the new height; needs the
 * conflict lists, and uses the scratch arrays and pk->rank.  Every packing
 * an exact search finds is settled by ortmem__pk_keep_placed().
 */
uint64_t ortmem__pk_settle(struct packer *pk, uint32_t m, uint64_t h);
/*
 * An exact search placed the @m live items of @placed (offsets in pk->off):
 * order them first, the empty ones after, and keep it if it is the best.
 */
void ortmem__pk_keep_placed(struct packer *pk, const uint32_t *placed,
			    uint32_t m);
/*
 * A packer for another thread: its own arrays and generator (@seed), the
 * items and conflict lists shared, the best packing copied.  _take() keeps
 * the clone's best packing when it is better, and counts its iterations.
 */
int ortmem__pk_clone(struct packer *dst, const struct packer *src, uint64_t seed);
void ortmem__pk_clone_take(struct packer *pk, const struct packer *clone);
void ortmem__pk_clone_free(struct packer *clone);
/* pack_search.c: local search over the order from the best plan. */
void ortmem__pk_local_search(struct packer *pk);
/* pack_sky.c: the skyline of a partial packing, kept incrementally. */
enum { PK_SKY_BASE, PK_SKY_FLOOR, PK_SKY_NAT };
/* Bases the items lifted by one step are grouped by (pack_sky.c). */
#define PK_SKY_GROUPS 8

struct pk_sky_undo {
	uint32_t idx;
	uint32_t kind;		/* PK_SKY_BASE (an item), _FLOOR or _NAT */
	uint64_t old;
};

struct pk_sky {
	struct packer *pk;
	uint32_t m;		/* live items */
	uint32_t *ids;		/* the live items, by id */
	uint32_t nsec;		/* sections of time */
	uint32_t *slo, *shi;	/* per item: its sections [slo, shi) */
	uint32_t *sidx, *smem;	/* section members, CSR: the unplaced first */
	uint32_t *scnt;		/* per section: unplaced members */
	uint32_t *ioff, *spos;	/* spos[ioff[i] + s - slo[i]]: i's place in s */
	uint64_t *floor;	/* per section: nothing unplaced goes lower */
	uint64_t *rem, *rem0;	/* per section: unplaced bytes (at first) */
	uint32_t *stamp, *touched, now;	/* sections touched by a step */
	uint32_t *nlog;		/* per section: the step that logged its nat */
	/* the items a step lifted, by the base they left (PK_SKY_GROUPS
	 * bases at most; the others are dealt with at once) */
	uint32_t *lifted, *lgroup, nlifted, ngroup;
	uint64_t gbase[PK_SKY_GROUPS];
	uint32_t *cover;	/* per section: lifted items there (differences) */
	uint64_t *nat;		/* per section: members at the floor, or fewer */
	/* per section of the item being placed: the members lifted to its
	 * top, as a difference array (the count at s is the sum of ntop[]
	 * from own_lo to s) */
	uint32_t *ntop;
	uint32_t own_lo, own_hi;	/* the sections of the item being placed */
	uint64_t *base;		/* per unplaced item: its lowest offset */
	uint64_t *off;		/* per placed item: its offset */
	bool *placed;
	struct pk_sky_undo *undo;
	uint32_t nundo;
	size_t cap_undo;
	uint64_t h;		/* the height the steps are checked against */
	/* the last step left a section's bytes, or an item, over h */
	bool dead;
};

/* -ENOMEM, or 0; ortmem__sky_fini() frees what init allocated either way. */
int ortmem__sky_init(struct pk_sky *k, struct packer *pk);
void ortmem__sky_fini(struct pk_sky *k);
/* Nothing placed, every base 0, steps checked against @h. */
void ortmem__sky_reset(struct pk_sky *k, uint64_t h);
/* Place item @i at its base: 1 when an unplaced item conflicts with it,
 * 0 when none does, -ENOMEM.  Sets k->dead. */
int ortmem__sky_place(struct pk_sky *k, uint32_t i);
/* Raise the bases of section @s's unplaced members to @v: 0 or -ENOMEM.
 * Sets k->dead. */
int ortmem__sky_raise(struct pk_sky *k, uint32_t s, uint64_t v);
/* Undo back to the log position @mark (k->nundo before a step). */
void ortmem__sky_undo(struct pk_sky *k, uint32_t mark);
/* Undo back to @mark, and item @i's placement (the last one). */
void ortmem__sky_unplace(struct pk_sky *k, uint32_t i, uint32_t mark);

/* What a probe of a height says; errors are -errno apart from these. */
enum pk_probe {
	PK_PROBE_INFEASIBLE,	/* proven: nothing packs under the height */
	PK_PROBE_FOUND,		/* a packing under it, kept if best */
	PK_PROBE_PAUSED,	/* budget or deadline spent: call again */
};

/*
 * A search over the skyline that dives and restarts, and pauses between
 * calls (pack_dive.c, pack_compact.c).  ortmem__pk_diver_run()
 * (pack_diver.c) goes on at height @h where the last call at the same
 * height paused (a new height starts over), for at most @budget nodes or
 * until @deadline, and returns an enum pk_probe.
 */
enum pk_dive { PK_DIVE_FOUND, PK_DIVE_INFEASIBLE, PK_DIVE_LIMIT, PK_DIVE_PAUSE };

struct pk_diver {
	struct pk_sky *sky;
	const uint32_t *stack;	/* the items placed, in order */
	void *search;
	/* set up dive number @restart under @h */
	void (*begin)(void *search, uint32_t restart, uint64_t h);
	/* go on with it for at most @budget nodes: PK_DIVE_LIMIT when it
	 * used up its own limit (or cut branches), PAUSE to resume */
	enum pk_dive (*dive)(void *search, uint64_t budget, uint64_t deadline);
	uint64_t h;
	uint32_t restart;	/* dives begun at this height */
	bool in_dive;
};

int ortmem__pk_diver_run(struct pk_diver *v, uint64_t h, uint64_t budget,
			 uint64_t deadline);

/*
 * pack_race.c: probes of the height, the lower bound and below the best,
 * raced in turns; true when the best height is proven optimal.
 */
bool ortmem__pk_race(struct packer *pk);
/*
 * Resumable searches for a packing under a height h: *_run() goes on where
 * the last call at the same h paused, for at most @budget nodes or until
 * @deadline, and returns an enum pk_probe.  pack_dive.c: heuristic dives; pack_compact.c: MiniMalloc's
 * complete search over compact packings.  *_new() returns NULL when out of
 * memory; each keeps its own path, so they can take turns.
 */
struct pk_dives;
struct pk_dives *ortmem__pk_dives_new(struct packer *pk);
int ortmem__pk_dives_run(struct pk_dives *d, uint64_t h, uint64_t budget,
			 uint64_t deadline);
void ortmem__pk_dives_free(struct pk_dives *d);
/* Every other dive of @d starts from the best packing's lower part. */
void ortmem__pk_dives_from_best(struct pk_dives *d, bool on);
/*
 * @on: the dives of @d fill the lowest free position in the section
 * nearest the step where the most bytes are live (sweeping right from it,
 * then left), instead of the leftmost.
 */
void ortmem__pk_dives_pivot(struct pk_dives *d, bool on);
/* About what one dive costs, in steps of a nanosecond or so. */
uint64_t ortmem__pk_dives_work(const struct pk_dives *d);
struct pk_compact;
struct pk_compact *ortmem__pk_compact_new(struct packer *pk);
int ortmem__pk_compact_run(struct pk_compact *d, uint64_t h, uint64_t budget,
			   uint64_t deadline);
void ortmem__pk_compact_free(struct pk_compact *d);
/* One compact probe from scratch (@max_nodes 0: no limit): an enum
 * pk_probe, or -ENOMEM. */
int ortmem__pk_compact(struct packer *pk, uint64_t h, uint64_t deadline,
		       uint64_t max_nodes);
/*
 * pack_mirror.c: the items with time turned around (t -> end - t), for a
 * helper racer, when the step where the most bytes are live lies in the
 * later half of time; else (or out of memory) NULL.  Free with free().
 */
struct pk_item *ortmem__pk_mirror(const struct packer *pk);
/* pack_bnb.c: exact search; true when it finished (best is optimal). */
bool ortmem__pk_bnb(struct packer *pk);

#endif /* ORTMEM_LIB_PACK_INTERNAL_H */
