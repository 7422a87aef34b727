// SPDX-License-Identifier: MIT
/*
 * The device tier's bandwidths against their peers, measured in one run,
 * interleaved run by run:
 *
 *  - h2d, d2h: ortmem_device_copy_to/_from from a host-tier buffer
 *    registered by ortmem_device_host_alloc(), against cuMemcpyHtoD and
 *    cuMemcpyDtoH from cuMemHostAlloc memory (the driver's own pinned
 *    memory; same GPU, same context, same device buffer);
 *  - disk->vram: ortmem_device_stream_in() of extents in a spill file,
 *    against the bound min(disk, h2d): disk is fio's sequential O_DIRECT
 *    read of a file of the same size in the same directory (without fio,
 *    the spill engine's own batch read of the same extents, said so), h2d
 *    the cuMemcpyHtoD figure of the same run;
 *  - move: ortmem_device_copy_within() of half the device buffer onto its
 *    other half (a plan's move within the arena), against the same bytes
 *    through a registered host buffer and back (copy_from, then copy_to:
 *    how ortmem-run moved them before the device API had the call).
 *
 * Each ratio is ours / peer per run; the median and the spread over the
 * runs are printed, and the lines "RESULT h2d=R d2h=R disk=R" and
 * "RESULT move=R" (round trip time / within) for selftests/gpu/run.sh.
 * Exit 4 (skip) without a GPU.
 *
 *   bw [-s MiB] [-r runs] [-d dir]
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#define MiB (1ull << 20)
#define MAX_RUNS 64
#define EXTENT (4 * MiB)

typedef int (*cu_hostalloc_fn)(void **, size_t, unsigned int);
typedef int (*cu_freehost_fn)(void *);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);

struct peer {
	cu_hostalloc_fn host_alloc;
	cu_freehost_fn free_host;
	cu_htod_fn htod;
	cu_dtoh_fn dtoh;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct series {
	const char *name;
	double v[MAX_RUNS];
	int n;
};

static double median(struct series *s, double *lo, double *hi)
{
	double v[MAX_RUNS];

	memcpy(v, s->v, sizeof(double) * (size_t)s->n);
	qsort(v, (size_t)s->n, sizeof(double), cmp_double);
	*lo = v[0];
	*hi = v[s->n - 1];
	return s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
}

static void report(struct series *s, const char *unit)
{
	double lo, hi, m = median(s, &lo, &hi);

	printf("%-28s median %8.3f %s  (min %.3f, max %.3f, %d runs)\n",
	       s->name, m, unit, lo, hi, s->n);
}

static int peer_open(struct peer *p)
{
	const char *path = getenv("ORTMEM_CUDA_LIBRARY");
	void *lib = dlopen(path && *path ? path : "libcuda.so.1",
			   RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return -ENOENT;
	*(void **)&p->host_alloc = dlsym(lib, "cuMemHostAlloc");
	*(void **)&p->free_host = dlsym(lib, "cuMemFreeHost");
	*(void **)&p->htod = dlsym(lib, "cuMemcpyHtoD_v2");
	*(void **)&p->dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
	return p->host_alloc && p->free_host && p->htod && p->dtoh ? 0 : -ENOSYS;
}

/* fio's sequential O_DIRECT read of @file, bytes/s; 0 without fio. */
static double fio_read(const char *file, unsigned long long size)
{
	char cmd[1024], line[512];
	double bw = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "fio --name=seqread --filename=%s --rw=read --bs=1M --direct=1 --ioengine=io_uring --iodepth=32 --size=%llu --output-format=json 2>/dev/null",
		 file, size);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!bw && strstr(line, "\"bw_bytes\""))
			bw = strtod(strchr(line, ':') + 1, NULL);
	pclose(f);
	return bw;
}

static int write_file(const char *file, const void *buf, size_t len)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	fsync(fd);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

struct bench {
	struct ortmem_device *dev;
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	struct peer peer;
	void *ours, *theirs;
	uint64_t dptr, size;
	struct ortmem_device_extent *ext;
	struct ortmem_spill_io *ios;
	unsigned int next;
	char file[512];
};

