// SPDX-License-Identifier: MIT
/*
 * The host tier through the public API.  On a machine without the ortmem
 * module it runs the mmap + mlock fallback; in the VM it runs again with
 * the module, and the same tests must pass on both backends.
 */
#include <ortmem/ortmem.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "../harness.h"

#define PAGE 4096ull
#define NOBODY 65534

static bool module_loaded(void)
{
	return access("/sys/class/misc/ortmem", F_OK) == 0;
}

static int expected_backend(void)
{
	const char *env = getenv("ORTMEM_HOST_BACKEND");

	if (env && !strcmp(env, "mlock"))
		return ORTMEM_HOST_BACKEND_MLOCK;
	return module_loaded() ? ORTMEM_HOST_BACKEND_MODULE : ORTMEM_HOST_BACKEND_MLOCK;
}

static long long sysfs_u64(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/ortmem/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Locked or pinned bytes this process holds, as the backend accounts them. */
static long long held_bytes(int backend)
{
	char line[256];
	long long kb = -1;
	FILE *f;

	if (backend == ORTMEM_HOST_BACKEND_MODULE)
		return sysfs_u64("pinned_bytes");
	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

FIXTURE(host) {
	struct ortmem_host *h;
	int backend;
};

FIXTURE_SETUP(host)
{
	ASSERT_EQ(0, ortmem_host_open(NULL, &self->h));
	self->backend = ortmem_host_backend(self->h);
}

FIXTURE_TEARDOWN(host)
{
	ortmem_host_close(self->h);
}

TEST_F(host, backend_is_the_module_when_loaded)
{
	EXPECT_EQ(expected_backend(), self->backend);
	EXPECT_STREQ(self->backend == ORTMEM_HOST_BACKEND_MODULE ? "module" : "mlock",
		     ortmem_host_backend_name(self->backend));
	EXPECT_NULL(ortmem_host_backend_name(0));
	EXPECT_NULL(ortmem_host_backend_name(3));
	EXPECT_EQ(-EINVAL, ortmem_host_backend(NULL));
}

TEST_F(host, alloc_write_read_free)
{
	long long before = held_bytes(self->backend);
	unsigned char *p;
	size_t i;

	ASSERT_EQ(0, ortmem_host_alloc(self->h, 3 * PAGE + 1, -1, (void **)&p));
	EXPECT_EQ(0, (uintptr_t)p % PAGE);
	for (i = 0; i < 4 * PAGE; i++)
		if (p[i])
			break;
	EXPECT_EQ(4 * PAGE, i);
	for (i = 0; i < 4 * PAGE; i++)
		p[i] = (unsigned char)(i * 7);
	for (i = 0; i < 4 * PAGE; i++)
		if (p[i] != (unsigned char)(i * 7))
			break;
	EXPECT_EQ(4 * PAGE, i);
	EXPECT_EQ(before + (long long)(4 * PAGE), held_bytes(self->backend));
	EXPECT_EQ(0, ortmem_host_free(self->h, p));
	EXPECT_EQ(before, held_bytes(self->backend));
}

/*
 * The fallback's buffers of a huge page or more start on a huge-page
 * boundary (for THP), and trimming the larger mapping to that boundary
 * leaves nothing more locked or held than the buffer itself.
 */
TEST_F(host, large_fallback_buffers_are_huge_page_aligned)
{
	const uint64_t huge = 2ull << 20, size = 5 * huge + PAGE;
	long long before = held_bytes(self->backend);
	unsigned char *p, *q;
	uint64_t i;

	if (self->backend != ORTMEM_HOST_BACKEND_MLOCK)
		SKIP("the module's buffers are its own pages");
	ASSERT_EQ(0, ortmem_host_alloc(self->h, size, -1, (void **)&p));
	EXPECT_EQ(0, (uintptr_t)p % huge);
	EXPECT_EQ(before + (long long)size, held_bytes(self->backend));
	for (i = 0; i < size; i += PAGE / 2)
		p[i] = (unsigned char)(i >> 11);
	for (i = 0; i < size; i += PAGE / 2)
		if (p[i] != (unsigned char)(i >> 11))
			break;
	EXPECT_EQ(size, i);
	/* Below a huge page: page-aligned as before, no more. */
	ASSERT_EQ(0, ortmem_host_alloc(self->h, huge - PAGE, -1, (void **)&q));
	EXPECT_EQ(0, (uintptr_t)q % PAGE);
	EXPECT_EQ(before + (long long)(size + huge - PAGE), held_bytes(self->backend));
	EXPECT_EQ(0, ortmem_host_free(self->h, q));
	EXPECT_EQ(0, ortmem_host_free(self->h, p));
	EXPECT_EQ(before, held_bytes(self->backend));
}

TEST_F(host, bad_requests_are_invalid_and_change_nothing)
{
	long long before = held_bytes(self->backend);
	const struct ortmem_error *e;
	void *p = (void *)0x1;

	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, 0, -1, &p));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, e->kind);
	EXPECT_EQ(ORTMEM_TIER_HOST, e->tier);
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, UINT64_MAX, -1, &p));
	EXPECT_EQ(UINT64_MAX, ortmem_last_error()->requested);
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, (1ull << 40) + 1, -1, &p));
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, PAGE, -2, &p));
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, PAGE, 1 << 20, &p));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "NUMA node 1048576"));
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(self->h, PAGE, -1, NULL));
	EXPECT_EQ(-EINVAL, ortmem_host_alloc(NULL, PAGE, -1, &p));
	EXPECT_EQ((void *)0x1, p);
	EXPECT_EQ(before, held_bytes(self->backend));
}

