// SPDX-License-Identifier: MIT
/*
 * ortmem_spill_close(): the file's space is back in the filesystem when it
 * returns, with io_uring as without (a handle opened right after it, in
 * this process or the next, fits every extent the first one held), and a
 * close while another thread's transfers run waits for them before it
 * frees anything (run under ASan, a use-after-free shows).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "common.h"

#define EXTENT (MIB - 100)
#define FS_SIZE "8m"

FIXTURE(small) {
	char mnt[256];
	bool mounted;
	uint8_t *buf;
};

FIXTURE_VARIANT(small) {
	uint32_t flags;
};
FIXTURE_VARIANT_ADD(small, io_uring) { .flags = 0 };
FIXTURE_VARIANT_ADD(small, io_uring_plain_file) { .flags = ORTMEM_SPILL_F_NO_REGFILE };
FIXTURE_VARIANT_ADD(small, sync) { .flags = ORTMEM_SPILL_F_NO_URING };

FIXTURE_SETUP(small)
{
	if (geteuid())
		SKIP("mounting a small tmpfs needs root");
	ASSERT_EQ(0, spill_test_dir(self->mnt, sizeof(self->mnt)));
	if (mount("tmpfs", self->mnt, "tmpfs", 0, "size=" FS_SIZE ",mode=0700"))
		SKIP("cannot mount a tmpfs: %s", strerror(errno));
	self->mounted = true;
	self->buf = malloc(EXTENT);
	ASSERT_NONNULL(self->buf);
	spill_fill(self->buf, EXTENT, 16);
}

FIXTURE_TEARDOWN(small)
{
	if (self->mounted && umount2(self->mnt, MNT_DETACH))
		TH_LOG("umount %s: %s", self->mnt, strerror(errno));
	rmdir(self->mnt);
	free(self->buf);
}

/* Open a handle in @dir and write @n extents (or as many as fit when @n
 * is 0); returns how many fit, -1 when the open failed. */
static int fill(const char *dir, uint32_t flags, const uint8_t *buf, int n,
		bool *uring)
{
	ORTMEM_OPTS(ortmem_spill_opts, o, .dir = dir, .grow_bytes = MIB,
		    .flags = flags);
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	struct ortmem_spill *s;
	uint64_t ext;
	int i;

	if (ortmem_spill_open(&o, &s))
		return -1;
	if (uring && !ortmem_spill_stats(s, &st))
		*uring = st.features & ORTMEM_SPILL_HAVE_URING;
	for (i = 0; !n || i < n; i++)
		if (ortmem_spill_write(s, buf, EXTENT, &ext))
			break;
	ortmem_spill_close(s);
	return i;
}

TEST_F(small, the_space_is_free_when_close_returns)
{
	bool uring = false;
	int n, round, status;
	pid_t pid;

	n = fill(self->mnt, variant->flags, self->buf, 0, &uring);
	TH_LOG("%d extents of %llu bytes fit in a %s tmpfs (%s)", n,
	       (unsigned long long)EXTENT, FS_SIZE,
	       uring ? "io_uring" : "pread/pwrite");
	ASSERT_LE(4, n);
	/* Right after each close, a new handle fits them all again. */
	for (round = 0; round < 5; round++)
		ASSERT_EQ(n, fill(self->mnt, variant->flags, self->buf, n, NULL));
	/* And so does the next process. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(fill(self->mnt, variant->flags, self->buf, n, NULL) == n ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#define BATCH 64

struct busy {
	struct ortmem_spill *s;
	struct ortmem_spill_io io[BATCH];
	_Atomic int done;
	int ret;
};

static void *submit_batch(void *arg)
{
	struct busy *b = arg;

	b->ret = ortmem_spill_submit(b->s, b->io, BATCH);
	atomic_store(&b->done, 1);
	return NULL;
}

/* Close while another thread's batch runs: close waits, then frees. */
TEST(close_waits_for_transfers_in_flight)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };
	char dir[256];
	uint8_t *buf = malloc(EXTENT);
	int tries, caught = 0, i;

	ASSERT_NONNULL(buf);
	spill_fill(buf, EXTENT, 3);
	ASSERT_EQ(0, spill_test_dir(dir, sizeof(dir)));
	for (tries = 0; tries < 20 && !caught; tries++) {
		ORTMEM_OPTS(ortmem_spill_opts, o, .dir = dir);
		struct busy b = { 0 };
		pthread_t th;

		ASSERT_EQ(0, ortmem_spill_open(&o, &b.s));
		for (i = 0; i < BATCH; i++)
			b.io[i] = (struct ortmem_spill_io){
				.op = ORTMEM_SPILL_OP_WRITE, .buf = buf, .len = EXTENT };
		ASSERT_EQ(0, pthread_create(&th, NULL, submit_batch, &b));
		/* Close only once the batch is seen running, so the test
		 * never closes before the call began (that is the caller's
		 * use after close, not what is tested). */
		while (!atomic_load(&b.done)) {
			ASSERT_EQ(0, ortmem_spill_stats(b.s, &st));
			if (st.calls_running) {
				caught++;
				break;
			}
		}
		ortmem_spill_close(b.s);
		EXPECT_TRUE(atomic_load(&b.done));
		ASSERT_EQ(0, pthread_join(th, NULL));
		EXPECT_EQ(0, b.ret);
	}
	TH_LOG("closed with a batch in flight %d of %d times", caught, tries);
	EXPECT_LT(0, caught);
	EXPECT_EQ(0, spill_dir_entries(dir));
	rmdir(dir);
	free(buf);
}

TEST_HARNESS_MAIN
