// SPDX-License-Identifier: MIT
/*
 * ortmem-spill - exercise the disk tier: demote data to a spill file, promote
 * it back, verify it, benchmark the engine, and inject failures.
 *
 * The spill file has no name (O_TMPFILE), so every command runs its whole
 * story in one process: write demotes, read demotes then promotes, verify
 * also compares, bench times the transfers.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#define PROG "ortmem-spill"
#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

enum pattern { PAT_SEQ, PAT_RAND };
enum rw { RW_READ, RW_WRITE, RW_MIXED };

struct cfg {
	const char *cmd;
	const char *dir;
	const char *input;
	const char *output;
	uint64_t size;
	uint64_t bs;
	uint64_t budget;
	uint32_t qd;
	uint32_t lanes;
	uint32_t flags;
	uint32_t runs;
	enum pattern pattern;
	enum rw rw;
	bool json;
	bool quiet;
	uint64_t fault_nth;
	int fault;
};

struct job {
	struct cfg *c;
	struct ortmem_spill *s;
	uint64_t nblk;
	uint64_t *ext;
	uint64_t *order;
	uint8_t *src;		/* size bytes, the data demoted */
	uint8_t **bufs;		/* batch buffers for promotion */
	struct ortmem_spill_io *ios;
	uint32_t batch;
	bool progress;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " COMMAND [OPTIONS]\n"
"\n"
"Commands:\n"
"  write    demote --size bytes (from --input, else a pattern) to extents\n"
"  read     demote, then promote back (to --output when given)\n"
"  verify   demote, promote and compare every byte\n"
"  bench    time demotion and promotion (--rw, --pattern, --runs)\n"
"\n"
"Options:\n"
"  -d, --dir DIR        spill directory (default $ORTMEM_SPILL_DIR or /var/tmp)\n"
"  -s, --size BYTES     bytes to move (K, M, G suffixes; default 256M)\n"
"  -b, --bs BYTES       block (extent) size (default 1M)\n"
"  -q, --qd N           queue depth (default 32)\n"
"  -l, --lanes N        I/O lanes (default 2)\n"
"      --budget BYTES   spill budget (default none)\n"
"      --buffered       no O_DIRECT\n"
"      --no-uring       synchronous pread/pwrite engine\n"
"      --rw MODE        bench: read, write or mixed (default read)\n"
"      --pattern P      bench: seq or rand (default seq)\n"
"      --runs N         bench: repetitions, median reported (default 1)\n"
"  -i, --input FILE     data to demote\n"
"  -o, --output FILE    where read puts the promoted data\n"
"      --fault NTH:WHAT fail the NTH I/O with WHAT: an errno name (EIO,\n"
"                       ENOSPC, EAGAIN, EINTR), short or stall\n"
"      --json           one JSON object on stdout\n"
"      --quiet          no progress bar\n"
"  -h, --help           this text\n"
"  -V, --version        the version\n"
"\n"
"Exit status: 0 ok, 1 runtime failure, 2 usage error.\n");
}

/* --json, and the command, for the error object a failure prints. */
static bool json_out;
static const char *json_cmd;

/* @s as a JSON string: control characters escaped, and bytes that are not
 * UTF-8 (a path may hold any) as \u00XX, so the output stays valid. */
static void json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 && *p >= 0xc2 ? 1 :
			(*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 && *p <= 0xf4 ? 3 : -1;
		int k;

		for (k = 1; k <= n; k++)
			if ((p[k] & 0xc0) != 0x80)
				n = -1;
		if (n > 0) {
			fwrite(p, 1, (size_t)n + 1, f);
			p += n + 1;
			continue;
		}
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
		p++;
	}
	fputc('"', f);
}

/*
 * Report a failure: one line on stderr and, with --json, the one JSON
 * object the man page promises, with the error in it.  Returns @status.
 */
static int report(int status, int code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s%s\n", msg,
		status == EXIT_USAGE ? "; see --help" : "");
	if (json_out) {
		printf("{\"command\":");
		if (json_cmd)
			json_string(stdout, json_cmd);
		else
			printf("null");
		printf(",\"ok\":false,\"exit_status\":%d,\"error\":{\"code\":%d,\"message\":",
		       status, code);
		json_string(stdout, msg);
		printf("}}\n");
	}
	return status;
}

