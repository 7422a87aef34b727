// SPDX-License-Identifier: MIT
/*
 * File-backed allocations and asynchronous prefetch: weights files and
 * their checksum lists (exact bytes over any range, damaged files and
 * lists refused with the figures, injected read faults), allocations that
 * start in their file, are promoted on pin and dropped on demotion, and
 * prefetches that stay in the budget, never evict each other, are waited
 * for by pins and report their failures at the next pin.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define KIB 1024ull
#define MIB (1024 * KIB)
/* Odd on purpose: the last block is short and not direct-I/O aligned. */
#define FILE_BYTES (6 * MIB + 12345)
#define ITEM (2 * MIB)

FIXTURE(wf) {
	char dir[96];
	char path[128];
	char csum[140];
	unsigned char *want;
	struct ortmem_wfile *wf;
	struct ortmem_gov *gov;
};

static bool make_dir(char *dir, size_t len)
{
	const char *bases[] = { getenv("ORTMEM_SPILL_DIR"), "/var/tmp", "/tmp" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (!bases[i])
			continue;
		snprintf(dir, len, "%s/ortmem-wfile-XXXXXX", bases[i]);
		if (mkdtemp(dir))
			return true;
	}
	return false;
}

static unsigned char pattern(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 13);
}

static int write_file(const char *path, const unsigned char *b, uint64_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	uint64_t done = 0;

	if (fd < 0)
		return -1;
	while (done < n) {
		ssize_t w = write(fd, b + done, n - done);

		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (uint64_t)w;
	}
	return close(fd);
}

/* Flip one byte of the file at @off, behind the library's back. */
static void flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c = 0;

	if (fd < 0 || pread(fd, &c, 1, (off_t)off) != 1)
		abort();
	c ^= 0x40;
	if (pwrite(fd, &c, 1, (off_t)off) != 1 || fsync(fd) || close(fd))
		abort();
}

FIXTURE_SETUP(wf)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { 0, 2 * ITEM + ITEM / 2, 0 });
	uint64_t i;

	ASSERT_TRUE(make_dir(self->dir, sizeof(self->dir)));
	snprintf(self->path, sizeof(self->path), "%s/w.bin", self->dir);
	snprintf(self->csum, sizeof(self->csum), "%s.csum", self->path);
	self->want = malloc(FILE_BYTES);
	ASSERT_NONNULL(self->want);
	for (i = 0; i < FILE_BYTES; i++)
		self->want[i] = pattern(i);
	ASSERT_EQ(0, write_file(self->path, self->want, FILE_BYTES));
	ASSERT_EQ(0, ortmem_wfile_checksum(self->path, NULL, 64 * KIB));
	ASSERT_EQ(0, ortmem_wfile_open(self->path, NULL, &self->wf));
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL));
}

FIXTURE_TEARDOWN(wf)
{
	ortmem_gov_close(self->gov);
	ortmem_wfile_close(self->wf);
	free(self->want);
	unlink(self->path);
	unlink(self->csum);
	rmdir(self->dir);
}

TEST_F(wf, any_range_reads_back_exact)
{
	static const uint64_t r[][2] = {
		{ 0, 1 }, { 0, 64 * KIB }, { 4096, 4096 }, { 64 * KIB - 10, 20 },
		{ 64 * KIB - 10, 64 * KIB + 20 }, { 1, 3 * MIB },
		{ 64 * KIB, 2 * MIB }, { FILE_BYTES - 1, 1 },
		{ FILE_BYTES - 70000, 70000 }, { 0, FILE_BYTES },
	};
	unsigned char *buf = malloc(FILE_BYTES);
	ORTMEM_OPTS(ortmem_wfile_stats, st);
	size_t i;

	ASSERT_NONNULL(buf);
	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		memset(buf, 0xee, r[i][1]);
		ASSERT_EQ(0, ortmem_wfile_read(self->wf, r[i][0], buf, r[i][1]));
		EXPECT_EQ(0, memcmp(buf, self->want + r[i][0], r[i][1]));
	}
	EXPECT_EQ(-EINVAL, ortmem_wfile_read(self->wf, FILE_BYTES, buf, 1));
	EXPECT_EQ(-EINVAL, ortmem_wfile_read(self->wf, 1, buf, FILE_BYTES));
	EXPECT_EQ(-EINVAL, ortmem_wfile_read(self->wf, 0, buf, 0));
	ASSERT_EQ(0, ortmem_wfile_stats(self->wf, &st));
	EXPECT_EQ((uint64_t)FILE_BYTES, st.size);
	EXPECT_EQ(64 * KIB, st.block_bytes);
	EXPECT_EQ(sizeof(r) / sizeof(r[0]), st.reads);
	free(buf);
}

