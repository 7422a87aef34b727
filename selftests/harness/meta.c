// SPDX-License-Identifier: MIT
/*
 * The harness proves itself: run fixtures/planted and check that every
 * planted outcome is reported as what it is, by the harness's TAP and by
 * run_tests.sh's summary.
 */
#include <libgen.h>
#include <limits.h>

#include "../harness.h"

static char out[65536];

/* Path of a file relative to this test program's folder. */
static void sibling(char *buf, size_t len, const char *rel)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	snprintf(buf, len, "%s/%s", dirname(exe), rel);
}

/* Run a shell command, capture stdout+stderr in out[]; return exit status. */
static int capture(const char *cmd)
{
	char full[PATH_MAX * 2];
	size_t used = 0;
	FILE *f;
	int st;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	f = popen(full, "r");
	if (!f)
		return -1;
	while (used < sizeof(out) - 1) {
		size_t n = fread(out + used, 1, sizeof(out) - 1 - used, f);

		if (!n)
			break;
		used += n;
	}
	out[used] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool has_line(const char *prefix)
{
	const char *p = out;
	size_t n = strlen(prefix);

	while (p && *p) {
		if (!strncmp(p, prefix, n))
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

FIXTURE(planted) {
	char prog[PATH_MAX];
	int rc;
};

FIXTURE_SETUP(planted)
{
	sibling(self->prog, sizeof(self->prog), "fixtures/planted");
	ASSERT_EQ(0, access(self->prog, X_OK));
	self->rc = capture(self->prog);
}

FIXTURE_TEARDOWN(planted)
{
}

TEST_F(planted, plan_and_exit_status)
{
	EXPECT_TRUE(has_line("TAP version 13"));
	EXPECT_TRUE(has_line("1..9"));
	EXPECT_EQ(KSFT_FAIL, self->rc);
	EXPECT_TRUE(has_line("# Totals: pass:2 fail:6 xfail:0 xpass:0 skip:1 error:0"));
}

TEST_F(planted, pass_is_ok)
{
	EXPECT_TRUE(has_line("ok 1 global.passes\n"));
}

TEST_F(planted, expect_failure_is_reported_and_test_goes_on)
{
	EXPECT_TRUE(has_line("not ok 2 global.expect_fails_and_goes_on"));
	EXPECT_TRUE(strstr(out, "expected 1 (1) == 2 (2)"));
	EXPECT_TRUE(has_line("after-expect"));
}

TEST_F(planted, assert_failure_stops_test_and_prints_both_values)
{
	EXPECT_TRUE(has_line("not ok 3 global.assert_fails_and_stops"));
	EXPECT_TRUE(strstr(out, "expected 5 (5) == seen (-7)"));
	EXPECT_FALSE(has_line("after-assert"));
}

TEST_F(planted, crash_is_reported_with_its_signal)
{
	EXPECT_TRUE(has_line("not ok 4 global.crashes # CRASH: killed by signal 6"));
}

TEST_F(planted, hang_is_killed_and_reported_as_timeout)
{
	EXPECT_TRUE(has_line("not ok 5 global.hangs # TIMEOUT after 1 seconds"));
}

TEST_F(planted, skip_is_ok_with_reason)
{
	EXPECT_TRUE(has_line("ok 6 global.skips # SKIP no frobnicator here"));
	EXPECT_FALSE(has_line("after-skip"));
}

TEST_F(planted, failure_is_not_masked_by_later_skip)
{
	EXPECT_TRUE(has_line("not ok 7 global.fails_then_skips"));
}

TEST_F(planted, variants_run_each_with_teardown)
{
	EXPECT_TRUE(has_line("ok 8 box.one.holds_one\n"));
	EXPECT_TRUE(has_line("not ok 9 box.two.holds_one"));
	EXPECT_TRUE(has_line("teardown-ran value=1"));
	/* The failing ASSERT in variant two still ran its teardown. */
	EXPECT_TRUE(has_line("teardown-ran value=2"));
}

TEST(filter_runs_only_matching_tests)
{
	char prog[PATH_MAX], cmd[PATH_MAX + 64];

	sibling(prog, sizeof(prog), "fixtures/planted");
	snprintf(cmd, sizeof(cmd), "%s -t box.one", prog);
	ASSERT_EQ(KSFT_PASS, capture(cmd));
	EXPECT_TRUE(has_line("1..1"));
	EXPECT_TRUE(has_line("ok 1 box.one.holds_one"));

	snprintf(cmd, sizeof(cmd), "%s -t global.skips", prog);
	ASSERT_EQ(KSFT_SKIP, capture(cmd));

	snprintf(cmd, sizeof(cmd), "%s -l", prog);
	ASSERT_EQ(KSFT_PASS, capture(cmd));
	EXPECT_TRUE(has_line("global.hangs"));
	EXPECT_TRUE(has_line("box.two.holds_one"));
}

TEST(runner_counts_each_planted_outcome)
{
	char prog[PATH_MAX], runner[PATH_MAX], cmd[PATH_MAX * 2 + 16];

	sibling(prog, sizeof(prog), "fixtures/planted");
	sibling(runner, sizeof(runner), "../run_tests.sh");
	snprintf(cmd, sizeof(cmd), "%s %s", runner, prog);
	ASSERT_EQ(1, capture(cmd));
	EXPECT_TRUE(has_line("2 passed, 6 failed, 1 skipped"));
	EXPECT_TRUE(strstr(out, "FAIL fixtures/planted: not ok 5 global.hangs # TIMEOUT"));
	EXPECT_TRUE(strstr(out, "SKIP fixtures/planted: ok 6 global.skips # SKIP"));
}

/* Programs that print no TAP count once, by exit status and timeout. */
TEST(runner_judges_plain_programs_by_exit_status)
{
	char runner[PATH_MAX], dir[] = "/tmp/ortmem-meta-XXXXXX";
	char cmd[PATH_MAX * 2];
	static const char *const progs[] = {
		"ok:exit 0", "skip:echo no widget; exit 4", "bad:exit 3",
		"slow:sleep 30",
	};
	size_t i;

	sibling(runner, sizeof(runner), "../run_tests.sh");
	ASSERT_NONNULL(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "mkdir %s/g", dir);
	ASSERT_EQ(0, system(cmd));
	for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		const char *colon = strchr(progs[i], ':');

		snprintf(cmd, sizeof(cmd),
			 "printf '#!/bin/sh\\n%s\\n' > %s/g/%.*s && chmod +x %s/g/%.*s",
			 colon + 1, dir, (int)(colon - progs[i]), progs[i], dir,
			 (int)(colon - progs[i]), progs[i]);
		ASSERT_EQ(0, system(cmd));
	}
	snprintf(cmd, sizeof(cmd), "%s -T 1 -p meta %s", runner, dir);
	EXPECT_EQ(1, capture(cmd));
	EXPECT_TRUE(has_line("meta: 1 passed, 2 failed, 1 skipped"));
	EXPECT_TRUE(strstr(out, "TIMEOUT g/slow"));
	EXPECT_TRUE(strstr(out, "FAIL g/bad: exit status 3"));
	EXPECT_TRUE(strstr(out, "SKIP g/skip: no widget"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ(0, system(cmd));
}

TEST_HARNESS_MAIN
