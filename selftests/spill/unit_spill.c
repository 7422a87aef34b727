// SPDX-License-Identifier: MIT
/*
 * The spill engine end to end: round trips of many sizes and alignments on
 * every engine (io_uring direct, io_uring buffered, pread/pwrite), batches,
 * options and hostile input, stale handles, the budget, flipped bytes in
 * the file, nothing left in the directory, and concurrent callers.
 */
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "spill/spill_internal.h"
#include "../harness.h"
#include "common.h"

FIXTURE(spill) {
	char dir[256];
	struct ortmem_spill *s;
	uint8_t *src;
	uint8_t *dst;
	size_t cap;
};

FIXTURE_VARIANT(spill) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(spill, uring_direct) { .flags = 0 };
FIXTURE_VARIANT_ADD(spill, uring_buffered) { .flags = ORTMEM_SPILL_F_BUFFERED };
FIXTURE_VARIANT_ADD(spill, sync_direct) { .flags = ORTMEM_SPILL_F_NO_URING };
FIXTURE_VARIANT_ADD(spill, uring_unregistered) {
	.flags = ORTMEM_SPILL_F_NO_REGBUF | ORTMEM_SPILL_F_NO_REGFILE
};

FIXTURE_SETUP(spill)
{
	ASSERT_EQ(0, spill_test_dir(self->dir, sizeof(self->dir)));
	ASSERT_EQ(0, spill_open_in(self->dir, variant->flags, 16, 0, &self->s));
	self->cap = 64 * MIB + 8192;
	self->src = aligned_alloc(4096, self->cap);
	self->dst = aligned_alloc(4096, self->cap);
	ASSERT_NONNULL(self->src);
	ASSERT_NONNULL(self->dst);
}

FIXTURE_TEARDOWN(spill)
{
	ortmem_spill_close(self->s);
	free(self->src);
	free(self->dst);
	rmdir(self->dir);
}

static const uint64_t sizes[] = {
	1, 2, 7, 40, 511, 512, 4055, 4056, 4057, 4095, 4096, 4097, 8191, 65539,
	MIB - 1, MIB, MIB + 1, 3 * MIB + 123, 8 * MIB, 64 * MIB,
};
static const size_t src_offs[] = { 0, 1, 4096 + 3, 512 };
static const size_t dst_offs[] = { 0, 3, 0, 4093 };

TEST_F_TIMEOUT(spill, round_trip_sizes_and_alignments, 120)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	uint64_t ext, total = 0;
	size_t i, j;

	for (i = 0; i < ORTMEM_ARRAY_SIZE(sizes); i++) {
		for (j = 0; j < ORTMEM_ARRAY_SIZE(src_offs); j++) {
			uint64_t len = sizes[i];
			uint8_t *src = self->src + src_offs[j];
			uint8_t *dst = self->dst + dst_offs[j];

			if (len > MIB && j > 1)
				continue;
			spill_fill(src, len, i * 10 + j);
			memset(dst, 0xee, len + 1);
			ASSERT_EQ(0, ortmem_spill_write(self->s, src, len, &ext));
			ASSERT_EQ(0, ortmem_spill_read(self->s, ext, dst, len));
			ASSERT_EQ(0, memcmp(src, dst, len));
			ASSERT_EQ(0xee, dst[len]);
			ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
			total += len;
		}
	}
	ASSERT_EQ(0, ortmem_spill_stats(self->s, &st));
	{
		/* The old name is the same function. */
		ORTMEM_OPTS(ortmem_spill_stats, old);

		ASSERT_EQ(0, ortmem_spill_get_stats(self->s, &old));
		EXPECT_EQ(st.features, old.features);
		EXPECT_EQ(st.file_bytes, old.file_bytes);
		EXPECT_EQ(st.bytes_written, old.bytes_written);
		EXPECT_EQ(st.bytes_read, old.bytes_read);
		EXPECT_EQ(st.extents, old.extents);
		EXPECT_EQ(-EINVAL, ortmem_spill_get_stats(self->s, NULL));
	}
	EXPECT_EQ(total, st.bytes_written);
	EXPECT_EQ(total, st.bytes_read);
	EXPECT_EQ(0, st.extents);
	EXPECT_EQ(0, st.used_bytes);
	EXPECT_EQ(0, st.io_errors);
	EXPECT_EQ(0, st.checksum_errors);
	EXPECT_EQ(1, st.file_bytes == st.largest_free);
	if (variant->flags & ORTMEM_SPILL_F_NO_URING)
		EXPECT_EQ(0, st.features & ORTMEM_SPILL_HAVE_URING);
	if (variant->flags & ORTMEM_SPILL_F_BUFFERED)
		EXPECT_EQ(0, st.features & ORTMEM_SPILL_HAVE_DIRECT);
}