TEST_F(host, free_of_unknown_or_freed_pointer_is_invalid)
{
	char stack;
	void *p;

	EXPECT_EQ(-EINVAL, ortmem_host_free(self->h, &stack));
	EXPECT_EQ(-EINVAL, ortmem_host_free(self->h, NULL));
	EXPECT_EQ(-EINVAL, ortmem_host_free(NULL, &stack));
	ASSERT_EQ(0, ortmem_host_alloc(self->h, PAGE, -1, &p));
	EXPECT_EQ(-EINVAL, ortmem_host_free(self->h, (char *)p + 1));
	EXPECT_EQ(0, ortmem_host_free(self->h, p));
	EXPECT_EQ(-EINVAL, ortmem_host_free(self->h, p));
	EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, ortmem_last_error()->kind);
}

TEST_F(host, numa_node_0)
{
	void *p;

	ASSERT_EQ(0, ortmem_host_alloc(self->h, 8 * PAGE, 0, &p));
	memset(p, 1, 8 * PAGE);
	EXPECT_EQ(0, ortmem_host_free(self->h, p));
}

TEST_F(host, stats_count_buffers)
{
	struct ortmem_host_stats s = { .sz = sizeof(s) };
	void *a, *b;

	ASSERT_EQ(0, ortmem_host_alloc(self->h, PAGE, -1, &a));
	ASSERT_EQ(0, ortmem_host_alloc(self->h, 5 * PAGE - 100, -1, &b));
	ASSERT_EQ(0, ortmem_host_stats(self->h, &s));
	EXPECT_EQ(self->backend, s.backend);
	EXPECT_EQ(6 * PAGE, s.bytes);
	EXPECT_EQ(2, s.buffers);
	if (self->backend == ORTMEM_HOST_BACKEND_MODULE) {
		EXPECT_LE(6 * PAGE, s.module_pinned_bytes);
		EXPECT_LE(2, s.module_regions);
		EXPECT_LE(6, s.module_outstanding_pages);
		EXPECT_LT(0, s.module_max_pinned_bytes);
		EXPECT_EQ(1, s.module_abi_version);
	} else {
		EXPECT_EQ(0, s.module_pinned_bytes);
	}
	EXPECT_EQ(0, ortmem_host_free(self->h, a));
	EXPECT_EQ(0, ortmem_host_free(self->h, b));
	s.sz = 4;
	EXPECT_EQ(-EINVAL, ortmem_host_stats(self->h, &s));
	EXPECT_EQ(-EINVAL, ortmem_host_stats(NULL, &s));
}

TEST_F(host, close_frees_every_buffer)
{
	long long before = held_bytes(self->backend);
	void *p;
	int i;

	for (i = 1; i <= 10; i++)
		ASSERT_EQ(0, ortmem_host_alloc(self->h, i * PAGE, -1, &p));
	EXPECT_EQ(before + (long long)(55 * PAGE), held_bytes(self->backend));
	ortmem_host_close(self->h);
	self->h = NULL;
	EXPECT_EQ(before, held_bytes(self->backend));
	ortmem_host_close(NULL);
}