#define CHECK(x) do { int __r = (x); if (__r) { \
	fprintf(stderr, "bw: %s failed (%d): %s\n", #x, __r, \
		ortmem_last_error_message()); exit(1); } } while (0)

static double time_ours(struct bench *b, bool to_device)
{
	double t0 = now_s();

	if (to_device)
		CHECK(ortmem_device_copy_to(b->dev, b->dptr, b->ours, b->size, NULL));
	else
		CHECK(ortmem_device_copy_from(b->dev, b->ours, b->dptr, b->size, NULL));
	return now_s() - t0;
}

static double time_peer(struct bench *b, bool to_device)
{
	double t0 = now_s();

	if (to_device)
		CHECK(b->peer.htod(b->dptr, b->theirs, b->size));
	else
		CHECK(b->peer.dtoh(b->theirs, b->dptr, b->size));
	return now_s() - t0;
}

/* Half the buffer onto the other half: within the GPU, or through the
 * host and back. */
static double time_move(struct bench *b, bool within)
{
	uint64_t half = b->size / 2;
	double t0 = now_s();

	if (within) {
		CHECK(ortmem_device_copy_within(b->dev, b->dptr + half, b->dptr, half, NULL));
	} else {
		CHECK(ortmem_device_copy_from(b->dev, b->ours, b->dptr, half, NULL));
		CHECK(ortmem_device_copy_to(b->dev, b->dptr + half, b->ours, half, NULL));
	}
	return now_s() - t0;
}

static void setup_disk(struct bench *b, const char *dir)
{
	ORTMEM_OPTS(ortmem_spill_opts, so, .dir = dir);
	unsigned int i;
	char *data = b->theirs;

	CHECK(ortmem_spill_open(&so, &b->spill));
	b->next = (unsigned int)(b->size / EXTENT);
	b->ext = calloc(b->next, sizeof(*b->ext));
	b->ios = calloc(b->next, sizeof(*b->ios));
	if (!b->ext || !b->ios)
		exit(1);
	for (i = 0; i < b->size; i++)
		data[i] = (char)(i * 2654435761u >> 11);
	for (i = 0; i < b->next; i++) {
		b->ext[i].len = EXTENT;
		b->ext[i].offset = (uint64_t)i * EXTENT;
		CHECK(ortmem_spill_write(b->spill, data + b->ext[i].offset,
					 EXTENT, &b->ext[i].extent));
		b->ios[i] = (struct ortmem_spill_io){
			.op = ORTMEM_SPILL_OP_READ, .extent = b->ext[i].extent,
			.buf = (char *)b->ours + b->ext[i].offset, .len = EXTENT,
		};
	}
	snprintf(b->file, sizeof(b->file), "%s/ortmem-gpu-bench.%d", dir, getpid());
	CHECK(write_file(b->file, data, b->size));
}

/* Disk bandwidth of this run: fio, else the spill engine's batch read. */
static double disk_bw(struct bench *b, bool *with_fio)
{
	double bw = fio_read(b->file, b->size), t0;

	*with_fio = bw > 0;
	if (bw > 0)
		return bw;
	t0 = now_s();
	CHECK(ortmem_spill_submit(b->spill, b->ios, b->next));
	return (double)b->size / (now_s() - t0);
}

