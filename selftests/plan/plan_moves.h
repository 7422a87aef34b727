/* SPDX-License-Identifier: MIT */
/*
 * What unit_move and stress check of a step's moves within the device
 * arena, as ortmem_plan_transfers() lists them: that a runtime running
 * them one after another in the order listed never copies over a buffer
 * still in use (ortmem_plan_transfers(3)).
 */
#ifndef SELFTESTS_PLAN_PLAN_MOVES_H
#define SELFTESTS_PLAN_PLAN_MOVES_H

#include <stdbool.h>
#include <stdint.h>

#include <ortmem/ortmem.h>

/* Do [a, a + size) and [b, b + size) meet? */
static inline bool moves_meet(uint64_t a, uint64_t b, uint64_t size)
{
	return a < b + size && b < a + size;
}

/*
 * The moves among the @n transfers of @x (aligned to @align): listed by
 * increasing destination; each clear of the sources of the moves listed
 * after it (they still hold their buffers when it runs) and of the other
 * destinations; with @apart (ORTMEM_PLAN_F_MOVE_APART), clear of every
 * source, its own too, else over its own by a shift of 1/16 of its size
 * at least.  NULL, or what is wrong.  Moves that land on the
 * source of one listed before are added to *@ordered, those that overlap
 * their own source to *@self.
 */
static inline const char *moves_in_order(const struct ortmem_plan_transfer *x, int n,
					 uint64_t align, bool apart, uint32_t *ordered,
					 uint32_t *self)
{
	uint64_t last = 0;
	bool any = false;
	int i, j;

	for (i = 0; i < n; i++) {
		uint64_t zi = (x[i].bytes + align - 1) & ~(align - 1);
		bool on_earlier = false;

		if (x[i].dir != ORTMEM_PLAN_XFER_MOVE || !zi)
			continue;
		if (any && x[i].device_offset <= last)
			return "moves not listed by increasing destination";
		any = true;
		last = x[i].device_offset;
		if (moves_meet(x[i].src_offset, x[i].device_offset, zi)) {
			uint64_t shift = x[i].src_offset > x[i].device_offset ?
					 x[i].src_offset - x[i].device_offset :
					 x[i].device_offset - x[i].src_offset;

			if (apart)
				return "a move overlaps its own source, and the plan keeps moves apart";
			/* in 16 disjoint pieces at most (ortmem_plan_transfers(3)) */
			if (!shift || shift < (x[i].bytes + 15) / 16)
				return "a move overlaps its own source by more than 15/16";
			(*self)++;
		}
		for (j = 0; j < n; j++) {
			uint64_t zj = (x[j].bytes + align - 1) & ~(align - 1);

			if (j == i || x[j].dir != ORTMEM_PLAN_XFER_MOVE || !zj)
				continue;
			if (x[i].device_offset < x[j].device_offset + zj &&
			    x[j].device_offset < x[i].device_offset + zi)
				return "two moves of a step land on one range";
			if (!(x[i].device_offset < x[j].src_offset + zj &&
			      x[j].src_offset < x[i].device_offset + zi))
				continue;
			if (j > i)
				return "a move lands on the source of one listed after it";
			if (apart)
				return "a move lands on another's source, and the plan keeps moves apart";
			on_earlier = true;
		}
		*ordered += on_earlier;
	}
	return NULL;
}

#endif /* SELFTESTS_PLAN_PLAN_MOVES_H */
