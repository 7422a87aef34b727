// SPDX-License-Identifier: MIT
/*
 * Weights files: read-only sources of file-backed allocations.  A read of
 * [off, off + len) fetches the checksum blocks it covers on the spill
 * engine's lanes as raw requests (no trailer: the file is not ours), the
 * partial alignment unit at the end of the file, if any, with pread, and
 * checks every block against the checksum list loaded at open.
 *
 * The checksum list, little-endian:
 *   "ORTMCSL1", u32 block_bytes, u32 0, u64 file_size, u64 count,
 *   count x u32 CRC32C (one per block, the last one possibly short),
 *   u32 CRC32C of everything before it.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ortmem/wfile.h>

#include "spill_internal.h"

#define WF_MAGIC "ORTMCSL1"
#define WF_HEADER 32u
#define WF_QD_DEFAULT 32u
#define WF_LANES_DEFAULT 2u
#define WF_CHUNK_DEFAULT (1u << 20)
#define WF_BLOCK_DEFAULT (1u << 20)

#define wf_err(code, bytes, ...) \
	ortmem__err_io(code, ORTMEM_TIER_DISK, bytes, __VA_ARGS__)

static bool wf_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

/* Read all of @fd (at most @max bytes) into a new buffer. */
static int slurp(int fd, uint64_t max, uint8_t **bufp, uint64_t *lenp)
{
	struct stat st;
	uint8_t *buf;
	uint64_t got = 0;
	ssize_t n;

	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		return -ENOMEM;
	while (got < (uint64_t)st.st_size) {
		n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? -errno : -EIO;
		}
		got += (uint64_t)n;
	}
	*bufp = buf;
	*lenp = got;
	return 0;
}

/* Parse the list in @b (@n bytes) for a file of @size bytes. */
static int wf_parse_list(struct ortmem_wfile *wf, const uint8_t *b, uint64_t n)
{
	uint64_t count, fsize, i;
	uint32_t block;
	const char *why = NULL;

	if (n < WF_HEADER + 4 || memcmp(b, WF_MAGIC, 8))
		why = "it does not start with the ORTMCSL1 header";
	else if ((uint32_t)ortmem__csum(b, n - 4) != get32(b + n - 4))
		why = "its own CRC does not match (the list is damaged)";
	if (why)
		goto bad;
	block = get32(b + 8);
	fsize = get64(b + 16);
	count = get64(b + 24);
	if (!wf_pow2(block) || block < ORTMEM_WFILE_BLOCK_MIN ||
	    block > ORTMEM_WFILE_BLOCK_MAX || get32(b + 12)) {
		why = "its block size is not a power of two from 4 KiB to 64 MiB";
		goto bad;
	}
	if (count != (fsize + block - 1) / block ||
	    count > (n - WF_HEADER - 4) / 4 || n != WF_HEADER + 4 * count + 4) {
		why = "its length does not match the block count it declares";
		goto bad;
	}
	if (fsize != wf->size)
		return wf_err(-ORTMEM_E_CHECKSUM, wf->size,
			"weights file %s is %" PRIu64 " bytes but its checksum list %s describes %" PRIu64 " bytes; the file was changed or truncated: recreate the model (ortmem-run create) or its list",
			wf->path, wf->size, wf->csum_path, fsize);
	wf->crc = malloc(count ? count * 4 : 4);
	if (!wf->crc)
		return wf_err(-ENOMEM, 0, "out of memory for %" PRIu64 " checksums", count);
	for (i = 0; i < count; i++)
		wf->crc[i] = get32(b + WF_HEADER + 4 * i);
	wf->block = block;
	wf->nblocks = count;
	return 0;
bad:
	return wf_err(-ORTMEM_E_CHECKSUM, 0,
		"checksum list %s of weights file %s is not usable: %s; write it again with ortmem_wfile_checksum()",
		wf->csum_path, wf->path, why);
}

