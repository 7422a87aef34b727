// SPDX-License-Identifier: MIT
/*
 * spillbench - the disk-spill mapping's speed (run in the VM by "make
 * bench-kmod", on the ext4 spill disk, ORTMEM_VM_SPILL_DIR): a range of
 * SPILLBENCH_MIB (256) MiB is written to its extent with O_DIRECT, then
 * each run, in turn:
 *   1. evicts it and touches it sequentially (transparent fault-back);
 *   2. evicts it and brings it back as the library's promotion does:
 *      RESTORE(NOFILL) 4 MiB at a time, each under the io_uring O_DIRECT
 *      reads (1 MiB, queue depth 32) of the pieces before it;
 *   3. evicts it and brings it back with RESTORE (module reads, verifies);
 *   3a. path 2 with the whole range in one step (RESTORE, then the reads:
 *      no overlap), reported beside it;
 *   4. reads the same bytes from the same file with plain O_DIRECT pread
 *      of 1 MiB into an ordinary anonymous buffer whose RAM was given back
 *      first (MADV_DONTNEED), twice: faulted in again as 4 KiB pages
 *      (MADV_NOHUGEPAGE) and as transparent huge pages (MADV_HUGEPAGE).
 *      The faster of the two is the peer of all three paths: like an
 *      evicted range, it must get its memory again (allocated and zeroed by
 *      the kernel) as well as its bytes;
 *   5. the same pread into the same buffer left resident (no memory to
 *      get back: only the read), reported beside it.
 * Every path reads the file with O_DIRECT (the spill file is opened so, as
 * the library opens it): the guest's page cache holds none of it, so each
 * path reads the disk, cold, the same way.  Buffers are page-aligned, reads
 * 1 MiB (the module's own reads, verified restore and the longest fault-back
 * read-ahead, are 1 MiB too).
 * SPILLBENCH_RUNS (5) runs, interleaved, the order rotated each run; each
 * ratio is pread time / path time of the same run (above 1: faster than
 * pread); median and range.  Every path's bytes are checked once per run.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uapi/linux/ortmem.h>

#include "../../selftests/kmod/spill_test.h"

#define PG 4096u
#define CHUNK (1u << 20)
/* The library's spill engine's defaults (lib/spill/spill.c) and its
 * promotion step (ORTMEM__PROMOTE_STEP, lib/host/host_internal.h). */
#define QD 32
#define STEP (4u << 20)
#define MAX_RUNS 15

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "spillbench: %s: %s\n", what, strerror(err));
	exit(1);
}

struct ctx {
	int dev, file;
	uint32_t handle;
	unsigned char *map;
	uint64_t len;
	uint32_t *crcs;
	struct io_uring ring;
};

static void evict(struct ctx *c)
{
	struct ortmem_evict_args e = { .handle = c->handle, .length = c->len,
				       .crcs = (uintptr_t)c->crcs };
	int tries;

	/* EBUSY: a reference of the last O_DIRECT request still going away. */
	for (tries = 0; ioctl(c->dev, ORTMEM_IOC_EVICT, &e); tries++)
		if (errno != EBUSY || tries > 100)
			die("EVICT", errno);
}

static void check(const struct ctx *c, const void *buf, const char *what)
{
	if (pattern_check(buf, 0, c->len / PG, 0x5b, PG) != -1) {
		fprintf(stderr, "spillbench: %s returned wrong bytes\n", what);
		exit(1);
	}
}

static double time_fault_back(struct ctx *c)
{
	volatile unsigned char *p = c->map;
	unsigned long sum = 0;
	uint64_t off;
	double t;

	evict(c);
	t = now();
	for (off = 0; off < c->len; off += PG)
		sum += p[off];
	t = now() - t;
	(void)sum;
	check(c, c->map, "fault-back");
	return t;
}

/* RESTORE(NOFILL) the pages [*restored, *restored + step) of the range. */
static void restore_step(struct ctx *c, uint64_t *restored, uint64_t step,
			 double *ioctl_part)
{
	uint64_t n = c->len - *restored < step ? c->len - *restored : step;
	double t = now();

	if (spill_restore(c->dev, c->handle, *restored, n, ORTMEM_RESTORE_NOFILL))
		die("RESTORE NOFILL", errno);
	*restored += n;
	*ioctl_part += now() - t;
}

/*
 * The library's promotion of a buffer of more than one step
 * (lib/host/host_spill.c, module_promote_read(), and the spill engine's
 * lane loop, ortmem__lane_run()): io_uring O_DIRECT reads of CHUNK, QD in
 * flight, into the pages that are back; after each submission, while
 * fewer than @step bytes are back but not yet read, the next @step comes
 * back with RESTORE(NOFILL), so the RESTORE of piece k+1 runs while the
 * reads of piece k are in flight; else wait for a quarter of the reads.
 */