TEST_F(wf, flipped_byte_is_a_checksum_error_naming_file_and_range)
{
	unsigned char *buf = malloc(ITEM);
	const char *msg;

	ASSERT_NONNULL(buf);
	flip(self->path, 3 * 64 * KIB + 17);
	memset(buf, 0xee, ITEM);
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_wfile_read(self->wf, 0, buf, ITEM));
	msg = ortmem_last_error_message();
	EXPECT_NONNULL(strstr(msg, self->path));
	EXPECT_NONNULL(strstr(msg, "[196608, 262144)"));
	/* Unverified bytes are never handed back. */
	EXPECT_EQ(0, buf[0]);
	EXPECT_EQ(0, buf[ITEM - 1]);
	/* Blocks that are intact still read. */
	EXPECT_EQ(0, ortmem_wfile_read(self->wf, 4 * 64 * KIB, buf, 64 * KIB));
	free(buf);
}

TEST_F(wf, injected_read_faults_fail_the_read)
{
	unsigned char *buf = malloc(ITEM);

	ASSERT_NONNULL(buf);
	ASSERT_EQ(0, ortmem_wfile_inject_fault(self->wf, 1, -EIO));
	EXPECT_EQ(-EIO, ortmem_wfile_read(self->wf, 0, buf, ITEM));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), self->path));
	/* A short transfer is continued, not trusted. */
	ASSERT_EQ(0, ortmem_wfile_inject_fault(self->wf, 2, ORTMEM_SPILL_FAULT_SHORT));
	ASSERT_EQ(0, ortmem_wfile_read(self->wf, 0, buf, ITEM));
	EXPECT_EQ(0, memcmp(buf, self->want, ITEM));
	EXPECT_EQ(-EINVAL, ortmem_wfile_inject_fault(self->wf, 1, 77));
	free(buf);
}

TEST_F(wf, damaged_or_foreign_lists_are_refused)
{
	struct ortmem_wfile *w2 = NULL;
	unsigned char junk[64] = "not a list";

	/* The file grew: the list describes another size. */
	ASSERT_EQ(0, truncate(self->path, FILE_BYTES + 1));
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_wfile_open(self->path, NULL, &w2));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "describes"));
	EXPECT_NULL(w2);
	ASSERT_EQ(0, truncate(self->path, FILE_BYTES));
	ASSERT_EQ(0, write_file(self->csum, junk, sizeof(junk)));
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_wfile_open(self->path, NULL, &w2));
	ASSERT_EQ(0, unlink(self->csum));
	EXPECT_EQ(-ENOENT, ortmem_wfile_open(self->path, NULL, &w2));
	EXPECT_EQ(-EINVAL, ortmem_wfile_checksum(self->path, NULL, 1000));
}

TEST_F(wf, file_allocation_promotes_on_pin_and_demotion_drops)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_alloc_info info;
	struct ortmem_handle h;
	unsigned char *p;

	ASSERT_EQ(0, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST,
					   ORTMEM_ROLE_WEIGHTS, self->wf, ITEM,
					   ITEM, 0, &h));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h, &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	EXPECT_EQ(ORTMEM_TIER_HOST, info.home_tier);
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0u, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0u, st.tier[ORTMEM_TIER_DISK].used);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, (void **)&p));
	EXPECT_EQ(0, memcmp(p, self->want + ITEM, ITEM));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(ITEM, st.tier[ORTMEM_TIER_HOST].used);
	p[0] ^= 1;	/* a write to read-only bytes is lost at demotion */
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0u, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(-EBUSY, ortmem_gov_demote(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h, 0, (void **)&p));
	EXPECT_EQ(0, memcmp(p, self->want + ITEM, ITEM));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0u, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(0u, st.handles_live);
	/* Bad arguments. */
	EXPECT_EQ(-EINVAL, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_DISK,
		ORTMEM_ROLE_WEIGHTS, self->wf, 0, 1, 0, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST,
		ORTMEM_ROLE_WEIGHTS, self->wf, FILE_BYTES - 1, 2, 0, &h));
	EXPECT_EQ(-EINVAL, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST,
		ORTMEM_ROLE_WEIGHTS, self->wf, 0, 1, 8, &h));
}

/* Three 2 MiB items of the file; the host budget holds two and a half. */
static void three_items(FIXTURE_DATA(wf) *self, struct ortmem_handle *h)
{
	int i;

	for (i = 0; i < 3; i++)
		if (ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST,
					  ORTMEM_ROLE_WEIGHTS, self->wf,
					  (uint64_t)i * ITEM, ITEM, 0, &h[i]))
			abort();
}

