// SPDX-License-Identifier: MIT
/* ortmem-run's own refusals in the library's form (refuse.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "refuse.h"

static __thread struct ortmem_error refusal;
static __thread char text[2048];

int run_refuse(int tier, uint64_t len, uint64_t limit, const char *fmt, ...)
{
	va_list ap;

	memset(&refusal, 0, sizeof(refusal));
	refusal.kind = ORTMEM_ERR_INVALID_REQUEST;
	refusal.code = -EINVAL;
	refusal.tier = tier;
	refusal.requested = len;
	refusal.limit = limit;
	va_start(ap, fmt);
	vsnprintf(refusal.reason, sizeof(refusal.reason), fmt, ap);
	va_end(ap);
	/* Newer than whatever the library said last on this thread. */
	ortmem_error_clear();
	return -EINVAL;
}

const struct ortmem_error *run_error(int ret)
{
	const struct ortmem_error *e = ortmem_last_error();

	/* The library's error is newer than a refusal: a refusal clears it. */
	if (e)
		return e->code == ret ? e : NULL;
	return ret && refusal.code == ret ? &refusal : NULL;
}

const char *run_error_text(int ret)
{
	const struct ortmem_error *e = run_error(ret);

	if (!e)
		return strerror(-ret);
	ortmem_error_format(e, text, sizeof(text));
	return text;
}
