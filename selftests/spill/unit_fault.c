// SPDX-License-Identifier: MIT
/*
 * Failure semantics under injected faults: an error, a short transfer or a
 * stall at every step of a demotion or a promotion keeps the data in its
 * source, leaks no extent, and is reported with tier, bytes and cause.
 */
#include "spill/spill_internal.h"
#include "../harness.h"
#include "common.h"

/* Unaligned, so the body goes through bounce slots, over several chunks. */
#define LEN (3 * 65536 + 1234)

FIXTURE(fault) {
	char dir[256];
	struct ortmem_spill *s;
	uint8_t *src;
	uint8_t *copy;
	uint8_t *dst;
};

FIXTURE_VARIANT(fault) {
	uint32_t flags;
	size_t src_off;
};

FIXTURE_VARIANT_ADD(fault, uring_bounce) { .flags = 0, .src_off = 1 };
FIXTURE_VARIANT_ADD(fault, uring_direct) { .flags = 0, .src_off = 0 };
FIXTURE_VARIANT_ADD(fault, sync_bounce) { .flags = ORTMEM_SPILL_F_NO_URING, .src_off = 3 };
FIXTURE_VARIANT_ADD(fault, uring_buffered) { .flags = ORTMEM_SPILL_F_BUFFERED, .src_off = 0 };

FIXTURE_SETUP(fault)
{
	ORTMEM_OPTS(ortmem_spill_opts, o, .flags = variant->flags,
		    .queue_depth = 4, .chunk_bytes = 65536, .grow_bytes = MIB);

	ASSERT_EQ(0, spill_test_dir(self->dir, sizeof(self->dir)));
	o.dir = self->dir;
	ASSERT_EQ(0, ortmem_spill_open(&o, &self->s));
	self->src = aligned_alloc(4096, (LEN + 8192 + 4095) & ~4095u);
	self->copy = malloc(LEN);
	self->dst = aligned_alloc(4096, (LEN + 8192 + 4095) & ~4095u);
	ASSERT_NONNULL(self->src);
	ASSERT_NONNULL(self->copy);
	ASSERT_NONNULL(self->dst);
	self->src += variant->src_off;
	spill_fill(self->src, LEN, 42);
	memcpy(self->copy, self->src, LEN);
}

FIXTURE_TEARDOWN(fault)
{
	ortmem_spill_close(self->s);
	free(self->src - variant->src_off);
	free(self->copy);
	free(self->dst);
	rmdir(self->dir);
}

/* Submissions a clean write of LEN takes (a fault at each must be seen). */
static uint64_t writes_needed(void)
{
	return LEN / 65536 + 1;
}

static void expect_nothing_kept(struct __test_metadata *_metadata,
				struct ortmem_spill *s)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };

	ASSERT_EQ(0, ortmem_spill_stats(s, &st));
	EXPECT_EQ(0, st.extents);
	EXPECT_EQ(0, st.used_bytes);
	EXPECT_EQ(st.file_bytes, st.largest_free);
}

static void expect_disk_error(struct __test_metadata *_metadata, int code,
			      const char *words)
{
	const struct ortmem_error *e = ortmem_last_error();
	char bytes[32];

	ASSERT_NONNULL(e);
	EXPECT_EQ(code, e->code);
	EXPECT_EQ(ORTMEM_TIER_DISK, e->tier);
	EXPECT_EQ(LEN, e->requested);
	snprintf(bytes, sizeof(bytes), "%u bytes", LEN);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), bytes));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "disk tier"));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), words));
}

static void check_write_faults(struct __test_metadata *_metadata,
			       FIXTURE_DATA(fault) *self, int fault, int code,
			       const char *words)
{
	uint64_t nth, ext = 77;

	for (nth = 1; nth <= writes_needed(); nth++) {
		ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, nth, fault));
		ASSERT_EQ(code, ortmem_spill_write(self->s, self->src, LEN, &ext));
		EXPECT_EQ(77, ext);
		expect_disk_error(_metadata, code, words);
		ASSERT_EQ(0, memcmp(self->src, self->copy, LEN));
		expect_nothing_kept(_metadata, self->s);
	}
	ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, 0, 0));
	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, LEN, &ext));
	ASSERT_EQ(0, ortmem_spill_read(self->s, ext, self->dst, LEN));
	ASSERT_EQ(0, memcmp(self->dst, self->copy, LEN));
}

