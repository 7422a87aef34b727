// SPDX-License-Identifier: MIT
/*
 * The detailed error: the message of every kind, pinned word for word, the
 * cause chain, truncation and thread-locality.
 */
#include <pthread.h>

#include "internal.h"
#include "../harness.h"

#define GIB (1024ull * 1024 * 1024)

TEST(no_error_at_start_and_after_clear)
{
	EXPECT_NULL(ortmem_last_error());
	EXPECT_STREQ("no error", ortmem_last_error_message());
	ortmem__err_plain(-EIO, "x");
	EXPECT_NONNULL(ortmem_last_error());
	ortmem_error_clear();
	EXPECT_NULL(ortmem_last_error());
}

TEST(tier_exhausted_message_and_figures)
{
	const struct ortmem_error *e;

	ASSERT_EQ(-ORTMEM_E_TIER_EXHAUSTED,
		  ortmem__err_tier_exhausted(ORTMEM_TIER_DEVICE,
					     ORTMEM_ROLE_KV_CACHE, 2 * GIB,
					     7 * GIB, 8 * GIB));
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	EXPECT_EQ(ORTMEM_ERR_TIER_EXHAUSTED, e->kind);
	EXPECT_EQ(-ORTMEM_E_TIER_EXHAUSTED, e->code);
	EXPECT_EQ(ORTMEM_TIER_DEVICE, e->tier);
	EXPECT_EQ(ORTMEM_ROLE_KV_CACHE, e->role);
	EXPECT_TRUE(e->has_role);
	EXPECT_EQ(2 * GIB, e->requested);
	EXPECT_EQ(7 * GIB, e->used);
	EXPECT_EQ(8 * GIB, e->limit);
	EXPECT_EQ(1 * GIB, e->available);
	EXPECT_NULL(e->cause);
	EXPECT_STREQ("cannot reserve 2147483648 bytes of device memory for kv-cache: "
		     "7516192768 of 8589934592 bytes are already leased, leaving 1073741824; "
		     "free memory by closing sessions, lower the demand, or raise the device limit",
		     ortmem_last_error_message());
}

TEST(tier_exhausted_over_limit_leaves_zero_available)
{
	ortmem__err_tier_exhausted(ORTMEM_TIER_HOST, ORTMEM_ROLE_WEIGHTS, 1, 10, 8);
	EXPECT_EQ(0, ortmem_last_error()->available);
}

TEST(invalid_request_message)
{
	ASSERT_EQ(-EINVAL, ortmem__err_invalid(ORTMEM_TIER_HOST, 0,
					       "size 0 is not allowed"));
	EXPECT_EQ(ORTMEM_ERR_INVALID_REQUEST, ortmem_last_error()->kind);
	EXPECT_EQ(-EINVAL, ortmem_last_error()->code);
	EXPECT_STREQ("invalid request for 0 bytes of host memory: size 0 is not allowed; "
		     "correct the request (retrying it unchanged will fail again)",
		     ortmem_last_error_message());
}

TEST(allocation_failed_message_keeps_backend_reason)
{
	ASSERT_EQ(-ENOMEM,
		  ortmem__err_alloc_failed(-ENOMEM, ORTMEM_TIER_DEVICE, 4096,
					   "cuMemAlloc_v2 returned CUDA_ERROR_OUT_OF_MEMORY (2)"));
	EXPECT_EQ(ORTMEM_ERR_ALLOCATION_FAILED, ortmem_last_error()->kind);
	EXPECT_STREQ("cuMemAlloc_v2 returned CUDA_ERROR_OUT_OF_MEMORY (2)",
		     ortmem_last_error()->reason);
	EXPECT_STREQ("cannot allocate 4096 bytes of device memory: cuMemAlloc_v2 returned "
		     "CUDA_ERROR_OUT_OF_MEMORY (2) (Cannot allocate memory); the request was "
		     "within budget, so free device memory held outside ortmem or lower the demand",
		     ortmem_last_error_message());
}

/* A reason longer than its field is cut at a word and marked, not
 * mid-sentence without a sign. */
