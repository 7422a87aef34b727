// SPDX-License-Identifier: MIT
/*
 * Published statistics (lib/gov/gov_publish.c): a governor's file appears
 * at open with its name and figures, follows reserve and release, goes at
 * close; ORTMEM_GOV_NO_PUBLISH publishes nothing; what is not a governor's
 * file in the folder (a FIFO, a link, a short file, a stale file) is skipped
 * without blocking, the stale one removed; readers racing writers always
 * see a consistent record.  Files of record version 1 (no prefetch
 * figures) and of a later version are read by the prefix this library
 * knows; a header that does not fit its file is skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#include "../harness.h"

#define MIB (1024ull * 1024)

struct seen {
	int n;
	struct ortmem_gov_record rec[8];
};

static int collect(const struct ortmem_gov_record *rec, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->rec[s->n] = *rec;
	s->n++;
	return 0;
}

static int files_in(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

FIXTURE(pub) {
	char dir[64];
};

FIXTURE_SETUP(pub)
{
	strcpy(self->dir, "/tmp/ortmem-pub-XXXXXX");
	ASSERT_NONNULL(mkdtemp(self->dir));
}

FIXTURE_TEARDOWN(pub)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->dir);
	if (system(cmd))
		fprintf(stderr, "# cannot remove %s\n", self->dir);
}

TEST_F(pub, follows_reserve_release_and_goes_at_close)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 64 * MIB },
		    .run_dir = self->dir, .name = "pub-test");
	struct ortmem_handle h;
	struct ortmem_gov *gov;
	struct seen s = { 0 };

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	ASSERT_EQ(1, s.n);
	EXPECT_EQ(getpid(), s.rec[0].pid);
	EXPECT_STREQ("pub-test", s.rec[0].name);
	EXPECT_EQ(ORTMEM_GOV_RECORD_VERSION, s.rec[0].version);
	EXPECT_EQ(sizeof(struct ortmem_gov_record), s.rec[0].sz);
	EXPECT_EQ(0u, s.rec[0].prefetch.issued);
	EXPECT_EQ(64 * MIB, s.rec[0].tier[ORTMEM_TIER_HOST].limit);
	EXPECT_EQ(0, s.rec[0].tier[ORTMEM_TIER_HOST].used);

	/* Larger than a thread's credit batch: charged exactly. */
	ASSERT_EQ(0, ortmem_gov_reserve(gov, ORTMEM_TIER_HOST, 0, 40 * MIB, &h));
	s.n = 0;
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	ASSERT_EQ(1, s.n);
	EXPECT_LE(40 * MIB, s.rec[0].tier[ORTMEM_TIER_HOST].used);
	EXPECT_LE(40 * MIB, s.rec[0].tier[ORTMEM_TIER_HOST].peak);
	ASSERT_EQ(0, ortmem_gov_release(gov, h, 0));
	{
		struct ortmem_gov_stats st = { .sz = sizeof(st) };

		ASSERT_EQ(0, ortmem_gov_stats(gov, &st));	/* drains credit */
	}
	s.n = 0;
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	EXPECT_EQ(0, s.rec[0].tier[ORTMEM_TIER_HOST].used);
	EXPECT_LE(40 * MIB, s.rec[0].tier[ORTMEM_TIER_HOST].peak);
	ortmem_gov_close(gov);
	EXPECT_EQ(0, files_in(self->dir));
}

TEST_F(pub, no_publish_flag)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .run_dir = self->dir,
		    .flags = ORTMEM_GOV_NO_PUBLISH);
	struct ortmem_gov *gov;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	EXPECT_EQ(0, files_in(self->dir));
	ortmem_gov_close(gov);
}

static void keep_log(enum ortmem_log_level level, const char *msg, void *user)
{
	(void)level;
	snprintf(user, 512, "%s", msg);
}

/* A folder that cannot hold the file: the governor opens unpublished and
 * says why at debug level, in one line (the logger adds the newline). */
TEST_F(pub, unusable_folder_is_logged_in_one_line)
{
	char bad[128], msg[512] = "";
	struct ortmem_gov *gov;
	size_t n;

	snprintf(bad, sizeof(bad), "%s/not-a-folder", self->dir);
	ASSERT_EQ(0, close(open(bad, O_CREAT | O_WRONLY, 0600)));
	strcat(bad, "/run");
	{
		ORTMEM_OPTS(ortmem_gov_opts, o, .run_dir = bad);

		ASSERT_EQ(0, ortmem_set_log_fn(keep_log, msg, ORTMEM_LOG_DEBUG));
		ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
		ortmem_set_log_fn(NULL, NULL, ORTMEM_LOG_DEBUG);
	}
	EXPECT_NONNULL(strstr(msg, "cannot publish statistics in"));
	EXPECT_NONNULL(strstr(msg, bad));
	n = strlen(msg);
	ASSERT_LT(0u, n);
	EXPECT_NE('\n', msg[n - 1]);
	ortmem_gov_close(gov);
}

