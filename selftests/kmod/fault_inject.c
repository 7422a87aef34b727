// SPDX-License-Identifier: MIT
/*
 * Error paths of the module, through its fault injection (debug builds,
 * /sys/kernel/debug/ortmem/fail): every point of an allocation fails at
 * every position it is called at, as root and as an unprivileged user with
 * a memlock limit of exactly the allocation.  Each failure must give the
 * documented errno and leave nothing behind: the cap, the outstanding
 * pages, the live regions, the handle, and the user's RLIMIT_MEMLOCK charge
 * (the whole limit must still be there for the next allocation).
 */
#include <setjmp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../harness.h"
#include "ortmem_test.h"

#define DEBUGFS "/sys/kernel/debug"
#define FAIL_KNOB DEBUGFS "/ortmem/fail"
#define NOBODY 65534
#define NPAGES 4

/* Open the knob (mounting debugfs if needed); -1 when the build has none. */
static int knob_open(void)
{
	int fd = open(FAIL_KNOB, O_RDWR | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		mount("debugfs", DEBUGFS, "debugfs", 0, NULL);
		fd = open(FAIL_KNOB, O_RDWR | O_CLOEXEC);
	}
	return fd;
}

/* The knob is a seq_file: no pread/pwrite, seek and read/write instead. */
static int knob_write(int knob, const char *buf, size_t n)
{
	if (lseek(knob, 0, SEEK_SET) || write(knob, buf, n) != (ssize_t)n)
		return -errno;
	return 0;
}

static int knob_arm(int knob, const char *point, unsigned long nth)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%s %lu\n", point, nth);

	return knob_write(knob, buf, n);
}

static void knob_off(int knob)
{
	int ret = knob_write(knob, "off\n", 4);

	if (ret)
		fprintf(stderr, "# disarming: %s\n", strerror(-ret));
}

/* Calls counted and failures made since the knob was armed. */
static int knob_status(int knob, unsigned long *calls, unsigned long *failed)
{
	char buf[128], name[32];
	unsigned long nth;
	ssize_t n;

	if (lseek(knob, 0, SEEK_SET))
		return -1;
	n = read(knob, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%31s %lu %lu %lu", name, &nth, calls, failed) != 4)
		return -1;
	return 0;
}

static int wait_status(pid_t pid)
{
	int status = -1;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define CHILD_CHECK(cond, code, ...)                                        \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "# " __VA_ARGS__);                  \
			fprintf(stderr, "\n");                              \
			_exit(code);                                        \
		}                                                           \
	} while (0)

/*
 * In a child: fail @point at positions 1, 2, ... of an allocation of
 * NPAGES pages until a position is past the last call.  Exits 0 when every
 * failure gave @err and left nothing behind, and the point was called
 * @positions times.  With @nobody, runs as an unprivileged user whose
 * memlock limit is exactly NPAGES pages.
 */
static void fail_every_position(const char *point, int err,
				unsigned long positions, bool nobody)
{
	int64_t pinned = pinned_bytes(), out = outstanding(), regions = nr_regions();
	int knob = knob_open(), fd = dev_open();
	struct rlimit rl = { NPAGES * PAGE, NPAGES * PAGE };
	struct ortmem_alloc_args a;
	unsigned long pos, calls, failed;
	uint32_t last_handle = 0;
	int ret;

	CHILD_CHECK(knob >= 0 && fd >= 0, 90, "knob %d fd %d: %s", knob, fd,
		    strerror(errno));
	if (nobody)
		CHILD_CHECK(!setrlimit(RLIMIT_MEMLOCK, &rl) && !setgid(NOBODY) &&
			    !setuid(NOBODY), 91, "dropping privileges: %s",
			    strerror(errno));
	for (pos = 1; pos <= 64; pos++) {
		CHILD_CHECK(!knob_arm(knob, point, pos), 92, "arming %s %lu",
			    point, pos);
		ret = region_alloc(fd, NPAGES * PAGE, ORTMEM_NUMA_ANY, 0, &a);
		CHILD_CHECK(!knob_status(knob, &calls, &failed), 93, "status");
		knob_off(knob);
		if (!failed) {
			/* Past the last call: the allocation went through. */
			CHILD_CHECK(ret == 0, 94, "%s %lu: unarmed alloc gave %d",
				    point, pos, ret);
			CHILD_CHECK(pos - 1 == positions, 95,
				    "%s called %lu times per alloc, expected %lu",
				    point, pos - 1, positions);
			CHILD_CHECK(!region_free(fd, a.handle), 96, "free");
			break;
		}
		CHILD_CHECK(ret == -err, 97, "%s %lu: got %d (%s), expected -%d",
			    point, pos, ret, strerror(-ret), err);
		CHILD_CHECK(pinned_bytes() == pinned && outstanding() == out &&
			    nr_regions() == regions, 98,
			    "%s %lu: left pinned %lld->%lld outstanding %lld->%lld regions %lld->%lld",
			    point, pos, (long long)pinned, (long long)pinned_bytes(),
			    (long long)out, (long long)outstanding(),
			    (long long)regions, (long long)nr_regions());
		/* The refused call took no handle (handles are cyclic: the
		 * next is the one after the last given), and the whole
		 * memlock limit is still there. */
		ret = region_alloc(fd, NPAGES * PAGE, ORTMEM_NUMA_ANY, 0, &a);
		CHILD_CHECK(ret == 0 && a.handle == last_handle + 1, 99,
			    "%s %lu: next alloc gave %d, handle %u, expected %u",
			    point, pos, ret, a.handle, last_handle + 1);
		last_handle = a.handle;
		CHILD_CHECK(!region_free(fd, a.handle), 100, "free");
	}
	CHILD_CHECK(pos <= 64, 101, "%s never stopped failing", point);
	_exit(0);
}

