// SPDX-License-Identifier: MIT
/*
 * The published statistics file, the governor's lowest floor (it reads the
 * tiers' counters and calls nothing else of the governor).
 *
 * Each governor keeps one small file, RUNDIR/gov.PID.SERIAL, mapped shared,
 * so that ortmem-stat sees every process on the node without talking to
 * it.  Writers never make a system call: a change sets a dirty flag and the
 * thread that wins the sequence counter (odd while writing, as a kernel
 * seqlock) copies the counters until nothing is dirty.  Readers retry while
 * the counter is odd or moved.  The file goes at close; a file whose
 * process is gone is stale, and readers skip and remove it.
 *
 * Versions: the record only grows at its end.  The header says the
 * version and the record's size; a reader takes the prefix it knows and
 * zeroes the rest, so it reads older files (version 1 has no prefetch
 * figures) and newer ones alike.  Readers of version 1 (libortmem 0.2
 * before the prefetch figures) want their exact size and skip a newer
 * file rather than misread it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gov_internal.h"

#define PUB_MAGIC 0x5354524fu	/* "ORTS" */
#define PUB_VERSION ORTMEM_GOV_RECORD_VERSION
#define PUB_READ_TRIES 1000
#define PUB_MAX 4096		/* a file of any version: one page at most */
/* Version 1's record: everything before @version. */
#define REC_V1_SIZE offsetof(struct ortmem_gov_record, version)
/* Version 2's: up to the prefetch figures. */
#define REC_V2_SIZE (offsetof(struct ortmem_gov_record, prefetch) + \
		     sizeof(struct ortmem_gov_prefetch_record))

/* The file's header as a reader sees it. */
struct pub_head {
	uint32_t magic;
	uint32_t version;
	uint32_t rec_size;	/* the writer's sizeof(struct ortmem_gov_record) */
	uint32_t pad;
	uint64_t seq;		/* odd while a writer copies */
};

/* The file as this library writes it. */
struct pub_file {
	uint32_t magic;
	uint32_t version;
	uint32_t rec_size;
	uint32_t pad;
	_Atomic uint64_t seq;
	struct ortmem_gov_record rec;
};

_Static_assert(offsetof(struct pub_file, seq) == offsetof(struct pub_head, seq) &&
	       offsetof(struct pub_file, rec) == sizeof(struct pub_head),
	       "the writer's and the reader's headers differ");
_Static_assert(sizeof(struct pub_file) <= PUB_MAX, "the record outgrew a page");

struct gov_pub {
	struct pub_file *map;
	_Atomic int dirty;
	char path[PATH_MAX];
};

extern char *program_invocation_short_name;

/* @buf: the run folder, created if missing; false when there is none. */
static bool run_dir_pick(const char *opt, char *buf, size_t len, bool create)
{
	const char *env = getenv("ORTMEM_RUN_DIR"), *xdg;

	if (opt || (env && *env)) {
		snprintf(buf, len, "%s", opt ? opt : env);
		if (create)
			mkdir(buf, 0755);
		return true;
	}
	/* Sticky and open to all, as /dev/shm: one place for every user's
	 * processes; files are created exclusively and never followed. */
	if (create && mkdir("/run/ortmem", 01777) == 0)
		chmod("/run/ortmem", 01777);
	if (access("/run/ortmem", create ? W_OK | X_OK : R_OK | X_OK) == 0) {
		snprintf(buf, len, "/run/ortmem");
		return true;
	}
	xdg = getenv("XDG_RUNTIME_DIR");
	if (!xdg || !*xdg)
		return false;
	snprintf(buf, len, "%s/ortmem", xdg);
	if (create)
		mkdir(buf, 0700);
	return true;
}

/* The prefetch counters (gov->pfc, counted by gov_prefetch.c). */
static void pub_copy_prefetch(struct ortmem_gov *gov,
			      struct ortmem_gov_prefetch_record *p)
{
	struct gov_pf_counts *c = &gov->pfc;

	p->issued = atomic_load_explicit(&c->issued, memory_order_relaxed);
	p->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
	p->hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
	p->waits = atomic_load_explicit(&c->waits, memory_order_relaxed);
	p->wait_ns = atomic_load_explicit(&c->wait_ns, memory_order_relaxed);
	p->misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
	p->refused = atomic_load_explicit(&c->refused, memory_order_relaxed);
	p->failed = atomic_load_explicit(&c->failed, memory_order_relaxed);
}

