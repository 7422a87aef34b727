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
 *   util.c          small utilities: the clock
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

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ortmem__now_ns(void);

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
