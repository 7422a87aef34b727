/* SPDX-License-Identifier: MIT */
/*
 * selftests/harness.h - ortmem's test harness, in the style of the kernel's
 * kselftest_harness.h (same macro names and semantics, our own code).
 *
 *   TEST(name) { ASSERT_EQ(0, f()); }
 *   FIXTURE(fx) { int fd; };
 *   FIXTURE_SETUP(fx) { self->fd = open(...); ASSERT_LE(0, self->fd); }
 *   FIXTURE_TEARDOWN(fx) { close(self->fd); }
 *   FIXTURE_VARIANT(fx) { int flags; };
 *   FIXTURE_VARIANT_ADD(fx, plain) { .flags = 0 };
 *   TEST_F(fx, reads) { ... variant->flags ... }
 *   TEST_HARNESS_MAIN
 *
 * Each test runs in a forked child of its own, in a process group of its
 * own, under a timeout (TEST_TIMEOUT_DEFAULT seconds unless the test is
 * declared with TEST_TIMEOUT/TEST_F_TIMEOUT).  ASSERT_* ends the test at the
 * first failure (teardown still runs); EXPECT_* records it and goes on;
 * SKIP(fmt, ...) ends the test as skipped.  Output is TAP 13; the program
 * exits KSFT_FAIL when any test failed, KSFT_SKIP when all were skipped,
 * KSFT_PASS otherwise.  The comparison macros take integers and print both
 * values; compare pointers with ASSERT_NULL/ASSERT_NONNULL.
 *
 * Arguments: "-t SUBSTRING" runs only the tests whose full name contains it;
 * "-l" lists the test names.
 */
#ifndef ORTMEM_SELFTEST_HARNESS_H
#define ORTMEM_SELFTEST_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KSFT_PASS 0
#define KSFT_FAIL 1
#define KSFT_XFAIL 2
#define KSFT_XPASS 3
#define KSFT_SKIP 4

#define TEST_TIMEOUT_DEFAULT 30

/*
 * TEST_ROUNDS(n): how many rounds a randomized test runs: n, or a quarter
 * of n (at least one) in a build under AddressSanitizer or ThreadSanitizer.
 * Those run the planner 5 to 20 times slower, and the memory errors and
 * races they look for show in the first rounds as in the rest; the plain
 * build (make check) runs every round.
 *
 * TSAN_SKIP_ONE_THREAD(): in a ThreadSanitizer build, skip a test whose
 * library calls all run on the caller's thread (a plan bounded by
 * max_iterations searches on one): TSan checks what threads share, so it
 * has nothing to check there and only runs it 5 to 15 times slower.  The
 * plain and the ASan builds run it.
 */
/* gcc says __SANITIZE_*__, clang __has_feature(), which gcc before 14 lacks */
#ifdef __has_feature
#define TEST_HAS_FEATURE(f) __has_feature(f)
#else
#define TEST_HAS_FEATURE(f) 0
#endif
#if defined(__SANITIZE_THREAD__) || TEST_HAS_FEATURE(thread_sanitizer)
#define TEST_TSAN 1
#else
#define TEST_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || TEST_HAS_FEATURE(address_sanitizer)
#define TEST_ASAN 1
#else
#define TEST_ASAN 0
#endif
#define TEST_SANITIZED (TEST_ASAN || TEST_TSAN)
#define TEST_ROUNDS(n) (TEST_SANITIZED ? ((n) + 3) / 4 : (n))

struct __fixture_metadata;
struct __fixture_variant_metadata;

/* What a child reports back through shared memory. */
struct __test_results {
	bool failed;
	bool skipped;
	char reason[512];
};

struct __test_metadata {
	const char *name;
	void (*fn)(struct __test_metadata *,
		   const struct __fixture_variant_metadata *);
	struct __fixture_metadata *fixture;
	int timeout;
	struct __test_metadata *next;
	/* Valid in the child only. */
	struct __test_results *results;
	sigjmp_buf env;
	bool setup_done;
};

struct __fixture_variant_metadata {
	const char *name;
	const void *data;
	struct __fixture_variant_metadata *next;
};

