// SPDX-License-Identifier: MIT
/*
 * Logging: silent by default, a callback with a threshold, and the
 * ORTMEM_LOG_LEVEL default logger.
 */
#include "internal.h"
#include "../harness.h"

struct seen {
	int count;
	enum ortmem_log_level last;
	char msg[256];
};

static void collect(enum ortmem_log_level level, const char *msg, void *user)
{
	struct seen *s = user;

	s->count++;
	s->last = level;
	snprintf(s->msg, sizeof(s->msg), "%s", msg);
}

TEST(invalid_level_is_refused_and_named)
{
	struct seen s = { 0 };

	EXPECT_EQ(-EINVAL, ortmem_set_log_fn(collect, &s, -1));
	EXPECT_EQ(-EINVAL, ortmem_set_log_fn(collect, &s, 4));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "log level 4"));
	EXPECT_EQ(0, s.count);
}

TEST(callback_gets_messages_within_threshold)
{
	struct seen s = { 0 };

	ASSERT_EQ(0, ortmem_set_log_fn(collect, &s, ORTMEM_LOG_WARN));
	pr_err("disk %d failed", 3);
	EXPECT_EQ(1, s.count);
	EXPECT_EQ(ORTMEM_LOG_ERROR, s.last);
	EXPECT_STREQ("disk 3 failed", s.msg);
	pr_warn("falling back");
	EXPECT_EQ(2, s.count);
	EXPECT_EQ(ORTMEM_LOG_WARN, s.last);
	pr_info("not delivered");
	pr_debug("not delivered either");
	EXPECT_EQ(2, s.count);
	EXPECT_STREQ("falling back", s.msg);
}

TEST(messages_arrive_without_a_trailing_newline)
{
	struct seen s = { 0 };

	ASSERT_EQ(0, ortmem_set_log_fn(collect, &s, ORTMEM_LOG_DEBUG));
	pr_warn("one line\n");
	EXPECT_STREQ("one line", s.msg);
	pr_warn("two\nlines\n\n");
	EXPECT_STREQ("two\nlines", s.msg);
	pr_warn("\n");
	EXPECT_STREQ("", s.msg);
	EXPECT_EQ(3, s.count);
	ASSERT_EQ(0, ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_DEBUG));
}

TEST(null_callback_silences)
{
	struct seen s = { 0 };

	ASSERT_EQ(0, ortmem_set_log_fn(collect, &s, ORTMEM_LOG_DEBUG));
	ASSERT_EQ(0, ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_DEBUG));
	pr_err("dropped");
	EXPECT_EQ(0, s.count);
}

TEST(logging_keeps_errno_and_truncates_long_messages)
{
	struct seen s = { 0 };
	char big[4000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ASSERT_EQ(0, ortmem_set_log_fn(collect, &s, ORTMEM_LOG_DEBUG));
	errno = ENOSPC;
	pr_debug("%s", big);
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(1, s.count);
	EXPECT_EQ(sizeof(s.msg) - 1, strlen(s.msg));
}

TEST(env_level_drives_default_stderr_logger)
{
	int fds[2];
	char buf[512] = { 0 };
	pid_t pid;
	ssize_t n;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		dup2(fds[1], 2);
		setenv("ORTMEM_LOG_LEVEL", "info", 1);
		pr_info("shown %d", 1);
		pr_debug("hidden");
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	waitpid(pid, NULL, 0);
	ASSERT_GT(n, 0);
	EXPECT_STREQ("libortmem: info: shown 1\n", buf);
}

TEST(bad_env_level_is_reported_on_stderr)
{
	int fds[2];
	char buf[512] = { 0 };
	pid_t pid;
	ssize_t n;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		dup2(fds[1], 2);
		setenv("ORTMEM_LOG_LEVEL", "loud", 1);
		/* The first use of the logger reads the environment. */
		ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_ERROR);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	waitpid(pid, NULL, 0);
	ASSERT_GT(n, 0);
	EXPECT_NONNULL(strstr(buf, "ORTMEM_LOG_LEVEL=loud is not a level"));
}

TEST_HARNESS_MAIN
