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

/* A weights file of @len bytes of @src, its checksums, a GPU and a
 * governor whose device tier (limit @limit) is that GPU. */
struct stage_env {
	char path[256], csum[300];
	struct ortmem_wfile *wf;
	struct ortmem_device *dev;
	struct ortmem_gov *gov;
};

static int env_open(struct stage_env *e, char *src, size_t len, uint64_t limit,
		    unsigned int shift)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { limit, 0, 0 });
	size_t i;

	for (i = 0; i < len; i++)
		src[i] = (char)(i * 2654435761u >> shift);
	if (weights_file(e->path, sizeof(e->path), src, len))
		return -1;
	snprintf(e->csum, sizeof(e->csum), "%s.csum", e->path);
	if (ortmem_wfile_open(e->path, NULL, &e->wf) ||
	    ortmem_device_open(0, NULL, &e->dev) ||
	    ortmem_gov_open(&o, &e->gov))
		return -1;
	return ortmem_gov_set_backend(e->gov, ORTMEM_TIER_DEVICE,
				      ortmem_backend_device(), e->dev);
}

/* The governor first: it frees its staging through the device. */
static void env_close(struct stage_env *e)
{
	ortmem_gov_close(e->gov);
	ortmem_device_close(e->dev);
	ortmem_wfile_close(e->wf);
	unlink(e->csum);
	unlink(e->path);
}

TEST(file_weights_reach_the_gpu_by_dma)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	size_t len = 6 * MiB + 4096;
	char *src = malloc(len), *back = malloc(len);
	struct stage_env e;
	struct ortmem_handle h;
	unsigned long long before;
	uint64_t reg = 0;
	void *p;
	int round;

	NEED_FAKE();
	ASSERT_EQ(0, env_open(&e, src, len, 64 * MiB, 13));
	ASSERT_EQ(0, ortmem_gov_alloc_file(e.gov, ORTMEM_TIER_DEVICE,
					   ORTMEM_ROLE_WEIGHTS, e.wf, 0, len, 0, &h));
	for (round = 0; round < 2; round++) {
		before = pageable_bytes();
		ASSERT_NE(~0ull, before);
		ASSERT_EQ(0, ortmem_gov_pin(e.gov, h, 0, &p));
		/* Not one byte went through pageable memory. */
		ASSERT_EQ(before, pageable_bytes());
		memset(back, 0, len);
		ASSERT_EQ(0, ortmem_device_copy_from(e.dev, back, (uintptr_t)p, len, NULL));
		ASSERT_EQ(0, memcmp(src, back, len));
		ASSERT_EQ(0, ortmem_gov_unpin(e.gov, h));
		ASSERT_EQ(0, ortmem_gov_demote(e.gov, h));
		/* The staging buffer is kept, and reused: no second one. */
		ASSERT_EQ(0, ortmem_device_stats(e.dev, &st));
		if (round == 0)
			reg = st.registered_bytes;
		ASSERT_GE(reg, len);
		ASSERT_EQ(reg, st.registered_bytes);
	}
	ASSERT_EQ(0, ortmem_gov_release(e.gov, h, 0));
	ortmem_gov_close(e.gov);
	e.gov = NULL;
	/* Closing the governor gave the staging memory back. */
	ASSERT_EQ(0, ortmem_device_stats(e.dev, &st));
	ASSERT_EQ(0, st.registered_bytes);
	env_close(&e);
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
	ORTMEM_OPTS(ortmem_wfile_stats, ws);
	char *src = malloc(len), *back = malloc(layer);
	struct ortmem_handle h[L];
	struct stage_env e;
	unsigned long long before;
	int pass, i;
	void *p;

	NEED_FAKE();
	ASSERT_EQ(0, env_open(&e, src, len, 2 * layer, 11));
	for (i = 0; i < L; i++)
		ASSERT_EQ(0, ortmem_gov_alloc_file(e.gov, ORTMEM_TIER_DEVICE,
						   ORTMEM_ROLE_WEIGHTS, e.wf,
						   (uint64_t)i * layer, layer, 0, &h[i]));
	before = pageable_bytes();
	ASSERT_LE(0, ortmem_gov_prefetch(e.gov, &h[0], 1, 0));
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < L; i++) {
			ASSERT_EQ(0, ortmem_gov_pin(e.gov, h[i], 0, &p));
			ASSERT_LE(0, ortmem_gov_prefetch(e.gov, &h[(i + 1) % L], 1, 0));
			ASSERT_EQ(0, ortmem_device_copy_from(e.dev, back, (uintptr_t)p, layer, NULL));
			ASSERT_EQ(0, memcmp(src + (size_t)i * layer, back, layer));
			ASSERT_EQ(0, ortmem_gov_unpin(e.gov, h[i]));
		}
	ASSERT_EQ(0, ortmem_gov_pin(e.gov, h[0], 0, &p));
	ASSERT_EQ(0, ortmem_gov_unpin(e.gov, h[0]));
	/* The only pageable copies are this test's own reads back. */
	EXPECT_EQ(before + 2 * L * layer, pageable_bytes());
	ASSERT_EQ(0, ortmem_wfile_stats(e.wf, &ws));
	/* Every promotion after the first two recycles a buffer. */
	TH_LOG("%" PRIu64 " of %" PRIu64 " reads started ahead", ws.reads_ahead, ws.reads);
	EXPECT_GE(ws.reads_ahead, (uint64_t)L);
	EXPECT_LE(ws.reads_ahead, ws.reads);
	for (i = 0; i < L; i++)
		ASSERT_EQ(0, ortmem_gov_release(e.gov, h[i], 0));
	env_close(&e);
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