struct __fixture_metadata {
	const char *name;
	struct __test_metadata *tests;
	struct __fixture_variant_metadata *variants;
	struct __fixture_metadata *next;
};

static struct __fixture_metadata _global_fixture_object = { .name = "global" };
static struct __fixture_metadata *__fixture_list;

static inline void __register_fixture(struct __fixture_metadata *f)
{
	struct __fixture_metadata **p = &__fixture_list;

	while (*p)
		p = &(*p)->next;
	*p = f;
}

static inline void __register_test(struct __test_metadata *t)
{
	struct __test_metadata **p = &t->fixture->tests;

	while (*p)
		p = &(*p)->next;
	*p = t;
}

/* Plain TEST()s form the fixture "global", listed before all others. */
static void __attribute__((constructor(101))) __register_global_fixture(void)
{
	__register_fixture(&_global_fixture_object);
}

static inline void __register_variant(struct __fixture_metadata *f,
				      struct __fixture_variant_metadata *v)
{
	struct __fixture_variant_metadata **p = &f->variants;

	while (*p)
		p = &(*p)->next;
	*p = v;
}

/* ---- declaring tests ---- */

#define __TEST_IMPL(test_name, fixture_object, secs)                       \
	static void test_name(struct __test_metadata *_metadata);          \
	static void _##test_name##_wrapper(                                 \
		struct __test_metadata *_metadata,                          \
		const struct __fixture_variant_metadata *v)                 \
	{                                                                   \
		(void)v;                                                    \
		if (sigsetjmp(_metadata->env, 1) == 0)                      \
			test_name(_metadata);                               \
	}                                                                   \
	static struct __test_metadata _##test_name##_object = {             \
		.name = #test_name,                                         \
		.fn = _##test_name##_wrapper,                               \
		.fixture = &fixture_object,                                 \
		.timeout = secs,                                            \
	};                                                                  \
	static void __attribute__((constructor)) _register_##test_name(void) \
	{                                                                   \
		__register_test(&_##test_name##_object);                    \
	}                                                                   \
	static void test_name(struct __test_metadata __attribute__((unused)) \
				      *_metadata)

#define TEST(name) __TEST_IMPL(name, _global_fixture_object, TEST_TIMEOUT_DEFAULT)
#define TEST_TIMEOUT(name, secs) __TEST_IMPL(name, _global_fixture_object, secs)

#define FIXTURE_DATA(name) struct _test_data_##name
#define FIXTURE_VARIANT(name) struct _fixture_variant_##name

#define FIXTURE(fx_name)                                                       \
	FIXTURE_VARIANT(fx_name);                                              \
	static struct __fixture_metadata _##fx_name##_fixture_object = {       \
		.name = #fx_name,                                              \
	};                                                                  \
	static void __attribute__((constructor)) _register_fx_##fx_name(void) \
	{                                                                   \
		__register_fixture(&_##fx_name##_fixture_object);              \
	}                                                                   \
	FIXTURE_DATA(fx_name)

#define FIXTURE_SETUP(name)                                                 \
	static void name##_setup(                                           \
		struct __test_metadata __attribute__((unused)) *_metadata,  \
		FIXTURE_DATA(name) __attribute__((unused)) *self,            \
		const FIXTURE_VARIANT(name) __attribute__((unused)) *variant)

#define FIXTURE_TEARDOWN(name)                                              \
	static void name##_teardown(                                        \
		struct __test_metadata __attribute__((unused)) *_metadata,  \
		FIXTURE_DATA(name) __attribute__((unused)) *self,            \
		const FIXTURE_VARIANT(name) __attribute__((unused)) *variant)

