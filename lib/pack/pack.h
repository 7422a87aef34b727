/* SPDX-License-Identifier: MIT */
/*
 * lib/pack/pack.h - the offset packer as the planner sees it: items with
 * a lifetime and a size in, an offset each out, with the height, the lower
 * bound and whether it is optimal.  Never installed; the packer's insides
 * are in pack_internal.h.
 */
#ifndef ORTMEM_LIB_PACK_H
#define ORTMEM_LIB_PACK_H

#include <stdbool.h>
#include <stdint.h>

/* A buffer to pack: live over [lo, hi), @size already aligned. */
struct pk_item {
	uint64_t lo;
	uint64_t hi;
	uint64_t size;
};

struct pk_opts {
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0: no search at all */
	uint64_t max_iter;	/* 0: unlimited */
	uint64_t seed;
	uint32_t threads;	/* racers in the search (pack_race.c); 0 or 1: one */
	bool compact_only;	/* tests: heights from LB up, compact search only */
	/* 0; or a decision: any height at or below it will do, so the race
	 * probes only there (pack_race.c) and the search stops on reaching it */
	uint64_t target;
};

struct pk_result {
	uint64_t height;
	uint64_t lb;
	uint64_t iters;
	/* from the call to its first plan (which runs whatever the deadline) */
	uint64_t first_ns;
	bool optimal;
};

/*
 * ortmem__pack() - Give each item an offset; items that overlap in time
 * get disjoint address ranges.  Sizes must already be aligned.
 */
int ortmem__pack(const struct pk_item *it, uint32_t n,
		 const struct pk_opts *opts, uint64_t *off,
		 struct pk_result *res);
/* Largest total size live at one time (UINT64_MAX when out of memory). */
uint64_t ortmem__pk_lower_bound(const struct pk_item *it, uint32_t n);

#endif /* ORTMEM_LIB_PACK_H */
