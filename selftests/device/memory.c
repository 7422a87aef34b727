// SPDX-License-Identifier: MIT
/*
 * The device tier's loader, handles and memory: absence and its reasons,
 * the three ways entry points are resolved, allocation and budgets on two
 * devices, out-of-memory at every call site that allocates, and virtual
 * backing (grow, unmap, map again, address kept).
 */
#include "common.h"

#define MiB (1ull << 20)

static bool has(const char *s, const char *what)
{
	return s && strstr(s, what);
}

TEST(absent_without_library)
{
	struct ortmem_device *dev = NULL;
	struct ortmem_host *host;
	void *p;

	setenv("ORTMEM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
	ASSERT_EQ(-ENOENT, ortmem_device_count());
	ASSERT_TRUE(has(reason(), "cannot load /nonexistent/libcuda.so.1"));
	ASSERT_TRUE(has(ortmem_device_absent_reason(), "no NVIDIA driver"));
	ASSERT_EQ(-ENOENT, ortmem_device_open(0, NULL, &dev));
	ASSERT_NULL(dev);
	/* Everything else works. */
	ASSERT_EQ(0, ortmem_host_open(NULL, &host));
	ASSERT_EQ(0, ortmem_host_alloc(host, 4096, -1, &p));
	ASSERT_EQ(0, ortmem_host_free(host, p));
	ortmem_host_close(host);
}

TEST(absent_when_cuinit_fails)
{
	NEED_FAKE();
	setenv("FAKECUDA_FAULTS", "cuInit:1:100", 1);
	ASSERT_EQ(-ENODEV, ortmem_device_count());
	ASSERT_TRUE(has(reason(), "cuInit failed with CUDA_ERROR_NO_DEVICE"));
	ASSERT_TRUE(has(ortmem_device_absent_reason(), "cuInit"));
}

TEST(absent_without_devices)
{
	NEED_FAKE();
	setenv("FAKECUDA_DEVICES", "0", 1);
	ASSERT_EQ(-ENODEV, ortmem_device_count());
	ASSERT_TRUE(has(ortmem_device_absent_reason(), "CUDA_ERROR_NO_DEVICE"));
}

FIXTURE(resolve) {};
FIXTURE_VARIANT(resolve) { const char *mode; };
FIXTURE_VARIANT_ADD(resolve, getprocaddress_v2) { .mode = "v2" };
FIXTURE_VARIANT_ADD(resolve, getprocaddress_v1) { .mode = "v1" };
FIXTURE_VARIANT_ADD(resolve, dlsym) { .mode = "none" };
FIXTURE_SETUP(resolve) {}
FIXTURE_TEARDOWN(resolve) {}

TEST_F(resolve, every_way_works)
{
	struct ortmem_device *dev;
	char buf[4096];
	uint64_t d;

	NEED_FAKE();
	setenv("FAKECUDA_PROCADDR", variant->mode, 1);
	ASSERT_EQ(2, ortmem_device_count());
	ASSERT_NULL(ortmem_device_absent_reason());
	ASSERT_EQ(0, ortmem_device_open(1, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, sizeof(buf), 0, &d));
	fill(buf, sizeof(buf), 3);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, buf, sizeof(buf), NULL));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d, sizeof(buf), NULL));
	ASSERT_TRUE(filled(buf, sizeof(buf), 3));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
}

TEST(bad_arguments)
{
	ORTMEM_OPTS(ortmem_device_opts, o, .flags = 1u << 7);
	struct ortmem_device *dev;
	uint64_t d;

	NEED_DEVICES(1);
	ASSERT_EQ(-EINVAL, ortmem_device_open(0, &o, &dev));
	ASSERT_TRUE(has(reason(), "unknown flags"));
	ASSERT_EQ(-EINVAL, ortmem_device_open(-1, NULL, &dev));
	ASSERT_EQ(-ENODEV, ortmem_device_open(ortmem_device_count(), NULL, &dev));
	ASSERT_TRUE(has(reason(), "there is no GPU"));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(dev, 0, 0, &d));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(dev, 4096, 1u << 9, &d));
	ASSERT_EQ(-EINVAL, ortmem_device_free(dev, 0x1234));
	ASSERT_TRUE(has(reason(), "not the start of a live allocation"));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 4096, 0, &d));
	/* A copy past the end of the allocation is refused, not done. */
	char buf[8192];
	ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d, buf, sizeof(buf), NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_from(dev, buf, d + 4000, 200, NULL));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
}