static int wf_load_list(struct ortmem_wfile *wf)
{
	uint8_t *b = NULL;
	uint64_t n = 0;
	int fd, ret;

	fd = open(wf->csum_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wf_err(-errno, 0,
			"cannot open the checksum list %s of weights file %s (%s); write it with ortmem_wfile_checksum() or ortmem-run create",
			wf->csum_path, wf->path, strerror(errno));
	/* 4 bytes per block of at least 4 KiB, for files up to 2^50 bytes. */
	ret = slurp(fd, WF_HEADER + 4 + (1ull << 40), &b, &n);
	close(fd);
	if (ret)
		return wf_err(ret, 0, "cannot read the checksum list %s",
			      wf->csum_path);
	ret = wf_parse_list(wf, b, n);
	free(b);
	return ret;
}

static int wf_opts_check(const struct ortmem_wfile_opts *o)
{
	uint32_t qd = ORTMEM_OPTS_GET(o, queue_depth, 0);
	uint32_t lanes = ORTMEM_OPTS_GET(o, lanes, 0);
	uint32_t chunk = ORTMEM_OPTS_GET(o, chunk_bytes, 0);

	if (ORTMEM_OPTS_GET(o, flags, 0) & ~ORTMEM_WFILE_F_ALL)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"unknown weights file flags %#x",
			ORTMEM_OPTS_GET(o, flags, 0) & ~ORTMEM_WFILE_F_ALL);
	if (qd > ORTMEM_SPILL_QD_MAX || lanes > ORTMEM_SPILL_LANES_MAX ||
	    (chunk && (!wf_pow2(chunk) || chunk < ORTMEM_SPILL_CHUNK_MIN ||
		       chunk > ORTMEM_SPILL_CHUNK_MAX)))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"weights file options out of range: queue depth %u (at most %u), lanes %u (at most %u), chunk %u (a power of two from %u to %u, or 0)",
			qd, ORTMEM_SPILL_QD_MAX, lanes, ORTMEM_SPILL_LANES_MAX,
			chunk, ORTMEM_SPILL_CHUNK_MIN, ORTMEM_SPILL_CHUNK_MAX);
	return 0;
}

static int wf_start_lanes(struct ortmem_wfile *wf)
{
	uint32_t i;
	int ret;

	wf->lanes = calloc(wf->nlanes, sizeof(*wf->lanes));
	if (!wf->lanes)
		return -ENOMEM;
	for (i = 0; i < wf->nlanes; i++) {
		ret = ortmem__lane_init(&wf->lanes[i], &wf->eng, &wf->features);
		if (ret) {
			while (i--)
				ortmem__lane_fini(&wf->lanes[i], &wf->eng);
			free(wf->lanes);
			wf->lanes = NULL;
			return ret;
		}
	}
	return 0;
}

static int wf_open_files(struct ortmem_wfile *wf, uint32_t flags)
{
	struct stat st;
	int ret;

	ret = ortmem__sfile_open_ro(&wf->file, wf->path,
				    flags & ORTMEM_WFILE_F_BUFFERED);
	if (ret)
		return wf_err(ret, 0, "cannot open weights file %s (%s)",
			      wf->path, strerror(-ret));
	if (fstat(wf->file.fd, &st))
		return wf_err(-errno, 0, "cannot stat weights file %s", wf->path);
	if (!S_ISREG(st.st_mode))
		return wf_err(-EINVAL, 0,
			"weights file %s is not a regular file", wf->path);
	wf->size = (uint64_t)st.st_size;
	wf->plain_fd = open(wf->path, O_RDONLY | O_CLOEXEC);
	if (wf->plain_fd < 0)
		return wf_err(-errno, 0, "cannot open weights file %s", wf->path);
	return 0;
}

ORTMEM_API int ortmem_wfile_open(const char *path,
				 const struct ortmem_wfile_opts *opts,
				 struct ortmem_wfile **wfp)
{
	const char *csum = ORTMEM_OPTS_GET(opts, csum_path, NULL);
	struct ortmem_wfile *wf;
	int ret;