#define FIXTURE_VARIANT_ADD(fx, vname)                                      \
	extern const FIXTURE_VARIANT(fx) _##fx##_##vname##_variant;         \
	static struct __fixture_variant_metadata _##fx##_##vname##_object = { \
		.name = #vname,                                             \
		.data = &_##fx##_##vname##_variant,                         \
	};                                                                  \
	static void __attribute__((constructor))                            \
	_register_variant_##fx##_##vname(void)                              \
	{                                                                   \
		__register_variant(&_##fx##_fixture_object,                 \
				   &_##fx##_##vname##_object);              \
	}                                                                   \
	const FIXTURE_VARIANT(fx) _##fx##_##vname##_variant =

#define __TEST_F_IMPL(fx, test_name, secs)                                  \
	static void fx##_##test_name(struct __test_metadata *_metadata,     \
				     FIXTURE_DATA(fx) *self,                \
				     const FIXTURE_VARIANT(fx) *variant);   \
	static void _##fx##_##test_name##_wrapper(                          \
		struct __test_metadata *_metadata,                          \
		const struct __fixture_variant_metadata *v)                 \
	{                                                                   \
		/* Static, not a local: a local changed after sigsetjmp is \
		 * indeterminate after siglongjmp.  Each test runs in a    \
		 * child of its own, so nothing else shares it. */         \
		static FIXTURE_DATA(fx) self;                               \
		/* volatile: it is read again after a siglongjmp. */        \
		const FIXTURE_VARIANT(fx) *volatile var;                    \
		var = v ? v->data : NULL;                                   \
		memset(&self, 0, sizeof(self));                             \
		if (sigsetjmp(_metadata->env, 1) == 0) {                    \
			fx##_setup(_metadata, &self, var);                  \
			_metadata->setup_done = true;                       \
			fx##_##test_name(_metadata, &self, var);            \
		}                                                           \
		if (_metadata->setup_done) {                                \
			_metadata->setup_done = false;                      \
			if (sigsetjmp(_metadata->env, 1) == 0)              \
				fx##_teardown(_metadata, &self, var);       \
		}                                                           \
	}                                                                   \
	static struct __test_metadata _##fx##_##test_name##_object = {      \
		.name = #test_name,                                         \
		.fn = _##fx##_##test_name##_wrapper,                        \
		.fixture = &_##fx##_fixture_object,                         \
		.timeout = secs,                                            \
	};                                                                  \
	static void __attribute__((constructor))                            \
	_register_##fx##_##test_name(void)                                  \
	{                                                                   \
		__register_test(&_##fx##_##test_name##_object);             \
	}                                                                   \
	static void fx##_##test_name(                                       \
		struct __test_metadata __attribute__((unused)) *_metadata,  \
		FIXTURE_DATA(fx) __attribute__((unused)) *self,              \
		const FIXTURE_VARIANT(fx) __attribute__((unused)) *variant)

#define TEST_F(fx, name) __TEST_F_IMPL(fx, name, TEST_TIMEOUT_DEFAULT)
#define TEST_F_TIMEOUT(fx, name, secs) __TEST_F_IMPL(fx, name, secs)

/* ---- assertions ---- */

