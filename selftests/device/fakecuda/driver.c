// SPDX-License-Identifier: MIT
/*
 * Fake CUDA driver: initialisation, devices, primary contexts, fault
 * injection and cuGetProcAddress.  See fake.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

#define FAKE_MAX_DEV 8
#define FAKE_MAX_FAULTS 16

struct CUctx_st fake_ctx[FAKE_MAX_DEV];
int fake_ndev;
size_t fake_granularity;
size_t fake_mem;
static bool fake_initialised;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread struct CUctx_st *fake_current;

struct fake_fault {
	char name[48];
	long nth;
	CUresult res;
	bool async;
	long seen;
};

static struct fake_fault faults[FAKE_MAX_FAULTS];
static int nfaults;
static char *faults_spec;

long long fake_env(const char *name, long long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoll(v, NULL, 0) : def;
}

/* Parse FAKECUDA_FAULTS again whenever it changed (tests set it late). */
static void faults_reload_locked(void)
{
	const char *spec = getenv("FAKECUDA_FAULTS");
	char *copy, *tok, *save = NULL;

	if (!spec)
		spec = "";
	if (faults_spec && !strcmp(spec, faults_spec))
		return;
	free(faults_spec);
	faults_spec = strdup(spec);
	nfaults = 0;
	copy = strdup(spec);
	for (tok = strtok_r(copy, ",", &save); tok && nfaults < FAKE_MAX_FAULTS;
	     tok = strtok_r(NULL, ",", &save)) {
		struct fake_fault *f = &faults[nfaults];
		char async[8] = "";

		memset(f, 0, sizeof(*f));
		if (sscanf(tok, "%47[^:]:%ld:%d:%7s", f->name, &f->nth, &f->res,
			   async) < 3 || f->nth < 1) {
			fprintf(stderr, "fakecuda: bad fault '%s' (NAME:NTH:RESULT[:async])\n", tok);
			continue;
		}
		f->async = !strcmp(async, "async");
		nfaults++;
	}
	free(copy);
}

bool fake_is_lost(CUresult res)
{
	return res == CUDA_ERROR_ILLEGAL_ADDRESS || res == CUDA_ERROR_LAUNCH_FAILED ||
	       res == CUDA_ERROR_CONTEXT_IS_DESTROYED ||
	       res == CUDA_ERROR_DEVICE_UNAVAILABLE ||
	       res == CUDA_ERROR_ECC_UNCORRECTABLE;
}

CUresult fake_result(struct CUctx_st *ctx, CUresult res)
{
	if (ctx && fake_is_lost(res)) {
		pthread_mutex_lock(&fake_lock);
		if (!ctx->lost)
			ctx->lost = res;
		pthread_mutex_unlock(&fake_lock);
	}
	return res;
}

CUresult fake_enter(const char *name, CUresult *async)
{
	CUresult res = 0;
	int i;

	if (async)
		*async = 0;
	pthread_mutex_lock(&fake_lock);
	faults_reload_locked();
	for (i = 0; i < nfaults; i++) {
		struct fake_fault *f = &faults[i];

		if (strcmp(f->name, name) || ++f->seen != f->nth)
			continue;
		if (f->async && async)
			*async = f->res;
		else
			res = f->res;
	}
	if (!res && !fake_initialised && strcmp(name, "cuInit") &&
	    strcmp(name, "cuDriverGetVersion") && strcmp(name, "cuGetErrorName") &&
	    strcmp(name, "cuGetErrorString"))
		res = CUDA_ERROR_NOT_INITIALIZED;
	pthread_mutex_unlock(&fake_lock);
	return res ? fake_result(fake_current, res) : 0;
}

CUresult fake_ctx_check(struct CUctx_st **ctxp)
{
	struct CUctx_st *ctx = fake_current;
	CUresult lost;

	if (!ctx || !ctx->retained)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&fake_lock);
	lost = ctx->lost;
	pthread_mutex_unlock(&fake_lock);
	if (lost)
		return lost;
	if (ctxp)
		*ctxp = ctx;
	return 0;
}

FAKE_API CUresult cuInit(unsigned int flags)
{
	CUresult res = fake_enter("cuInit", NULL);

	if (res)
		return res;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake_lock);
	if (!fake_initialised) {
		fake_ndev = (int)fake_env("FAKECUDA_DEVICES", 2);
		if (fake_ndev < 0 || fake_ndev > FAKE_MAX_DEV)
			fake_ndev = FAKE_MAX_DEV;
		fake_mem = (size_t)fake_env("FAKECUDA_MEM", 256ll << 20);
		fake_granularity = (size_t)fake_env("FAKECUDA_GRANULARITY", 64 << 10);
		fake_initialised = true;
	}
	pthread_mutex_unlock(&fake_lock);
	fake_mem_init();
	return fake_ndev ? 0 : CUDA_ERROR_NO_DEVICE;
}

FAKE_API CUresult cuDriverGetVersion(int *v)
{
	CUresult res = fake_enter("cuDriverGetVersion", NULL);

	if (res)
		return res;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = 12040;
	return 0;
}

