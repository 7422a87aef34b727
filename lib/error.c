// SPDX-License-Identifier: MIT
/*
 * The error vocabulary: codes, tier and role names, and the thread-local
 * detailed error with its cause chain.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Deep enough for governor -> reclaim -> backend -> driver. */
#define ERR_CHAIN_MAX 8

static __thread struct ortmem_error err_chain[ERR_CHAIN_MAX];
static __thread int err_depth;
static __thread char strerror_buf[64];

static const char *const tier_names[ORTMEM_TIER_COUNT] = {
	[ORTMEM_TIER_DEVICE] = "device",
	[ORTMEM_TIER_HOST] = "host",
	[ORTMEM_TIER_DISK] = "disk",
};

static const char *const ortmem_code_names[ORTMEM_E_MAX - ORTMEM_E_BASE] = {
	[ORTMEM_E_TIER_EXHAUSTED - ORTMEM_E_BASE] = "Memory tier exhausted",
	[ORTMEM_E_CAPACITY_UNAVAILABLE - ORTMEM_E_BASE] =
		"Capacity could not be made available",
	[ORTMEM_E_ABI_MISMATCH - ORTMEM_E_BASE] =
		"Kernel module ABI does not match the library",
	[ORTMEM_E_CHECKSUM - ORTMEM_E_BASE] = "Checksum mismatch",
	[ORTMEM_E_STALE_HANDLE - ORTMEM_E_BASE] = "Stale or forged handle",
	[ORTMEM_E_PLAN_DEFERRED - ORTMEM_E_BASE] =
		"Plan deferred on symbolic sizes",
	[ORTMEM_E_QUARANTINED - ORTMEM_E_BASE] = "Allocation is quarantined",
};

ORTMEM_API const char *ortmem_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= ORTMEM_E_BASE && err < ORTMEM_E_MAX)
		return ortmem_code_names[err - ORTMEM_E_BASE];
	if (err == 0)
		return "Success";
	if (err < ORTMEM_E_BASE) {
		/* strerrordesc_np is thread-safe and says "unknown" as NULL. */
		const char *desc = strerrordesc_np(err);

		if (desc)
			return desc;
	}
	snprintf(strerror_buf, sizeof(strerror_buf), "Unknown error %d", err);
	return strerror_buf;
}

ORTMEM_API const char *ortmem_tier_name(int tier)
{
	if (tier < 0 || tier >= ORTMEM_TIER_COUNT)
		return NULL;
	return tier_names[tier];
}

ORTMEM_API int ortmem_tier_from_name(const char *name)
{
	int i;

	if (!name)
		return -EINVAL;
	for (i = 0; i < ORTMEM_TIER_COUNT; i++)
		if (!strcmp(name, tier_names[i]))
			return i;
	return -EINVAL;
}

ORTMEM_API const char *ortmem_role_name(uint32_t role)
{
	uint32_t kind = role & ORTMEM_ROLE_KIND_MASK;
	uint32_t flags = role & ~ORTMEM_ROLE_KIND_MASK;

	if (flags & ~ORTMEM_ROLE_STEP_SCOPED)
		return NULL;
	if (flags && kind != ORTMEM_ROLE_WORKSPACE)
		return NULL;
	switch (kind) {
	case ORTMEM_ROLE_KV_CACHE:
		return "kv-cache";
	case ORTMEM_ROLE_WORKSPACE:
		return flags ? "step-scoped workspace" : "workspace";
	case ORTMEM_ROLE_WEIGHTS:
		return "weights";
	case ORTMEM_ROLE_ACTIVATION:
		return "activation";
	}
	return NULL;
}

/* ---- the chain ---- */

ORTMEM_API const struct ortmem_error *ortmem_last_error(void)
{
	return err_depth ? &err_chain[err_depth - 1] : NULL;
}

ORTMEM_API void ortmem_error_clear(void)
{
	err_depth = 0;
}

/* Push a new head; its cause is the old head when @wrap. */
static struct ortmem_error *err_push(bool wrap);

int ortmem__err_restore(const struct ortmem_error *saved, int code)
{
	struct ortmem_error *e = err_push(false);

	*e = *saved;
	e->code = code;
	e->cause = NULL;
	return code;
}

static struct ortmem_error *err_push(bool wrap)
{
	struct ortmem_error *e;
	int i;

	if (!wrap)
		err_depth = 0;
	if (err_depth == ERR_CHAIN_MAX) {
		/* Keep the newest links; the root cause is lost first. */
		memmove(&err_chain[0], &err_chain[1],
			sizeof(err_chain[0]) * (ERR_CHAIN_MAX - 1));
		err_depth--;
		err_chain[0].cause = NULL;
		for (i = 1; i < err_depth; i++)
			err_chain[i].cause = &err_chain[i - 1];
	}
	e = &err_chain[err_depth];
	memset(e, 0, sizeof(*e));
	e->tier = -1;
	e->cause = err_depth ? &err_chain[err_depth - 1] : NULL;
	err_depth++;
	return e;
}

static void err_fill(struct ortmem_error *e, enum ortmem_error_kind kind,
		     int code, const struct ortmem__figures *f)
{
	e->kind = kind;
	e->code = code;
	e->tier = f->tier;
	e->role = f->role;
	e->has_role = f->has_role;
	e->requested = f->requested;
	e->used = f->used;
	e->limit = f->limit;
	e->available = f->available;
}

