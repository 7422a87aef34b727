// SPDX-License-Identifier: MIT
/*
 * Fixed buffers against plain reads and writes for host-tier buffers.  Two
 * host tiers of the same backend (the module where it is loaded, else the
 * mlock fallback), each with its own spill handle: one registers its
 * buffers (the default, where the kernel takes them), the other is opened
 * with ORTMEM_SPILL_F_NO_FIXED_HOST (plain).  Each run times, on both,
 * alternately and in alternating order:
 *
 *   cycle: ortmem_host_demote() then ortmem_host_promote() of every buffer,
 *          registration and unregistration included (what the tier pays);
 *   io:    ortmem_spill_write() then ortmem_spill_read() of every resident
 *          buffer (the transfers alone).
 *
 * Last line:
 *   fixed: path P, cycle C.CCx plain (lo-hi), io I.IIx plain (lo-hi), N runs
 * where a ratio is the fixed time over the plain time of the same run
 * (below 1: fixed is faster), median and range over the runs.
 *
 *   fixed [-r RUNS] [-n BUFFERS] [-s MIB] [DIR]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#define MIB (1024ull * 1024)
#define RUNS_MAX 64
#define BUFS_MAX 256

struct side {
	const char *name;
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	void *buf[BUFS_MAX];
	uint64_t ext[BUFS_MAX];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "fixed: %s: %s\n", what, ortmem_last_error_message());
	exit(1);
}

static void side_open(struct side *s, const char *name, const char *dir,
		      uint32_t flags, int n, uint64_t size)
{
	ORTMEM_OPTS(ortmem_spill_opts, so, .flags = flags, .grow_bytes = 64 * MIB);
	int i;

	s->name = name;
	so.dir = dir;
	if (ortmem_host_open(NULL, &s->host))
		die("ortmem_host_open");
	if (ortmem_spill_open(&so, &s->spill))
		die("ortmem_spill_open");
	if (ortmem_host_set_spill(s->host, s->spill))
		die("ortmem_host_set_spill");
	for (i = 0; i < n; i++) {
		if (ortmem_host_alloc(s->host, size, -1, &s->buf[i]))
			die("ortmem_host_alloc");
		memset(s->buf[i], 0x5a ^ i, size);
	}
}

static void side_close(struct side *s)
{
	ortmem_host_close(s->host);
	ortmem_spill_close(s->spill);
}

static double time_cycle(struct side *s, int n)
{
	double t0 = now();
	int i;

	for (i = 0; i < n; i++)
		if (ortmem_host_demote(s->host, s->buf[i]))
			die("ortmem_host_demote");
	for (i = 0; i < n; i++)
		if (ortmem_host_promote(s->host, s->buf[i]))
			die("ortmem_host_promote");
	return now() - t0;
}

static double time_io(struct side *s, int n, uint64_t size)
{
	double t0 = now(), t;
	int i;

	for (i = 0; i < n; i++)
		if (ortmem_spill_write(s->spill, s->buf[i], size, &s->ext[i]))
			die("ortmem_spill_write");
	for (i = 0; i < n; i++)
		if (ortmem_spill_read(s->spill, s->ext[i], s->buf[i], size))
			die("ortmem_spill_read");
	t = now() - t0;
	for (i = 0; i < n; i++)
		ortmem_spill_free(s->spill, s->ext[i]);
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	ORTMEM_OPTS(ortmem_spill_stats, st);
	double cyc[RUNS_MAX], io[RUNS_MAX], t[2][2];
	const char *dir;
	struct side side[2];
	int runs = 5, n = 8, opt, r, k, j;
	uint64_t size = 16 * MIB;

	while ((opt = getopt(argc, argv, "r:n:s:")) != -1) {
		switch (opt) {
		case 'r': runs = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 's': size = strtoull(optarg, NULL, 10) * MIB; break;
		default:
			fprintf(stderr, "usage: fixed [-r RUNS] [-n BUFFERS] [-s MIB] [DIR]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > RUNS_MAX || n < 1 || n > BUFS_MAX || !size) {
		fprintf(stderr, "fixed: -r is 1 to %d, -n 1 to %d, -s at least 1\n",
			RUNS_MAX, BUFS_MAX);
		return 2;
	}
	dir = optind < argc ? argv[optind] : getenv("ORTMEM_VM_SPILL_DIR");
	if (!dir || !*dir)
		dir = "/var/tmp";
	side_open(&side[0], "fixed", dir, 0, n, size);
	side_open(&side[1], "plain", dir, ORTMEM_SPILL_F_NO_FIXED_HOST, n, size);
	if (ortmem_spill_stats(side[0].spill, &st))
		die("ortmem_spill_stats");
	printf("fixed: %s backend, %d buffers of %llu MiB, in %s; fixed side: %s (%s)\n",
	       ortmem_host_backend_name(ortmem_host_backend(side[0].host)), n,
	       (unsigned long long)(size / MIB), dir,
	       st.fixed_host == ORTMEM_SPILL_FIXED_ON ? "registered" : "plain",
	       st.fixed_error ? strerror(st.fixed_error) : "no error");
	for (r = 0; r < runs; r++) {
		for (j = 0; j < 2; j++) {
			k = (r + j) % 2;	/* alternate which side goes first */
			t[k][0] = time_cycle(&side[k], n);
			t[k][1] = time_io(&side[k], n, size);
		}
		cyc[r] = t[0][0] / t[1][0];
		io[r] = t[0][1] / t[1][1];
		printf("fixed: run %d: cycle %.3f s fixed, %.3f s plain (%.3fx); io %.3f s fixed, %.3f s plain (%.3fx)\n",
		       r + 1, t[0][0], t[1][0], cyc[r], t[0][1], t[1][1], io[r]);
	}
	if (ortmem_spill_stats(side[0].spill, &st))
		die("ortmem_spill_stats");
	printf("fixed: %llu bytes moved with READ_FIXED/WRITE_FIXED\n",
	       (unsigned long long)st.fixed_bytes);
	side_close(&side[0]);
	side_close(&side[1]);
	{
		/* median() sorts: [0] and [runs - 1] are then the range. */
		double cmed = median(cyc, runs), imed = median(io, runs);

		printf("fixed: path %s, cycle %.2fx plain (%.2f-%.2f), io %.2fx plain (%.2f-%.2f), %d runs\n",
		       st.fixed_host == ORTMEM_SPILL_FIXED_ON ? "fixed" : "plain",
		       cmed, cyc[0], cyc[runs - 1], imed, io[0], io[runs - 1], runs);
	}
	return 0;
}