TEST_F(spill, batch_keeps_many_extents_apart)
{
	struct ortmem_spill_io ios[200];
	unsigned int i;

	for (i = 0; i < 200; i++) {
		ios[i] = (struct ortmem_spill_io){
			.op = ORTMEM_SPILL_OP_WRITE,
			.buf = self->src + i * 20000 + (i % 3),
			.len = 1 + i * 97,
		};
		spill_fill(ios[i].buf, ios[i].len, i);
	}
	ASSERT_EQ(0, ortmem_spill_submit(self->s, ios, 200));
	for (i = 0; i < 200; i++) {
		EXPECT_EQ(0, ios[i].res);
		ios[i].op = ORTMEM_SPILL_OP_READ;
		ios[i].buf = self->dst + i * 20000 + (i % 5);
	}
	ASSERT_EQ(0, ortmem_spill_submit(self->s, ios, 200));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, ios[i].res);
		ASSERT_EQ(0, memcmp(self->src + i * 20000 + (i % 3), ios[i].buf,
				    ios[i].len));
		ASSERT_EQ(0, ortmem_spill_free(self->s, ios[i].extent));
	}
}

TEST_F(spill, batch_failure_does_not_stop_the_others)
{
	struct ortmem_spill_io ios[3];
	uint64_t ext;

	spill_fill(self->src, 3 * 4096, 1);
	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, 4096, &ext));
	ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
	ios[0] = (struct ortmem_spill_io){ .op = ORTMEM_SPILL_OP_WRITE,
		.buf = self->src, .len = 4096 };
	ios[1] = (struct ortmem_spill_io){ .op = ORTMEM_SPILL_OP_READ,
		.buf = self->dst, .len = 4096, .extent = ext };
	ios[2] = (struct ortmem_spill_io){ .op = ORTMEM_SPILL_OP_WRITE,
		.buf = self->src + 4096, .len = 4096 };
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_submit(self->s, ios, 3));
	EXPECT_EQ(0, ios[0].res);
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ios[1].res);
	EXPECT_EQ(0, ios[2].res);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "is not live"));
	EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
	ASSERT_EQ(0, ortmem_spill_read(self->s, ios[2].extent, self->dst, 4096));
	EXPECT_EQ(0, memcmp(self->src + 4096, self->dst, 4096));
}

TEST_F(spill, stale_and_forged_handles_are_refused)
{
	uint64_t ext;

	spill_fill(self->src, 100, 2);
	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, 100, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_read(self->s, ext, self->dst, 99));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "holds 100 bytes"));
	EXPECT_EQ(-EINVAL, ortmem_spill_read(self->s, ext, self->dst, 101));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_read(self->s, ext + 1, self->dst, 100));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_read(self->s, ext ^ (1ull << 32), self->dst, 100));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_read(self->s, ext ^ (1ull << 50), self->dst, 100));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_free(self->s, 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_free(self->s, UINT64_MAX));
	ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_free(self->s, ext));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_read(self->s, ext, self->dst, 100));
	/* The slot is reused with a new generation: the old handle stays dead. */
	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, 100, &ext));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_spill_free(self->s, ext - (1ull << 32)));
}

