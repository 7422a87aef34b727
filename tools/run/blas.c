// SPDX-License-Identifier: MIT
/*
 * ortmem-run's choice of OpenBLAS kernels: see blas.h.  Every mode runs
 * in a process that made the same choice on the same CPU, so the modes'
 * outputs stay bit-identical to each other; the user's OPENBLAS_CORETYPE,
 * when set, always wins.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "blas.h"

/* OpenBLAS's own name of its kernels (not declared by every cblas.h). */
char *openblas_get_corename(void);

unsigned int blas_default_threads(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 1 ? (unsigned int)n - 1 : 1;
}

const char *blas_core(void)
{
	return openblas_get_corename();
}

#if defined(__x86_64__)
/* OpenBLAS's x86-64 kernel families older than AVX: what it loads for a
 * CPU it does not know, never the right choice for one with AVX2. */
static const char *const pre_avx[] = {
	"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom",
	"Opteron", "Opteron_SSE3", "Barcelona", "Nano",
};

static int is_pre_avx(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(pre_avx) / sizeof(pre_avx[0]); i++)
		if (!strcasecmp(name, pre_avx[i]))
			return 1;
	return 0;
}

/* The newest family the CPU (and the kernel's saved state) supports. */
static const char *feature_core(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512cd"))
		return "SkylakeX";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "Haswell";
	return NULL;	/* AVX1 or less: OpenBLAS's own choice is as good */
}

void blas_pick(char **argv)
{
	char self[4096];
	const char *want;
	ssize_t n;

	if (getenv("OPENBLAS_CORETYPE") || !is_pre_avx(blas_core()))
		return;
	want = feature_core();
	/* The program's own path, so the process keeps its name. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!want || n <= 0 || (size_t)n >= sizeof(self) - 1 ||
	    setenv("OPENBLAS_CORETYPE", want, 1))
		return;
	self[n] = '\0';
	execv(self, argv);
	/* Gone or replaced meanwhile: keep the slower kernels rather than
	 * fail the run. */
	unsetenv("OPENBLAS_CORETYPE");
}
#else
void blas_pick(char **argv)
{
	(void)argv;
}
#endif