TEST_F(pub, environment_picks_the_folder)
{
	struct ortmem_gov *gov;
	struct seen s = { 0 };

	ASSERT_EQ(0, setenv("ORTMEM_RUN_DIR", self->dir, 1));
	ASSERT_EQ(0, ortmem_gov_open(NULL, &gov));
	EXPECT_EQ(1, files_in(self->dir));
	ASSERT_EQ(0, ortmem_gov_scan(NULL, collect, &s));
	EXPECT_EQ(1, s.n);
	ortmem_gov_close(gov);
	unsetenv("ORTMEM_RUN_DIR");
}

TEST_F(pub, hostile_folder_contents_are_skipped)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .run_dir = self->dir);
	char path[128];
	struct ortmem_gov *gov;
	struct seen s = { 0 };
	pid_t dead;
	int fd;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	/* A FIFO under a live pid's name (ours): must not block. */
	snprintf(path, sizeof(path), "%s/gov.%d.999", self->dir, (int)getpid());
	ASSERT_EQ(0, mkfifo(path, 0600));
	/* A link to our real file: never followed. */
	snprintf(path, sizeof(path), "%s/gov.%d.998", self->dir, (int)getpid());
	ASSERT_EQ(0, symlink("/dev/zero", path));
	/* A short file and a name that is not a governor's. */
	snprintf(path, sizeof(path), "%s/gov.%d.997", self->dir, (int)getpid());
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(3, write(fd, "abc", 3));
	close(fd);
	snprintf(path, sizeof(path), "%s/gov.x.1", self->dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	/* A stale file: a process that is gone. */
	dead = fork();
	ASSERT_LE(0, dead);
	if (!dead)
		_exit(0);
	ASSERT_EQ(dead, waitpid(dead, NULL, 0));
	snprintf(path, sizeof(path), "%s/gov.%d.1", self->dir, (int)dead);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_LE(0, fd);
	close(fd);

	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	EXPECT_EQ(1, s.n);	/* only the real governor */
	EXPECT_NE(0, access(path, F_OK));	/* the stale one removed */
	ortmem_gov_close(gov);
}

/* The file's header, as gov_publish.c documents it. */
struct file_head {
	uint32_t magic, version, rec_size, pad;
	uint64_t seq;
};

#define FILE_MAGIC 0x5354524fu
#define V1_SIZE offsetof(struct ortmem_gov_record, version)

/* gov.OURPID.@serial in @dir: @head, then @rec_bytes of @rec, then
 * @extra bytes of 0xab (fields of a version this test does not know). */
static void plant(const char *dir, int serial, struct file_head head,
		  const struct ortmem_gov_record *rec, size_t rec_bytes,
		  size_t extra)
{
	unsigned char buf[8192];
	char path[128];
	int fd;

	memset(buf, 0xab, sizeof(buf));
	memcpy(buf, &head, sizeof(head));
	memcpy(buf + sizeof(head), rec, rec_bytes);
	snprintf(path, sizeof(path), "%s/gov.%d.%d", dir, (int)getpid(), serial);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || write(fd, buf, sizeof(head) + rec_bytes + extra) !=
		      (ssize_t)(sizeof(head) + rec_bytes + extra))
		abort();
	close(fd);
}

static void record_of(struct ortmem_gov_record *r, int serial, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->sz = sizeof(*r);
	r->pid = getpid();
	r->serial = serial;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->tier[ORTMEM_TIER_HOST].used = 5 * MIB;
	r->tier[ORTMEM_TIER_HOST].limit = 8 * MIB;
}

TEST_F(pub, older_and_newer_record_versions_are_read_by_prefix)
{
	struct ortmem_gov_record r, *old = NULL, *newer = NULL;
	struct seen s = { 0 };
	int i;

	/* Version 1: the record up to the tiers, no prefetch figures. */
	record_of(&r, 1, "v1");
	memset(&r.prefetch, 0x77, sizeof(r.prefetch));	/* not in the file */
	plant(self->dir, 1, (struct file_head){ FILE_MAGIC, 1, V1_SIZE, 0, 4 },
	      &r, V1_SIZE, 0);
	/* A later version: ours with 16 bytes more at the end. */
	record_of(&r, 2, "v3");
	r.version = 3;
	r.prefetch.hits = 9;
	r.prefetch.wait_ns = 123456789;
	plant(self->dir, 2, (struct file_head){ FILE_MAGIC, 3, sizeof(r) + 16, 0, 6 },
	      &r, sizeof(r), 16);
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	ASSERT_EQ(2, s.n);
	for (i = 0; i < 2; i++) {
		if (s.rec[i].serial == 1)
			old = &s.rec[i];
		else
			newer = &s.rec[i];
	}
	ASSERT_NONNULL(old);
	ASSERT_NONNULL(newer);
	EXPECT_EQ(1u, old->version);
	EXPECT_STREQ("v1", old->name);
	EXPECT_EQ(5 * MIB, old->tier[ORTMEM_TIER_HOST].used);
	EXPECT_EQ(8 * MIB, old->tier[ORTMEM_TIER_HOST].limit);
	EXPECT_EQ(0u, old->prefetch.hits);	/* zeroed, not read past */
	EXPECT_EQ(0u, old->prefetch.issued);
	EXPECT_EQ(sizeof(struct ortmem_gov_record), old->sz);
	EXPECT_EQ(3u, newer->version);
	EXPECT_STREQ("v3", newer->name);
	EXPECT_EQ(9u, newer->prefetch.hits);
	EXPECT_EQ(123456789u, newer->prefetch.wait_ns);
	EXPECT_EQ(5 * MIB, newer->tier[ORTMEM_TIER_HOST].used);
}