TEST_F(wf, prefetch_stays_in_budget_and_pins_wait_or_hit)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_alloc_info info;
	struct ortmem_handle h[3];
	unsigned char *p;
	int i;

	three_items(self, h);
	/* Two fit; the third would need a prefetched one evicted. */
	EXPECT_EQ(2, ortmem_gov_prefetch(self->gov, h, 3, 0));
	/* Neither of those is evicted for the third: a refusal. */
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem_gov_prefetch(self->gov, &h[2], 1, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "host"));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[i], 0, (void **)&p));
		EXPECT_EQ(0, memcmp(p, self->want + (uint64_t)i * ITEM, ITEM));
		ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[i]));
	}
	/* Used now, so the third may take the least recently used place:
	 * the first one's buffer, handed over with its charge. */
	EXPECT_EQ(1, ortmem_gov_prefetch(self->gov, &h[2], 1, 0));
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[0], &info));
	EXPECT_EQ(ORTMEM_TIER_DISK, info.tier);
	ASSERT_EQ(0, ortmem_gov_query(self->gov, h[1], &info));
	EXPECT_EQ(ORTMEM_TIER_HOST, info.tier);
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[2], 0, (void **)&p));
	EXPECT_EQ(0, memcmp(p, self->want + 2 * ITEM, ITEM));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[2]));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(3u, st.prefetch.issued);
	EXPECT_EQ(3 * ITEM, st.prefetch.bytes);
	EXPECT_EQ(3u, st.prefetch.hits + st.prefetch.waits);
	EXPECT_EQ(0u, st.prefetch.misses);
	EXPECT_EQ(1u, st.prefetch.refused);
	EXPECT_EQ(0u, st.prefetch.inflight);
	EXPECT_LE(st.tier[ORTMEM_TIER_HOST].peak, 2 * ITEM + ITEM / 2);
	EXPECT_EQ(2 * ITEM, st.tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(ITEM, st.tier[ORTMEM_TIER_HOST].demoted_bytes);
	/* Home already: nothing to do, counted as done. */
	EXPECT_EQ(1, ortmem_gov_prefetch(self->gov, &h[2], 1, 0));
	EXPECT_EQ(-EINVAL, ortmem_gov_prefetch(self->gov, h, 0, 0));
	EXPECT_EQ(-EINVAL, ortmem_gov_prefetch(self->gov, h, 1, 1));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ortmem_gov_release(self->gov, h[i], 0));
	EXPECT_EQ(-ORTMEM_E_STALE_HANDLE, ortmem_gov_prefetch(self->gov, h, 1, 0));
}

TEST_F(wf, item_larger_than_the_budget_is_refused_with_figures)
{
	struct ortmem_handle h;

	ASSERT_EQ(0, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST,
					   ORTMEM_ROLE_WEIGHTS, self->wf, 0,
					   3 * ITEM, 0, &h));
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, ortmem_gov_prefetch(self->gov, &h, 1, 0));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "host"));
	ASSERT_EQ(0, ortmem_gov_release(self->gov, h, 0));
}

TEST_F(wf, failed_prefetch_is_reported_by_the_next_pin)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct ortmem_handle h[3];
	unsigned char *p;

	three_items(self, h);
	flip(self->path, ITEM + 5);
	EXPECT_EQ(1, ortmem_gov_prefetch(self->gov, &h[1], 1, 0));
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_gov_pin(self->gov, h[1], 0, (void **)&p));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), self->path));
	ASSERT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(1u, st.prefetch.failed);
	EXPECT_EQ(0u, st.tier[ORTMEM_TIER_HOST].used);
	/* The pin after that tries again, and meets the damage itself. */
	EXPECT_EQ(-ORTMEM_E_CHECKSUM, ortmem_gov_pin(self->gov, h[1], 0, (void **)&p));
	flip(self->path, ITEM + 5);
	ASSERT_EQ(0, ortmem_wfile_inject_fault(self->wf, 1, -EIO));
	EXPECT_EQ(1, ortmem_gov_prefetch(self->gov, &h[0], 1, 0));
	EXPECT_EQ(-EIO, ortmem_gov_pin(self->gov, h[0], 0, (void **)&p));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, h[0], 0, (void **)&p));
	EXPECT_EQ(0, memcmp(p, self->want, ITEM));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, h[0]));
}

TEST_F(wf, close_with_prefetches_in_flight)
{
	struct ortmem_handle h[3];

	three_items(self, h);
	EXPECT_EQ(2, ortmem_gov_prefetch(self->gov, h, 3, 0));
	/* The teardown closes the governor now: it must drain and free. */
}

TEST_HARNESS_MAIN