	if (!path || !wfp)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0, "%s is NULL",
					   path ? "wfp" : "path");
	*wfp = NULL;
	ret = ORTMEM_OPTS_VALID(opts, ortmem_wfile_opts);
	if (!ret)
		ret = wf_opts_check(opts);
	if (ret)
		return ret;
	if (strlen(path) + 6 > sizeof(wf->path) ||
	    (csum && strlen(csum) >= sizeof(wf->csum_path)))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"path of the weights file or its checksum list is longer than %zu bytes",
			sizeof(wf->path) - 6);
	wf = calloc(1, sizeof(*wf));
	if (!wf)
		return wf_err(-ENOMEM, 0, "out of memory for a weights file handle");
	wf->file.fd = -1;
	wf->plain_fd = -1;
	snprintf(wf->path, sizeof(wf->path), "%s", path);
	if (csum)
		snprintf(wf->csum_path, sizeof(wf->csum_path), "%s", csum);
	else
		snprintf(wf->csum_path, sizeof(wf->csum_path), "%s.csum", path);
	ret = wf_open_files(wf, ORTMEM_OPTS_GET(opts, flags, 0));
	if (!ret)
		ret = wf_load_list(wf);
	if (ret)
		goto err;
	wf->nlanes = ORTMEM_OPTS_GET(opts, lanes, 0) ?: WF_LANES_DEFAULT;
	wf->eng.queue_depth = ORTMEM_OPTS_GET(opts, queue_depth, 0) ?: WF_QD_DEFAULT;
	wf->eng.chunk = ORTMEM_OPTS_GET(opts, chunk_bytes, 0) ?: WF_CHUNK_DEFAULT;
	if (wf->eng.chunk < wf->file.align)
		wf->eng.chunk = wf->file.align;
	if (ORTMEM_OPTS_GET(opts, flags, 0) & ORTMEM_WFILE_F_NO_URING)
		wf->eng.flags |= ORTMEM_SPILL_F_NO_URING;
	wf->eng.file = &wf->file;
	wf->features = ORTMEM_SPILL_HAVE_URING | ORTMEM_SPILL_HAVE_REGFILE |
		       ORTMEM_SPILL_HAVE_REGBUF;
	ret = ortmem__wf_ahead_init(wf);
	if (ret) {
		ret = wf_err(ret, 0, "out of memory for the read-ahead of %s", wf->path);
		goto err;
	}
	ret = wf_start_lanes(wf);
	if (ret) {
		ret = wf_err(ret, 0, "cannot set up %u I/O lanes for %s",
			     wf->nlanes, wf->path);
		goto err;
	}
	*wfp = wf;
	return 0;
err:
	ortmem_wfile_close(wf);
	return ret;
}

ORTMEM_API void ortmem_wfile_close(struct ortmem_wfile *wf)
{
	uint32_t i;

	if (!wf)
		return;
	if (wf->lanes) {
		ortmem__wf_ahead_fini(wf);
		for (i = 0; i < wf->nlanes; i++)
			ortmem__lane_fini(&wf->lanes[i], &wf->eng);
		free(wf->lanes);
	}
	ortmem__wf_ahead_fini(wf);	/* without lanes: nothing in flight */
	if (wf->file.fd >= 0)
		ortmem__sfile_close(&wf->file);
	if (wf->plain_fd >= 0)
		close(wf->plain_fd);
	free(wf->crc);
	free(wf);
}

ORTMEM_API uint64_t ortmem_wfile_size(const struct ortmem_wfile *wf)
{
	return wf ? wf->size : 0;
}

/* The partial alignment unit at the end of the file, which O_DIRECT
 * cannot read whole: a plain pread, with the engine's fault injection. */
static int wf_read_end(struct ortmem_wfile *wf, uint64_t foff, uint8_t *dst,
		       uint64_t len)
{
	uint64_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(wf->plain_fd, dst + got, len - got, (off_t)(foff + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_fetch_add(&wf->eng.count.io_errors, 1);
			return wf_err(n < 0 ? -errno : -EIO, len,
				"reading weights file %s at offset %" PRIu64 " failed: %s",
				wf->path, foff + got,
				n < 0 ? strerror(errno) : "the file ended early (was it truncated?)");
		}
		got += (uint64_t)n;
	}
	return 0;
}

/* A raw request's bytes are in: verify them while the lane reads on. */
static int wf_verify_req(struct ortmem__sreq *r)
{
	struct ortmem_wfile *wf = r->verify_arg;
	int ret = ortmem__wf_verify(wf, r->foff, r->buf, r->len, false);

	return ret;
}

/*
 * Read whole blocks [foff, foff + len) into @dst and verify them: one raw
 * request per chunk, so each is checked as it lands while the rest are in
 * flight; the partial direct-I/O unit at the end of the file by pread.
 */