TEST_F(fault, eio_at_every_write_step_keeps_the_data)
{
	check_write_faults(_metadata, self, -EIO, -EIO, "the write failed");
}

TEST_F(fault, enospc_at_every_write_step_keeps_the_data)
{
	check_write_faults(_metadata, self, -ENOSPC, -ENOSPC, "source buffer");
}

TEST_F(fault, stalled_write_hits_the_progress_guard)
{
	check_write_faults(_metadata, self, ORTMEM_SPILL_FAULT_STALL, -EIO,
			   "no forward progress");
}

TEST_F(fault, short_and_retried_transfers_complete)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	static const int faults[] = { ORTMEM_SPILL_FAULT_SHORT, -EAGAIN, -EINTR };
	uint64_t nth, ext;
	size_t f;

	for (f = 0; f < ORTMEM_ARRAY_SIZE(faults); f++) {
		for (nth = 1; nth <= 2 * writes_needed(); nth++) {
			ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, nth, faults[f]));
			ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, LEN, &ext));
			ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, nth, faults[f]));
			memset(self->dst, 0, LEN);
			ASSERT_EQ(0, ortmem_spill_read(self->s, ext, self->dst, LEN));
			ASSERT_EQ(0, memcmp(self->dst, self->copy, LEN));
			ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
		}
	}
	ASSERT_EQ(0, ortmem_spill_stats(self->s, &st));
	EXPECT_LT(0, st.short_transfers);
	EXPECT_LT(0, st.retries);
	EXPECT_EQ(0, st.io_errors);
	expect_nothing_kept(_metadata, self->s);
}

TEST_F(fault, read_errors_zero_the_buffer_and_keep_the_extent)
{
	static const int faults[] = { -EIO, ORTMEM_SPILL_FAULT_STALL };
	uint64_t nth, ext;
	size_t f;

	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, LEN, &ext));
	for (f = 0; f < ORTMEM_ARRAY_SIZE(faults); f++) {
		for (nth = 1; nth <= writes_needed(); nth++) {
			memset(self->dst, 0x77, LEN);
			ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, nth, faults[f]));
			ASSERT_EQ(-EIO, ortmem_spill_read(self->s, ext, self->dst, LEN));
			EXPECT_NONNULL(strstr(ortmem_last_error_message(), "promoting extent"));
			EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
			ASSERT_TRUE(spill_is_zero(self->dst, LEN));
		}
	}
	ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, 0, 0));
	ASSERT_EQ(0, ortmem_spill_read(self->s, ext, self->dst, LEN));
	ASSERT_EQ(0, memcmp(self->dst, self->copy, LEN));
	ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
	expect_nothing_kept(_metadata, self->s);
}

TEST_F(fault, batch_with_one_failure_keeps_the_rest)
{
	struct ortmem_spill_io ios[4];
	int i, failed = 0;

	for (i = 0; i < 4; i++)
		ios[i] = (struct ortmem_spill_io){ .op = ORTMEM_SPILL_OP_WRITE,
			.buf = self->src + i * 1000, .len = 20000 };
	ASSERT_EQ(0, ortmem_spill_inject_fault(self->s, 3, -EIO));
	EXPECT_EQ(-EIO, ortmem_spill_submit(self->s, ios, 4));
	for (i = 0; i < 4; i++) {
		if (ios[i].res) {
			failed++;
			continue;
		}
		ASSERT_EQ(0, ortmem_spill_read(self->s, ios[i].extent, self->dst, 20000));
		ASSERT_EQ(0, memcmp(self->dst, self->copy + i * 1000, 20000));
		ASSERT_EQ(0, ortmem_spill_free(self->s, ios[i].extent));
	}
	EXPECT_EQ(1, failed);
	expect_nothing_kept(_metadata, self->s);
}

TEST_HARNESS_MAIN
