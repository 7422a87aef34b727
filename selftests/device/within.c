// SPDX-License-Identifier: MIT
/*
 * Copies within the GPU's memory (ortmem_device_copy_within): the bytes
 * arrive, within one allocation and between two; they are ordered after
 * the copies before them and before those after; the ranges are checked
 * (overlap, wrap-around, unknown or unmapped memory) before the driver is
 * asked; a driver failure names the call and leaves the handle usable.
 */
#include "common.h"

#define MiB (1ull << 20)

static bool has(const char *s, const char *what)
{
	return s && strstr(s, what);
}

static uint64_t d2d_bytes(struct ortmem_device *dev)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	return ortmem_device_stats(dev, &st) ? UINT64_MAX : st.d2d_bytes;
}

TEST(bytes_arrive_within_and_between_allocations)
{
	struct ortmem_device_event *ev;
	struct ortmem_device *dev;
	size_t len = MiB;
	char *buf = malloc(2 * len);
	uint64_t a, b;

	NEED_DEVICES(1);
	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 2 * len, 0, &a));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &b));
	fill(buf, len, 3);
	fill(buf + len, len, 4);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, a, buf, 2 * len, NULL));
	/* The first half over the second, in one allocation. */
	ASSERT_EQ(0, ortmem_device_copy_within(dev, a + len, a, len, &ev));
	ASSERT_EQ(0, ortmem_device_event_wait(ev));
	ASSERT_EQ(1, ortmem_device_event_query(ev));
	ortmem_device_event_put(ev);
	memset(buf, 0, 2 * len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, a, 2 * len, NULL));
	ASSERT_TRUE(filled(buf, len, 3));
	ASSERT_TRUE(filled(buf + len, len, 3));
	/* Adjacent ranges do not overlap; an odd length and offset, to
	 * another allocation, waited for by the call (no event). */
	fill(buf, len, 7);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, a, buf, len, NULL));
	ASSERT_EQ(0, ortmem_device_copy_within(dev, b + 1, a + 3, len - 5, NULL));
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, b + 1, len - 5, NULL));
	{
		char *want = malloc(len);

		ASSERT_NONNULL(want);
		fill(want, len, 7);
		ASSERT_EQ(0, memcmp(buf, want + 3, len - 5));
		free(want);
	}
	ASSERT_EQ(2 * len - 5, d2d_bytes(dev));
	ASSERT_EQ(0, ortmem_device_free(dev, a));
	ASSERT_EQ(0, ortmem_device_free(dev, b));
	ortmem_device_close(dev);
	free(buf);
}

/*
 * Issued back to back without waiting, on slow streams (each copy takes
 * 20 ms on the fake): the copy within reads what the copy to the device
 * wrote before it, and a read-back of the destination issued before it,
 * queued behind other read-backs so that it runs late, still sees the
 * destination's old bytes.
 */
TEST(ordered_with_the_copies_around_it)
{
	struct ortmem_device_event *in, *back, *mv, *out;
	struct ortmem_device *dev;
	size_t len = MiB;
	char *src = malloc(len), *old = malloc(len), *now = malloc(len);
	uint64_t from, to;
	int i;

	NEED_DEVICES(1);
	ASSERT_NONNULL(src);
	ASSERT_NONNULL(old);
	ASSERT_NONNULL(now);
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_register(dev, src, len));
	ASSERT_EQ(0, ortmem_device_register(dev, old, len));
	ASSERT_EQ(0, ortmem_device_register(dev, now, len));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &from));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &to));
	fill(src, len, 1);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, to, src, len, NULL));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ortmem_device_copy_from(dev, now, to, len, NULL));
	fill(src, len, 2);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, from, src, len, &in));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, ortmem_device_copy_from(dev, now, to, len, &back));
		ortmem_device_event_put(back);
	}
	ASSERT_EQ(0, ortmem_device_copy_from(dev, old, to, len, &back));
	ASSERT_EQ(0, ortmem_device_copy_within(dev, to, from, len, &mv));
	ASSERT_EQ(0, ortmem_device_copy_from(dev, now, to, len, &out));
	ASSERT_EQ(0, ortmem_device_event_wait(out));
	ASSERT_EQ(0, ortmem_device_event_wait(back));
	ASSERT_EQ(1, ortmem_device_event_query(mv));
	ASSERT_EQ(1, ortmem_device_event_query(in));
	ASSERT_TRUE(filled(old, len, 1));
	ASSERT_TRUE(filled(now, len, 2));
	ortmem_device_event_put(in);
	ortmem_device_event_put(back);
	ortmem_device_event_put(out);
	ortmem_device_event_put(mv);
	/* Freeing the source waits for the copy that reads it. */
	ASSERT_EQ(0, ortmem_device_copy_within(dev, to, from, len, &mv));
	ASSERT_EQ(0, ortmem_device_free(dev, from));
	ASSERT_EQ(1, ortmem_device_event_query(mv));
	ortmem_device_event_put(mv);
	ASSERT_EQ(0, ortmem_device_free(dev, to));
	ASSERT_EQ(0, ortmem_device_unregister(dev, src));
	ASSERT_EQ(0, ortmem_device_unregister(dev, old));
	ASSERT_EQ(0, ortmem_device_unregister(dev, now));
	ortmem_device_close(dev);
	free(src);
	free(old);
	free(now);
}