#define TH_LOG(fmt, ...) \
	fprintf(stderr, "# %s:%d:%s:" fmt "\n", __FILE__, __LINE__, \
		_metadata->name, ##__VA_ARGS__)

#define __is_signed_type(x) (((__typeof__(x))-1) < (__typeof__(x))1)

static inline void __test_fail(struct __test_metadata *m, bool fatal)
{
	m->results->failed = true;
	fflush(stdout);
	fflush(stderr);
	if (fatal)
		siglongjmp(m->env, 1);
}

/* Widen both sides so mixed signedness compares by value, as a reader means. */
#define __widen(x)                                                           \
	(__is_signed_type(x) ? (__int128)(long long)(x)                      \
			     : (__int128)(unsigned long long)(x))

#define __CMP(expected, seen, op, fatal)                                     \
	do {                                                                 \
		__typeof__(expected) __exp = (expected);                     \
		__typeof__(seen) __seen = (seen);                            \
		if (!(__widen(__exp) op __widen(__seen))) {                  \
			fprintf(stderr, "# %s:%d: expected %s (",            \
				__FILE__, __LINE__, #expected);              \
			__print_int(__exp);                                  \
			fprintf(stderr, ") " #op " %s (", #seen);            \
			__print_int(__seen);                                 \
			fprintf(stderr, ")\n");                              \
			__test_fail(_metadata, fatal);                       \
		}                                                            \
	} while (0)

#define __print_int(x)                                                       \
	do {                                                                 \
		if (__is_signed_type(x))                                     \
			fprintf(stderr, "%lld", (long long)(x));             \
		else                                                         \
			fprintf(stderr, "%llu", (unsigned long long)(x));    \
	} while (0)

#define __STRCMP(expected, seen, want_equal, fatal)                          \
	do {                                                                 \
		const char *__exp = (expected), *__seen = (seen);            \
		bool __eq = __exp && __seen && !strcmp(__exp, __seen);       \
		if (__eq != (want_equal)) {                                  \
			fprintf(stderr,                                      \
				"# %s:%d: expected %s \"%s\" %s %s \"%s\"\n",  \
				__FILE__, __LINE__, #expected,               \
				__exp ? __exp : "(null)",                    \
				(want_equal) ? "==" : "!=", #seen,           \
				__seen ? __seen : "(null)");                 \
			__test_fail(_metadata, fatal);                       \
		}                                                            \
	} while (0)

#define __BOOL(cond, want, fatal)                                             \
	do {                                                                  \
		if ((bool)(cond) != (want)) {                                 \
			fprintf(stderr, "# %s:%d: expected %s to be %s\n",    \
				__FILE__, __LINE__, #cond,                    \
				(want) ? "true" : "false");                   \
			__test_fail(_metadata, fatal);                        \
		}                                                             \
	} while (0)

#define ASSERT_EQ(e, s) __CMP(e, s, ==, true)
#define ASSERT_NE(e, s) __CMP(e, s, !=, true)
#define ASSERT_LT(e, s) __CMP(e, s, <, true)
#define ASSERT_LE(e, s) __CMP(e, s, <=, true)
#define ASSERT_GT(e, s) __CMP(e, s, >, true)
#define ASSERT_GE(e, s) __CMP(e, s, >=, true)
#define ASSERT_TRUE(c) __BOOL(c, true, true)
#define ASSERT_FALSE(c) __BOOL(c, false, true)
#define ASSERT_NULL(p) __BOOL((p) == NULL, true, true)
#define ASSERT_NONNULL(p) __BOOL((p) != NULL, true, true)
#define ASSERT_STREQ(e, s) __STRCMP(e, s, true, true)
#define ASSERT_STRNE(e, s) __STRCMP(e, s, false, true)

#define EXPECT_EQ(e, s) __CMP(e, s, ==, false)
#define EXPECT_NE(e, s) __CMP(e, s, !=, false)
#define EXPECT_LT(e, s) __CMP(e, s, <, false)
#define EXPECT_LE(e, s) __CMP(e, s, <=, false)
#define EXPECT_GT(e, s) __CMP(e, s, >, false)
#define EXPECT_GE(e, s) __CMP(e, s, >=, false)
#define EXPECT_TRUE(c) __BOOL(c, true, false)
#define EXPECT_FALSE(c) __BOOL(c, false, false)
#define EXPECT_NULL(p) __BOOL((p) == NULL, true, false)
#define EXPECT_NONNULL(p) __BOOL((p) != NULL, true, false)
#define EXPECT_STREQ(e, s) __STRCMP(e, s, true, false)
#define EXPECT_STRNE(e, s) __STRCMP(e, s, false, false)

/* End the test as skipped, with a reason; teardown still runs. */
#define SKIP(fmt, ...)                                                        \
	do {                                                                  \
		snprintf(_metadata->results->reason,                          \
			 sizeof(_metadata->results->reason), fmt,             \
			 ##__VA_ARGS__);                                      \
		_metadata->results->skipped = true;                           \
		fflush(stdout);                                               \
		siglongjmp(_metadata->env, 1);                                \
	} while (0)

#define TSAN_SKIP_ONE_THREAD()                                                \
	do {                                                                  \
		if (TEST_TSAN)                                                \
			SKIP("one thread: nothing for ThreadSanitizer to "    \
			     "check (the plain and ASan builds run it)");     \
	} while (0)

#include "harness_run.h"

#define TEST_HARNESS_MAIN                                                     \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		return __test_harness_main(argc, argv);                       \
	}

#endif /* ORTMEM_SELFTEST_HARNESS_H */