static double time_restore_uring(struct ctx *c, uint64_t step,
				 double *ioctl_part)
{
	struct io_uring_cqe *cqe;
	uint64_t next = 0, done = 0, restored = 0;
	unsigned int head, seen, inflight = 0;
	double t;

	evict(c);
	*ioctl_part = 0;
	t = now();
	while (done < c->len) {
		while (inflight < QD && next + CHUNK <= restored) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);

			io_uring_prep_read(sqe, c->file, c->map + next, CHUNK, next);
			next += CHUNK;
			inflight++;
		}
		io_uring_submit(&c->ring);
		if (restored < c->len && restored - next < step) {
			restore_step(c, &restored, step, ioctl_part);
			continue;
		}
		if (io_uring_submit_and_wait(&c->ring, inflight >= 8 ? inflight / 4 : 1) < 0)
			die("io_uring_submit_and_wait", errno);
		seen = 0;
		io_uring_for_each_cqe(&c->ring, head, cqe) {
			if (cqe->res != (int)CHUNK)
				die("io_uring read", cqe->res < 0 ? -cqe->res : EIO);
			seen++;
		}
		io_uring_cq_advance(&c->ring, seen);
		inflight -= seen;
		done += (uint64_t)seen * CHUNK;
	}
	t = now() - t;
	check(c, c->map, "restore + io_uring");
	return t;
}

static double time_restore_verified(struct ctx *c)
{
	double t;

	evict(c);
	t = now();
	if (spill_restore(c->dev, c->handle, 0, c->len, 0))
		die("RESTORE", errno);
	t = now() - t;
	check(c, c->map, "restore (verified)");
	return t;
}

enum peer { RESIDENT, RELEASED_4K, RELEASED_THP };

/*
 * Plain pread into @buf: left resident, or with its RAM given back first
 * and faulted in again as 4 KiB pages or as transparent huge pages.
 */
static double time_pread(struct ctx *c, unsigned char *buf, enum peer peer)
{
	uint64_t off;
	double t;

	if (peer != RESIDENT &&
	    (madvise(buf, c->len, peer == RELEASED_THP ? MADV_HUGEPAGE :
							 MADV_NOHUGEPAGE) ||
	     madvise(buf, c->len, MADV_DONTNEED)))
		die("madvise of the pread buffer", errno);
	t = now();

	for (off = 0; off < c->len; off += CHUNK)
		if (pread(c->file, buf + off, CHUNK, (off_t)off) != (ssize_t)CHUNK)
			die("pread", errno);
	t = now() - t;
	check(c, buf, "pread");
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *name, const char *peer, double *r, int n,
		   double *median)
{
	qsort(r, (size_t)n, sizeof(*r), cmp_double);
	*median = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
	printf("spillbench: %s / %s: median %.2fx, range %.2f-%.2fx over %d runs\n",
	       name, peer, *median, r[0], r[n - 1], n);
}

static void setup(struct ctx *c)
{
	struct ortmem_alloc_args a = { .numa_node = ORTMEM_NUMA_ANY };
	char path[256];
	uint64_t i;

	c->dev = open("/dev/ortmem", O_RDWR | O_CLOEXEC);
	if (c->dev < 0)
		die("/dev/ortmem", errno);
	c->file = spill_file_open("spillbench", O_DIRECT, path, sizeof(path));
	if (c->file < 0)
		die("spill file in ORTMEM_VM_SPILL_DIR", errno);
	unlink(path);
	a.size = c->len;
	if (ioctl(c->dev, ORTMEM_IOC_ALLOC, &a))
		die("ALLOC", errno);
	c->handle = a.handle;
	c->map = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_SHARED, c->dev,
		      (off_t)a.mmap_offset);
	if (c->map == MAP_FAILED)
		die("mmap", errno);
	pattern_fill(c->map, 0, c->len / PG, 0x5b, PG);
	if (spill_bind(c->dev, c->handle, 0, c->len, c->file, 0))
		die("BIND", errno);
	if (pwrite(c->file, c->map, c->len, 0) != (ssize_t)c->len)
		die("writing the extent", errno);
	c->crcs = malloc(c->len / PG * sizeof(*c->crcs));
	if (!c->crcs)
		die("malloc", ENOMEM);
	for (i = 0; i < c->len / PG; i++)
		c->crcs[i] = crc32c_sw(0, c->map + i * PG, PG);
	if (io_uring_queue_init(QD, &c->ring, 0))
		die("io_uring_queue_init", errno);
}

/*
 * SPILLBENCH_SWEEP=1: only the restore path, at each step size in turn
 * (the whole range in one step is the unpipelined form), against the same
 * pread peer; how the library's step was chosen.
 */
