// SPDX-License-Identifier: MIT
/*
 * Accounting and lifecycle: RLIMIT_MEMLOCK for unprivileged callers, charges
 * returned after death, 100 children killed while holding regions, and
 * threads allocating and freeing at once.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

#define NOBODY 65534

/*
 * In a child: open the device as root, then become an unprivileged user
 * with a memlock limit of @limit bytes.  Returns the fd or exits 90+.
 */
static int become_nobody(uint64_t limit)
{
	struct rlimit rl = { .rlim_cur = limit, .rlim_max = limit };
	int fd = dev_open();

	if (fd < 0)
		_exit(90);
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		_exit(91);
	if (setgid(NOBODY) || setuid(NOBODY))
		_exit(92);
	return fd;
}

static int wait_status(pid_t pid)
{
	int status = -1;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

FIXTURE(acct) {
	int64_t pinned;
	int64_t out;
};

FIXTURE_SETUP(acct)
{
	int fd;

	OPEN_OR_SKIP(fd);
	close(fd);
	if (geteuid() != 0)
		SKIP("needs root to switch users");
	self->pinned = pinned_bytes();
	self->out = outstanding();
}

FIXTURE_TEARDOWN(acct)
{
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(0, settle_outstanding() - self->out);
}

TEST_F(acct, unprivileged_over_rlimit_is_refused)
{
	int64_t before = self->pinned;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = become_nobody(64 * 1024);
		struct ortmem_alloc_args a;

		if (region_alloc(fd, 17 * PAGE, ORTMEM_NUMA_ANY, 0, NULL) != -ENOMEM)
			_exit(1);
		if (pinned_bytes() != before) {
			fprintf(stderr, "# pinned %lld, before %lld\n",
				(long long)pinned_bytes(), (long long)before);
			_exit(2);
		}
		/* Exactly the limit fits; one page more does not. */
		if (region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, &a))
			_exit(3);
		if (region_alloc(fd, PAGE, ORTMEM_NUMA_ANY, 0, NULL) != -ENOMEM)
			_exit(4);
		if (region_free(fd, a.handle))
			_exit(5);
		/* Freed means uncharged: the whole limit is there again. */
		if (region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, NULL))
			_exit(6);
		_exit(0);
	}
	EXPECT_EQ(0, wait_status(pid));
}

TEST_F(acct, rlimit_zero_refuses_everything)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = become_nobody(0);

		_exit(region_alloc(fd, PAGE, ORTMEM_NUMA_ANY, 0, NULL) == -ENOMEM ? 0 : 1);
	}
	EXPECT_EQ(0, wait_status(pid));
}

TEST_F(acct, cap_ipc_lock_is_exempt)
{
	struct rlimit rl = { 0, 0 };
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = dev_open();

		/* root keeps CAP_IPC_LOCK: the limit does not apply. */
		if (fd < 0 || setrlimit(RLIMIT_MEMLOCK, &rl))
			_exit(90);
		_exit(region_alloc(fd, 4 * PAGE, ORTMEM_NUMA_ANY, 0, NULL) ? 1 : 0);
	}
	EXPECT_EQ(0, wait_status(pid));
}

/* A killed process's charge goes back to its user, not just the module. */
TEST_F(acct, charge_returned_after_sigkill)
{
	int pipefd[2];
	pid_t pid, pid2;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = become_nobody(64 * 1024);
		struct ortmem_alloc_args a;
		void *p;

		if (region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, &a))
			_exit(1);
		p = region_map(fd, 16 * PAGE, a.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED);
		if (p == MAP_FAILED)
			_exit(2);
		memset(p, 1, 16 * PAGE);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(3);
		pause();
		_exit(4);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(self->pinned + (int64_t)(16 * PAGE), pinned_bytes());
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_status(pid));
	EXPECT_EQ(0, settle_outstanding() - self->out);
	/* The same user, the same limit: the full 64 KiB is free again. */
	pid2 = fork();
	ASSERT_LE(0, pid2);
	if (pid2 == 0) {
		int fd = become_nobody(64 * 1024);

		_exit(region_alloc(fd, 16 * PAGE, ORTMEM_NUMA_ANY, 0, NULL) ? 1 : 0);
	}
	EXPECT_EQ(0, wait_status(pid2));
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_F_TIMEOUT(acct, hundred_children_killed_leave_nothing, 120)
{
	pid_t pids[100];
	int pipefd[2];
	int i, n = 0;
	char c;

	ASSERT_EQ(0, pipe(pipefd));
	for (i = 0; i < 100; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			int fd = dev_open();
			struct ortmem_alloc_args a, b;
			unsigned char *p;

			if (fd < 0 || region_alloc(fd, 8 * PAGE, -1, 0, &a) ||
			    region_alloc(fd, 4 * PAGE, -1, 0, &b))
				_exit(1);
			/* One region mapped, one only held by the fd. */
			p = region_map(fd, 8 * PAGE, a.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED);
			if (p == MAP_FAILED)
				_exit(2);
			p[0] = 1;
			p[8 * PAGE - 1] = 2;
			if (write(pipefd[1], "x", 1) != 1)
				_exit(3);
			for (;;)
				pause();
		}
	}
	for (i = 0; i < 100; i++)
		n += read(pipefd[0], &c, 1) == 1;
	EXPECT_EQ(100, n);
	EXPECT_EQ(self->pinned + (int64_t)(100 * 12 * PAGE), pinned_bytes());
	EXPECT_EQ(self->out + 100 * 12, outstanding());
	for (i = 0; i < 100; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < 100; i++)
		EXPECT_EQ(128 + SIGKILL, wait_status(pids[i]));
	EXPECT_EQ(0, settle_outstanding() - self->out);
	EXPECT_EQ(self->pinned, pinned_bytes());
	close(pipefd[0]);
	close(pipefd[1]);
}

struct worker {
	int fd;
	int seed;
	int errors;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct ortmem_alloc_args a[8];
	unsigned int seed = w->seed;
	int round, i;

	for (round = 0; round < 200; round++) {
		for (i = 0; i < 8; i++) {
			uint64_t size = (rand_r(&seed) % 8 + 1) * PAGE;
			unsigned char *p;

			if (region_alloc(w->fd, size, -1, 0, &a[i])) {
				w->errors++;
				a[i].handle = 0;
				continue;
			}
			p = region_map(w->fd, size, a[i].mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED);
			if (p == MAP_FAILED) {
				w->errors++;
				continue;
			}
			if (p[size - 1] != 0)
				w->errors++;
			p[0] = (unsigned char)w->seed;
			if (munmap(p, size))
				w->errors++;
		}
		for (i = 0; i < 8; i++)
			if (a[i].handle && region_free(w->fd, a[i].handle))
				w->errors++;
	}
	return NULL;
}

TEST_F_TIMEOUT(acct, threads_alloc_and_free_concurrently, 120)
{
	struct worker w[4];
	pthread_t t[4];
	int fd = dev_open();
	int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .fd = fd, .seed = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_fn, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].errors);
	}
	EXPECT_EQ(self->pinned, pinned_bytes());
	EXPECT_EQ(self->out, outstanding());
	close(fd);
}

TEST_HARNESS_MAIN