/* NULLs, overflows, unknown bits, wrong handles: refused, nothing done. */
TEST(hostile_arguments)
{
	ORTMEM_OPTS(ortmem_device_opts, big, .bounce_bytes = 2ull << 30);
	ORTMEM_OPTS(ortmem_device_opts, pad, .pad = 1);
	struct ortmem_device_stats small = { .sz = 4 };
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_extent ext = { .extent = 1, .len = 4096 };
	struct ortmem_device *dev;
	struct ortmem_device_event *ev = NULL;
	char buf[64];
	uint64_t d, g;

	NEED_DEVICES(1);
	ASSERT_EQ(-EINVAL, ortmem_device_open(0, NULL, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_open(0, &big, &dev));
	ASSERT_TRUE(has(reason(), "bounce_bytes"));
	ASSERT_EQ(-EINVAL, ortmem_device_open(0, &pad, &dev));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(NULL, 4096, 0, &d));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(dev, 4096, 0, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(dev, UINT64_MAX, 0, &d));
	ASSERT_EQ(-EINVAL, ortmem_device_alloc(dev, UINT64_MAX, ORTMEM_DEVICE_ALLOC_VIRTUAL, &d));
	ASSERT_EQ(-EINVAL, ortmem_device_stats(dev, &small));
	ASSERT_EQ(-EINVAL, ortmem_device_stats(dev, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_register(dev, NULL, 4096));
	ASSERT_EQ(-EINVAL, ortmem_device_register(dev, buf, 0));
	ASSERT_EQ(-EINVAL, ortmem_device_register(dev, (void *)(UINTPTR_MAX - 10), 4096));
	ASSERT_EQ(-EINVAL, ortmem_device_unregister(dev, buf));
	ASSERT_EQ(-EINVAL, ortmem_device_event_wait(NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_event_query(NULL));
	ortmem_device_event_put(NULL);
	ASSERT_EQ(-EINVAL, ortmem_device_release_after(NULL, (struct ortmem_handle){ 1 }, ev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 8192, 0, &d));
	/* Copies that wrap around or leave the allocation. */
	ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d, buf, UINT64_MAX, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d + 8150, buf, 64, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d, NULL, 64, NULL));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_from(dev, buf, d, 0, NULL));
	/* Not virtual: no map or unmap. */
	ASSERT_EQ(-EINVAL, ortmem_device_map(dev, d, 0, 4096));
	ASSERT_TRUE(has(reason(), "not the start of a virtual allocation"));
	if (!ortmem_device_granularity(dev, &g)) {
		uint64_t v;

		ASSERT_EQ(0, ortmem_device_alloc(dev, 2 * g, ORTMEM_DEVICE_ALLOC_VIRTUAL, &v));
		ASSERT_EQ(-EINVAL, ortmem_device_map(dev, v, UINT64_MAX - g + 1, g));
		ASSERT_EQ(-EINVAL, ortmem_device_map(dev, v, g, UINT64_MAX - g + 1));
		ASSERT_EQ(-EINVAL, ortmem_device_unmap(dev, v, 0, 0));
		ASSERT_EQ(0, ortmem_device_free(dev, v));
	}
	/* Streams: NULLs, nothing, a destination outside the allocation. */
	ASSERT_EQ(-EINVAL, ortmem_device_stream_in(dev, NULL, &ext, 1, d));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(8192, st.used_bytes);
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ASSERT_EQ(-EINVAL, ortmem_device_free(dev, d));	/* twice */
	ortmem_device_close(dev);
	ortmem_device_close(NULL);
}