FIXTURE(fi) {
	int knob;
	int64_t pinned;
	int64_t out;
};

FIXTURE_VARIANT(fi) {
	bool nobody;
};

FIXTURE_VARIANT_ADD(fi, root) { .nobody = false };
FIXTURE_VARIANT_ADD(fi, nobody) { .nobody = true };

#define FI_SETUP()                                                          \
	do {                                                                \
		int fd;                                                     \
		self->knob = -1;                                            \
		OPEN_OR_SKIP(fd);                                           \
		close(fd);                                                  \
		if (geteuid() != 0)                                         \
			SKIP("needs root for debugfs");                     \
		self->knob = knob_open();                                   \
		if (self->knob < 0)                                         \
			SKIP("%s: %s (module built without ORTMEM_DEBUG=1)", \
			     FAIL_KNOB, strerror(errno));                   \
		self->pinned = pinned_bytes();                              \
		self->out = outstanding();                                  \
	} while (0)

#define FI_TEARDOWN()                                                       \
	do {                                                                \
		if (self->knob < 0)                                         \
			break;                                              \
		knob_off(self->knob);                                       \
		close(self->knob);                                          \
		EXPECT_EQ(self->pinned, pinned_bytes());                    \
		EXPECT_EQ(0, settle_outstanding() - self->out);             \
	} while (0)

FIXTURE_SETUP(fi)
{
	FI_SETUP();
}

FIXTURE_TEARDOWN(fi)
{
	FI_TEARDOWN();
}

/* The same for the tests of mappings and of the knob, run once. */
FIXTURE(fim) {
	int knob;
	int64_t pinned;
	int64_t out;
};

FIXTURE_SETUP(fim)
{
	FI_SETUP();
}

FIXTURE_TEARDOWN(fim)
{
	FI_TEARDOWN();
}

static int run_point(const char *point, int err, unsigned long positions,
		     bool nobody)
{
	pid_t pid = fork();

	if (pid == 0)
		fail_every_position(point, err, positions, nobody);
	return pid < 0 ? -1 : wait_status(pid);
}

TEST_F(fi, region_struct)
{
	EXPECT_EQ(0, run_point("region", ENOMEM, 1, variant->nobody));
}

TEST_F(fi, charge_cap)
{
	EXPECT_EQ(0, run_point("charge_cap", ENOSPC, 1, variant->nobody));
}

TEST_F(fi, charge_user)
{
	/* CAP_IPC_LOCK skips the memlock charge: root never reaches it. */
	EXPECT_EQ(0, run_point("charge_user", ENOMEM, variant->nobody ? 1 : 0,
			       variant->nobody));
}

TEST_F(fi, page_array)
{
	EXPECT_EQ(0, run_point("page_array", ENOMEM, 1, variant->nobody));
}

TEST_F(fi, every_page)
{
	EXPECT_EQ(0, run_point("page", ENOMEM, NPAGES, variant->nobody));
}

TEST_F(fi, handle)
{
	EXPECT_EQ(0, run_point("handle", ENOMEM, 1, variant->nobody));
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, sig);
}

/*
 * In a child: map a fresh region, arm the Nth fault, touch the pages in
 * order.  Exits with 1 + the index of the page that got SIGBUS (0 when
 * none did), after checking the failure is not sticky: the same page
 * faults in, zeroed, once disarmed.  Exits 90+ on other errors.
 */
