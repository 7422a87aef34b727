// SPDX-License-Identifier: MIT
/*
 * ortmem-run's model: the weights file (create, header check), the seeded
 * generator, and one block's arithmetic on OpenBLAS.  Every mode calls the
 * same model_layer() on the same bytes, so their outputs are bit-identical
 * when the weights reach them intact.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cblas.h>

#include "model.h"
#include "refuse.h"

#define MODEL_MAGIC "ORTMRUN1"
#define MODEL_VERSION 1u

uint64_t model_layer_bytes(const struct model_cfg *c)
{
	uint64_t h = c->hidden, f = c->ffn;

	return 4 * (2 * h * f + f + h);
}

static uint64_t layer_stride(const struct model_cfg *c)
{
	return (model_layer_bytes(c) + MODEL_BLOCK - 1) / MODEL_BLOCK * MODEL_BLOCK;
}

uint64_t model_layer_offset(const struct model_cfg *c, uint32_t layer)
{
	return MODEL_BLOCK + (uint64_t)layer * layer_stride(c);
}

uint64_t model_file_bytes(const struct model_cfg *c)
{
	return model_layer_offset(c, c->layers);
}

/* ---- the seeded generator: splitmix64, one stream per tensor ---- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* @n uniform values in [-scale, scale), exactly the same everywhere. */
static void gen(float *dst, uint64_t n, uint32_t seed, uint32_t layer,
		uint32_t tensor, float scale)
{
	uint64_t s = (uint64_t)seed << 32 ^ (uint64_t)layer << 8 ^ tensor, i;

	for (i = 0; i < n; i++) {
		float u = (float)(splitmix(&s) >> 40) * (1.0f / 16777216.0f);

		dst[i] = (2.0f * u - 1.0f) * scale;
	}
}

static void gen_layer(const struct model_cfg *c, uint32_t l, float *rec)
{
	uint64_t h = c->hidden, f = c->ffn;

	gen(rec, f * h, c->seed, l, 1, 1.0f / sqrtf((float)h));
	gen(rec + f * h, f, c->seed, l, 2, 0.1f);
	gen(rec + f * h + f, h * f, c->seed, l, 3, 1.0f / sqrtf((float)f));
	gen(rec + 2 * f * h + f, h, c->seed, l, 4, 0.1f);
}

void model_input(const struct model_cfg *c, uint32_t batch, float *x)
{
	gen(x, (uint64_t)batch * c->hidden, c->seed, MODEL_MAX_LAYERS, 0, 1.0f);
}

/* ---- create ---- */

static int write_all(int fd, const void *buf, uint64_t n)
{
	const uint8_t *b = buf;

	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		b += w;
		n -= (uint64_t)w;
	}
	return 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static void header(const struct model_cfg *c, uint8_t *b)
{
	memset(b, 0, MODEL_BLOCK);
	memcpy(b, MODEL_MAGIC, 8);
	put32(b + 8, MODEL_VERSION);
	put32(b + 12, c->layers);
	put32(b + 16, c->hidden);
	put32(b + 20, c->ffn);
	put32(b + 24, c->seed);
	put64(b + 32, layer_stride(c));
	put64(b + 40, model_file_bytes(c));
}

/* Refuse up front when the filesystem cannot take the file. */
static int check_space(const char *path, uint64_t need)
{
	char *copy = strdup(path), *dir;
	struct statvfs sv;
	uint64_t avail;
	int ret = 0;

	if (!copy)
		return -1;
	dir = dirname(copy);
	if (!statvfs(dir, &sv)) {
		avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		if (avail < need + (need >> 6)) {
			fprintf(stderr,
				"ortmem-run: %s has %" PRIu64 " bytes free, the weights file needs %" PRIu64 " (and its checksum list); free space or choose a smaller model\n",
				dir, avail, need);
			ret = -1;
		}
	}
	free(copy);
	return ret;
}

static int write_layers(const struct model_cfg *c, int fd, float *rec,
			volatile sig_atomic_t *interrupted)
{
	uint64_t stride = layer_stride(c);
	uint32_t l;
	int ret;

	ret = write_all(fd, rec, MODEL_BLOCK);
	for (l = 0; !ret && l < c->layers; l++) {
		if (*interrupted)
			return -EINTR;
		memset(rec, 0, stride);
		gen_layer(c, l, rec);
		ret = write_all(fd, rec, stride);
	}
	if (!ret && fsync(fd))
		ret = -errno;
	return ret;
}