TEST_F(spill, hostile_arguments_are_refused)
{
	struct ortmem_spill_io io = { .op = 7, .buf = self->src, .len = 1 };
	uint64_t ext;

	EXPECT_EQ(-EINVAL, ortmem_spill_write(self->s, self->src, 0, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_write(self->s, NULL, 1, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_write(self->s, self->src, 1, NULL));
	EXPECT_EQ(-EINVAL, ortmem_spill_write(NULL, self->src, 1, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_write(self->s, self->src, UINT64_MAX, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_write(self->s, self->src,
					      ORTMEM_SPILL_EXTENT_MAX + 1, &ext));
	EXPECT_EQ(-EINVAL, ortmem_spill_read(self->s, 1, NULL, 1));
	EXPECT_EQ(-EINVAL, ortmem_spill_read(NULL, 1, self->dst, 1));
	EXPECT_EQ(-EINVAL, ortmem_spill_free(NULL, 1));
	EXPECT_EQ(-EINVAL, ortmem_spill_submit(self->s, &io, 1));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "unknown op 7"));
	io.op = ORTMEM_SPILL_OP_WRITE;
	EXPECT_EQ(-EINVAL, ortmem_spill_submit(self->s, &io, 0));
	EXPECT_EQ(-EINVAL, ortmem_spill_submit(self->s, NULL, 1));
	EXPECT_EQ(-EINVAL, ortmem_spill_submit(self->s, &io, (1u << 20) + 1));
	EXPECT_EQ(-EINVAL, ortmem_spill_stats(self->s, NULL));
	EXPECT_EQ(-EINVAL, ortmem_spill_inject_fault(self->s, 1, 3));
	EXPECT_EQ(-EINVAL, ortmem_spill_inject_fault(NULL, 1, -EIO));
	ortmem_spill_close(NULL);
}

TEST_F(spill, flipped_byte_is_always_caught)
{
	unsigned int seed = 99, trial;
	uint8_t *blk = aligned_alloc(4096, 2 * 4096);

	ASSERT_NONNULL(blk);
	for (trial = 0; trial < 100; trial++) {
		uint64_t len = 1 + rand_r(&seed) % (3 * 4096 + 500);
		uint64_t ext, off, disk_len, pos, at;
		int fd;

		spill_fill(self->src, len, trial);
		ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, len, &ext));
		ASSERT_EQ(0, ortmem__spill_extent_where(self->s, ext, &fd, &off, &disk_len));
		pos = off + rand_r(&seed) % disk_len;
		at = pos & ~4095ull;
		ASSERT_EQ(4096, pread(fd, blk, 4096, (off_t)at));
		blk[pos - at] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		ASSERT_EQ(4096, pwrite(fd, blk, 4096, (off_t)at));
		memset(self->dst, 0x5a, len);
		ASSERT_EQ(-ORTMEM_E_CHECKSUM, ortmem_spill_read(self->s, ext, self->dst, len));
		ASSERT_TRUE(spill_is_zero(self->dst, len));
		ASSERT_NONNULL(strstr(ortmem_last_error_message(), "is corrupt"));
		ASSERT_EQ(0, ortmem_spill_free(self->s, ext));
	}
	free(blk);
}

TEST_F(spill, nothing_is_left_in_the_directory)
{
	uint64_t ext;

	ASSERT_EQ(0, ortmem_spill_write(self->s, self->src, 5 * MIB, &ext));
	EXPECT_EQ(0, spill_dir_entries(self->dir));
}

struct worker {
	struct ortmem_spill *s;
	unsigned int seed;
	int failures;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	uint8_t *src = malloc(300000), *dst = malloc(300000);
	uint64_t ext[8], len[8];
	unsigned int base = w->seed;
	int round, i;

	for (round = 0; round < 20 && src && dst; round++) {
		for (i = 0; i < 8; i++) {
			len[i] = 1 + rand_r(&w->seed) % 290000;
			spill_fill(src, len[i] + 1, base + (unsigned int)(round * 8 + i));
			if (ortmem_spill_write(w->s, src + (i & 1), len[i], &ext[i]))
				w->failures++;
		}
		for (i = 0; i < 8; i++) {
			spill_fill(src, len[i] + 1, base + (unsigned int)(round * 8 + i));
			if (ortmem_spill_read(w->s, ext[i], dst, len[i]) ||
			    memcmp(src + (i & 1), dst, len[i]))
				w->failures++;
			if (ortmem_spill_free(w->s, ext[i]))
				w->failures++;
		}
	}
	if (!src || !dst)
		w->failures++;
	free(src);
	free(dst);
	return NULL;
}