static void touch_pages(unsigned long nth)
{
	struct sigaction sa = { .sa_handler = on_sigbus };
	int knob = knob_open(), fd = dev_open();
	unsigned long calls, failed;
	struct ortmem_alloc_args a;
	volatile char *p;
	volatile int i = 0;

	if (knob < 0 || fd < 0 || sigaction(SIGBUS, &sa, NULL) ||
	    region_alloc(fd, NPAGES * PAGE, ORTMEM_NUMA_ANY, 0, &a))
		_exit(90);
	p = region_map(fd, NPAGES * PAGE, a.mmap_offset, PROT_READ | PROT_WRITE,
		       MAP_SHARED);
	if (p == MAP_FAILED || knob_arm(knob, "fault", nth))
		_exit(91);
	if (sigsetjmp(bus_jmp, 1) == 0) {
		for (i = 0; i < NPAGES; i++)
			p[i * PAGE] = 1;
		i = -1;
	}
	if (knob_status(knob, &calls, &failed))
		_exit(92);
	knob_off(knob);
	if (i < 0)
		_exit(0);
	if (calls != (unsigned long)i + 1 || failed != 1)
		_exit(93);
	/* Not sticky: the page faults in now, still zero. */
	if (p[i * PAGE] != 0)
		_exit(94);
	p[i * PAGE] = 2;
	_exit(1 + i);
}

/*
 * Fault-in failing at each page of a mapping: the touch of that page is
 * SIGBUS, the pages before it work, and the child's exit gives back
 * everything (the fixture checks).
 */
TEST_F(fim, fault_every_page)
{
	unsigned long pos;

	for (pos = 1; pos <= NPAGES + 1; pos++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0)
			touch_pages(pos);
		/* Past the last page: no fault fails. */
		EXPECT_EQ(pos <= NPAGES ? (int)pos : 0, wait_status(pid));
	}
}

/* A touch of a page whose fault-in fails, unhandled, kills the toucher. */
TEST_F(fim, fault_touch_is_sigbus)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ortmem_alloc_args a;
		int knob = knob_open(), fd = dev_open();
		volatile char *p;

		if (knob < 0 || fd < 0 ||
		    region_alloc(fd, NPAGES * PAGE, ORTMEM_NUMA_ANY, 0, &a))
			_exit(90);
		p = region_map(fd, NPAGES * PAGE, a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
		if (p == MAP_FAILED || knob_arm(knob, "fault", 2))
			_exit(91);
		p[0] = 1;
		p[PAGE] = 1;	/* the second fault: SIGBUS */
		_exit(92);
	}
	EXPECT_EQ(128 + SIGBUS, wait_status(pid));
	knob_off(self->knob);
}

/*
 * A system call that pins the page (vmsplice here; O_DIRECT and io_uring
 * pin the same way) gets EFAULT from one failed fault-in: it does not
 * retry.  Disarmed, the same call goes through.
 */
TEST_F(fim, fault_failure_reaches_vmsplice)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int knob = knob_open(), fd = dev_open(), pfd[2];
		struct ortmem_alloc_args a;
		struct iovec iov;
		void *p;

		if (knob < 0 || fd < 0 || pipe(pfd) ||
		    region_alloc(fd, NPAGES * PAGE, ORTMEM_NUMA_ANY, 0, &a))
			_exit(90);
		p = region_map(fd, NPAGES * PAGE, a.mmap_offset,
			       PROT_READ | PROT_WRITE, MAP_SHARED);
		if (p == MAP_FAILED || knob_arm(knob, "fault", 1))
			_exit(91);
		iov = (struct iovec){ .iov_base = p, .iov_len = PAGE };
		if (vmsplice(pfd[1], &iov, 1, 0) != -1 || errno != EFAULT)
			_exit(92);
		knob_off(knob);
		if (vmsplice(pfd[1], &iov, 1, 0) != (ssize_t)PAGE)
			_exit(93);
		_exit(0);
	}
	EXPECT_EQ(0, wait_status(pid));
	knob_off(self->knob);
}

/* Bad input to the knob itself. */
TEST_F(fim, knob_rejects_bad_input)
{
	EXPECT_EQ(-EINVAL, knob_arm(self->knob, "nosuchpoint", 1));
	EXPECT_EQ(-EINVAL, knob_arm(self->knob, "page", 0));
	EXPECT_EQ(-EINVAL, knob_write(self->knob, "page", 4));
	EXPECT_EQ(-EINVAL, knob_write(self->knob, "page x", 6));
	EXPECT_EQ(-EINVAL, knob_write(self->knob, "page 1 2 3 4 5 6 7 8 9 10 11 12", 31));
}

TEST_HARNESS_MAIN
