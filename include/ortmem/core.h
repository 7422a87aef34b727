/* SPDX-License-Identifier: MIT */
/*
 * ortmem/core.h - version, error vocabulary, tiers, roles and logging.
 *
 * Every other public header of libortmem includes this one.  Everything here
 * is public and stable within a major version.
 *
 * Conventions (apply to the whole library):
 *  - functions that can fail return int: >= 0 on success, -errno on failure;
 *    ortmem-specific failures use codes from ORTMEM_E_BASE upwards, and
 *    ortmem_strerror() names both ranges;
 *  - the library never signals through errno and never exits;
 *  - a failure also leaves a detailed error in thread-local storage
 *    (ortmem_last_error()), with every figure and a cause chain.
 *
 * Thread safety: every function in this header may be called from any thread.
 */
#ifndef ORTMEM_CORE_H
#define ORTMEM_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================
 * Version
 * =================================================================== */

#define ORTMEM_VERSION_MAJOR 0
#define ORTMEM_VERSION_MINOR 1
#define ORTMEM_VERSION_PATCH 0

#define ORTMEM_VERSION_NUMBER \
	(ORTMEM_VERSION_MAJOR * 10000 + ORTMEM_VERSION_MINOR * 100 + \
	 ORTMEM_VERSION_PATCH)

#ifndef ORTMEM_API
#define ORTMEM_API __attribute__((visibility("default")))
#endif

/**
 * ortmem_version() - Version of the library that is running.
 *
 * Return: MAJOR * 10000 + MINOR * 100 + PATCH, to compare with
 * ORTMEM_VERSION_NUMBER, the version the caller was compiled against.
 */
ORTMEM_API unsigned int ortmem_version(void);

/**
 * ortmem_version_string() - Version as "MAJOR.MINOR.PATCH".
 */
ORTMEM_API const char *ortmem_version_string(void);

/* ===================================================================
 * Error codes
 * =================================================================== */

/*
 * ortmem-specific error codes, returned negated like errno values.  The range
 * [ORTMEM_E_BASE, ORTMEM_E_MAX) is reserved for them; no errno is that large.
 */
#define ORTMEM_E_BASE 4000
enum ortmem_errno {
	/* A tier's budget has no room and no holder gave enough back. */
	ORTMEM_E_TIER_EXHAUSTED = ORTMEM_E_BASE,
	/* Capacity could not be made available; see the cause chain. */
	ORTMEM_E_CAPACITY_UNAVAILABLE,
	/* The kernel module's ABI does not match this library. */
	ORTMEM_E_ABI_MISMATCH,
	/* Data read back does not match its checksum. */
	ORTMEM_E_CHECKSUM,
	/* A handle refers to an allocation that no longer exists. */
	ORTMEM_E_STALE_HANDLE,
	/* A plan could not be made because some sizes are symbolic. */
	ORTMEM_E_PLAN_DEFERRED,
	/* The allocation is quarantined after a failed release. */
	ORTMEM_E_QUARANTINED,
	ORTMEM_E_MAX
};

/**
 * ortmem_strerror() - Describe an error code.
 * @err: an errno value or ortmem code, either sign.
 *
 * Return: a static or thread-local string; never NULL.
 */
ORTMEM_API const char *ortmem_strerror(int err);

/* ===================================================================
 * Tiers and roles
 * =================================================================== */

/* Where bytes live, fastest first; this is also the demotion order. */
enum ortmem_tier {
	ORTMEM_TIER_DEVICE = 0,
	ORTMEM_TIER_HOST = 1,
	ORTMEM_TIER_DISK = 2,
};
#define ORTMEM_TIER_COUNT 3

/**
 * ortmem_tier_name() - Stable name of a tier: "device", "host" or "disk".
 * @tier: an enum ortmem_tier value.
 *
 * Return: the name, or NULL when @tier is not a tier.
 */
ORTMEM_API const char *ortmem_tier_name(int tier);

/**
 * ortmem_tier_from_name() - Parse a tier name.
 * @name: "device", "host" or "disk".
 *
 * Return: the tier (>= 0), or -EINVAL when @name names no tier.
 */
ORTMEM_API int ortmem_tier_from_name(const char *name);

/* What a reservation is for.  A role is an ortmem_role_kind, optionally
 * or'ed with ORTMEM_ROLE_STEP_SCOPED when the kind is a workspace. */
enum ortmem_role_kind {
	ORTMEM_ROLE_KV_CACHE = 0,
	ORTMEM_ROLE_WORKSPACE = 1,
	ORTMEM_ROLE_WEIGHTS = 2,
	ORTMEM_ROLE_ACTIVATION = 3,
};
#define ORTMEM_ROLE_KIND_MASK 0xffu
/* The workspace is released at the end of the step that took it. */
#define ORTMEM_ROLE_STEP_SCOPED (1u << 8)

/**
 * ortmem_role_name() - Stable name of a role.
 * @role: an ortmem_role_kind, or'ed with ORTMEM_ROLE_STEP_SCOPED for a
 *        step-scoped workspace.
 *
 * Return: "kv-cache", "workspace", "step-scoped workspace", "weights" or
 * "activation"; NULL when @role is not a valid role (unknown kind, unknown
 * flag, or the step-scoped flag on anything but a workspace).
 */
