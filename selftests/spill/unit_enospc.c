// SPDX-License-Identifier: MIT
/*
 * A full filesystem: demotions fail with -ENOSPC, keep their data and leak
 * nothing, and the extents already written still read back.  Run on a
 * size-limited tmpfs and on a loop-mounted ext4 image, as root; skipped
 * (with the reason) where neither can be made.
 */
#include <sys/mount.h>

#include "spill/spill_internal.h"
#include "../harness.h"
#include "common.h"

#define FS_BYTES (6 * MIB)
#define MAX_EXTENTS 64

FIXTURE(full) {
	char mnt[256];
	char img[300];
	bool mounted;
};

FIXTURE_VARIANT(full) {
	bool ext4;
};

FIXTURE_VARIANT_ADD(full, tmpfs) { .ext4 = false };
FIXTURE_VARIANT_ADD(full, ext4_loop) { .ext4 = true };

static int run_quiet(const char *cmd)
{
	char line[1024];

	snprintf(line, sizeof(line), "%s >/dev/null 2>&1", cmd);
	return system(line);
}

FIXTURE_SETUP(full)
{
	char cmd[800];

	if (geteuid())
		SKIP("mounting a small filesystem needs root");
	ASSERT_EQ(0, spill_test_dir(self->mnt, sizeof(self->mnt)));
	if (!variant->ext4) {
		if (mount("tmpfs", self->mnt, "tmpfs", 0, "size=6m,mode=0700"))
			SKIP("cannot mount a tmpfs: %s", strerror(errno));
		self->mounted = true;
		return;
	}
	snprintf(self->img, sizeof(self->img), "%s.img", self->mnt);
	snprintf(cmd, sizeof(cmd), "truncate -s 8M %s && mkfs.ext4 -q -F -m 0 %s",
		 self->img, self->img);
	if (run_quiet(cmd))
		SKIP("cannot make an ext4 image (mkfs.ext4 missing?)");
	snprintf(cmd, sizeof(cmd), "mount -o loop %s %s", self->img, self->mnt);
	if (run_quiet(cmd))
		SKIP("cannot loop-mount an ext4 image (no loop devices here?)");
	self->mounted = true;
}

FIXTURE_TEARDOWN(full)
{
	if (self->mounted && umount2(self->mnt, MNT_DETACH))
		TH_LOG("umount %s: %s", self->mnt, strerror(errno));
	rmdir(self->mnt);
	if (self->img[0])
		unlink(self->img);
}

TEST_F(full, enospc_keeps_the_data_and_leaks_nothing)
{
	ORTMEM_OPTS(ortmem_spill_opts, o, .dir = self->mnt, .grow_bytes = MIB);
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	uint64_t ext[MAX_EXTENTS], len = MIB - 100;
	struct ortmem_spill *s;
	uint8_t *buf = malloc(len + 1), *copy = malloc(len + 1), *back = malloc(len);
	int n = 0, ret = 0, i;

	ASSERT_NONNULL(buf);
	ASSERT_NONNULL(copy);
	ASSERT_NONNULL(back);
	ASSERT_EQ(0, ortmem_spill_open(&o, &s));
	ASSERT_EQ(0, ortmem_spill_stats(s, &st));
	TH_LOG("%s: %s I/O, alignment %u", variant->ext4 ? "ext4" : "tmpfs",
	       st.features & ORTMEM_SPILL_HAVE_DIRECT ? "direct" : "buffered",
	       st.align);
	while (n < MAX_EXTENTS) {
		spill_fill(buf + 1, len, (uint64_t)n);
		memcpy(copy, buf + 1, len);
		ret = ortmem_spill_write(s, buf + 1, len, &ext[n]);
		if (ret)
			break;
		n++;
	}
	ASSERT_EQ(-ENOSPC, ret);
	EXPECT_LT(0, n);
	EXPECT_EQ(ORTMEM_TIER_DISK, ortmem_last_error()->tier);
	EXPECT_EQ(len, ortmem_last_error()->requested);
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "No space left on device"));
	ASSERT_EQ(0, memcmp(copy, buf + 1, len));
	ASSERT_EQ(0, ortmem_spill_stats(s, &st));
	EXPECT_EQ((uint64_t)n, st.extents);
	EXPECT_EQ(0, st.io_errors);
	for (i = 0; i < n; i++) {
		spill_fill(buf, len, (uint64_t)i);
		ASSERT_EQ(0, ortmem_spill_read(s, ext[i], back, len));
		ASSERT_EQ(0, memcmp(buf, back, len));
	}
	ASSERT_EQ(0, ortmem_spill_free(s, ext[0]));
	ASSERT_EQ(0, ortmem_spill_write(s, copy, len, &ext[0]));
	ASSERT_EQ(0, ortmem_spill_read(s, ext[0], back, len));
	ASSERT_EQ(0, memcmp(copy, back, len));
	ortmem_spill_close(s);
	free(buf);
	free(copy);
	free(back);
}

TEST_HARNESS_MAIN
