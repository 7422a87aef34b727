/* SPDX-License-Identifier: MIT */
/*
 * tools/run/refuse.h - ortmem-run's own refusals in the library's form.
 *
 * A failure inside libortmem leaves a detailed error (ortmem_last_error());
 * a check of ortmem-run's own (a range outside a buffer it sized) leaves
 * the same struct ortmem_error, per thread as the library's, and clears
 * the library's, so that run_error() finds whichever failed last and a
 * report never says a bare "Invalid argument".
 */
#ifndef ORTMEM_TOOLS_RUN_REFUSE_H
#define ORTMEM_TOOLS_RUN_REFUSE_H

#include <stdint.h>

#include <ortmem/core.h>

/* Refuse @len bytes of @tier's memory (@limit: the room there was), the
 * reason as printf(@fmt, ...): -EINVAL. */
int run_refuse(int tier, uint64_t len, uint64_t limit, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The detailed error behind @ret, the calling thread's last failure: the
 * library's or run_refuse()'s; NULL when neither returned @ret. */
const struct ortmem_error *run_error(int ret);

/* run_error(@ret) as text (ortmem_error_format()), else strerror(-@ret);
 * valid until the thread's next call. */
const char *run_error_text(int ret);

#endif /* ORTMEM_TOOLS_RUN_REFUSE_H */