TEST(long_reasons_are_cut_at_a_word_and_marked)
{
	char text[1024] = "", small[40];
	const char *r, *mark;
	size_t kept;
	int i;

	for (i = 0; i < 60; i++)
		strcat(text, i % 7 ? "cause, " : "spill directory ");
	ortmem__err_plain(-EIO, "%s", text);
	r = ortmem_last_error()->reason;
	EXPECT_LT(strlen(r), (size_t)ORTMEM_ERROR_REASON_MAX);
	mark = strstr(r, " [...]");
	ASSERT_NONNULL(mark);
	EXPECT_EQ(0, strcmp(mark, " [...]"));
	kept = (size_t)(mark - r);
	EXPECT_LT((size_t)ORTMEM_ERROR_REASON_MAX / 2, kept);
	EXPECT_EQ(0, strncmp(r, text, kept));
	/* The cut falls between words. */
	EXPECT_TRUE(text[kept] == ' ' || text[kept] == ',');
	EXPECT_NE(' ', r[kept - 1]);
	/* A reason that fits is kept as it is. */
	ortmem__err_plain(-EIO, "%.*s", ORTMEM_ERROR_REASON_MAX - 1, text);
	EXPECT_EQ((size_t)ORTMEM_ERROR_REASON_MAX - 1, strlen(ortmem_last_error()->reason));
	EXPECT_NULL(strstr(ortmem_last_error()->reason, "[...]"));
	/* One word longer than the field is cut, and still marked. */
	memset(text, 'x', 600);
	text[600] = '\0';
	ortmem__text_fit(small, sizeof(small), text);
	EXPECT_EQ(sizeof(small) - 1, strlen(small));
	EXPECT_NONNULL(strstr(small, " [...]"));
}

TEST(allocation_failed_never_reports_success)
{
	EXPECT_EQ(-EIO, ortmem__err_alloc_failed(0, ORTMEM_TIER_DISK, 1, "odd"));
	EXPECT_EQ(-EIO, ortmem__err_alloc_failed(5, ORTMEM_TIER_DISK, 1, "odd"));
}

TEST(capacity_unavailable_without_cause)
{
	ASSERT_EQ(-ORTMEM_E_CAPACITY_UNAVAILABLE,
		  ortmem__err_capacity(false, ORTMEM_TIER_HOST,
				       ORTMEM_ROLE_ACTIVATION, 1000, 600,
				       "reclaim stopped short of its target"));
	EXPECT_NULL(ortmem_last_error()->cause);
	EXPECT_STREQ("cannot make 1000 bytes of host capacity available for activation: "
		     "only 600 bytes became available; reclaim stopped short of its target; "
		     "free memory, lower the demand, or raise the host limit",
		     ortmem_last_error_message());
}

TEST(capacity_unavailable_keeps_the_refusal_it_reports_as_cause)
{
	const struct ortmem_error *e, *cause;

	ortmem__err_tier_exhausted(ORTMEM_TIER_DISK, ORTMEM_ROLE_KV_CACHE, 300,
				   900, 1000);
	ortmem__err_capacity(true, ORTMEM_TIER_HOST,
			     ORTMEM_ROLE_WORKSPACE | ORTMEM_ROLE_STEP_SCOPED,
			     300, 0, "demotion to disk was refused");
	e = ortmem_last_error();
	ASSERT_NONNULL(e);
	cause = e->cause;
	ASSERT_NONNULL(cause);
	EXPECT_EQ(ORTMEM_ERR_TIER_EXHAUSTED, cause->kind);
	EXPECT_EQ(ORTMEM_TIER_DISK, cause->tier);
	EXPECT_NULL(cause->cause);
	EXPECT_STREQ("cannot make 300 bytes of host capacity available for step-scoped "
		     "workspace: only 0 bytes became available; demotion to disk was refused; "
		     "free memory, lower the demand, or raise the host limit; caused by: "
		     "cannot reserve 300 bytes of disk memory for kv-cache: 900 of 1000 bytes "
		     "are already leased, leaving 100; free memory by closing sessions, lower "
		     "the demand, or raise the disk limit",
		     ortmem_last_error_message());
}

TEST(plain_error_message)
{
	ASSERT_EQ(-ORTMEM_E_CHECKSUM,
		  ortmem__err_plain(-ORTMEM_E_CHECKSUM, "extent 3 of /tmp/x is corrupt"));
	EXPECT_EQ(ORTMEM_ERR_NONE, ortmem_last_error()->kind);
	EXPECT_STREQ("extent 3 of /tmp/x is corrupt (Checksum mismatch)",
		     ortmem_last_error_message());
}

TEST(new_error_starts_a_new_chain)
{
	ortmem__err_tier_exhausted(ORTMEM_TIER_DISK, ORTMEM_ROLE_KV_CACHE, 1, 1, 1);
	ortmem__err_invalid(-1, 0, "x");
	EXPECT_NULL(ortmem_last_error()->cause);
}