static int wf_read_blocks(struct ortmem_wfile *wf, uint64_t foff, uint8_t *dst,
			  uint64_t len)
{
	uint64_t body = len & ~(uint64_t)(wf->file.align - 1), n;

	/* [foff, foff + body) goes direct; [foff + body, foff + len), if
	 * anything, is whole blocks read with pread. */
	struct ortmem__sreq *reqs;
	struct ortmem__lane *l;
	int ret = 0;

	if (foff & (wf->file.align - 1))
		/* Blocks smaller than the direct I/O unit: no O_DIRECT. */
		body = 0;
	else if (foff + len != wf->size || body == len)
		body = len;
	else	/* the file's last block, not direct-I/O aligned, by pread */
		body = (len - 1) / wf->block * wf->block;
	if (body < len) {
		ret = wf_read_end(wf, foff + body, dst + body, len - body);
		if (!ret)
			ret = ortmem__wf_verify(wf, foff + body, dst + body, len - body, true);
		if (ret || !body)
			return ret;
	}
	n = ortmem__wf_reqs_count(wf, body);
	reqs = calloc(n, sizeof(*reqs));
	if (!reqs)
		return wf_err(-ENOMEM, len, "out of memory for %" PRIu64 " read requests", n);
	ortmem__wf_reqs_fill(wf, reqs, foff, dst, body, wf_verify_req);
	l = ortmem__wf_lane_lock(wf);
	/* Its tail makes room for an announced read (spill_wahead.c). */
	ortmem__wf_lane_drive(wf, l, reqs, (unsigned int)n);
	pthread_mutex_unlock(&l->lock);
	ret = ortmem__wf_reqs_result(wf, reqs, n, foff, len);
	free(reqs);
	return ret;
}

/* The one block holding [off, off + len): read aside, verify, copy. */
static int wf_read_aside(struct ortmem_wfile *wf, uint64_t off, uint8_t *buf,
			 uint64_t len)
{
	uint64_t first = off / wf->block * wf->block;
	uint64_t end = first + wf->block < wf->size ? first + wf->block : wf->size;
	uint8_t *tmp;
	int ret;

	if (posix_memalign((void **)&tmp, 4096, wf->block))
		return wf_err(-ENOMEM, wf->block,
			"out of memory for a %u-byte block buffer", wf->block);
	ret = wf_read_blocks(wf, first, tmp, end - first);
	if (!ret)
		memcpy(buf, tmp + (off - first), len);
	free(tmp);
	return ret;
}

/*
 * Whole blocks go straight into @buf; a block only partly in the range
 * (at its head or its tail) is read aside, since it must be verified whole.
 */
ORTMEM_API int ortmem_wfile_read(struct ortmem_wfile *wf, uint64_t off,
				 void *buf, uint64_t len)
{
	uint64_t lo, hi, B;
	uint8_t *dst = buf;
	int ret = 0;

	if (!wf || !buf)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, len, "%s is NULL",
					   wf ? "buf" : "wf");
	if (!len || off > wf->size || len > wf->size - off)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, len,
			"range [%" PRIu64 ", +%" PRIu64 ") is empty or passes the end of weights file %s (%" PRIu64 " bytes)",
			off, len, wf->path, wf->size);
	/* Announced (ortmem__wf_ahead()): maybe in flight already. */
	if (ortmem__wf_ahead_take(wf, off, buf, len, &ret)) {
		if (!ret)
			atomic_fetch_add(&wf->reads_ahead, 1);
		goto out;
	}
	B = wf->block;
	/* [lo, hi): the whole blocks inside the range (the file's short last
	 * block counts as whole when the range reaches the end). */
	lo = (off + B - 1) / B * B;
	hi = off + len == wf->size ? wf->size : (off + len) / B * B;
	if (lo > hi) {
		/* Inside one block. */
		ret = wf_read_aside(wf, off, dst, len);
	} else {
		if (off < lo)
			ret = wf_read_aside(wf, off, dst, lo - off);
		if (!ret && lo < hi)
			ret = wf_read_blocks(wf, lo, dst + (lo - off), hi - lo);
		if (!ret && hi < off + len)
			ret = wf_read_aside(wf, hi, dst + (hi - off), off + len - hi);
	}
out:
	if (ret) {
		memset(buf, 0, len);
		return ret;
	}
	atomic_fetch_add(&wf->reads, 1);
	atomic_fetch_add(&wf->bytes, len);
	return 0;
}

ORTMEM_API int ortmem_wfile_stats(struct ortmem_wfile *wf,
				      struct ortmem_wfile_stats *st)
{
	struct ortmem_wfile_stats v = { 0 };

	if (!wf || !st || st->sz < sizeof(st->sz))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_wfile_stats needs a handle and a stats struct with sz set");
	v.size = wf->size;
	v.block_bytes = wf->block;
	v.align = wf->file.align;
	v.direct = wf->file.direct;
	v.uring = !!(wf->features & ORTMEM_SPILL_HAVE_URING);
	v.reads = atomic_load(&wf->reads);
	v.reads_ahead = atomic_load(&wf->reads_ahead);
	v.bytes_read = atomic_load(&wf->bytes);
	v.io_errors = atomic_load(&wf->eng.count.io_errors);
	v.checksum_errors = atomic_load(&wf->eng.count.checksum_errors);
	memcpy((char *)st + sizeof(st->sz), (char *)&v + sizeof(v.sz),
	       (st->sz < sizeof(v) ? st->sz : sizeof(v)) - sizeof(v.sz));
	return 0;
}

