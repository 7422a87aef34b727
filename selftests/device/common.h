/* SPDX-License-Identifier: MIT */
/*
 * selftests/device/common.h - what the device tier's tests share.
 *
 * The tests run against the fake driver built beside them
 * (fakecuda/libcuda.so.1), selected through ORTMEM_CUDA_LIBRARY unless the
 * environment already names a library: selftests/gpu/run.sh sets
 * ORTMEM_CUDA_LIBRARY=libcuda.so.1 to run them on a real GPU, where the
 * tests that need the fake's fault injection skip.
 *
 * Every test runs in a child of its own (the harness forks), and the
 * library loads the driver once per process, so a test may set the fake's
 * environment (FAKECUDA_*) before its first device call.
 */
#ifndef SELFTESTS_DEVICE_COMMON_H
#define SELFTESTS_DEVICE_COMMON_H

#include <limits.h>
#include <libgen.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

static char fake_path[PATH_MAX];

__attribute__((constructor)) static void fake_select(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(fake_path, sizeof(fake_path), "%s/fakecuda/libcuda.so.1",
		 dirname(exe));
	setenv("ORTMEM_CUDA_LIBRARY", fake_path, 0);
}

static inline bool on_fake(void)
{
	const char *lib = getenv("ORTMEM_CUDA_LIBRARY");
	char a[PATH_MAX], b[PATH_MAX];

	return lib && realpath(lib, a) && realpath(fake_path, b) &&
	       !strcmp(a, b);
}

/* Tests that inject faults or change the fake's devices need the fake. */
#define NEED_FAKE() do {						\
	if (!on_fake())							\
		SKIP("needs the fake driver (fault injection)");	\
} while (0)

#define NEED_DEVICES(n) do {						\
	int __c = ortmem_device_count();				\
	if (__c < (n))							\
		SKIP("needs %d GPUs, have %d (%s)", (n), __c,	\
		     ortmem_device_absent_reason() ?: "present");	\
} while (0)

static inline void fill(void *p, size_t len, unsigned int seed)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static inline bool filled(const void *p, size_t len, unsigned int seed)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != (unsigned char)(seed * 131u + i * 7u + (i >> 9)))
			return false;
	return true;
}

static inline const char *reason(void)
{
	return ortmem_last_error_message();
}

#endif
