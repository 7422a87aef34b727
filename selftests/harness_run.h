/* SPDX-License-Identifier: MIT */
/*
 * selftests/harness_run.h - running the tests harness.h registered: one
 * forked child per test, a timeout, and TAP 13 output.  Included by
 * harness.h only.
 */
#ifndef ORTMEM_SELFTEST_HARNESS_RUN_H
#define ORTMEM_SELFTEST_HARNESS_RUN_H

struct __harness_totals {
	int pass, fail, skip;
};

static inline void __test_full_name(char *buf, size_t len,
				    const struct __test_metadata *t,
				    const struct __fixture_variant_metadata *v)
{
	if (v)
		snprintf(buf, len, "%s.%s.%s", t->fixture->name, v->name, t->name);
	else
		snprintf(buf, len, "%s.%s", t->fixture->name, t->name);
}

static inline void __test_child(struct __test_metadata *t,
				const struct __fixture_variant_metadata *v,
				struct __test_results *res)
{
	setpgid(0, 0);
	t->results = res;
	t->setup_done = false;
	t->fn(t, v);
	fflush(stdout);
	fflush(stderr);
	if (res->failed)
		_exit(KSFT_FAIL);
	_exit(res->skipped ? KSFT_SKIP : KSFT_PASS);
}

static inline double __now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for @pid up to @timeout seconds; kill its group when it overruns. */
static inline int __test_wait(pid_t pid, int timeout, bool *timed_out)
{
	double deadline = __now_s() + timeout;
	struct timespec nap = { 0, 2 * 1000 * 1000 };
	int status = 0;

	*timed_out = false;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (__now_s() > deadline) {
			*timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return status;
		}
		nanosleep(&nap, NULL);
	}
}

static inline void __test_run_one(struct __test_metadata *t,
				  const struct __fixture_variant_metadata *v,
				  int number, struct __harness_totals *tot)
{
	struct __test_results *res;
	char name[512];
	bool timed_out;
	int status;
	pid_t pid;

	__test_full_name(name, sizeof(name), t, v);
	printf("#  RUN           %s ...\n", name);
	res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED) {
		printf("not ok %d %s # harness: mmap: %s\n", number, name,
		       strerror(errno));
		tot->fail++;
		return;
	}
	memset(res, 0, sizeof(*res));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
		__test_child(t, v, res);
	if (pid < 0) {
		printf("not ok %d %s # harness: fork: %s\n", number, name,
		       strerror(errno));
		tot->fail++;
		munmap(res, sizeof(*res));
		return;
	}
	status = __test_wait(pid, t->timeout, &timed_out);
	if (timed_out) {
		printf("#     TIMEOUT    %s\n", name);
		printf("not ok %d %s # TIMEOUT after %d seconds\n", number, name,
		       t->timeout);
		tot->fail++;
	} else if (status < 0 || WIFSIGNALED(status)) {
		int sig = status < 0 ? 0 : WTERMSIG(status);

		printf("#     CRASH      %s\n", name);
		printf("not ok %d %s # CRASH: killed by signal %d (%s)\n", number,
		       name, sig, strsignal(sig));
		tot->fail++;
	} else if (WEXITSTATUS(status) == KSFT_SKIP && !res->failed) {
		printf("#      SKIP      %s\n", res->reason);
		printf("ok %d %s # SKIP %s\n", number, name, res->reason);
		tot->skip++;
	} else if (WEXITSTATUS(status) == KSFT_PASS && !res->failed) {
		printf("#            OK  %s\n", name);
		printf("ok %d %s\n", number, name);
		tot->pass++;
	} else {
		printf("#      FAIL      %s\n", name);
		printf("not ok %d %s # exit status %d\n", number, name,
		       WEXITSTATUS(status));
		tot->fail++;
	}
	fflush(stdout);
	munmap(res, sizeof(*res));
}

typedef void (*__test_visit_fn)(struct __test_metadata *,
				const struct __fixture_variant_metadata *,
				void *);

/* Call @fn on every (test, variant) pair whose name contains @filter. */
static inline int __test_each(const char *filter, __test_visit_fn fn, void *arg)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t;
	struct __fixture_variant_metadata *v, none = { 0 };
	char name[512];
	int count = 0;

	for (f = __fixture_list; f; f = f->next) {
		for (v = f->variants ? f->variants : &none; v; v = v->next) {
			for (t = f->tests; t; t = t->next) {
				const struct __fixture_variant_metadata *vv =
					v == &none ? NULL : v;

				__test_full_name(name, sizeof(name), t, vv);
				if (filter && !strstr(name, filter))
					continue;
				count++;
				if (fn)
					fn(t, vv, arg);
			}
		}
	}
	return count;
}

struct __harness_run_state {
	int number;
	struct __harness_totals tot;
};

static inline void __test_visit_run(struct __test_metadata *t,
				    const struct __fixture_variant_metadata *v,
				    void *arg)
{
	struct __harness_run_state *st = arg;

	__test_run_one(t, v, ++st->number, &st->tot);
}

static inline void __test_visit_list(struct __test_metadata *t,
				     const struct __fixture_variant_metadata *v,
				     void *arg)
{
	char name[512];

	(void)arg;
	__test_full_name(name, sizeof(name), t, v);
	printf("%s\n", name);
}

static inline int __test_harness_main(int argc, char **argv)
{
	struct __harness_run_state st = { 0 };
	const char *filter = NULL;
	int opt, count;

	while ((opt = getopt(argc, argv, "t:l")) != -1) {
		switch (opt) {
		case 't':
			filter = optarg;
			break;
		case 'l':
			__test_each(NULL, __test_visit_list, NULL);
			return KSFT_PASS;
		default:
			fprintf(stderr, "usage: %s [-l] [-t SUBSTRING]\n", argv[0]);
			return KSFT_FAIL;
		}
	}
	/* A test writing to a closed pipe must fail, not kill the harness. */
	signal(SIGPIPE, SIG_IGN);
	count = __test_each(filter, NULL, NULL);
	printf("TAP version 13\n1..%d\n", count);
	printf("# Starting %d tests\n", count);
	__test_each(filter, __test_visit_run, &st);
	printf("# %s: %d / %d tests passed.\n",
	       st.tot.fail ? "FAILED" : "PASSED", st.tot.pass, count);
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
	       st.tot.pass, st.tot.fail, st.tot.skip);
	fflush(stdout);
	if (st.tot.fail)
		return KSFT_FAIL;
	if (count && st.tot.skip == count)
		return KSFT_SKIP;
	return KSFT_PASS;
}

#endif /* ORTMEM_SELFTEST_HARNESS_RUN_H */