/* Two devices, a budget each: what one takes the other does not see. */
TEST(two_devices_budgets)
{
	ORTMEM_OPTS(ortmem_device_opts, o0, .budget = 4 * MiB);
	ORTMEM_OPTS(ortmem_device_opts, o1, .budget = 8 * MiB);
	ORTMEM_OPTS(ortmem_device_stats, s0);
	ORTMEM_OPTS(ortmem_device_stats, s1);
	struct ortmem_device *d0, *d1;
	uint64_t a[16], b[16];
	int n0 = 0, n1 = 0, ret;

	NEED_DEVICES(2);
	ASSERT_EQ(0, ortmem_device_open(0, &o0, &d0));
	ASSERT_EQ(0, ortmem_device_open(1, &o1, &d1));
	while ((ret = ortmem_device_alloc(d0, MiB, 0, &a[n0])) == 0)
		n0++;
	ASSERT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ret);
	ASSERT_EQ(ORTMEM_ERR_TIER_EXHAUSTED, ortmem_last_error()->kind);
	ASSERT_EQ(4 * MiB, ortmem_last_error()->limit);
	while ((ret = ortmem_device_alloc(d1, MiB, 0, &b[n1])) == 0)
		n1++;
	ASSERT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ret);
	ASSERT_EQ(4, n0);
	ASSERT_EQ(8, n1);
	ASSERT_EQ(0, ortmem_device_stats(d0, &s0));
	ASSERT_EQ(0, ortmem_device_stats(d1, &s1));
	ASSERT_EQ(0, s0.ordinal);
	ASSERT_EQ(1, s1.ordinal);
	ASSERT_EQ(4 * MiB, s0.used_bytes);
	ASSERT_EQ(8 * MiB, s1.used_bytes);
	ASSERT_EQ(4, s0.allocations);
	if (on_fake())
		ASSERT_STRNE(s0.name, s1.name);
	/* A device address of one handle means nothing to the other. */
	ASSERT_EQ(-EINVAL, ortmem_device_free(d1, a[0]));
	while (n0)
		ASSERT_EQ(0, ortmem_device_free(d0, a[--n0]));
	while (n1)
		ASSERT_EQ(0, ortmem_device_free(d1, b[--n1]));
	ASSERT_EQ(0, ortmem_device_stats(d0, &s0));
	ASSERT_EQ(0, s0.used_bytes);
	ASSERT_EQ(4 * MiB, s0.peak_bytes);
	ortmem_device_close(d0);
	ortmem_device_close(d1);
}