int main(int argc, char **argv)
{
	struct series h2d = { .name = "h2d ours/cuMemHostAlloc" };
	struct series d2h = { .name = "d2h ours/cuMemHostAlloc" };
	struct series disk = { .name = "disk->vram / bound" };
	struct series h2d_bw = { .name = "h2d ours" };
	struct series peer_h2d = { .name = "h2d cuMemHostAlloc" };
	struct series stream_bw = { .name = "disk->vram" };
	struct series dsk = { .name = "disk read" };
	struct series move = { .name = "move round trip/within" };
	struct series move_bw = { .name = "move within" };
	const char *dir = getenv("ORTMEM_SPILL_DIR") ?: "/var/tmp";
	struct bench b = { .dev = NULL };
	int runs = 7, opt, i;
	bool with_fio = false;
	double lo, hi, r[3];

	b.size = 256 * MiB;
	while ((opt = getopt(argc, argv, "s:r:d:")) != -1) {
		if (opt == 's')
			b.size = strtoull(optarg, NULL, 0) * MiB;
		else if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'd')
			dir = optarg;
		else
			return 2;
	}
	b.size = (b.size + EXTENT - 1) / EXTENT * EXTENT;
	if (runs < 5 || runs > MAX_RUNS || !b.size) {
		fprintf(stderr, "bw: need 5 to %d runs and a size\n", MAX_RUNS);
		return 2;
	}
	if (ortmem_device_count() <= 0) {
		printf("bw: skipped, no GPU: %s\n", ortmem_device_absent_reason());
		return 4;
	}
	CHECK(ortmem_device_open(0, NULL, &b.dev));
	CHECK(ortmem_host_open(NULL, &b.host));
	CHECK(peer_open(&b.peer));
	CHECK(ortmem_device_alloc(b.dev, b.size, 0, &b.dptr));
	CHECK(ortmem_device_host_alloc(b.dev, b.host, b.size, &b.ours));
	/* The driver's pinned memory, in the context the handle made current. */
	CHECK(b.peer.host_alloc(&b.theirs, b.size, 0));
	memset(b.ours, 1, b.size);
	memset(b.theirs, 1, b.size);
	setup_disk(&b, dir);
	/* Warm-up: first touches, lazy driver setup. */
	time_ours(&b, true);
	time_peer(&b, true);
	CHECK(ortmem_device_stream_in(b.dev, b.spill, b.ext, b.next, b.dptr));
	time_move(&b, true);
	for (i = 0; i < runs; i++) {
		double tp = time_peer(&b, true), to = time_ours(&b, true), t0, sb, db;

		h2d.v[i] = tp / to;
		h2d_bw.v[i] = (double)b.size / to / 1e9;
		peer_h2d.v[i] = (double)b.size / tp / 1e9;
		to = time_ours(&b, false);
		d2h.v[i] = time_peer(&b, false) / to;
		db = disk_bw(&b, &with_fio);
		t0 = now_s();
		CHECK(ortmem_device_stream_in(b.dev, b.spill, b.ext, b.next, b.dptr));
		sb = (double)b.size / (now_s() - t0);
		stream_bw.v[i] = sb / 1e9;
		dsk.v[i] = db / 1e9;
		disk.v[i] = sb / (db < b.size / tp ? db : b.size / tp);
		to = time_move(&b, true);
		move.v[i] = time_move(&b, false) / to;
		move_bw.v[i] = (double)(b.size / 2) / to / 1e9;
		h2d.n = d2h.n = disk.n = h2d_bw.n = peer_h2d.n = stream_bw.n = dsk.n = i + 1;
		move.n = move_bw.n = i + 1;
	}
	printf("bw: %llu MiB, GPU 0, %d runs interleaved; disk peer: %s\n",
	       (unsigned long long)(b.size / MiB), runs,
	       with_fio ? "fio O_DIRECT read of a file of the same size in the same directory" :
	       "fio not installed: the spill engine's own batch read of the same extents");
	report(&h2d_bw, "GB/s");
	report(&peer_h2d, "GB/s");
	report(&stream_bw, "GB/s");
	report(&dsk, "GB/s");
	report(&h2d, "x");
	report(&d2h, "x");
	report(&disk, "x");
	report(&move_bw, "GB/s");
	report(&move, "x");
	r[0] = median(&h2d, &lo, &hi);
	r[1] = median(&d2h, &lo, &hi);
	r[2] = median(&disk, &lo, &hi);
	printf("RESULT h2d=%.2f d2h=%.2f disk=%.2f\n", r[0], r[1], r[2]);
	printf("RESULT move=%.2f\n", median(&move, &lo, &hi));
	unlink(b.file);
	b.peer.free_host(b.theirs);
	CHECK(ortmem_device_host_free(b.dev, b.host, b.ours));
	CHECK(ortmem_device_free(b.dev, b.dptr));
	ortmem_device_close(b.dev);
	ortmem_spill_close(b.spill);
	ortmem_host_close(b.host);
	free(b.ext);
	free(b.ios);
	return 0;
}
