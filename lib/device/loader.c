// SPDX-License-Identifier: MIT
/*
 * The driver, loaded once per process: dlopen("libcuda.so.1") (or the file
 * ORTMEM_CUDA_LIBRARY names), every entry point of ORTMEM_CUDA_CALLS
 * resolved through cuGetProcAddress where the driver has it (the _v2 form
 * of CUDA 12 first, then the CUDA 11.3 one) and dlsym otherwise, then
 * cuInit and a device count.  Whatever fails first is kept as the reason
 * the device tier is absent; nothing else in the library depends on it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "device_internal.h"

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static struct cu_api cuda_api;
static int cuda_code;			/* 0 or why the tier is absent */
static char cuda_absent[ORTMEM_ERROR_REASON_MAX];

struct cu_entry {
	const char *name;	/* for cuGetProcAddress */
	const char *sym;	/* for dlsym */
	bool required;
	size_t off;		/* of the pointer in struct cu_api */
};

static const struct cu_entry cu_entries[] = {
#define ORTMEM_CU_ENTRY(fn, symbol, req, args) \
	{ #fn, #symbol, req, offsetof(struct cu_api, fn) },
	ORTMEM_CUDA_CALLS(ORTMEM_CU_ENTRY)
#undef ORTMEM_CU_ENTRY
};

struct cu_resolver {
	void *lib;
	cu_getproc_v1_fn getproc_v1;
	cu_getproc_v2_fn getproc_v2;
};

static void *cu_resolve(const struct cu_resolver *r, const struct cu_entry *e)
{
	void *fn = NULL;
	int status = 0;

	/* cuGetProcAddress gives the ABI of the version we ask for, whatever
	 * the driver's newest is; dlsym names carry that version's suffix. */
	if (r->getproc_v2 &&
	    r->getproc_v2(e->name, &fn, ORTMEM_CUDA_ABI,
			  CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
	    fn)
		return fn;
	fn = NULL;
	if (r->getproc_v1 &&
	    r->getproc_v1(e->name, &fn, ORTMEM_CUDA_ABI,
			  CU_GET_PROC_ADDRESS_DEFAULT) == CUDA_SUCCESS && fn)
		return fn;
	return dlsym(r->lib, e->sym);
}

/* The driver's own name and text of @res, where it has them. */
void ortmem__cu_describe(CUresult res, char *buf, size_t len)
{
	const struct cu_api *cu = ortmem__cuda_loaded();
	const char *name = NULL, *text = NULL;

	if (cu && cu->cuGetErrorName &&
	    cu->cuGetErrorName(res, &name) != CUDA_SUCCESS)
		name = NULL;
	if (cu && cu->cuGetErrorString &&
	    cu->cuGetErrorString(res, &text) != CUDA_SUCCESS)
		text = NULL;
	if (name && text)
		snprintf(buf, len, "%s (%s)", name, text);
	else if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "CUresult %d", res);
}

static int cuda_absent_because(int code, const char *fmt, ...) __printf(2, 3);
static int cuda_absent_because(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cuda_absent, sizeof(cuda_absent), fmt, ap);
	va_end(ap);
	cuda_code = code;
	pr_info("device tier absent: %s", cuda_absent);
	return code;
}

static int cuda_resolve_all(void *lib, const char *path)
{
	struct cu_resolver r = { .lib = lib };
	size_t i, vmm_first = offsetof(struct cu_api, ORTMEM_CUDA_VMM_FIRST);
	int missing_vmm = 0;

	*(void **)&r.getproc_v2 = dlsym(lib, "cuGetProcAddress_v2");
	*(void **)&r.getproc_v1 = dlsym(lib, "cuGetProcAddress");
	for (i = 0; i < ORTMEM_ARRAY_SIZE(cu_entries); i++) {
		const struct cu_entry *e = &cu_entries[i];
		void *fn = cu_resolve(&r, e);

		memcpy((char *)&cuda_api + e->off, &fn, sizeof(fn));
		if (fn)
			continue;
		if (e->required)
			return cuda_absent_because(-ENOSYS,
				"%s has no entry point %s (nor %s); the driver is too old or not NVIDIA's, install a driver for CUDA 11.3 or newer",
				path, e->name, e->sym);
		if (e->off >= vmm_first)
			missing_vmm++;
	}
	cuda_api.have_vmm = !missing_vmm;
	pr_debug("CUDA entry points resolved through %s",
		 r.getproc_v2 ? "cuGetProcAddress_v2" :
		 r.getproc_v1 ? "cuGetProcAddress" : "dlsym");
	return 0;
}

static void cuda_load(void)
{
	const char *path = secure_getenv("ORTMEM_CUDA_LIBRARY");
	char why[128];
	CUresult res;
	void *lib;

	if (!path || !*path)
		path = "libcuda.so.1";
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *dl = dlerror();

		cuda_absent_because(-ENOENT,
			"cannot load %s (%s): no NVIDIA driver is installed; the host and disk tiers work without it",
			path, dl ? dl : "not found");
		return;
	}
	if (cuda_resolve_all(lib, path))
		goto fail;
	res = cuda_api.cuInit(0);
	if (res != CUDA_SUCCESS) {
		ortmem__cu_describe(res, why, sizeof(why));
		cuda_absent_because(-ENODEV,
			"cuInit failed with %s: the driver cannot reach a GPU (check nvidia-smi and the device nodes' permissions)",
			why);
		goto fail;
	}
	if (cuda_api.cuDriverGetVersion(&cuda_api.driver_version))
		cuda_api.driver_version = 0;
	res = cuda_api.cuDeviceGetCount(&cuda_api.ndevices);
	if (res != CUDA_SUCCESS || cuda_api.ndevices <= 0) {
		ortmem__cu_describe(res, why, sizeof(why));
		cuda_absent_because(-ENODEV,
			"the driver found no GPU (cuDeviceGetCount: %s, %d devices)",
			why, res ? 0 : cuda_api.ndevices);
		goto fail;
	}
	pr_info("device tier: %s, driver API %d, %d GPU%s, virtual backing %s",
		path, cuda_api.driver_version, cuda_api.ndevices,
		cuda_api.ndevices == 1 ? "" : "s",
		cuda_api.have_vmm ? "available" : "unavailable");
	return;
fail:
	/* Keep the library loaded: a driver may not survive dlclose after
	 * cuInit, and the table must not point into unmapped code. */
	memset(&cuda_api, 0, sizeof(cuda_api));
}

const struct cu_api *ortmem__cuda(void)
{
	pthread_once(&cuda_once, cuda_load);
	if (cuda_code) {
		ortmem__err_plain(cuda_code, "device tier absent: %s",
				  cuda_absent);
		return NULL;
	}
	return &cuda_api;
}

const struct cu_api *ortmem__cuda_loaded(void)
{
	return &cuda_api;
}

ORTMEM_API int ortmem_device_count(void)
{
	const struct cu_api *cu = ortmem__cuda();

	return cu ? cu->ndevices : cuda_code;
}

ORTMEM_API const char *ortmem_device_absent_reason(void)
{
	pthread_once(&cuda_once, cuda_load);
	return cuda_code ? cuda_absent : NULL;
}