static void pub_copy(struct ortmem_gov *gov, struct ortmem_gov_record *r)
{
	int t;

	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		struct gov_tier *gt = &gov->tiers[t];
		struct ortmem_gov_tier_record *tr = &r->tier[t];

		tr->used = atomic_load_explicit(&gt->used, memory_order_relaxed);
		tr->limit = atomic_load_explicit(&gt->limit, memory_order_relaxed);
		tr->peak = atomic_load_explicit(&gt->peak, memory_order_relaxed);
		tr->demoted_bytes = atomic_load_explicit(&gt->demoted,
							 memory_order_relaxed);
		tr->promoted_bytes = atomic_load_explicit(&gt->promoted,
							  memory_order_relaxed);
		tr->quarantined_bytes = atomic_load_explicit(&gt->quarantined,
							     memory_order_relaxed);
		tr->refusals = atomic_load_explicit(&gt->refusals,
						    memory_order_relaxed);
		tr->reclaim_calls = atomic_load_explicit(&gt->reclaim_calls,
							 memory_order_relaxed);
	}
	pub_copy_prefetch(gov, &r->prefetch);
}

void ortmem__publish(struct ortmem_gov *gov)
{
	struct gov_pub *p = gov->pub;

	if (!p)
		return;
	atomic_store_explicit(&p->dirty, 1, memory_order_release);
	for (;;) {
		uint64_t s = atomic_load_explicit(&p->map->seq,
						  memory_order_relaxed);

		/* A writer is copying: it sees our dirty flag and copies
		 * again before it lets go. */
		if (s & 1)
			return;
		if (!atomic_compare_exchange_weak_explicit(&p->map->seq, &s,
							   s + 1,
							   memory_order_acq_rel,
							   memory_order_relaxed))
			continue;
		atomic_thread_fence(memory_order_release);
		while (atomic_exchange_explicit(&p->dirty, 0,
						memory_order_acq_rel))
			pub_copy(gov, &p->map->rec);
		atomic_store_explicit(&p->map->seq, s + 2, memory_order_release);
		if (!atomic_load_explicit(&p->dirty, memory_order_acquire))
			return;
	}
}

int ortmem__publish_open(struct ortmem_gov *gov, const char *run_dir,
			 const char *name)
{
	char dir[PATH_MAX - 64];
	struct gov_pub *p;
	int fd;

	if (!run_dir_pick(run_dir, dir, sizeof(dir), true)) {
		pr_debug("no run folder (/run/ortmem not writable, XDG_RUNTIME_DIR unset): statistics not published");
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	snprintf(p->path, sizeof(p->path), "%s/gov.%d.%" PRIu64, dir,
		 (int)getpid(), gov->serial);
	fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0 && errno == EEXIST) {
		/* Left by a process that had our pid before. */
		unlink(p->path);
		fd = open(p->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
				   O_CLOEXEC, 0644);
	}
	if (fd < 0 || ftruncate(fd, sizeof(struct pub_file)))
		goto fail;
	p->map = mmap(NULL, sizeof(struct pub_file), PROT_READ | PROT_WRITE,
		      MAP_SHARED, fd, 0);
	if (p->map == MAP_FAILED)
		goto fail;
	close(fd);
	p->map->magic = PUB_MAGIC;
	p->map->version = PUB_VERSION;
	p->map->rec_size = sizeof(struct ortmem_gov_record);
	p->map->rec.sz = sizeof(struct ortmem_gov_record);
	p->map->rec.pid = (int32_t)getpid();
	p->map->rec.serial = gov->serial;
	p->map->rec.version = PUB_VERSION;
	snprintf(p->map->rec.name, sizeof(p->map->rec.name), "%s",
		 name ? name : program_invocation_short_name);
	gov->pub = p;
	ortmem__publish(gov);
	return 0;
fail:
	pr_debug("cannot publish statistics in %s: %s", p->path,
		 strerror(errno));
	if (fd >= 0) {
		close(fd);
		unlink(p->path);
	}
	free(p);
	return 0;
}

