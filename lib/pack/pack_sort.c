// SPDX-License-Identifier: MIT
/*
 * Stable sort of item ids by a 64-bit key: least significant digit radix
 * sort, 8 bits a pass, skipping the bytes that are the same in every key
 * (step numbers need 2 or 3 passes).  O(n) a pass, reentrant, no
 * comparator state; it replaced a merge sort that dominated the planning
 * time of large graphs.
 */
#include <stdlib.h>

#include "pack_internal.h"

/* One byte of the key a pass. */
#define PK_RADIX_BITS 8
#define PK_RADIX (1u << PK_RADIX_BITS)

void ortmem__pk_sort_by(uint32_t *ids, uint32_t n, const uint64_t *key,
			uint32_t *tmp)
{
	uint64_t all_or = 0, all_and = UINT64_MAX;
	uint32_t cnt[PK_RADIX], i, *src = ids, *dst = tmp, *t;
	unsigned int shift;

	for (i = 0; i < n; i++) {
		all_or |= key[ids[i]];
		all_and &= key[ids[i]];
	}
	for (shift = 0; shift < 64; shift += PK_RADIX_BITS) {
		uint32_t sum = 0;

		if ((((all_or ^ all_and) >> shift) & (PK_RADIX - 1)) == 0)
			continue;
		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[(key[src[i]] >> shift) & (PK_RADIX - 1)]++;
		for (i = 0; i < PK_RADIX; i++) {
			uint32_t c = cnt[i];

			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[cnt[(key[src[i]] >> shift) & (PK_RADIX - 1)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != ids)
		memcpy(ids, src, sizeof(*ids) * n);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

uint32_t ortmem__pk_section_times(uint64_t *t, uint32_t nt)
{
	uint32_t i, s = 0;

	qsort(t, nt, sizeof(*t), u64_cmp);
	for (i = 0; i < nt; i++)
		if (!s || t[s - 1] != t[i])
			t[s++] = t[i];
	return s;
}

uint32_t ortmem__pk_section_of(const uint64_t *t, uint32_t n, uint64_t v)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