int model_create(const struct model_cfg *c, const char *path,
		 volatile sig_atomic_t *interrupted)
{
	char tmp[4096], csum[4096];
	uint64_t bytes = model_file_bytes(c);
	float *rec;
	int fd, ret;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= sizeof(tmp) ||
	    (size_t)snprintf(csum, sizeof(csum), "%s.csum", path) >= sizeof(csum)) {
		fprintf(stderr, "ortmem-run: path '%s' is too long\n", path);
		return 1;
	}
	if (check_space(path, bytes))
		return 1;
	rec = aligned_alloc(4096, layer_stride(c));
	if (!rec) {
		fprintf(stderr, "ortmem-run: out of memory for one layer (%" PRIu64 " bytes)\n",
			layer_stride(c));
		return 1;
	}
	header(c, (uint8_t *)rec);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ortmem-run: cannot create %s: %s\n", tmp, strerror(errno));
		free(rec);
		return 1;
	}
	ret = write_layers(c, fd, rec, interrupted);
	free(rec);
	if (!ret && ortmem_wfile_checksum(tmp, csum, MODEL_BLOCK))
		ret = ortmem_last_error()->code;
	if (!ret && *interrupted)
		ret = -EINTR;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (!ret)
		/* Start cold: the runs that follow read from the disk. */
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (ret) {
		unlink(tmp);
		unlink(csum);
		if (ret == -EINTR) {
			fprintf(stderr, "ortmem-run: interrupted; removed the partial %s\n", path);
			return 130;
		}
		fprintf(stderr, "ortmem-run: writing %s failed: %s\n", path,
			run_error_text(ret));
		return 1;
	}
	printf("created %s: %u layers, hidden %u, ffn %u, seed %u: %" PRIu64 " bytes, checksums in %s\n",
	       path, c->layers, c->hidden, c->ffn, c->seed, bytes, csum);
	return 0;
}

/* ---- header ---- */

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

int model_read_header(struct ortmem_wfile *wf, struct model_cfg *c)
{
	uint8_t b[48];
	uint64_t size = ortmem_wfile_size(wf);

	if (size < sizeof(b) || ortmem_wfile_read(wf, 0, b, sizeof(b))) {
		fprintf(stderr, "ortmem-run: cannot read the model header: %s\n",
			size < sizeof(b) ? "the file is too short" : ortmem_last_error_message());
		return 1;
	}
	if (memcmp(b, MODEL_MAGIC, 8) || get32(b + 8) != MODEL_VERSION) {
		fprintf(stderr, "ortmem-run: not an ortmem-run weights file (no ORTMRUN1 header); make one with ortmem-run create\n");
		return 1;
	}
	c->layers = get32(b + 12);
	c->hidden = get32(b + 16);
	c->ffn = get32(b + 20);
	c->seed = get32(b + 24);
	if (!c->layers || c->layers > MODEL_MAX_LAYERS || !c->hidden ||
	    c->hidden > MODEL_MAX_DIM || !c->ffn || c->ffn > MODEL_MAX_DIM ||
	    get64(b + 32) != layer_stride(c) || get64(b + 40) != model_file_bytes(c)) {
		fprintf(stderr, "ortmem-run: the model header is inconsistent (%u layers, hidden %u, ffn %u); recreate the file\n",
			c->layers, c->hidden, c->ffn);
		return 1;
	}
	if (size != model_file_bytes(c)) {
		fprintf(stderr, "ortmem-run: the weights file is %" PRIu64 " bytes, but its header (%u layers, hidden %u, ffn %u) needs %" PRIu64 "; recreate it\n",
			size, c->layers, c->hidden, c->ffn, model_file_bytes(c));
		return 1;
	}
	return 0;
}

/* ---- arithmetic ---- */

static float gelu(float v)
{
	return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
}

/* The record's tensors: W1 [F x H], b1 [F], W2 [H x F], b2 [H]. */
#define W1(w) ((const float *)(w))
#define B1(c, w) (W1(w) + (uint64_t)(c)->ffn * (c)->hidden)
#define W2(c, w) (B1(c, w) + (c)->ffn)
#define B2(c, w) (W2(c, w) + (uint64_t)(c)->hidden * (c)->ffn)

void model_fc1(const struct model_cfg *c, uint32_t batch, const uint8_t *w,
	       const float *x, float *h)
{
	int H = (int)c->hidden, F = (int)c->ffn, B = (int)batch, i, j;
	const float *b1 = B1(c, w);

	/* h = gelu(x W1^T + b1) */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, F, H, 1.0f, x, H,
		    W1(w), H, 0.0f, h, F);
	for (i = 0; i < B; i++)
		for (j = 0; j < F; j++)
			h[(uint64_t)i * F + j] = gelu(h[(uint64_t)i * F + j] + b1[j]);
}

void model_fc2(const struct model_cfg *c, uint32_t batch, const uint8_t *w,
	       const float *x, const float *h, float *y)
{
	int H = (int)c->hidden, F = (int)c->ffn, B = (int)batch, i, j;
	const float *b2 = B2(c, w);

	/* y = x + h W2^T + b2 */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, F, 1.0f, h, F,
		    W2(c, w), F, 0.0f, y, H);
	for (i = 0; i < B; i++)
		for (j = 0; j < H; j++)
			y[(uint64_t)i * H + j] += x[(uint64_t)i * H + j] + b2[j];
}

void model_skip_add(const struct model_cfg *c, uint32_t batch, const float *s,
		    float *y)
{
	uint64_t n = (uint64_t)batch * c->hidden, i;

	for (i = 0; i < n; i++)
		y[i] += s[i];
}

uint64_t model_hash(const void *p, uint64_t n)
{
	const uint8_t *b = p;
	uint64_t hsh = 0xcbf29ce484222325ull, i;

	for (i = 0; i < n; i++)
		hsh = (hsh ^ b[i]) * 0x100000001b3ull;
	return hsh;
}