void ortmem__publish_close(struct ortmem_gov *gov)
{
	struct gov_pub *p = gov->pub;

	if (!p)
		return;
	gov->pub = NULL;
	unlink(p->path);
	munmap(p->map, sizeof(struct pub_file));
	free(p);
}

/* A header of a version and size this reader can take the prefix of. */
static bool pub_head_ok(const struct pub_head *h, size_t file_size)
{
	if (h->magic != PUB_MAGIC || !h->version)
		return false;
	if (h->version == 1 ? h->rec_size != REC_V1_SIZE :
			      h->rec_size < REC_V2_SIZE)
		return false;
	return file_size == sizeof(*h) + h->rec_size;
}

/* The record of @buf, as far as this library knows it, the rest zeroed. */
static void pub_take(const unsigned char *buf, const struct pub_head *h,
		     struct ortmem_gov_record *rec)
{
	size_t n = h->rec_size < sizeof(*rec) ? h->rec_size : sizeof(*rec);

	memset(rec, 0, sizeof(*rec));
	memcpy(rec, buf + sizeof(*h), n);
	rec->sz = sizeof(*rec);
	rec->version = h->version;
	rec->reserved = 0;
	rec->name[sizeof(rec->name) - 1] = '\0';
}

/*
 * One consistent copy of the record in the @file_size bytes of @fd;
 * -EPROTO for what is no record this reader can read, -EAGAIN while a
 * writer holds it.
 */
static int pub_read(int fd, size_t file_size, struct ortmem_gov_record *rec)
{
	_Alignas(8) unsigned char buf[PUB_MAX];
	struct pub_head h;
	uint64_t s2;
	int i;

	if (file_size < sizeof(h) || file_size > sizeof(buf))
		return -EPROTO;
	for (i = 0; i < PUB_READ_TRIES; i++) {
		if (pread(fd, buf, file_size, 0) != (ssize_t)file_size)
			return -EIO;
		memcpy(&h, buf, sizeof(h));
		if (!pub_head_ok(&h, file_size))
			return -EPROTO;
		if (!(h.seq & 1) &&
		    pread(fd, &s2, sizeof(s2), offsetof(struct pub_head, seq)) ==
			    (ssize_t)sizeof(s2) && h.seq == s2) {
			pub_take(buf, &h, rec);
			return 0;
		}
		sched_yield();
	}
	return -EAGAIN;
}

/* gov.PID.SERIAL, nothing else; *@pidp the pid. */
static bool pub_name(const char *n, int *pidp)
{
	char *end;
	long pid;

	if (strncmp(n, "gov.", 4))
		return false;
	errno = 0;
	pid = strtol(n + 4, &end, 10);
	if (errno || end == n + 4 || *end != '.' || pid <= 0 || pid > INT_MAX)
		return false;
	n = end + 1;
	if (*n < '0' || *n > '9')
		return false;
	strtoull(n, &end, 10);
	if (errno || *end)
		return false;
	*pidp = (int)pid;
	return true;
}

/* The process is gone (in our pid namespace): its file is stale. */
static bool pid_gone(int pid)
{
	return kill(pid, 0) && errno == ESRCH;
}

static int scan_one(int dfd, const char *n, ortmem_gov_scan_fn fn, void *arg)
{
	struct ortmem_gov_record rec;
	struct stat st;
	int pid, fd, ret;

	if (!pub_name(n, &pid))
		return 0;
	if (pid_gone(pid)) {
		unlinkat(dfd, n, 0);
		return 0;
	}
	/* Never block on a FIFO or follow a link someone planted. */
	fd = openat(dfd, n, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > PUB_MAX) {
		close(fd);
		return 0;
	}
	ret = pub_read(fd, (size_t)st.st_size, &rec);
	close(fd);
	if (ret || rec.pid != pid)
		return 0;
	return fn(&rec, arg);
}

ORTMEM_API int ortmem_gov_scan(const char *run_dir, ortmem_gov_scan_fn fn,
			       void *arg)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (!fn)
		return ortmem__err_invalid(-1, 0, "fn is NULL");
	if (!run_dir_pick(run_dir, dir, sizeof(dir), false))
		return 0;
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return ortmem__err_plain(-errno,
			"cannot read the run folder %s", dir);
	}
	while (!ret && (de = readdir(d)))
		ret = scan_one(dirfd(d), de->d_name, fn, arg);
	closedir(d);
	return ret;
}