TEST_F_TIMEOUT(spill, concurrent_demotions, 120)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	struct worker w[6];
	pthread_t t[6];
	int i;

	for (i = 0; i < 6; i++) {
		w[i] = (struct worker){ .s = self->s, .seed = (unsigned int)i * 7919 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_run, &w[i]));
	}
	for (i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].failures);
	}
	ASSERT_EQ(0, ortmem_spill_stats(self->s, &st));
	EXPECT_EQ(0, st.extents);
	EXPECT_EQ(0, st.used_bytes);
}

TEST(options_are_checked)
{
	struct ortmem_spill *s = (void *)1;
	char dir[256];

	ASSERT_EQ(0, spill_test_dir(dir, sizeof(dir)));
	EXPECT_EQ(-EINVAL, spill_open_in(dir, 1u << 30, 0, 0, &s));
	EXPECT_NULL(s);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "unknown spill flags"));
	EXPECT_EQ(-EINVAL, spill_open_in(dir, 0, ORTMEM_SPILL_QD_MAX + 1, 0, &s));
	EXPECT_EQ(-EINVAL, ortmem_spill_open(NULL, NULL));
	{
		ORTMEM_OPTS(ortmem_spill_opts, o, .dir = dir, .chunk_bytes = 3000);
		EXPECT_EQ(-EINVAL, ortmem_spill_open(&o, &s));
		o.chunk_bytes = 0;
		o.lanes = ORTMEM_SPILL_LANES_MAX + 1;
		EXPECT_EQ(-EINVAL, ortmem_spill_open(&o, &s));
		o.lanes = 0;
		o.sz = 4;
		EXPECT_EQ(-EINVAL, ortmem_spill_open(&o, &s));
	}
	EXPECT_EQ(-ENOENT, spill_open_in("/nonexistent/ortmem", 0, 0, 0, &s));
	EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
	/* The message names the directory's fault, not an allocation's. */
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "does not exist"));
	EXPECT_NULL(strstr(ortmem_last_error_message(), "allocate"));
	EXPECT_NULL(strstr(ortmem_last_error_message(), "lower the demand"));
	EXPECT_EQ(-ENOTDIR, spill_open_in("/dev/null", 0, 0, 0, &s));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "not a directory"));
	EXPECT_NULL(strstr(ortmem_last_error_message(), "allocate"));
	{
		char sub[300];

		snprintf(sub, sizeof(sub), "%s/closed", dir);
		ASSERT_EQ(0, mkdir(sub, 0500));
		if (geteuid()) {
			EXPECT_EQ(-EACCES, spill_open_in(sub, 0, 0, 0, &s));
			EXPECT_NONNULL(strstr(ortmem_last_error_message(), "may not create files"));
		} else if (!mount("tmpfs", sub, "tmpfs", MS_RDONLY, "size=1m")) {
			/* root writes anywhere but on a read-only filesystem */
			EXPECT_EQ(-EROFS, spill_open_in(sub, 0, 0, 0, &s));
			EXPECT_NONNULL(strstr(ortmem_last_error_message(), "read-only"));
			umount2(sub, MNT_DETACH);
		}
		rmdir(sub);
	}
	rmdir(dir);
}

TEST(budget_is_enforced_and_named)
{
	struct ortmem_spill *s;
	uint8_t *buf = calloc(1, 3 * MIB);
	uint64_t a, b;
	char dir[256];

	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, spill_test_dir(dir, sizeof(dir)));
	ASSERT_EQ(0, spill_open_in(dir, 0, 0, 2 * MIB, &s));
	ASSERT_EQ(0, ortmem_spill_write(s, buf, MIB, &a));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_spill_write(s, buf, MIB, &b));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "spill budget of 2097152 bytes"));
	EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
	EXPECT_EQ(MIB, ortmem_last_error()->requested);
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_spill_write(s, buf, 3 * MIB, &b));
	ASSERT_EQ(0, ortmem_spill_free(s, a));
	EXPECT_EQ(0, ortmem_spill_write(s, buf, MIB, &b));
	ortmem_spill_close(s);
	rmdir(dir);
	free(buf);
}

TEST_HARNESS_MAIN