/* The driver's own refusal: two handles on one GPU share its memory. */
TEST(driver_out_of_memory)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *a, *b;
	uint64_t da, db;
	const struct ortmem_error *e;

	NEED_FAKE();
	setenv("FAKECUDA_MEM", "67108864", 1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &a));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &b));
	ASSERT_EQ(0, ortmem_device_alloc(a, 48 * MiB, 0, &da));
	ASSERT_EQ(-ENOMEM, ortmem_device_alloc(b, 48 * MiB, 0, &db));
	e = ortmem_last_error();
	ASSERT_EQ(ORTMEM_ERR_ALLOCATION_FAILED, e->kind);
	ASSERT_EQ(ORTMEM_TIER_DEVICE, e->tier);
	ASSERT_TRUE(has(e->reason, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"));
	ASSERT_EQ(0, ortmem_device_stats(b, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(0, st.lost);
	ASSERT_EQ(0, ortmem_device_free(a, da));
	ASSERT_EQ(0, ortmem_device_alloc(b, 48 * MiB, 0, &db));
	ASSERT_EQ(0, ortmem_device_free(b, db));
	ortmem_device_close(a);
	ortmem_device_close(b);
}

/* Out of memory injected at each call site that allocates. */
FIXTURE(oom) {};
FIXTURE_VARIANT(oom) { const char *call; int step; };
FIXTURE_VARIANT_ADD(oom, cuMemAlloc) { .call = "cuMemAlloc", .step = 0 };
FIXTURE_VARIANT_ADD(oom, cuMemAddressReserve) { .call = "cuMemAddressReserve", .step = 1 };
FIXTURE_VARIANT_ADD(oom, cuMemCreate_first) { .call = "cuMemCreate", .step = 2 };
FIXTURE_VARIANT_ADD(oom, cuMemCreate_third) { .call = "cuMemCreate", .step = 3 };
FIXTURE_VARIANT_ADD(oom, cuMemMap) { .call = "cuMemMap", .step = 2 };
FIXTURE_VARIANT_ADD(oom, cuMemHostRegister) { .call = "cuMemHostRegister", .step = 4 };
FIXTURE_VARIANT_ADD(oom, cuEventCreate) { .call = "cuEventCreate", .step = 5 };
FIXTURE_VARIANT_ADD(oom, cuStreamCreate) { .call = "cuStreamCreate", .step = 6 };
FIXTURE_SETUP(oom) {}
FIXTURE_TEARDOWN(oom) {}

TEST_F(oom, no_leak_and_the_drivers_reason)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *dev;
	struct ortmem_host *host;
	char spec[96], want[96];
	uint64_t d, g;
	void *p;
	char buf[256], why[512] = "";
	int ret = 0, nth = variant->step == 3 ? 3 : 1;

	NEED_FAKE();
	snprintf(spec, sizeof(spec), "%s:%d:2", variant->call, nth);
	snprintf(want, sizeof(want), "%s: CUDA_ERROR_OUT_OF_MEMORY", variant->call);
	setenv("FAKECUDA_FAULTS", spec, 1);
	if (variant->step == 6) {
		ASSERT_EQ(-ENOMEM, ortmem_device_open(0, NULL, &dev));
		ASSERT_TRUE(has(reason(), want));
		return;
	}
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_granularity(dev, &g));
	switch (variant->step) {
	case 0:
		ret = ortmem_device_alloc(dev, 4096, 0, &d);
		break;
	case 1:
		ret = ortmem_device_alloc(dev, 4 * g, ORTMEM_DEVICE_ALLOC_VIRTUAL, &d);
		break;
	case 2:
	case 3:
		ASSERT_EQ(0, ortmem_device_alloc(dev, 4 * g, ORTMEM_DEVICE_ALLOC_VIRTUAL, &d));
		ret = ortmem_device_map(dev, d, 0, 4 * g);
		snprintf(why, sizeof(why), "%s", reason());
		/* All or nothing: nothing of the range stays mapped. */
		ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d, buf, 16, NULL));
		ASSERT_EQ(0, ortmem_device_stats(dev, &st));
		ASSERT_EQ(0, st.used_bytes);
		ASSERT_EQ(0, ortmem_device_free(dev, d));
		break;
	case 4:
		ASSERT_EQ(0, ortmem_host_open(NULL, &host));
		ret = ortmem_device_host_alloc(dev, host, 8192, &p);
		{
			ORTMEM_OPTS(ortmem_host_stats, hs);
			ASSERT_EQ(0, ortmem_host_stats(host, &hs));
			ASSERT_EQ(0, hs.buffers);	/* freed again */
		}
		ortmem_host_close(host);
		break;
	case 5:
		ASSERT_EQ(0, ortmem_device_alloc(dev, 256, 0, &d));
		ret = ortmem_device_copy_to(dev, d, buf, sizeof(buf), NULL);
		ASSERT_EQ(0, ortmem_device_free(dev, d));
		break;
	}
	ASSERT_EQ(-ENOMEM, ret);
	ASSERT_TRUE(has(why[0] ? why : reason(), want));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(0, st.allocations);
	ASSERT_EQ(0, st.registered_bytes);
	ASSERT_EQ(0, st.lost);
	/* The GPU has all its memory back: nothing leaked in the driver. */
	ASSERT_EQ(st.total_bytes, st.free_bytes);
	ortmem_device_close(dev);
}