TEST_F(pub, headers_that_do_not_fit_their_file_are_skipped)
{
	struct ortmem_gov_record r;
	struct seen s = { 0 };

	record_of(&r, 1, "bad");
	/* Version 2 must hold the prefetch figures. */
	plant(self->dir, 1, (struct file_head){ FILE_MAGIC, 2, V1_SIZE, 0, 2 },
	      &r, V1_SIZE, 0);
	/* Version 1 has exactly its size. */
	plant(self->dir, 2, (struct file_head){ FILE_MAGIC, 1, sizeof(r), 0, 2 },
	      &r, sizeof(r), 0);
	/* No version 0, and the magic must match. */
	plant(self->dir, 3, (struct file_head){ FILE_MAGIC, 0, sizeof(r), 0, 2 },
	      &r, sizeof(r), 0);
	plant(self->dir, 4, (struct file_head){ FILE_MAGIC ^ 1, 2, sizeof(r), 0, 2 },
	      &r, sizeof(r), 0);
	/* A size the file does not have: longer, then shorter. */
	plant(self->dir, 5, (struct file_head){ FILE_MAGIC, 2, sizeof(r) + 8, 0, 2 },
	      &r, sizeof(r), 0);
	plant(self->dir, 6, (struct file_head){ FILE_MAGIC, 2, sizeof(r), 0, 2 },
	      &r, sizeof(r), 8);
	/* A writer that never finishes (the count stays odd). */
	plant(self->dir, 7, (struct file_head){ FILE_MAGIC, 2, sizeof(r), 0, 3 },
	      &r, sizeof(r), 0);
	/* Larger than a page. */
	plant(self->dir, 8, (struct file_head){ FILE_MAGIC, 3, 4096, 0, 2 },
	      &r, sizeof(r), 4096 - sizeof(r));
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	EXPECT_EQ(0, s.n);
	/* And the same record with a header that fits is read. */
	plant(self->dir, 9, (struct file_head){ FILE_MAGIC, 2, sizeof(r), 0, 2 },
	      &r, sizeof(r), 0);
	ASSERT_EQ(0, ortmem_gov_scan(self->dir, collect, &s));
	EXPECT_EQ(1, s.n);
}

struct race {
	struct ortmem_gov *gov;
	_Atomic int stop;
};

static void *churn(void *arg)
{
	struct race *r = arg;

	while (!r->stop) {
		struct ortmem_handle h;

		if (!ortmem_gov_reserve(r->gov, ORTMEM_TIER_HOST, 0, 3 * MIB, &h))
			ortmem_gov_release(r->gov, h, 0);
	}
	return NULL;
}

static int check_record(const struct ortmem_gov_record *rec, void *arg)
{
	int *bad = arg;
	const struct ortmem_gov_tier_record *t = &rec->tier[ORTMEM_TIER_HOST];

	/* What holds in every state the governor passes through. */
	if (t->limit != 64 * MIB || t->used > t->limit || t->peak > t->limit)
		(*bad)++;
	return 0;
}

static double elapsed_s(struct timespec t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
}

TEST_F(pub, readers_see_consistent_records_while_threads_write)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 64 * MIB },
		    .run_dir = self->dir);
	struct race r = { 0 };
	pthread_t th[4];
	struct timespec t0;
	int i, bad = 0;

	ASSERT_EQ(0, ortmem_gov_open(&o, &r.gov));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn, &r));
	/*
	 * Up to 2000 scans, but no more than 5 s of them: under a sanitizer
	 * on a loaded 2-core machine the four writers starve the reader, and
	 * the harness's 30 s would end the test, not a wrong record.
	 */
	for (i = 0; i < 2000 && (i < 20 || elapsed_s(t0) < 5); i++)
		ASSERT_EQ(0, ortmem_gov_scan(self->dir, check_record, &bad));
	EXPECT_LE(20, i);
	r.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, bad);
	ortmem_gov_close(r.gov);
}

TEST_HARNESS_MAIN
