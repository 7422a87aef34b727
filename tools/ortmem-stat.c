// SPDX-License-Identifier: MIT
/*
 * ortmem-stat: the node's view of ortmem, as nvidia-smi lists processes.
 * It reads, and opens nothing of its own:
 *  - the kernel module's sysfs attributes (node totals);
 *  - every process's /proc/PID/fdinfo of /dev/ortmem (the module's
 *    per-client keys, named like DRM's usage statistics);
 *  - every live governor's published statistics file (ortmem_gov_scan()).
 * One table per process and totals per tier, or --json, or --prometheus
 * (text exposition format for node_exporter's textfile collector); --watch
 * refreshes.  With --limit/--driver-reserve/--heap/--probe it also shows
 * what a governor opened with those budgets would grant ("library").
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "stat/stat.h"

const char *const prog = "ortmem-stat";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json | --prometheus] [--watch SECONDS] [--sysfs DIR]\n"
		"       [--run-dir DIR] [--proc DIR] [--device PATH]\n"
		"       [--probe] [--limit TIER=BYTES]... [--driver-reserve BYTES] [--heap]\n"
		"  --json               one JSON object instead of a table\n"
		"  --prometheus         Prometheus text format (node_exporter textfile)\n"
		"  --watch SECONDS      print again every SECONDS (0.1 to 86400)\n"
		"  --sysfs DIR          module attributes folder (default " SYSFS_DEFAULT ")\n"
		"  --run-dir DIR        governors' statistics folder (default: as the library)\n"
		"  --proc DIR           proc file system (default /proc)\n"
		"  --device PATH        the module's device node (default " DEV_DEFAULT ")\n"
		"  --probe              also show a governor opened with the budgets below\n"
		"  --limit TIER=BYTES   its budget of a tier (device, host, disk); K, M, G, T\n"
		"  --driver-reserve N   its device bytes left to the driver\n"
		"  --heap               its host tier on the heap backend\n",
		prog);
}

/* ---- input parsing: sizes refuse what does not fit in 64 bits ---- */

/* @opt: the option as the messages show it, "--limit host=" or "--driver-reserve ". */
static int parse_bytes(const char *opt, const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (*s < '0' || *s > '9') {
		fprintf(stderr, "%s: %s%s: expected a byte count such as 4096 or 8G\n",
			prog, opt, s);
		return -1;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end && (u = strchr(units, *end & ~0x20)) != NULL) {
		shift = 10 * (unsigned int)(u - units + 1);
		end++;
	}
	if (*end) {
		fprintf(stderr, "%s: %s%s: '%s' is not a size suffix (K, M, G, T)\n",
			prog, opt, s, end);
		return -1;
	}
	if (errno == ERANGE || v > (UINT64_MAX >> shift)) {
		fprintf(stderr, "%s: %s%s: the size does not fit in 64 bits (at most %llu%s)\n",
			prog, opt, s, (unsigned long long)(UINT64_MAX >> shift),
			shift ? (char[]){ units[shift / 10 - 1], 0 } : "");
		return -1;
	}
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_limit(const char *arg, struct ortmem_gov_opts *o)
{
	char name[16], opt[32];
	const char *eq = strchr(arg, '=');
	int tier = -1;

	if (eq && (size_t)(eq - arg) < sizeof(name)) {
		memcpy(name, arg, eq - arg);
		name[eq - arg] = '\0';
		tier = ortmem_tier_from_name(name);
	}
	if (tier < 0) {
		fprintf(stderr, "%s: --limit %s: expected TIER=BYTES with TIER device, host or disk\n",
			prog, arg);
		return -1;
	}
	snprintf(opt, sizeof(opt), "--limit %s=", name);
	return parse_bytes(opt, eq + 1, &o->limit[tier]) ? -1 : 0;
}

static int parse_watch(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0.1 && v <= 86400)) {
		fprintf(stderr, "%s: --watch %s: expected seconds from 0.1 to 86400\n",
			prog, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- --probe: what a governor opened with these budgets would grant ---- */

static int probe(const struct cfg *c, const struct ortmem_gov_opts *o,
		 struct ortmem_gov_stats *st)
{
	struct ortmem_gov *gov;
	struct ortmem_gov_opts po = *o;

	po.flags |= ORTMEM_GOV_NO_PUBLISH;	/* not a process of the node */
	if (ortmem_gov_open(&po, &gov)) {
		fprintf(stderr, "%s: open governor: %s\n", prog, ortmem_last_error_message());
		return 1;
	}
	if ((c->heap && ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST,
					       ortmem_backend_heap(), NULL)) ||
	    ortmem_gov_stats(gov, st)) {
		fprintf(stderr, "%s: statistics: %s\n", prog, ortmem_last_error_message());
		ortmem_gov_close(gov);
		return 1;
	}
	ortmem_gov_close(gov);
	return 0;
}

static void probe_table(const struct ortmem_gov_stats *st)
{
	int t;

	printf("library (a governor with the given budgets):\n");
	printf("  %-7s %14s %14s %14s %s\n", "tier", "limit", "usable",
	       "driver_rsv", "backend");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		const struct ortmem_tier_stats *s = &st->tier[t];

		printf("  %-7s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %s%s\n",
		       ortmem_tier_name(t), s->limit, s->usable,
		       s->driver_reserve, s->backend[0] ? s->backend : "-",
		       s->caps & ORTMEM_BACKEND_CAP_HOST_POINTER ?
		       " (host-pointer)" : "");
	}
}