static const struct {
	CUresult res;
	const char *name, *text;
} fake_errors[] = {
	{ 0, "CUDA_SUCCESS", "no error" },
	{ 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
	{ 46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable" },
	{ 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
	{ 214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
	{ 600, "CUDA_ERROR_NOT_READY", "device not ready" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered" },
	{ 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
	{ 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped" },
	{ 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region" },
	{ 719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
	{ 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static int fake_error_index(CUresult res)
{
	size_t i;

	for (i = 0; i < sizeof(fake_errors) / sizeof(fake_errors[0]); i++)
		if (fake_errors[i].res == res)
			return (int)i;
	return -1;
}

FAKE_API CUresult cuGetErrorName(CUresult res, const char **s)
{
	int i = fake_error_index(res);

	if (!s || i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*s = fake_errors[i].name;
	return 0;
}

FAKE_API CUresult cuGetErrorString(CUresult res, const char **s)
{
	int i = fake_error_index(res);

	if (!s || i < 0)
		return CUDA_ERROR_INVALID_VALUE;
	*s = fake_errors[i].text;
	return 0;
}

FAKE_API CUresult cuDeviceGetCount(int *n)
{
	CUresult res = fake_enter("cuDeviceGetCount", NULL);

	if (res)
		return res;
	*n = fake_ndev;
	return 0;
}

FAKE_API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	CUresult res = fake_enter("cuDeviceGet", NULL);

	if (res)
		return res;
	if (ordinal < 0 || ordinal >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return 0;
}

FAKE_API CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	CUresult res = fake_enter("cuDeviceGetName", NULL);

	if (res)
		return res;
	if (d < 0 || d >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "Fake GPU %d", d);
	return 0;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	CUresult res = fake_enter("cuDeviceTotalMem", NULL);

	if (res)
		return res;
	if (d < 0 || d >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = fake_mem;
	return 0;
}

FAKE_API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	CUresult res = fake_enter("cuDeviceGetAttribute", NULL);

	if (res)
		return res;
	if (d < 0 || d >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (attr != CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED)
		return CUDA_ERROR_INVALID_VALUE;
	*v = !fake_env("FAKECUDA_NO_VMM", 0);
	return 0;
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
	CUresult res = fake_enter("cuDevicePrimaryCtxRetain", NULL);

	if (res)
		return res;
	if (d < 0 || d >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&fake_lock);
	fake_ctx[d].dev = d;
	fake_ctx[d].retained++;
	pthread_mutex_unlock(&fake_lock);
	*ctx = &fake_ctx[d];
	return 0;
}

FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	CUresult res = fake_enter("cuDevicePrimaryCtxRelease", NULL);

	if (res)
		return res;
	if (d < 0 || d >= fake_ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&fake_lock);
	if (fake_ctx[d].retained > 0 && !--fake_ctx[d].retained)
		fake_ctx[d].lost = 0;	/* the last release resets it */
	pthread_mutex_unlock(&fake_lock);
	return 0;
}

FAKE_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult res = fake_enter("cuCtxSetCurrent", NULL);

	if (res)
		return res;
	if (ctx && (ctx < fake_ctx || ctx >= fake_ctx + FAKE_MAX_DEV))
		return CUDA_ERROR_INVALID_CONTEXT;
	fake_current = ctx;
	return 0;
}

FAKE_API CUresult cuCtxGetCurrent(CUcontext *ctx)
{
	CUresult res = fake_enter("cuCtxGetCurrent", NULL);

	if (res)
		return res;
	*ctx = fake_current;
	return 0;
}

/* ---- cuGetProcAddress ---- */

static const struct {
	const char *name;
	void *fn;
} fake_procs[] = {
#define FAKE_PROC(name, sym, req, args) { #name, (void *)sym },
	ORTMEM_CUDA_CALLS(FAKE_PROC)
#undef FAKE_PROC
};

static CUresult fake_getproc(const char *which, const char *symbol, void **fn,
			     int version)
{
	const char *mode = getenv("FAKECUDA_PROCADDR");
	size_t i;

	if (!mode || !*mode)
		mode = "v2";
	if (strcmp(mode, which) || !symbol || !fn || version < 11030)
		return CUDA_ERROR_NOT_FOUND;
	for (i = 0; i < sizeof(fake_procs) / sizeof(fake_procs[0]); i++)
		if (!strcmp(fake_procs[i].name, symbol)) {
			*fn = fake_procs[i].fn;
			return 0;
		}
	*fn = NULL;
	return CUDA_ERROR_NOT_FOUND;
}

FAKE_API CUresult cuGetProcAddress(const char *symbol, void **fn, int version,
				   unsigned long long flags);
FAKE_API CUresult cuGetProcAddress(const char *symbol, void **fn, int version,
				   unsigned long long flags)
{
	(void)flags;
	return fake_getproc("v1", symbol, fn, version);
}

FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **fn,
				      int version, unsigned long long flags,
				      int *status);
FAKE_API CUresult cuGetProcAddress_v2(const char *symbol, void **fn,
				      int version, unsigned long long flags,
				      int *status)
{
	CUresult res;

	(void)flags;
	res = fake_getproc("v2", symbol, fn, version);
	if (status)
		*status = res ? 1 : 0;	/* SYMBOL_NOT_FOUND : SUCCESS */
	return res;
}
