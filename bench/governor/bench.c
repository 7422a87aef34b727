// SPDX-License-Identifier: MIT
/*
 * bench-governor: reserve+release pairs of the governor against glibc
 * malloc+free pairs of the same count and size, in the same run, on one
 * thread and on two threads at once; and pin+unpin pairs on one lease (the
 * handle lookup every access pays) against the same malloc+free peer, as a
 * median and spread over interleaved rounds.  The last line is the
 * one-thread figure: "governor: reserve+release N ns, M.MMx malloc/free".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>

#define SIZE 4096
#define ROUNDS 5

static long pairs = 5000000;
static struct ortmem_gov *gov;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *run_malloc(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < pairs; i++) {
		void *p = malloc(SIZE);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return NULL;
}

static void *run_gov(void *arg)
{
	struct ortmem_handle h;
	long i;

	for (i = 0; i < pairs; i++) {
		if (ortmem_gov_reserve(gov, ORTMEM_TIER_HOST,
				       ORTMEM_ROLE_ACTIVATION, SIZE, &h) ||
		    ortmem_gov_release(gov, h, 0)) {
			fprintf(stderr, "bench-governor: %s\n",
				ortmem_last_error_message());
			*(int *)arg = 1;
			return NULL;
		}
	}
	return NULL;
}

/* Pin and unpin one lease @pairs times: the hot path of every access. */
static void *run_pin(void *arg)
{
	struct ortmem_handle h;
	void *p;
	long i;

	if (ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_ACTIVATION,
			       SIZE, &h))
		goto fail;
	for (i = 0; i < pairs; i++)
		if (ortmem_gov_pin(gov, h, 0, &p) || ortmem_gov_unpin(gov, h))
			goto fail;
	if (!ortmem_gov_release(gov, h, 0))
		return NULL;
fail:
	fprintf(stderr, "bench-governor: %s\n", ortmem_last_error_message());
	*(int *)arg = 1;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One round, in ns per pair, with @nthreads threads at once; keeps the
 * best in *@best. */
static void measure(void *(*fn)(void *), int nthreads, int *failed,
		    double *best)
{
	pthread_t th[2];
	double t0 = now_ns(), t;
	int i;

	for (i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, fn, failed);
	for (i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	t = (now_ns() - t0) / pairs;
	if (t < *best)
		*best = t;
}

int main(int argc, char **argv)
{
	ORTMEM_OPTS(ortmem_gov_opts, opts,
		    .limit = { 0, 1ull << 40, 0 });
	double m1 = 1e30, g1 = 1e30, m2 = 1e30, g2 = 1e30;
	double pm[ROUNDS], pp[ROUNDS], ratio[ROUNDS];
	int failed = 0, r;

	if (argc > 1)
		pairs = atol(argv[1]);
	if (pairs <= 0 || ortmem_gov_open(&opts, &gov)) {
		fprintf(stderr, "bench-governor: cannot open a governor: %s\n",
			ortmem_last_error_message());
		return 1;
	}
	/* Rounds alternate between the peers so both see the same machine. */
	for (r = 0; r < ROUNDS; r++) {
		measure(run_malloc, 1, &failed, &m1);
		measure(run_gov, 1, &failed, &g1);
	}
	for (r = 0; r < ROUNDS; r++) {
		measure(run_malloc, 2, &failed, &m2);
		measure(run_gov, 2, &failed, &g2);
	}
	for (r = 0; r < ROUNDS; r++) {
		pm[r] = pp[r] = 1e30;
		measure(run_malloc, 1, &failed, &pm[r]);
		measure(run_pin, 1, &failed, &pp[r]);
		ratio[r] = pp[r] / pm[r];
	}
	ortmem_gov_close(gov);
	qsort(pp, ROUNDS, sizeof(*pp), cmp_double);
	qsort(ratio, ROUNDS, sizeof(*ratio), cmp_double);
	if (failed)
		return 1;
	printf("pairs: %ld per thread, %d bytes, best of %d alternating rounds\n", pairs,
	       SIZE, ROUNDS);
	printf("malloc/free, 1 thread: %.1f ns\n", m1);
	printf("malloc/free, 2 threads: %.1f ns (wall time per pair per thread)\n", m2);
	printf("governor, 2 threads: reserve+release %.1f ns, %.2fx malloc/free\n",
	       g2, g2 / m2);
	printf("governor: pin+unpin median %.1f ns (%.1f-%.1f over %d rounds), %.3fx malloc/free (%.3f-%.3f)\n",
	       pp[ROUNDS / 2], pp[0], pp[ROUNDS - 1], ROUNDS,
	       ratio[ROUNDS / 2], ratio[0], ratio[ROUNDS - 1]);
	printf("governor: reserve+release %.0f ns, %.2fx malloc/free\n", g1,
	       g1 / m1);
	return 0;
}