static void sweep(struct ctx *c, unsigned char *buf, int runs)
{
	static const unsigned int mib[] = { 1, 2, 4, 8, 16, 32, 0 };
	enum { NS = sizeof(mib) / sizeof(mib[0]) };
	double r[NS][MAX_RUNS], m, t_ioctl;
	int i, k;

	for (i = 0; i < runs; i++) {
		double t[NS], t_pr, t_p4 = 0, t_ph = 0;

		for (k = 0; k < NS + 2; k++) {
			int j = (i + k) % (NS + 2);

			if (j == NS)
				t_p4 = time_pread(c, buf, RELEASED_4K);
			else if (j == NS + 1)
				t_ph = time_pread(c, buf, RELEASED_THP);
			else
				t[j] = time_restore_uring(c, mib[j] ? (uint64_t)mib[j] << 20 :
							  c->len, &t_ioctl);
		}
		t_pr = t_p4 < t_ph ? t_p4 : t_ph;
		printf("spillbench: sweep run %d: pread %.0f ms, restore by step:",
		       i + 1, t_pr * 1e3);
		for (k = 0; k < NS; k++) {
			r[k][i] = t_pr / t[k];
			printf(" %u MiB %.0f ms", mib[k] ? mib[k] : (unsigned int)(c->len >> 20),
			       t[k] * 1e3);
		}
		printf("\n");
	}
	for (k = 0; k < NS; k++) {
		char name[64];

		snprintf(name, sizeof(name), "restore in steps of %u MiB",
			 mib[k] ? mib[k] : (unsigned int)(c->len >> 20));
		report(name, "pread", r[k], runs, &m);
	}
}

int main(void)
{
	double fb[MAX_RUNS], ru[MAX_RUNS], rv[MAX_RUNS], r1[MAX_RUNS];
	double wfb[MAX_RUNS], wru[MAX_RUNS], wrv[MAX_RUNS];
	double fb_m, ru_m, rv_m, w_m, tp = 0, tw = 0;
	const char *env;
	struct ctx c = { 0 };
	unsigned char *buf;
	int runs = 5, i;

	c.len = 256ull << 20;
	env = getenv("SPILLBENCH_MIB");
	if (env && atoi(env) > 0)
		c.len = (uint64_t)atoi(env) << 20;
	env = getenv("SPILLBENCH_RUNS");
	if (env && atoi(env) > 0 && atoi(env) <= MAX_RUNS)
		runs = atoi(env);
	setup(&c);
	/* An anonymous mapping, like the memory an application reads into. */
	buf = mmap(NULL, c.len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap of the pread buffer", errno);
	memset(buf, 0, c.len);
	env = getenv("SPILLBENCH_SWEEP");
	if (env && *env == '1') {
		sweep(&c, buf, runs);
		return 0;
	}
	for (i = 0; i < runs; i++) {
		/* Rotate the order so no path always runs first. */
		double t_fb = 0, t_ru = 0, t_rv = 0, t_pr, t_p4 = 0, t_ph = 0;
		double t_pw = 0, t_ioctl = 0, t_r1 = 0, t_ioctl1 = 0;
		int k;

		for (k = 0; k < 7; k++) {
			switch ((i + k) % 7) {
			case 0: t_fb = time_fault_back(&c); break;
			case 1: t_ru = time_restore_uring(&c, STEP, &t_ioctl); break;
			case 2: t_rv = time_restore_verified(&c); break;
			case 3: t_p4 = time_pread(&c, buf, RELEASED_4K); break;
			case 4: t_ph = time_pread(&c, buf, RELEASED_THP); break;
			case 5: t_r1 = time_restore_uring(&c, c.len, &t_ioctl1); break;
			default: t_pw = time_pread(&c, buf, RESIDENT); break;
			}
		}
		/* The peer: the faster way of getting the memory back. */
		t_pr = t_p4 < t_ph ? t_p4 : t_ph;
		fb[i] = t_pr / t_fb;
		ru[i] = t_pr / t_ru;
		rv[i] = t_pr / t_rv;
		r1[i] = t_pr / t_r1;
		wfb[i] = t_pw / t_fb;
		wru[i] = t_pw / t_ru;
		wrv[i] = t_pw / t_rv;
		tp += t_pr;
		tw += t_pw;
		printf("spillbench: run %d: %llu MiB: pread %.0f ms (released, 4 KiB pages %.0f, huge pages %.0f; resident buffer %.0f), fault-back %.0f ms, restore+io_uring %.0f ms (RESTORE ioctl %.0f ms; in one step %.0f ms, ioctl %.0f ms), restore verified %.0f ms\n",
		       i + 1, (unsigned long long)(c.len >> 20), t_pr * 1e3,
		       t_p4 * 1e3, t_ph * 1e3, t_pw * 1e3, t_fb * 1e3,
		       t_ru * 1e3, t_ioctl * 1e3, t_r1 * 1e3, t_ioctl1 * 1e3,
		       t_rv * 1e3);
	}
	printf("spillbench: pread %.1f MiB/s, into a resident buffer %.1f MiB/s (means)\n",
	       (double)(c.len >> 20) * runs / tp,
	       (double)(c.len >> 20) * runs / tw);
	report("fault-back", "pread", fb, runs, &fb_m);
	report("restore(NOFILL)+io_uring", "pread", ru, runs, &ru_m);
	report("restore(NOFILL)+io_uring in one step, no overlap", "pread", r1,
	       runs, &w_m);
	report("restore verified", "pread", rv, runs, &rv_m);
	report("fault-back", "pread into a resident buffer", wfb, runs, &w_m);
	report("restore(NOFILL)+io_uring", "pread into a resident buffer", wru,
	       runs, &w_m);
	report("restore verified", "pread into a resident buffer", wrv, runs,
	       &w_m);
	printf("spill-map: fault-back %.2fx pread, restore %.2fx pread\n", fb_m, ru_m);
	return 0;
}
