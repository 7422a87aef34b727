/* SPDX-License-Identifier: MIT */
/*
 * lib/internal.h - the core of libortmem, which every folder below lib/ may
 * use; never installed.  The core calls into no folder (the layer map:
 * Documentation/lib/layers.rst).
 *
 * Internal symbols are named ortmem__* and stay hidden (-fvisibility=hidden);
 * only what lib/libortmem.map lists is exported.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   util.c          small utilities: the clock, growing arrays
 *   version.c       ortmem_version() and its string
 *   error.c         the error vocabulary, the thread-local detailed error
 *   error_format.c  a detailed error and its causes as one sentence
 *   log.c           logging through the caller's callback
 */
#ifndef ORTMEM_LIB_INTERNAL_H
#define ORTMEM_LIB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ortmem/core.h>

#define ORTMEM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#ifndef __printf
#define __printf(a, b) __attribute__((format(printf, a, b)))
#endif

/* ---- utilities (lib/util.c) ---- */

#define ORTMEM_NSEC_PER_USEC 1000ull
#define ORTMEM_NSEC_PER_SEC 1000000000ull
#define ORTMEM_USEC_PER_SEC 1000000ull

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ortmem__now_ns(void);
/*
 * ortmem__grow() - Make room for @need elements of @elem bytes in *@arr,
 * whose capacity *@cap counts elements: doubled (from @first when empty)
 * until it holds @need, with the multiplication checked.  0, or -ENOMEM
 * with *@arr and *@cap as they were; the caller says what it was growing.
 */
int ortmem__grow(void **arr, size_t *cap, size_t need, size_t elem,
		 size_t first);
/*
 * ortmem__sort_pairs() - Sort @d pairs by their first number (ranges
 * {start, end} by start), or with @by_second by the second, then the first
 * (candidates {address, cost} by cost).  Pairs equal in the key may come
 * out in any order.  Quicksort on the median of three (a partition without
 * a branch on the comparison, the smaller side first, runs of a key set
 * aside at once), insertion sort below 16, heap sort past 2 log2 @d levels:
 * O(d log d) on any input, no allocation, and no call per comparison
 * (qsort() makes one: sorting ranges with it took a fifth of a 1,500-node
 * placement and half of the packer's local search).
 */
void ortmem__sort_pairs(uint64_t (*r)[2], uint32_t d, bool by_second);
/* The same with the levels of quicksort given (tests: 0 is a heap sort). */
void ortmem__sort_pairs_limited(uint64_t (*r)[2], uint32_t d, bool by_second,
				uint32_t depth);

/* ---- logging (lib/log.c) ---- */

void ortmem__log(enum ortmem_log_level level, const char *fmt, ...)
	__printf(2, 3);

#define pr_err(...) ortmem__log(ORTMEM_LOG_ERROR, __VA_ARGS__)
#define pr_warn(...) ortmem__log(ORTMEM_LOG_WARN, __VA_ARGS__)
#define pr_info(...) ortmem__log(ORTMEM_LOG_INFO, __VA_ARGS__)
#define pr_debug(...) ortmem__log(ORTMEM_LOG_DEBUG, __VA_ARGS__)

/* ---- detailed errors (lib/error.c) ----
 *
 * Each setter records a new error and returns its code, so a failing path
 * reads "return ortmem__err_tier_exhausted(...);".  The _wrap variants keep
 * the thread's current error as the cause of the new one; the others start
 * a fresh chain.
 */

/* Figures common to every kind; tier -1 when none applies. */
struct ortmem__figures {
	int tier;
	uint32_t role;
	bool has_role;
	uint64_t requested;
	uint64_t used;
	uint64_t limit;
	uint64_t available;
};

int ortmem__err_tier_exhausted(int tier, uint32_t role, uint64_t requested,
			       uint64_t used, uint64_t limit);
int ortmem__err_invalid(int tier, uint64_t requested, const char *fmt, ...)
	__printf(3, 4);
int ortmem__err_alloc_failed(int code, int tier, uint64_t requested,
			     const char *fmt, ...) __printf(4, 5);
int ortmem__err_capacity(bool wrap_current, int tier, uint32_t role,
			 uint64_t requested, uint64_t available,
			 const char *fmt, ...) __printf(6, 7);