static void probe_json(const struct ortmem_gov_stats *st)
{
	int t;

	printf("\"library\": {\"tiers\": {");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		const struct ortmem_tier_stats *s = &st->tier[t];

		printf("%s\"%s\": {\"limit\": %" PRIu64 ", \"usable\": %" PRIu64
		       ", \"driver_reserve\": %" PRIu64 ", \"caps\": %u, \"backend\": ",
		       t ? ", " : "", ortmem_tier_name(t), s->limit, s->usable,
		       s->driver_reserve, s->caps);
		json_str(s->backend);
		printf("}");
	}
	printf("}}, ");
}

/* One view of the node in the chosen format; 1 when it cannot be read. */
static int show(const struct cfg *c, const struct ortmem_gov_stats *st)
{
	struct node nd;
	struct attr *a = NULL;
	int na, ret;

	ret = gather(&nd, c);
	if (ret) {
		fprintf(stderr, "%s: governors' statistics: %s\n", prog,
			ortmem_last_error_message());
		node_free(&nd);
		return 1;
	}
	if (read_sysfs(c->sysfs, &a, &na))
		na = -1;
	switch (c->fmt) {
	case FMT_TABLE:
		if (st)
			probe_table(st);
		print_table(&nd, a, na, c->sysfs);
		break;
	case FMT_JSON:
		printf("{");
		if (st)
			probe_json(st);
		print_json(&nd, a, na);
		printf("}\n");
		break;
	case FMT_PROM:
		print_prom(&nd, a, na);
		break;
	}
	free(a);
	node_free(&nd);
	return fflush(stdout) ? 1 : 0;
}

static int parse_args(int argc, char **argv, struct cfg *c,
		      struct ortmem_gov_opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "watch", required_argument, NULL, 'w' },
		{ "sysfs", required_argument, NULL, 's' },
		{ "run-dir", required_argument, NULL, 'R' },
		{ "proc", required_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "probe", no_argument, NULL, 'b' },
		{ "limit", required_argument, NULL, 'l' },
		{ "driver-reserve", required_argument, NULL, 'r' },
		{ "heap", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "jPw:s:R:p:d:bl:r:HhV", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 'j':
		case 'P':
			if (c->fmt != FMT_TABLE && c->fmt != (ch == 'j' ? FMT_JSON : FMT_PROM)) {
				fprintf(stderr, "%s: --json and --prometheus are two output formats; give one\n",
					prog);
				return 2;
			}
			c->fmt = ch == 'j' ? FMT_JSON : FMT_PROM;
			break;
		case 's': c->sysfs = optarg; break;
		case 'R': c->run_dir = optarg; break;
		case 'p': c->proc = optarg; break;
		case 'd': c->dev = optarg; break;
		case 'b': c->probe = 1; break;
		case 'H': c->heap = c->probe = 1; break;
		case 'w':
			if (parse_watch(optarg, &c->watch))
				return 2;
			break;
		case 'l':
			if (parse_limit(optarg, o))
				return 2;
			c->probe = 1;
			break;
		case 'r':
			if (parse_bytes("--driver-reserve ", optarg,
					&o->driver_reserve))
				return 2;
			c->probe = 1;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog, ortmem_version_string()); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: %s: unexpected argument\n", prog, argv[optind]);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	ORTMEM_OPTS(ortmem_gov_opts, o);
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	struct cfg c = {
		.fmt = FMT_TABLE, .sysfs = SYSFS_DEFAULT, .proc = "/proc",
		.dev = DEV_DEFAULT,
	};
	int ret = parse_args(argc, argv, &c, &o);

	if (ret >= 0)
		return ret;
	if (c.probe && probe(&c, &o, &st))
		return 1;
	if (!c.watch)
		return show(&c, c.probe ? &st : NULL);
	for (;;) {
		struct timespec ts = {
			.tv_sec = (time_t)c.watch,
			.tv_nsec = (long)((c.watch - (time_t)c.watch) * 1e9),
		};
		time_t now = time(NULL);
		char when[64];

		/* Home and clear, as watch(1) does: tmux and plain terminals
		 * redraw in place. */
		if (c.fmt == FMT_TABLE && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		strftime(when, sizeof(when), "%F %T", localtime(&now));
		if (c.fmt == FMT_TABLE)
			printf("ortmem-stat every %gs: %s\n", c.watch, when);
		if (show(&c, c.probe ? &st : NULL))
			return 1;
		nanosleep(&ts, NULL);
	}
}
