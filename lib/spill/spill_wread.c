// SPDX-License-Identifier: MIT
/*
 * The request primitives of a weights file's reads, shared by the plain
 * read (spill_wfile.c) and the read-ahead (spill_wahead.c), below both:
 * a lane to run on, requests of whole blocks, their verification and the
 * error a read reports.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "spill_internal.h"

#define wf_err(code, bytes, ...) \
	ortmem__err_io(code, ORTMEM_TIER_DISK, bytes, __VA_ARGS__)

struct ortmem__lane *ortmem__wf_lane_lock(struct ortmem_wfile *wf)
{
	return ortmem__lane_lock_any(wf->lanes, wf->nlanes, &wf->next_lane);
}

/* Check the blocks of [foff, foff + len), which @buf holds. */
int ortmem__wf_verify(struct ortmem_wfile *wf, uint64_t foff, const uint8_t *buf,
		     uint64_t len, bool count)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t b = (foff + done) / wf->block;
		uint64_t n = wf->size - (foff + done) < wf->block ?
			     wf->size - (foff + done) : wf->block;
		uint32_t crc = (uint32_t)ortmem__csum(buf + done, n);

		if (crc != wf->crc[b]) {
			if (count)
				atomic_fetch_add(&wf->eng.count.checksum_errors, 1);
			return wf_err(-ORTMEM_E_CHECKSUM, n,
				"weights file %s: bytes [%" PRIu64 ", %" PRIu64 ") (block %" PRIu64 " of %" PRIu64 ") do not match the checksum list %s (CRC32C %08x, listed %08x); the file is damaged: recreate it",
				wf->path, foff + done, foff + done + n, b,
				wf->nblocks, wf->csum_path, crc, wf->crc[b]);
		}
		done += n;
	}
	return 0;
}

/* Requests of whole blocks, about a chunk each, for a body of @body bytes. */
uint64_t ortmem__wf_reqs_count(const struct ortmem_wfile *wf, uint64_t body)
{
	uint64_t step = wf->eng.chunk > wf->block ?
			wf->eng.chunk / wf->block * wf->block : wf->block;

	return (body + step - 1) / step;
}

void ortmem__wf_reqs_fill(struct ortmem_wfile *wf, struct ortmem__sreq *reqs,
			  uint64_t foff, uint8_t *dst, uint64_t body,
			  int (*verify)(struct ortmem__sreq *r))
{
	uint64_t step = wf->eng.chunk > wf->block ?
			wf->eng.chunk / wf->block * wf->block : wf->block;
	uint64_t n = ortmem__wf_reqs_count(wf, body), i;

	for (i = 0; i < n; i++) {
		memset(&reqs[i], 0, sizeof(reqs[i]));
		reqs[i].raw = true;
		reqs[i].verify_raw = verify;
		reqs[i].verify_arg = wf;
		reqs[i].buf = dst + i * step;
		reqs[i].foff = foff + i * step;
		reqs[i].len = body - i * step < step ? body - i * step : step;
		reqs[i].tail_slot = UINT32_MAX;
	}
}

/*
 * The outcome of a read of [foff, foff + len) run as @reqs: 0, or the
 * first failure, with a message naming the file and the range.  A
 * checksum mismatch found on another thread (a read-ahead) is checked
 * again here, so that this thread's error says which block.
 */
int ortmem__wf_reqs_result(struct ortmem_wfile *wf, struct ortmem__sreq *reqs,
			   uint64_t n, uint64_t foff, uint64_t len)
{
	const struct ortmem_error *e;
	uint64_t i;
	int ret = 0;

	for (i = 0; i < n && !reqs[i].err; i++)
		;
	if (i < n && reqs[i].err == -ORTMEM_E_CHECKSUM) {
		/* The verifier's detailed error is this thread's already. */
		ret = -ORTMEM_E_CHECKSUM;
		e = ortmem_last_error();
		if (!e || e->code != ret)
			ret = ortmem__wf_verify(wf, reqs[i].foff, reqs[i].buf,
						reqs[i].len, false);
		if (!ret)	/* the bytes changed since: still a mismatch */
			ret = wf_err(-ORTMEM_E_CHECKSUM, reqs[i].len,
				"weights file %s: bytes [%" PRIu64 ", %" PRIu64 ") do not match the checksum list %s",
				wf->path, reqs[i].foff, reqs[i].foff + reqs[i].len,
				wf->csum_path);
	} else if (i < n) {
		ret = wf_err(reqs[i].err, len,
			"reading weights file %s, bytes [%" PRIu64 ", %" PRIu64 "), failed at offset %" PRIu64 ": %s",
			wf->path, foff, foff + len, reqs[i].err_off,
			reqs[i].err_what ? reqs[i].err_what : "the read failed");
	}
	return ret;
}