ORTMEM_API const char *ortmem_role_name(uint32_t role);

/* ===================================================================
 * Detailed errors
 * =================================================================== */

enum ortmem_error_kind {
	ORTMEM_ERR_NONE = 0,
	/* We declined: the tier's budget has no room. */
	ORTMEM_ERR_TIER_EXHAUSTED,
	/* The caller asked for something impossible. */
	ORTMEM_ERR_INVALID_REQUEST,
	/* Within budget, but the backing allocator refused; see reason. */
	ORTMEM_ERR_ALLOCATION_FAILED,
	/* Not enough capacity could be made available; see cause. */
	ORTMEM_ERR_CAPACITY_UNAVAILABLE,
};

#define ORTMEM_ERROR_REASON_MAX 256

/*
 * A detailed error.  Figures that do not apply to a kind are 0.  @cause is
 * the refusal this one reports (NULL when this layer decided on its own);
 * walk it to the end for the root cause.  The chain lives in thread-local
 * storage and stays valid until the next failing ortmem call on the same
 * thread or ortmem_error_clear().
 */
struct ortmem_error {
	enum ortmem_error_kind kind;
	int code;		/* the negative code the call returned */
	int tier;		/* enum ortmem_tier, or -1 when none applies */
	uint32_t role;		/* valid when has_role */
	int has_role;
	uint64_t requested;
	uint64_t used;
	uint64_t limit;
	uint64_t available;
	/* The backend's own account, or this layer's detail; one longer
	 * than the field is cut at a word and ends with " [...]". */
	char reason[ORTMEM_ERROR_REASON_MAX];
	const struct ortmem_error *cause;
};

/**
 * ortmem_last_error() - The calling thread's most recent detailed error.
 *
 * Return: the error, or NULL when there is none (or it was cleared).
 */
ORTMEM_API const struct ortmem_error *ortmem_last_error(void);

/**
 * ortmem_error_clear() - Forget the calling thread's detailed error.
 */
ORTMEM_API void ortmem_error_clear(void);

/**
 * ortmem_error_format() - Write an error and its cause chain as text.
 * @err: the error (NULL formats "no error").
 * @buf: destination, may be NULL when @len is 0.
 * @len: size of @buf; the text is always NUL-terminated when @len > 0.
 *
 * The text says what happened, with its figures, and what to do.  Causes
 * follow as "; caused by: ...".
 *
 * Return: the length the full text has (like snprintf), or -EINVAL when
 * @buf is NULL and @len is not 0.
 */
ORTMEM_API int ortmem_error_format(const struct ortmem_error *err, char *buf,
				   size_t len);

/**
 * ortmem_last_error_message() - The calling thread's error as text.
 *
 * Return: a thread-local string, valid until the next call on this thread;
 * "no error" when there is none.  Never NULL.
 */
ORTMEM_API const char *ortmem_last_error_message(void);

/* ===================================================================
 * Logging
 * =================================================================== */

enum ortmem_log_level {
	ORTMEM_LOG_ERROR = 0,
	ORTMEM_LOG_WARN = 1,
	ORTMEM_LOG_INFO = 2,
	ORTMEM_LOG_DEBUG = 3,
};

typedef void (*ortmem_log_fn)(enum ortmem_log_level level, const char *msg,
			      void *user);

/**
 * ortmem_set_log_fn() - Route the library's messages to a callback.
 * @fn: the callback, or NULL to silence the library.
 * @user: passed back to @fn.
 * @max_level: messages above this level are not delivered.
 *
 * Until this is called the library writes to stderr the messages at or
 * below the level named by the ORTMEM_LOG_LEVEL environment variable
 * ("error", "warn", "info", "debug"); with it unset it is silent.  The
 * callback may be called from any thread, one message at a time.
 *
 * Return: 0, or -EINVAL when @max_level is not a level.
 */
ORTMEM_API int ortmem_set_log_fn(ortmem_log_fn fn, void *user, int max_level);

/* ===================================================================
 * Sized options
 * =================================================================== */

/*
 * Option structs start with "size_t sz".  ORTMEM_OPTS declares one zeroed
 * with sz set; the library accepts older (smaller) structs, filling defaults,
 * and refuses larger ones whose unknown tail is not zero with -EINVAL.  The
 * unknown tail starts at the end of the struct's last field (its
 * TYPE__last_field), so trailing padding counts: declare with ORTMEM_OPTS,
 * which zeroes it.  A sz that ends inside a field (say, within an array) is
 * refused with -EINVAL rather than leaving that field at its default.
 */
#define ORTMEM_OPTS(TYPE, NAME, ...)                                  \
	struct TYPE NAME = ({                                         \
		__builtin_memset(&NAME, 0, sizeof(struct TYPE));      \
		(struct TYPE){ .sz = sizeof(struct TYPE), __VA_ARGS__ }; \
	})

#ifdef __cplusplus
}
#endif

#endif /* ORTMEM_CORE_H */
