// SPDX-License-Identifier: MIT
/*
 * Turning a detailed error and its causes into one sentence that says what
 * happened, with every figure, and what to do about it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static __thread char message_buf[4096];

/* A cursor over a caller's buffer that keeps counting past its end. */
struct text {
	char *buf;
	size_t len;
	size_t pos;
};

static void __printf(2, 3) text_add(struct text *t, const char *fmt, ...)
{
	size_t room = t->pos < t->len ? t->len - t->pos : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? t->buf + t->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->pos += (size_t)n;
}

static const char *tier_or_any(int tier)
{
	const char *name = ortmem_tier_name(tier);

	return name ? name : "any";
}

static const char *role_or_unknown(const struct ortmem_error *e)
{
	const char *name = ortmem_role_name(e->role);

	return name ? name : "an unknown role";
}

static void format_one(struct text *t, const struct ortmem_error *e)
{
	const char *tier = tier_or_any(e->tier);

	switch (e->kind) {
	case ORTMEM_ERR_TIER_EXHAUSTED:
		text_add(t,
			 "cannot reserve %" PRIu64 " bytes of %s memory for %s: %" PRIu64
			 " of %" PRIu64 " bytes are already leased, leaving %" PRIu64
			 "; free memory by closing sessions, lower the demand, or raise the %s limit",
			 e->requested, tier, role_or_unknown(e), e->used, e->limit,
			 e->available, tier);
		break;
	case ORTMEM_ERR_INVALID_REQUEST:
		text_add(t,
			 "invalid request for %" PRIu64 " bytes of %s memory: %s; correct the request (retrying it unchanged will fail again)",
			 e->requested, tier, e->reason);
		break;
	case ORTMEM_ERR_ALLOCATION_FAILED:
		text_add(t,
			 "cannot allocate %" PRIu64 " bytes of %s memory: %s (%s); the request was within budget, so free %s memory held outside ortmem or lower the demand",
			 e->requested, tier, e->reason, ortmem_strerror(e->code),
			 tier);
		break;
	case ORTMEM_ERR_CAPACITY_UNAVAILABLE:
		text_add(t,
			 "cannot make %" PRIu64 " bytes of %s capacity available for %s: only %" PRIu64
			 " bytes became available; %s; free memory, lower the demand, or raise the %s limit",
			 e->requested, tier, role_or_unknown(e), e->available,
			 e->reason, tier);
		break;
	case ORTMEM_ERR_NONE:
	default:
		text_add(t, "%s (%s)", e->reason[0] ? e->reason : "error",
			 ortmem_strerror(e->code));
		break;
	}
}

ORTMEM_API int ortmem_error_format(const struct ortmem_error *err, char *buf,
				   size_t len)
{
	struct text t = { .buf = buf, .len = len };
	int links = 0;

	if (!buf && len)
		return -EINVAL;
	if (len)
		buf[0] = '\0';
	if (!err) {
		text_add(&t, "no error");
		return (int)t.pos;
	}
	/* A chain is at most a few links; the bound guards a forged loop. */
	for (; err && links < 64; err = err->cause, links++) {
		if (links)
			text_add(&t, "; caused by: ");
		format_one(&t, err);
	}
	return (int)t.pos;
}

ORTMEM_API const char *ortmem_last_error_message(void)
{
	ortmem_error_format(ortmem_last_error(), message_buf,
			    sizeof(message_buf));
	return message_buf;
}