TEST_F(host, buffers_are_not_inherited_by_fork)
{
	volatile unsigned char *p;
	int status;
	pid_t pid;

	ASSERT_EQ(0, ortmem_host_alloc(self->h, PAGE, -1, (void **)&p));
	p[0] = 1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		p[0] = 2;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
	EXPECT_EQ(1, p[0]);
}

TEST_F(host, over_rlimit_memlock_is_an_allocation_failure)
{
	pid_t pid;
	int status;

	if (geteuid() != 0)
		SKIP("needs root to become an unprivileged user");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct rlimit rl = { 64 * 1024, 64 * 1024 };
		const struct ortmem_error *e;
		struct ortmem_host *h;
		void *p;

		/* A child opens its own allocator (the parent's is not shared). */
		if (ortmem_host_open(NULL, &h))
			_exit(89);
		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(NOBODY) || setuid(NOBODY))
			_exit(90);
		if (ortmem_host_alloc(h, 64 * PAGE, -1, &p) != -ENOMEM)
			_exit(1);
		e = ortmem_last_error();
		if (!e || e->kind != ORTMEM_ERR_ALLOCATION_FAILED ||
		    e->requested != 64 * PAGE || e->tier != ORTMEM_TIER_HOST)
			_exit(2);
		if (!strstr(e->reason, "RLIMIT_MEMLOCK"))
			_exit(3);
		/* Within the limit works, and all of it comes back. */
		if (ortmem_host_alloc(h, 8 * PAGE, -1, &p) ||
		    ortmem_host_free(h, p) ||
		    ortmem_host_alloc(h, 16 * PAGE, -1, &p))
			_exit(4);
		ortmem_host_close(h);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

struct worker {
	struct ortmem_host *h;
	int errors;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned char *p[4];
	int round, i;

	for (round = 0; round < 100; round++) {
		for (i = 0; i < 4; i++) {
			if (ortmem_host_alloc(w->h, (uint64_t)(i + 1) * PAGE, -1, (void **)&p[i])) {
				w->errors++;
				p[i] = NULL;
				continue;
			}
			if (p[i][i * PAGE] != 0)
				w->errors++;
			p[i][0] = 1;
		}
		for (i = 0; i < 4; i++)
			if (p[i] && ortmem_host_free(w->h, p[i]))
				w->errors++;
	}
	return NULL;
}

TEST_F_TIMEOUT(host, threads_share_one_allocator, 60)
{
	struct ortmem_host_stats s = { .sz = sizeof(s) };
	struct worker w[4];
	pthread_t t[4];
	int i;

	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .h = self->h };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_fn, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], NULL));
		EXPECT_EQ(0, w[i].errors);
	}
	ASSERT_EQ(0, ortmem_host_stats(self->h, &s));
	EXPECT_EQ(0, s.bytes);
	EXPECT_EQ(0, s.buffers);
}

/* ---- opening: options, environment, device override ---- */

static atomic_int log_count;
static char log_last[512];

static void count_log(enum ortmem_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level <= ORTMEM_LOG_WARN && strstr(msg, "mmap + mlock")) {
		atomic_fetch_add(&log_count, 1);
		snprintf(log_last, sizeof(log_last), "%s", msg);
	}
}

TEST(env_forces_the_fallback_and_says_so_once)
{
	struct ortmem_host *a, *b;

	ASSERT_EQ(0, ortmem_set_log_fn(count_log, NULL, ORTMEM_LOG_DEBUG));
	setenv("ORTMEM_HOST_BACKEND", "mlock", 1);
	ASSERT_EQ(0, ortmem_host_open(NULL, &a));
	ASSERT_EQ(0, ortmem_host_open(NULL, &b));
	EXPECT_EQ(ORTMEM_HOST_BACKEND_MLOCK, ortmem_host_backend(a));
	EXPECT_EQ(ORTMEM_HOST_BACKEND_MLOCK, ortmem_host_backend(b));
	EXPECT_EQ(1, atomic_load(&log_count));
	EXPECT_NE(NULL, strstr(log_last, "forced"));
	ortmem_host_close(a);
	ortmem_host_close(b);
}