static int fail(const char *what, int err)
{
	if (!err)
		return report(EXIT_RUNTIME, 0, "%s: failed", what);
	return report(EXIT_RUNTIME, err, "%s: %s", what,
		      ortmem_last_error_message());
}

static int usage_error(const char *fmt, const char *arg)
{
	char msg[1024];

	snprintf(msg, sizeof(msg), fmt, arg);
	return report(EXIT_USAGE, -EINVAL, "%s", msg);
}

/*
 * A byte count: digits, then K, M, G or T (powers of 1024, an optional
 * "iB").  NULL, or why @s is not one (overflow included: never wraps).
 */
static const char *parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;
	int shift = 0;

	if (*s < '0' || *s > '9')
		return "not a number of bytes";
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return "the number does not fit in 64 bits";
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end)
		return "unknown suffix (K, M, G or T, powers of 1024)";
	if (shift && n > (UINT64_MAX >> shift))
		return "the size times its suffix does not fit in 64 bits";
	*v = (uint64_t)n << shift;
	return NULL;
}

/* NTH:WHAT; NULL, or why not. */
static const char *parse_fault(const char *s, uint64_t *nth, int *fault)
{
	static const struct { const char *name; int v; } names[] = {
		{ "EIO", -EIO }, { "ENOSPC", -ENOSPC }, { "EAGAIN", -EAGAIN },
		{ "EINTR", -EINTR }, { "EROFS", -EROFS },
		{ "short", ORTMEM_SPILL_FAULT_SHORT },
		{ "stall", ORTMEM_SPILL_FAULT_STALL },
	};
	const char *colon = strchr(s, ':');
	char num[32];
	size_t i;

	const char *why;

	if (!colon || colon == s)
		return "no NTH: before the fault";
	if ((size_t)(colon - s) >= sizeof(num))
		return "NTH does not fit in 64 bits";
	memcpy(num, s, (size_t)(colon - s));
	num[colon - s] = '\0';
	why = parse_size(num, nth);
	if (why)
		return why;
	if (!*nth)
		return "NTH counts from 1";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(colon + 1, names[i].name)) {
			*fault = names[i].v;
			return NULL;
		}
	}
	return "unknown fault";
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress(struct job *j, const char *what, uint64_t done, double t0)
{
	int width = 30, fill, i;
	double el = now_s() - t0;

	if (!j->progress)
		return;
	fill = (int)(done * (uint64_t)width / j->nblk);
	printf("\r%-7s [", what);
	for (i = 0; i < width; i++)
		putchar(i < fill ? '#' : ' ');
	printf("] %3d%% %8.1f MiB/s", (int)(done * 100 / j->nblk),
	       el > 0 ? (double)(done * j->c->bs) / el / 1048576.0 : 0.0);
	if (done == j->nblk)
		printf("\r%*s\r", width + 40, "");
	fflush(stdout);
}

static uint64_t blk_len(const struct job *j, uint64_t i)
{
	uint64_t off = i * j->c->bs;

	return j->c->size - off < j->c->bs ? j->c->size - off : j->c->bs;
}

/*
 * Demote (write) or promote (read) every block, in j->order, in batches; with
 * @mixed, every other block is promoted and the others demoted anew.
 */
static int job_pass(struct job *j, bool write, bool mixed, double *secs)
{
	double t0 = now_s();
	uint64_t i, done = 0;
	uint32_t k, n;
	int ret;

	while (done < j->nblk) {
		n = j->nblk - done < j->batch ? (uint32_t)(j->nblk - done) : j->batch;
		for (k = 0; k < n; k++) {
			i = j->order[done + k];
			if (mixed)
				write = (done + k) % 2;
			j->ios[k] = (struct ortmem_spill_io){
				.op = write ? ORTMEM_SPILL_OP_WRITE : ORTMEM_SPILL_OP_READ,
				.extent = j->ext[i],
				.buf = write ? j->src + i * j->c->bs : j->bufs[k],
				.len = blk_len(j, i),
			};
		}
		ret = ortmem_spill_submit(j->s, j->ios, n);
		if (ret)
			return ret;
		for (k = 0; k < n; k++) {
			i = j->order[done + k];
			if (j->ios[k].op == ORTMEM_SPILL_OP_WRITE && mixed) {
				ret = ortmem_spill_free(j->s, j->ext[i]);
				if (ret)
					return ret;
			}
			if (j->ios[k].op == ORTMEM_SPILL_OP_WRITE)
				j->ext[i] = j->ios[k].extent;
			else if (j->c->output || !strcmp(j->c->cmd, "verify"))
				memcpy(j->src + i * j->c->bs, j->bufs[k], j->ios[k].len);
		}
		done += n;
		progress(j, mixed ? "mixed" : write ? "write" : "read", done, t0);
	}
	*secs = now_s() - t0;
	return 0;
}