ORTMEM_API int ortmem_wfile_inject_fault(struct ortmem_wfile *wf,
					 uint64_t nth, int fault)
{
	struct ortmem__sfault *f;

	if (!wf)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_wfile_inject_fault needs a handle");
	if (nth && fault >= 0 && fault != ORTMEM_SPILL_FAULT_SHORT &&
	    fault != ORTMEM_SPILL_FAULT_STALL)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"unknown fault %d: use a negative errno, ORTMEM_SPILL_FAULT_SHORT or ORTMEM_SPILL_FAULT_STALL",
			fault);
	f = &wf->eng.fault;
	atomic_store(&f->nth, 0);
	atomic_store(&f->what, fault);
	if (nth)
		atomic_store(&f->nth, atomic_load(&f->seq) + nth);
	return 0;
}

/* ---- writing a checksum list ---- */

static int write_all(int fd, const uint8_t *b, uint64_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		b += w;
		n -= (uint64_t)w;
	}
	return 0;
}

/* Hash every block of @fd into the list @out (header filled by caller). */
static int hash_blocks(int fd, uint64_t size, uint32_t block, uint8_t *out)
{
	uint8_t *buf = malloc(block);
	uint64_t off = 0, i = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size) {
		uint64_t n = size - off < block ? size - off : block, got = 0;
		ssize_t r;

		while (got < n) {
			r = pread(fd, buf + got, n - got, (off_t)(off + got));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				ret = r < 0 ? -errno : -EIO;
				goto out;
			}
			got += (uint64_t)r;
		}
		put32(out + WF_HEADER + 4 * i++, (uint32_t)ortmem__csum(buf, n));
		off += n;
	}
out:
	free(buf);
	return ret;
}

ORTMEM_API int ortmem_wfile_checksum(const char *path, const char *csum_path,
				     uint32_t block_bytes)
{
	char dflt[4096], tmp[4096 + 16];
	uint64_t size, count, n;
	uint8_t *list = NULL;
	struct stat st;
	int fd, out = -1, ret;

	block_bytes = block_bytes ?: WF_BLOCK_DEFAULT;
	if (!path || !wf_pow2(block_bytes) || block_bytes < ORTMEM_WFILE_BLOCK_MIN ||
	    block_bytes > ORTMEM_WFILE_BLOCK_MAX)
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"ortmem_wfile_checksum needs a path and a block size that is a power of two from %u to %u (got %u)",
			ORTMEM_WFILE_BLOCK_MIN, ORTMEM_WFILE_BLOCK_MAX, block_bytes);
	if (!csum_path) {
		if ((size_t)snprintf(dflt, sizeof(dflt), "%s.csum", path) >= sizeof(dflt))
			return ortmem__err_invalid(ORTMEM_TIER_DISK, 0, "path is too long");
		csum_path = dflt;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", csum_path) >= sizeof(tmp))
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0, "path is too long");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wf_err(-errno, 0, "cannot open %s to checksum it (%s)",
			      path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !st.st_size) {
		close(fd);
		return ortmem__err_invalid(ORTMEM_TIER_DISK, 0,
			"%s is not a non-empty regular file", path);
	}
	size = (uint64_t)st.st_size;
	count = (size + block_bytes - 1) / block_bytes;
	n = WF_HEADER + 4 * count + 4;
	list = calloc(1, n);
	ret = list ? hash_blocks(fd, size, block_bytes, list) : -ENOMEM;
	close(fd);
	if (ret)
		goto out;
	memcpy(list, WF_MAGIC, 8);
	put32(list + 8, block_bytes);
	put64(list + 16, size);
	put64(list + 24, count);
	put32(list + n - 4, (uint32_t)ortmem__csum(list, n - 4));
	out = mkostemp(tmp, O_CLOEXEC);
	if (out < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(out, list, n);
	if (!ret && fsync(out))
		ret = -errno;
	if (close(out) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, csum_path))
		ret = -errno;
	if (ret)
		unlink(tmp);
out:
	free(list);
	if (ret)
		return wf_err(ret, 0, "cannot write the checksum list %s of %s (%s)",
			      csum_path, path, strerror(-ret));
	return 0;
}