int ortmem__err_tier_exhausted(int tier, uint32_t role, uint64_t requested,
			       uint64_t used, uint64_t limit)
{
	struct ortmem__figures f = {
		.tier = tier, .role = role, .has_role = true,
		.requested = requested, .used = used, .limit = limit,
		.available = limit > used ? limit - used : 0,
	};

	err_fill(err_push(false), ORTMEM_ERR_TIER_EXHAUSTED,
		 -ORTMEM_E_TIER_EXHAUSTED, &f);
	return -ORTMEM_E_TIER_EXHAUSTED;
}

/* The mark a text cut to fit its field ends with. */
#define TEXT_CUT " [...]"

void ortmem__text_fit(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src), keep, room;

	if (len < size) {
		memcpy(dst, src, len + 1);
		return;
	}
	if (size < 2 * sizeof(TEXT_CUT)) {
		snprintf(dst, size, "%s", src);
		return;
	}
	room = size - sizeof(TEXT_CUT);
	for (keep = room; keep > room / 2 && src[keep] != ' '; keep--)
		;
	if (keep <= room / 2)	/* one long word: cut it, still marked */
		keep = room;
	while (keep && (src[keep - 1] == ' ' || src[keep - 1] == ',' ||
			src[keep - 1] == ';' || src[keep - 1] == ':'))
		keep--;
	memcpy(dst, src, keep);
	memcpy(dst + keep, TEXT_CUT, sizeof(TEXT_CUT));
}

/* Format @e's reason; one too long for the field is cut at a word, marked. */
static void err_reason_v(struct ortmem_error *e, const char *fmt, va_list ap)
{
	char full[4 * ORTMEM_ERROR_REASON_MAX];

	vsnprintf(full, sizeof(full), fmt, ap);
	ortmem__text_fit(e->reason, sizeof(e->reason), full);
}

int ortmem__err_invalid(int tier, uint64_t requested, const char *fmt, ...)
{
	struct ortmem__figures f = { .tier = tier, .requested = requested };
	struct ortmem_error *e = err_push(false);
	va_list ap;

	err_fill(e, ORTMEM_ERR_INVALID_REQUEST, -EINVAL, &f);
	va_start(ap, fmt);
	err_reason_v(e, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int ortmem__err_alloc_failed(int code, int tier, uint64_t requested,
			     const char *fmt, ...)
{
	struct ortmem__figures f = { .tier = tier, .requested = requested };
	struct ortmem_error *e = err_push(false);
	va_list ap;

	if (code >= 0)
		code = -EIO;
	err_fill(e, ORTMEM_ERR_ALLOCATION_FAILED, code, &f);
	va_start(ap, fmt);
	err_reason_v(e, fmt, ap);
	va_end(ap);
	return code;
}

int ortmem__err_capacity(bool wrap_current, int tier, uint32_t role,
			 uint64_t requested, uint64_t available,
			 const char *fmt, ...)
{
	struct ortmem__figures f = {
		.tier = tier, .role = role, .has_role = true,
		.requested = requested, .available = available,
	};
	struct ortmem_error *e = err_push(wrap_current);
	va_list ap;

	err_fill(e, ORTMEM_ERR_CAPACITY_UNAVAILABLE,
		 -ORTMEM_E_CAPACITY_UNAVAILABLE, &f);
	va_start(ap, fmt);
	err_reason_v(e, fmt, ap);
	va_end(ap);
	return -ORTMEM_E_CAPACITY_UNAVAILABLE;
}

static int err_plain_v(int code, int tier, uint64_t bytes, const char *fmt,
		      va_list ap)
{
	struct ortmem__figures f = { .tier = tier, .requested = bytes };
	struct ortmem_error *e = err_push(false);

	if (code >= 0)
		code = -EIO;
	err_fill(e, ORTMEM_ERR_NONE, code, &f);
	err_reason_v(e, fmt, ap);
	return code;
}

int ortmem__err_plain(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = err_plain_v(code, -1, 0, fmt, ap);
	va_end(ap);
	return code;
}

int ortmem__err_io(int code, int tier, uint64_t bytes, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = err_plain_v(code, tier, bytes, fmt, ap);
	va_end(ap);
	return code;
}

int ortmem__opts_valid(const void *opts, size_t known, const char *name)
{
	const unsigned char *p = opts;
	size_t sz, i;

	if (!opts)
		return 0;
	memcpy(&sz, opts, sizeof(sz));
	if (sz < sizeof(size_t))
		return ortmem__err_invalid(-1, 0,
			"struct %s has sz %zu, smaller than its own sz field; declare it with ORTMEM_OPTS()",
			name, sz);
	for (i = known; i < sz; i++)
		if (p[i])
			return ortmem__err_invalid(-1, 0,
				"struct %s sets fields past byte %zu that this libortmem %s does not know; upgrade the library or leave them zero",
				name, known, ortmem_version_string());
	return 0;
}

int ortmem__opts_whole(const void *opts, const char *name,
		       const size_t *spans, size_t n)
{
	size_t sz, i;

	if (!opts)
		return 0;
	memcpy(&sz, opts, sizeof(sz));
	for (i = 0; i < n; i++)
		if (sz > spans[2 * i] && sz < spans[2 * i + 1])
			return ortmem__err_invalid(-1, 0,
				"struct %s has sz %zu, which ends inside one of its fields (bytes %zu to %zu): that field would be ignored; declare the struct with ORTMEM_OPTS() or set sz to sizeof",
				name, sz, spans[2 * i], spans[2 * i + 1]);
	return 0;
}