static int job_free_all(struct job *j)
{
	uint64_t i;
	int ret;

	for (i = 0; i < j->nblk; i++) {
		ret = ortmem_spill_free(j->s, j->ext[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void fill_pattern(uint8_t *p, uint64_t len)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, i;

	for (i = 0; i + 8 <= len; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)i;
}

static int load_input(struct job *j)
{
	struct cfg *c = j->c;
	int fd;
	uint64_t got = 0;
	ssize_t n;

	if (!c->input) {
		fill_pattern(j->src, c->size);
		return 0;
	}
	fd = open(c->input, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return report(EXIT_RUNTIME, -errno, "open %s: %s", c->input,
			      strerror(errno));
	}
	while (got < c->size && (n = read(fd, j->src + got, c->size - got)) > 0)
		got += (uint64_t)n;
	close(fd);
	if (got < c->size) {
		return report(EXIT_RUNTIME, -EIO, "read %s: %" PRIu64 " of %" PRIu64 " bytes",
			      c->input, got, c->size);
	}
	return 0;
}

static int save_output(struct job *j)
{
	int fd = open(j->c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint64_t put = 0;
	ssize_t n;

	if (fd < 0) {
		return report(EXIT_RUNTIME, -errno, "open %s: %s", j->c->output,
			      strerror(errno));
	}
	while (put < j->c->size &&
	       (n = write(fd, j->src + put, j->c->size - put)) > 0)
		put += (uint64_t)n;
	if (close(fd) || put < j->c->size) {
		return report(EXIT_RUNTIME, -EIO, "write %s: short or failed",
			      j->c->output);
	}
	return 0;
}

static void shuffle(uint64_t *v, uint64_t n)
{
	uint64_t i, k, t, x = 88172645463325252ull;

	for (i = n; i > 1; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = x % i;
		t = v[i - 1];
		v[i - 1] = v[k];
		v[k] = t;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *const rw_names[] = { "read", "write", "mixed" };

static void print_stats_json(struct ortmem_spill *s)
{
	struct ortmem_spill_stats st = { .sz = sizeof(st) };

	if (ortmem_spill_stats(s, &st))
		return;
	printf("\"engine\":{\"io_uring\":%s,\"direct\":%s,\"dioalign\":%s,"
	       "\"registered_file\":%s,\"registered_buffers\":%s,\"align\":%u,"
	       "\"queue_depth\":%u,\"lanes\":%u},"
	       "\"stats\":{\"file_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64
	       ",\"bytes_read\":%" PRIu64 ",\"short_transfers\":%" PRIu64
	       ",\"retries\":%" PRIu64 ",\"io_errors\":%" PRIu64
	       ",\"checksum_errors\":%" PRIu64 "}",
	       st.features & ORTMEM_SPILL_HAVE_URING ? "true" : "false",
	       st.features & ORTMEM_SPILL_HAVE_DIRECT ? "true" : "false",
	       st.features & ORTMEM_SPILL_HAVE_DIOALIGN ? "true" : "false",
	       st.features & ORTMEM_SPILL_HAVE_REGFILE ? "true" : "false",
	       st.features & ORTMEM_SPILL_HAVE_REGBUF ? "true" : "false",
	       st.align, st.queue_depth, st.lanes, st.file_bytes,
	       st.bytes_written, st.bytes_read, st.short_transfers, st.retries,
	       st.io_errors, st.checksum_errors);
}

static double mib_s(const struct cfg *c, double secs)
{
	return secs > 0 ? (double)c->size / secs / 1048576.0 : 0.0;
}

static int cmd_bench(struct job *j)
{
	struct cfg *c = j->c;
	double *w = calloc(c->runs, sizeof(double));
	double *r = calloc(c->runs, sizeof(double));
	uint32_t run;
	double secs;
	int ret = 0;

	if (!w || !r)
		return fail("bench", 0);
	for (run = 0; run < c->runs && !ret; run++) {
		ret = job_pass(j, true, false, &secs);
		w[run] = mib_s(c, secs);
		if (!ret && c->rw != RW_WRITE) {
			ret = job_pass(j, false, c->rw == RW_MIXED, &secs);
			r[run] = mib_s(c, secs);
		}
		if (!ret)
			ret = job_free_all(j);
	}
	if (ret) {
		free(w);
		free(r);
		return fail("bench", ret);
	}
	if (c->json) {
		printf("{\"command\":\"bench\",\"rw\":\"%s\",\"pattern\":\"%s\","
		       "\"size\":%" PRIu64 ",\"bs\":%" PRIu64 ",\"runs\":%u,"
		       "\"write_mib_s\":%.1f,\"%s_mib_s\":%.1f,",
		       rw_names[c->rw], c->pattern == PAT_SEQ ? "seq" : "rand",
		       c->size, c->bs, c->runs, median(w, c->runs),
		       c->rw == RW_MIXED ? "mixed" : "read",
		       c->rw == RW_WRITE ? 0.0 : median(r, c->runs));
		print_stats_json(j->s);
		printf("}\n");
	} else {
		printf("bench: %s %s, %" PRIu64 " bytes in %" PRIu64 "-byte blocks, median of %u: write %.1f MiB/s",
		       c->pattern == PAT_SEQ ? "sequential" : "random",
		       rw_names[c->rw], c->size, c->bs, c->runs, median(w, c->runs));
		if (c->rw != RW_WRITE)
			printf(", %s %.1f MiB/s", c->rw == RW_MIXED ? "mixed" : "read",
			       median(r, c->runs));
		printf("\n");
	}
	free(w);
	free(r);
	return 0;
}

static int cmd_transfer(struct job *j)
{
	struct cfg *c = j->c;
	double ws = 0, rs = 0;
	uint8_t *copy = NULL;
	int ret;

	ret = load_input(j);
	if (ret)
		return ret;
	if (!strcmp(c->cmd, "verify")) {
		copy = malloc(c->size);
		if (!copy)
			return fail("verify", 0);
		memcpy(copy, j->src, c->size);
	}
	ret = job_pass(j, true, false, &ws);
	if (ret) {
		free(copy);
		return fail("write", ret);
	}
	if (strcmp(c->cmd, "write")) {
		memset(j->src, 0, c->size);
		ret = job_pass(j, false, false, &rs);
		if (ret) {
			free(copy);
			return fail("read", ret);
		}
	}
	if (copy && memcmp(copy, j->src, c->size)) {
		free(copy);
		return report(EXIT_RUNTIME, -EIO,
			      "verify: the data read back differs from the data written");
	}
	free(copy);
	if (c->output && (ret = save_output(j)))
		return ret;
	if (c->json) {
		printf("{\"command\":\"%s\",\"size\":%" PRIu64 ",\"bs\":%" PRIu64
		       ",\"extents\":%" PRIu64 ",\"write_mib_s\":%.1f,\"read_mib_s\":%.1f,",
		       c->cmd, c->size, c->bs, j->nblk, mib_s(c, ws), mib_s(c, rs));
		print_stats_json(j->s);
		printf("}\n");
	} else {
		printf("%s: %" PRIu64 " bytes in %" PRIu64 " extents: write %.1f MiB/s",
		       c->cmd, c->size, j->nblk, mib_s(c, ws));
		if (strcmp(c->cmd, "write"))
			printf(", read %.1f MiB/s%s", mib_s(c, rs),
			       copy ? ", verified" : "");
		printf("\n");
	}
	return 0;
}

/* Bytes of memory the kernel says it can give now (MemAvailable). */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kib = 0;
	char line[128];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	if (kib)
		return (uint64_t)kib << 10;
	return (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * The tool holds --size bytes in memory (twice for verify) besides a
 * batch of --bs buffers: refuse up front, with the figures, what the
 * machine cannot give, rather than fail half-way or page for hours.
 */
static int check_memory(const struct cfg *c)
{
	uint64_t bs = (c->bs + 4095) & ~4095ull, need = 0, avail;
	uint32_t batch = (c->qd ? c->qd : 32) * 4;
	bool ok;

	ok = !__builtin_add_overflow(c->size, 4095, &need);
	ok = ok && !(strcmp(c->cmd, "verify") ? 0 :
		     __builtin_add_overflow(need, c->size, &need));
	ok = ok && !__builtin_add_overflow(need, bs * batch, &need);
	ok = ok && !__builtin_add_overflow(need, c->size / c->bs * 16, &need);
	avail = mem_available();
	if (ok && need <= avail)
		return 0;
	return report(EXIT_USAGE, -ENOMEM,
		      "--size %" PRIu64 " needs %s%" PRIu64 " bytes of memory (this tool holds the data it moves in RAM%s), and %" PRIu64 " are available; give a smaller --size",
		      c->size, ok ? "" : "more than ", ok ? need : UINT64_MAX,
		      strcmp(c->cmd, "verify") ? "" : ", twice for verify", avail);
}

static int job_setup(struct job *j)
{
	struct cfg *c = j->c;
	ORTMEM_OPTS(ortmem_spill_opts, o, .dir = c->dir, .budget_bytes = c->budget,
		    .queue_depth = c->qd, .lanes = c->lanes, .flags = c->flags);
	uint64_t i;
	uint32_t k;
	int ret;

	j->nblk = (c->size + c->bs - 1) / c->bs;
	j->batch = (c->qd ? c->qd : 32) * 4;
	if (j->batch > j->nblk)
		j->batch = (uint32_t)j->nblk;
	j->ext = calloc(j->nblk, sizeof(*j->ext));
	j->order = calloc(j->nblk, sizeof(*j->order));
	j->ios = calloc(j->batch, sizeof(*j->ios));
	j->bufs = calloc(j->batch, sizeof(*j->bufs));
	j->src = aligned_alloc(4096, (c->size + 4095) & ~4095ull);
	if (!j->ext || !j->order || !j->ios || !j->bufs || !j->src)
		return fail("out of memory", 0);
	/* One region, so the kernel can back it with huge pages as it does
	 * the source: fewer pages to pin and to map per I/O. */
	j->bufs[0] = aligned_alloc(2u << 20, (((c->bs + 4095) & ~4095ull) * j->batch +
					      (2u << 20) - 1) & ~((2ull << 20) - 1));
	if (!j->bufs[0])
		return fail("out of memory", 0);
	madvise(j->bufs[0], ((c->bs + 4095) & ~4095ull) * j->batch, MADV_HUGEPAGE);
	for (k = 1; k < j->batch; k++)
		j->bufs[k] = j->bufs[0] + ((c->bs + 4095) & ~4095ull) * k;
	for (i = 0; i < j->nblk; i++)
		j->order[i] = i;
	if (c->pattern == PAT_RAND)
		shuffle(j->order, j->nblk);
	if (!c->input)
		fill_pattern(j->src, c->size);
	ret = ortmem_spill_open(&o, &j->s);
	if (ret)
		return fail("open spill", ret);
	if (c->fault_nth && (ret = ortmem_spill_inject_fault(j->s, c->fault_nth, c->fault)))
		return fail("fault", ret);
	j->progress = !c->json && !c->quiet && isatty(STDOUT_FILENO);
	return 0;
}

static void job_teardown(struct job *j)
{
	ortmem_spill_close(j->s);
	if (j->bufs)
		free(j->bufs[0]);
	free(j->bufs);
	free(j->ios);
	free(j->order);
	free(j->ext);
	free(j->src);
}

enum { OPT_BUDGET = 256, OPT_BUFFERED, OPT_NO_URING, OPT_RW, OPT_PATTERN,
       OPT_RUNS, OPT_FAULT, OPT_JSON, OPT_QUIET };

static const struct option long_opts[] = {
	{ "dir", required_argument, NULL, 'd' },
	{ "size", required_argument, NULL, 's' },
	{ "bs", required_argument, NULL, 'b' },
	{ "qd", required_argument, NULL, 'q' },
	{ "lanes", required_argument, NULL, 'l' },
	{ "input", required_argument, NULL, 'i' },
	{ "output", required_argument, NULL, 'o' },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "buffered", no_argument, NULL, OPT_BUFFERED },
	{ "no-uring", no_argument, NULL, OPT_NO_URING },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "runs", required_argument, NULL, OPT_RUNS },
	{ "fault", required_argument, NULL, OPT_FAULT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* A number of bytes or a count in [@min, @max]; exit 2 saying why not. */
static int parse_num(const char *opt, const char *arg, uint64_t min,
		     uint64_t max, uint64_t *v)
{
	const char *why = parse_size(arg, v);

	if (!why && (*v < min || *v > max))
		why = "out of range";
	if (!why)
		return 0;
	return report(EXIT_USAGE, -EINVAL, "bad --%s '%s': %s (%" PRIu64 " to %" PRIu64 ")",
		      opt, arg, why, min, max);
}

static int parse_u32(const char *opt, const char *arg, uint32_t min,
		     uint32_t max, uint32_t *v)
{
	uint64_t n;
	int ret = parse_num(opt, arg, min, max, &n);

	if (!ret)
		*v = (uint32_t)n;
	return ret;
}

static int parse_opt(struct cfg *c, int opt, const char *arg)
{
	switch (opt) {
	case 'd': c->dir = arg; return 0;
	case 'i': c->input = arg; return 0;
	case 'o': c->output = arg; return 0;
	case 's': return parse_num("size", arg, 1, UINT64_MAX, &c->size);
	case 'b': return parse_num("bs", arg, 1, 1ull << 30, &c->bs);
	case OPT_BUDGET: return parse_num("budget", arg, 0, UINT64_MAX, &c->budget);
	case 'q': return parse_u32("qd", arg, 0, ORTMEM_SPILL_QD_MAX, &c->qd);
	case 'l': return parse_u32("lanes", arg, 0, ORTMEM_SPILL_LANES_MAX, &c->lanes);
	case OPT_RUNS: return parse_u32("runs", arg, 1, 1000, &c->runs);
	case OPT_BUFFERED: c->flags |= ORTMEM_SPILL_F_BUFFERED; return 0;
	case OPT_NO_URING: c->flags |= ORTMEM_SPILL_F_NO_URING; return 0;
	case OPT_JSON: c->json = json_out = true; return 0;
	case OPT_QUIET: c->quiet = true; return 0;
	case OPT_FAULT:
	{
		const char *why = parse_fault(arg, &c->fault_nth, &c->fault);

		return why ? report(EXIT_USAGE, -EINVAL, "bad --fault '%s': %s (NTH:EIO|ENOSPC|EAGAIN|EINTR|EROFS|short|stall)",
				    arg, why) : 0;
	}
	case OPT_RW:
		for (c->rw = RW_READ; c->rw <= RW_MIXED; c->rw++)
			if (!strcmp(arg, rw_names[c->rw]))
				return 0;
		return usage_error("bad --rw '%s' (read, write or mixed)", arg);
	case OPT_PATTERN:
		if (!strcmp(arg, "seq") || !strcmp(arg, "rand")) {
			c->pattern = arg[0] == 's' ? PAT_SEQ : PAT_RAND;
			return 0;
		}
		return usage_error("bad --pattern '%s' (seq or rand)", arg);
	}
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct cfg c = { .size = 256ull << 20, .bs = 1ull << 20, .runs = 1 };
	struct job j = { .c = &c };
	int opt, ret;

	while ((opt = getopt_long(argc, argv, "d:s:b:q:l:i:o:hV", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == 'V') {
			printf(PROG " (libortmem) %s\n", ortmem_version_string());
			return 0;
		}
		if (opt == '?')
			return EXIT_USAGE;
		ret = parse_opt(&c, opt, optarg);
		if (ret)
			return ret;
	}
	if (optind != argc - 1)
		return usage_error("%s", optind >= argc ? "a command is needed" : "one command only");
	c.cmd = argv[optind];
	if (strcmp(c.cmd, "write") && strcmp(c.cmd, "read") &&
	    strcmp(c.cmd, "verify") && strcmp(c.cmd, "bench"))
		return usage_error("unknown command '%s'", c.cmd);
	json_cmd = c.cmd;
	if (c.output && strcmp(c.cmd, "read"))
		return usage_error("%s", "--output goes with read");
	ret = check_memory(&c);
	if (ret)
		return ret;
	ret = job_setup(&j);
	if (!ret)
		ret = strcmp(c.cmd, "bench") ? cmd_transfer(&j) : cmd_bench(&j);
	job_teardown(&j);
	return ret;
}