/* A free the driver refuses keeps the allocation; a later one frees it. */
TEST(free_refused_then_retried)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *dev;
	uint64_t d;

	NEED_FAKE();
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, MiB, 0, &d));
	setenv("FAKECUDA_FAULTS", "cuMemFree:1:999", 1);
	ASSERT_EQ(-EIO, ortmem_device_free(dev, d));
	ASSERT_TRUE(has(reason(), "cuMemFree: CUDA_ERROR_UNKNOWN"));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(1, st.allocations);
	ASSERT_EQ(MiB, st.used_bytes);
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.allocations);
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(st.total_bytes, st.free_bytes);
	ortmem_device_close(dev);
}

TEST(virtual_backing_grow_unmap_remap)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *dev;
	uint64_t g, d, len;
	char *buf;

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	if (ortmem_device_granularity(dev, &g))
		SKIP("no virtual backing: %s", reason());
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(ORTMEM_BACKEND_CAP_VIRTUAL, st.caps & ORTMEM_BACKEND_CAP_VIRTUAL);
	len = 8 * g;
	buf = malloc(len);
	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, ORTMEM_DEVICE_ALLOC_VIRTUAL, &d));
	ASSERT_EQ(0, d % g);
	/* Reserved, not backed: nothing charged, no copy allowed. */
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(-EINVAL, ortmem_device_copy_to(dev, d, buf, 16, NULL));
	ASSERT_TRUE(has(reason(), "unmapped"));
	/* Grow: the first half, then the rest, same address. */
	ASSERT_EQ(0, ortmem_device_map(dev, d, 0, 4 * g));
	fill(buf, 4 * g, 1);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, buf, 4 * g, NULL));
	ASSERT_EQ(0, ortmem_device_map(dev, d, 4 * g, 4 * g));
	fill(buf + 4 * g, 4 * g, 2);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d + 4 * g, buf + 4 * g, 4 * g, NULL));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(len, st.used_bytes);
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d, len, NULL));
	ASSERT_TRUE(filled(buf, 4 * g, 1));
	ASSERT_TRUE(filled(buf + 4 * g, 4 * g, 2));
	/* Demote part: unmap granules 2..3, their budget comes back. */
	ASSERT_EQ(0, ortmem_device_unmap(dev, d, 2 * g, 2 * g));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(len - 2 * g, st.used_bytes);
	ASSERT_EQ(-EINVAL, ortmem_device_copy_from(dev, buf, d + 2 * g, 16, NULL));
	/* Promote it again: mapped back at the same address. */
	ASSERT_EQ(0, ortmem_device_map(dev, d, 2 * g, 2 * g));
	fill(buf, 2 * g, 9);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d + 2 * g, buf, 2 * g, NULL));
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d, len, NULL));
	ASSERT_TRUE(filled(buf, 2 * g, 1));
	ASSERT_TRUE(filled(buf + 2 * g, 2 * g, 9));
	ASSERT_TRUE(filled(buf + 4 * g, 4 * g, 2));
	/* Misaligned ranges are refused with the granularity named. */
	ASSERT_EQ(-EINVAL, ortmem_device_map(dev, d, 1, g));
	ASSERT_TRUE(has(reason(), "granularity"));
	ASSERT_EQ(-EINVAL, ortmem_device_map(dev, d, 0, len + g));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	free(buf);
	ortmem_device_close(dev);
}

TEST(virtual_backing_off)
{
	ORTMEM_OPTS(ortmem_device_opts, o, .flags = ORTMEM_DEVICE_NO_VIRTUAL);
	struct ortmem_device *dev;
	uint64_t g, d;

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, &o, &dev));
	ASSERT_EQ(-EOPNOTSUPP, ortmem_device_granularity(dev, &g));
	ASSERT_EQ(-EOPNOTSUPP, ortmem_device_alloc(dev, 1 << 20, ORTMEM_DEVICE_ALLOC_VIRTUAL, &d));
	ortmem_device_close(dev);
}

TEST_HARNESS_MAIN
