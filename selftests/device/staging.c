// SPDX-License-Identifier: MIT
/*
 * File-backed weights promoted to the device tier go through the device
 * backend's staging memory (pinned and registered with the GPU), so the
 * copy on is DMA, not the driver's pageable staging; the staging buffer
 * is kept between promotions and freed when the governor closes.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <fcntl.h>
#include <unistd.h>

#include "common.h"

#define MiB (1ull << 20)

/* The fake driver's count of copies from or to memory that is not pinned. */
static unsigned long long pageable_bytes(void)
{
	void *h = dlopen(getenv("ORTMEM_CUDA_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
	unsigned long long (*f)(void) = h ? (unsigned long long (*)(void))
		dlsym(h, "fakecuda_pageable_bytes") : NULL;
	unsigned long long v = f ? f() : ~0ull;

	if (h)
		dlclose(h);
	return v;
}

static int weights_file(char *path, size_t n, const char *fill, size_t len)
{
	const char *dir = getenv("ORTMEM_SPILL_DIR") ?: "/var/tmp";
	int fd;

	snprintf(path, n, "%s/ortmem-staging.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	if (write(fd, fill, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	close(fd);
	return ortmem_wfile_checksum(path, NULL, 0);
}

TEST(file_weights_reach_the_gpu_by_dma)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 64 * MiB, 0, 0 });
	ORTMEM_OPTS(ortmem_device_stats, st);
	size_t len = 6 * MiB + 4096;
	char *src = malloc(len), *back = malloc(len), path[256], csum[300];
	struct ortmem_device *dev;
	struct ortmem_wfile *wf;
	struct ortmem_gov *gov;
	struct ortmem_handle h;
	unsigned long long before;
	uint64_t reg = 0;
	size_t i;
	void *p;
	int round;

	NEED_FAKE();
	for (i = 0; i < len; i++)
		src[i] = (char)(i * 2654435761u >> 13);
	ASSERT_EQ(0, weights_file(path, sizeof(path), src, len));
	snprintf(csum, sizeof(csum), "%s.csum", path);
	ASSERT_EQ(0, ortmem_wfile_open(path, NULL, &wf));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	ASSERT_EQ(0, ortmem_gov_alloc_file(gov, ORTMEM_TIER_DEVICE,
					   ORTMEM_ROLE_WEIGHTS, wf, 0, len, 0, &h));
	for (round = 0; round < 2; round++) {
		before = pageable_bytes();
		ASSERT_NE(~0ull, before);
		ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &p));
		/* Not one byte went through pageable memory. */
		ASSERT_EQ(before, pageable_bytes());
		memset(back, 0, len);
		ASSERT_EQ(0, ortmem_device_copy_from(dev, back, (uintptr_t)p, len, NULL));
		ASSERT_EQ(0, memcmp(src, back, len));
		ASSERT_EQ(0, ortmem_gov_unpin(gov, h));
		ASSERT_EQ(0, ortmem_gov_demote(gov, h));
		/* The staging buffer is kept, and reused: no second one. */
		ASSERT_EQ(0, ortmem_device_stats(dev, &st));
		if (round == 0)
			reg = st.registered_bytes;
		ASSERT_GE(reg, len);
		ASSERT_EQ(reg, st.registered_bytes);
	}
	ASSERT_EQ(0, ortmem_gov_release(gov, h, 0));
	ortmem_gov_close(gov);
	/* Closing the governor gave the staging memory back. */
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.registered_bytes);
	ortmem_device_close(dev);
	ortmem_wfile_close(wf);
	unlink(csum);
	unlink(path);
	free(src);
	free(back);
}

/*
 * Layers streamed through a device budget of two, as ortmem-run does (pin
 * one, prefetch the next, unpin): each prefetch that recycles a layer's
 * GPU buffer announces its read into a staging buffer, so the read starts
 * behind the one before it; the reads that took such a start are counted,
 * and every layer still arrives bit-exact.
 */
TEST(prefetched_layers_are_read_ahead_into_staging)
{
	enum { L = 6 };
	size_t layer = 2 * MiB + 8192, len = L * layer;
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 2 * layer, 0, 0 });
	ORTMEM_OPTS(ortmem_wfile_stats, ws);
	char *src = malloc(len), *back = malloc(layer), path[256], csum[300];
	struct ortmem_handle h[L];
	struct ortmem_device *dev;
	struct ortmem_wfile *wf;
	struct ortmem_gov *gov;
	unsigned long long before;
	int pass, i;
	size_t k;
	void *p;

	NEED_FAKE();
	for (k = 0; k < len; k++)
		src[k] = (char)(k * 2654435761u >> 11);
	ASSERT_EQ(0, weights_file(path, sizeof(path), src, len));
	snprintf(csum, sizeof(csum), "%s.csum", path);
	ASSERT_EQ(0, ortmem_wfile_open(path, NULL, &wf));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE,
					    ortmem_backend_device(), dev));
	for (i = 0; i < L; i++)
		ASSERT_EQ(0, ortmem_gov_alloc_file(gov, ORTMEM_TIER_DEVICE,
						   ORTMEM_ROLE_WEIGHTS, wf,
						   (uint64_t)i * layer, layer, 0, &h[i]));
	before = pageable_bytes();
	ASSERT_LE(0, ortmem_gov_prefetch(gov, &h[0], 1, 0));
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < L; i++) {
			ASSERT_EQ(0, ortmem_gov_pin(gov, h[i], 0, &p));
			ASSERT_LE(0, ortmem_gov_prefetch(gov, &h[(i + 1) % L], 1, 0));
			ASSERT_EQ(0, ortmem_device_copy_from(dev, back, (uintptr_t)p, layer, NULL));
			ASSERT_EQ(0, memcmp(src + (size_t)i * layer, back, layer));
			ASSERT_EQ(0, ortmem_gov_unpin(gov, h[i]));
		}
	ASSERT_EQ(0, ortmem_gov_pin(gov, h[0], 0, &p));
	ASSERT_EQ(0, ortmem_gov_unpin(gov, h[0]));
	/* The only pageable copies are this test's own reads back. */
	EXPECT_EQ(before + 2 * L * layer, pageable_bytes());
	ASSERT_EQ(0, ortmem_wfile_stats(wf, &ws));
	/* Every promotion after the first two recycles a buffer. */
	TH_LOG("%" PRIu64 " of %" PRIu64 " reads started ahead", ws.reads_ahead, ws.reads);
	EXPECT_GE(ws.reads_ahead, (uint64_t)L);
	EXPECT_LE(ws.reads_ahead, ws.reads);
	for (i = 0; i < L; i++)
		ASSERT_EQ(0, ortmem_gov_release(gov, h[i], 0));
	ortmem_gov_close(gov);
	ortmem_device_close(dev);
	ortmem_wfile_close(wf);
	unlink(csum);
	unlink(path);
	free(src);
	free(back);
}

/* A backend with only one of the two staging hooks is refused. */
TEST(staging_hooks_come_in_pairs)
{
	struct ortmem_backend_ops ops = *ortmem_backend_device();
	struct ortmem_gov *gov;

	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));
	ops.staging_free = NULL;
	ASSERT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_DEVICE, &ops, NULL));
	ASSERT_TRUE(strstr(ortmem_last_error_message(), "staging_alloc and staging_free") != NULL);
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