TEST(fallback_without_module_says_why_once)
{
	ORTMEM_OPTS(ortmem_host_opts, o, .device = "/nonexistent/ortmem");
	struct ortmem_host *a, *b;

	unsetenv("ORTMEM_HOST_BACKEND");
	ASSERT_EQ(0, ortmem_set_log_fn(count_log, NULL, ORTMEM_LOG_DEBUG));
	ASSERT_EQ(0, ortmem_host_open(&o, &a));
	ASSERT_EQ(0, ortmem_host_open(&o, &b));
	EXPECT_EQ(ORTMEM_HOST_BACKEND_MLOCK, ortmem_host_backend(a));
	EXPECT_EQ(1, atomic_load(&log_count));
	EXPECT_NE(NULL, strstr(log_last, "/nonexistent/ortmem"));
	ortmem_host_close(a);
	ortmem_host_close(b);
}

TEST(module_required_but_missing_is_enodev)
{
	ORTMEM_OPTS(ortmem_host_opts, o, .flags = ORTMEM_HOST_REQUIRE_MODULE,
		    .device = "/nonexistent/ortmem");
	struct ortmem_host *h = NULL;

	EXPECT_EQ(-ENODEV, ortmem_host_open(&o, &h));
	EXPECT_NULL(h);
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "load the ortmem module"));
	setenv("ORTMEM_HOST_BACKEND", "module", 1);
	o.flags = 0;
	EXPECT_EQ(-ENODEV, ortmem_host_open(&o, &h));
}

TEST(module_env_with_module)
{
	struct ortmem_host *h;

	if (!module_loaded())
		SKIP("the ortmem module is not loaded");
	setenv("ORTMEM_HOST_BACKEND", "module", 1);
	ASSERT_EQ(0, ortmem_host_open(NULL, &h));
	EXPECT_EQ(ORTMEM_HOST_BACKEND_MODULE, ortmem_host_backend(h));
	ortmem_host_close(h);
}

TEST(a_device_that_is_not_ortmem_fails_the_handshake)
{
	ORTMEM_OPTS(ortmem_host_opts, o, .flags = ORTMEM_HOST_REQUIRE_MODULE,
		    .device = "/dev/null");
	struct ortmem_host *h = NULL;

	unsetenv("ORTMEM_HOST_BACKEND");
	EXPECT_EQ(-ORTMEM_E_ABI_MISMATCH, ortmem_host_open(&o, &h));
	EXPECT_NULL(h);
	/* Without REQUIRE_MODULE it falls back instead. */
	o.flags = 0;
	ASSERT_EQ(0, ortmem_host_open(&o, &h));
	EXPECT_EQ(ORTMEM_HOST_BACKEND_MLOCK, ortmem_host_backend(h));
	ortmem_host_close(h);
}

TEST(bad_options_and_environment_are_invalid)
{
	struct {
		struct ortmem_host_opts o;
		uint64_t extra;
	} big = { .o = { .sz = sizeof(big) }, .extra = 1 };
	ORTMEM_OPTS(ortmem_host_opts, o, .flags = 1u << 7);
	struct ortmem_host *h = NULL;

	unsetenv("ORTMEM_HOST_BACKEND");
	EXPECT_EQ(-EINVAL, ortmem_host_open(&o, &h));
	o.flags = ORTMEM_HOST_REQUIRE_MODULE | ORTMEM_HOST_FORCE_MLOCK;
	EXPECT_EQ(-EINVAL, ortmem_host_open(&o, &h));
	o.flags = 0;
	o.pad = 1;
	EXPECT_EQ(-EINVAL, ortmem_host_open(&o, &h));
	EXPECT_EQ(-EINVAL, ortmem_host_open(&big.o, &h));
	EXPECT_EQ(-EINVAL, ortmem_host_open(NULL, NULL));
	setenv("ORTMEM_HOST_BACKEND", "gpu", 1);
	EXPECT_EQ(-EINVAL, ortmem_host_open(NULL, &h));
	EXPECT_NE(NULL, strstr(ortmem_last_error_message(), "ORTMEM_HOST_BACKEND=gpu"));
	EXPECT_NULL(h);
}

TEST_HARNESS_MAIN