/* Any other failure: a code and a free-text reason, no figures. */
int ortmem__err_plain(int code, const char *fmt, ...) __printf(2, 3);
/* The same, naming the tier and the bytes concerned. */
int ortmem__err_io(int code, int tier, uint64_t bytes, const char *fmt, ...)
	__printf(4, 5);
/*
 * Make @saved (an error copied earlier, from this thread before a cleanup
 * or from another thread) the thread's error again, with @code; its cause
 * is dropped (it pointed into the chain it was copied from).
 */
int ortmem__err_restore(const struct ortmem_error *saved, int code);

/* ---- a host tier in the spill engine's fixed-buffer registry ----
 * (lib/spill/spill_fixed.c keeps the list; each host tier embeds its entry) */
struct ortmem__fixed_user {
	struct ortmem__fixed_user *next;	/* in attach order */
	uint32_t state;				/* ORTMEM_SPILL_FIXED_ON/OFF */
	int32_t err;				/* why OFF, a positive errno */
	uint64_t buffers;			/* registered now */
};

/* ---- sized option structs ---- */

/*
 * ortmem__opts_valid() - Check a caller's options struct.
 * @opts: the struct (NULL is valid: all defaults).
 * @known: sizeof the struct this library was built with.
 * @name: the struct's name, for the error message.
 *
 * Return: 0, or -EINVAL (with a detailed error) when sz is smaller than
 * the size field itself or a newer caller set fields this library lacks.
 */
int ortmem__opts_valid(const void *opts, size_t known, const char *name);

/*
 * ortmem__text_fit() - Copy @src into @dst of @size bytes; a text too long
 * is cut at its last word that fits and ends with " [...]", so a reason or
 * cause is never cut mid-word without a sign.
 */
void ortmem__text_fit(char *dst, size_t size, const char *src);

/* The end of @field in @type: where the next field would start. */
#define ORTMEM_OFFSETOFEND(type, field) \
	(offsetof(type, field) + sizeof(((type *)0)->field))
/*
 * ORTMEM_OPTS_VALID(opts, TYPE) - ortmem__opts_valid() for a struct TYPE,
 * knowing it up to the end of TYPE##__last_field (defined beside the struct
 * in its public header), as libbpf's OPTS_VALID does.  Not from sizeof: a
 * field a newer caller adds in the trailing padding would be ignored.
 */
#define ORTMEM_OPTS_VALID(opts, TYPE)                                     \
	ortmem__opts_valid(opts, ORTMEM_OFFSETOFEND(struct TYPE,             \
						    TYPE##__last_field), #TYPE)

/*
 * ortmem__opts_whole() - Refuse an options struct whose sz cuts a field.
 * @opts: the struct (NULL is valid).
 * @name: the struct's name, for the error message.
 * @spans: each field's start and end, in pairs (ORTMEM_OPTS_SPAN).
 * @n: how many pairs.
 *
 * A sz that ends inside a field would leave the whole field at its default
 * (a cut budget array closes every tier): that is a caller's mistake.
 */
int ortmem__opts_whole(const void *opts, const char *name,
		       const size_t *spans, size_t n);
#define ORTMEM_OPTS_SPAN(TYPE, field) \
	offsetof(struct TYPE, field), ORTMEM_OFFSETOFEND(struct TYPE, field)
/* ORTMEM_OPTS_WHOLE(opts, TYPE, ORTMEM_OPTS_SPAN(TYPE, f1), ...) */
#define ORTMEM_OPTS_WHOLE(opts, TYPE, ...)                                \
	ortmem__opts_whole(opts, #TYPE, (const size_t[]){ __VA_ARGS__ },    \
			   sizeof((const size_t[]){ __VA_ARGS__ }) /         \
			   (2 * sizeof(size_t)))

/* A field's value, or @def when the caller's (older) struct lacks it. */
static inline bool ortmem__opts_given(const void *opts)
{
	return opts != NULL;
}

#define ORTMEM_OPTS_HAS(opts, field)                                   \
	(ortmem__opts_given(opts) && (opts)->sz >= offsetof(__typeof__(*(opts)), field) + \
				      sizeof((opts)->field))
#define ORTMEM_OPTS_GET(opts, field, def) \
	(ORTMEM_OPTS_HAS(opts, field) ? (opts)->field : (def))

#endif /* ORTMEM_LIB_INTERNAL_H */