TEST(deep_chain_keeps_the_newest_links)
{
	const struct ortmem_error *e;
	int i, links = 0;

	ortmem__err_plain(-EIO, "root");
	for (i = 0; i < 20; i++)
		ortmem__err_capacity(true, ORTMEM_TIER_HOST, ORTMEM_ROLE_WEIGHTS,
				     (uint64_t)i, 0, "level %d", i);
	e = ortmem_last_error();
	EXPECT_STREQ("level 19", e->reason);
	for (; e; e = e->cause)
		links++;
	EXPECT_EQ(8, links);
}

TEST(format_truncates_but_reports_full_length)
{
	char small[16], big[1024];
	int full;

	ortmem__err_invalid(ORTMEM_TIER_HOST, 1, "too small");
	full = ortmem_error_format(ortmem_last_error(), big, sizeof(big));
	ASSERT_GT(full, 16);
	EXPECT_EQ((size_t)full, strlen(big));
	EXPECT_EQ(full, ortmem_error_format(ortmem_last_error(), small, sizeof(small)));
	EXPECT_EQ(15u, strlen(small));
	EXPECT_EQ(0, strncmp(small, big, 15));
	EXPECT_EQ(full, ortmem_error_format(ortmem_last_error(), NULL, 0));
	EXPECT_EQ(-EINVAL, ortmem_error_format(ortmem_last_error(), NULL, 4));
	EXPECT_EQ(8, ortmem_error_format(NULL, big, sizeof(big)));
	EXPECT_STREQ("no error", big);
}

TEST(format_names_unknown_tier_and_role)
{
	ortmem__err_tier_exhausted(-1, 77, 1, 0, 0);
	EXPECT_STREQ("cannot reserve 1 bytes of any memory for an unknown role: 0 of 0 "
		     "bytes are already leased, leaving 0; free memory by closing sessions, "
		     "lower the demand, or raise the any limit",
		     ortmem_last_error_message());
}

static void *fail_in_thread(void *arg)
{
	(void)arg;
	ortmem__err_plain(-EPERM, "thread's own");
	return (void *)(uintptr_t)(ortmem_last_error()->code == -EPERM);
}

TEST(errors_are_thread_local)
{
	pthread_t t;
	void *ok;

	ortmem__err_plain(-EIO, "main's own");
	ASSERT_EQ(0, pthread_create(&t, NULL, fail_in_thread, NULL));
	ASSERT_EQ(0, pthread_join(t, &ok));
	EXPECT_TRUE(ok);
	EXPECT_STREQ("main's own", ortmem_last_error()->reason);
}

struct opts_v2 {
	size_t sz;
	int a;
	int b;
	uint64_t c;
};

TEST(opts_valid_accepts_null_older_and_zero_tailed_newer)
{
	struct opts_v2 o = { .sz = offsetof(struct opts_v2, b), .a = 1, .b = 9 };
	unsigned char newer[sizeof(struct opts_v2) + 16] = { 0 };
	size_t sz = sizeof(newer);

	EXPECT_EQ(0, ortmem__opts_valid(NULL, sizeof(o), "opts_v2"));
	EXPECT_EQ(0, ortmem__opts_valid(&o, sizeof(o), "opts_v2"));
	/* An older struct lacks b and c: their defaults apply. */
	EXPECT_EQ(1, ORTMEM_OPTS_GET(&o, a, 5));
	EXPECT_EQ(5, ORTMEM_OPTS_GET(&o, b, 5));
	EXPECT_EQ(3u, ORTMEM_OPTS_GET(&o, c, 3u));
	memcpy(newer, &sz, sizeof(sz));
	EXPECT_EQ(0, ortmem__opts_valid(newer, sizeof(o), "opts_v2"));
}

TEST(opts_valid_refuses_unknown_fields_and_bad_size)
{
	unsigned char newer[sizeof(struct opts_v2) + 16] = { 0 };
	size_t sz = sizeof(newer), tiny = 3;

	memcpy(newer, &sz, sizeof(sz));
	newer[sizeof(struct opts_v2) + 5] = 1;
	EXPECT_EQ(-EINVAL, ortmem__opts_valid(newer, sizeof(struct opts_v2), "opts_v2"));
	EXPECT_NONNULL(strstr(ortmem_last_error()->reason, "struct opts_v2 sets fields past byte 24"));
	memcpy(newer, &tiny, sizeof(tiny));
	EXPECT_EQ(-EINVAL, ortmem__opts_valid(newer, sizeof(struct opts_v2), "opts_v2"));
	EXPECT_NONNULL(strstr(ortmem_last_error()->reason, "declare it with ORTMEM_OPTS()"));
}

TEST_HARNESS_MAIN