/* Refused with a reason naming what was wrong; nothing copied. */
TEST(hostile_ranges_refused)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *dev;
	size_t len = 64 << 10;
	char *buf = malloc(2 * len);
	uint64_t d, other, g, v;

	NEED_DEVICES(1);
	ASSERT_NONNULL(buf);
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(NULL, 0, 0, 1, NULL));
	ASSERT_TRUE(has(reason(), "dev is NULL"));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 2 * len, 0, &d));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &other));
	fill(buf, 2 * len, 9);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, buf, 2 * len, NULL));

	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d + len, d, 0, NULL));
	ASSERT_TRUE(has(reason(), "len is 0"));
	/* Overlapping, either way round, and the same range. */
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d + 1, d, len, NULL));
	ASSERT_TRUE(has(reason(), "overlap"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d, d + len - 1, len, NULL));
	ASSERT_TRUE(has(reason(), "overlap"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d, d, len, NULL));
	ASSERT_TRUE(has(reason(), "overlap"));
	/* Wrapping around the address space, at either end. */
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, UINT64_MAX - 10, d, len, NULL));
	ASSERT_TRUE(has(reason(), "dst_dptr"));
	ASSERT_TRUE(has(reason(), "wraps around"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d, UINT64_MAX - 10, len, NULL));
	ASSERT_TRUE(has(reason(), "src_dptr"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d, d + len, UINT64_MAX, NULL));
	ASSERT_TRUE(has(reason(), "wraps around"));
	/* Outside any allocation, or running past one's end (by ranges
	 * that overlap nothing, wherever the allocations lie). */
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, other, 0x1000, 16, NULL));
	ASSERT_TRUE(has(reason(), "not inside one live allocation"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, d + len, other + len - 8, 16, NULL));
	ASSERT_TRUE(has(reason(), "not inside one live allocation"));
	ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, other + len - 8, d + len, 16, NULL));
	ASSERT_TRUE(has(reason(), "not inside one live allocation"));
	/* Into reserved address space with nothing mapped there. */
	if (!ortmem_device_granularity(dev, &g)) {
		ASSERT_EQ(0, ortmem_device_alloc(dev, 2 * g, ORTMEM_DEVICE_ALLOC_VIRTUAL, &v));
		ASSERT_EQ(0, ortmem_device_map(dev, v, 0, g));
		ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, v + g, d, 16, NULL));
		ASSERT_TRUE(has(reason(), "unmapped"));
		ASSERT_EQ(-EINVAL, ortmem_device_copy_within(dev, v + g - 8, d, 16, NULL));
		ASSERT_TRUE(has(reason(), "map them with ortmem_device_map()"));
		ASSERT_EQ(0, ortmem_device_copy_within(dev, v + g - 16, d, 16, NULL));
		ASSERT_EQ(0, ortmem_device_free(dev, v));
	}
	/* None reached the driver, nothing moved. */
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.driver_errors);
	ASSERT_EQ(0, st.lost);
	memset(buf, 0, 2 * len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d, 2 * len, NULL));
	ASSERT_TRUE(filled(buf, 2 * len, 9));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ASSERT_EQ(0, ortmem_device_free(dev, other));
	ortmem_device_close(dev);
	free(buf);
}

FIXTURE(driver_fails) {};
FIXTURE_VARIANT(driver_fails) { const char *fault; };
FIXTURE_VARIANT_ADD(driver_fails, at_issue) { .fault = "cuMemcpyDtoDAsync:1:999" };
FIXTURE_VARIANT_ADD(driver_fails, half_way) { .fault = "cuMemcpyDtoDAsync:1:999:async" };
FIXTURE_SETUP(driver_fails) {}
FIXTURE_TEARDOWN(driver_fails) {}

/* The failure names the driver's call; the source and the handle stay. */
TEST_F(driver_fails, named_and_survived)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_event *ev = NULL;
	struct ortmem_device *dev;
	size_t len = MiB;
	char *buf = malloc(len);
	uint64_t d;
	int ret;

	NEED_FAKE();
	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 2 * len, 0, &d));
	fill(buf, len, 5);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, buf, len, NULL));
	setenv("FAKECUDA_FAULTS", variant->fault, 1);
	ret = ortmem_device_copy_within(dev, d + len, d, len, &ev);
	if (!ret) {
		ret = ortmem_device_event_wait(ev);
		ortmem_device_event_put(ev);
	}
	ASSERT_EQ(-EIO, ret);
	ASSERT_TRUE(has(reason(), "CUDA_ERROR_UNKNOWN"));
	if (!strstr(variant->fault, "async"))
		ASSERT_TRUE(has(reason(), "cuMemcpyDtoDAsync"));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.lost);
	/* Once more, clean: the handle still copies. */
	ASSERT_EQ(0, ortmem_device_copy_within(dev, d + len, d, len, NULL));
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d, len, NULL));
	ASSERT_TRUE(filled(buf, len, 5));
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(dev, buf, d + len, len, NULL));
	ASSERT_TRUE(filled(buf, len, 5));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
	free(buf);
}

TEST_HARNESS_MAIN
