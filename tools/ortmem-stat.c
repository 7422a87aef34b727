// SPDX-License-Identifier: MIT
/*
 * ortmem-stat: library statistics of a governor opened with the given
 * budgets (what libortmem would grant, its backends and their discovered
 * capabilities), and, when the kernel module is loaded, every readable
 * attribute under its sysfs folder; as a table or --json.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#define SYSFS_DEFAULT "/sys/class/misc/ortmem"

static const char *const prog = "ortmem-stat";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] [--limit TIER=BYTES]... [--driver-reserve BYTES]\n"
		"       [--heap] [--sysfs DIR]\n"
		"  --limit TIER=BYTES   budget of a tier (device, host, disk); K, M, G suffixes\n"
		"  --driver-reserve N   device bytes left to the driver\n"
		"  --heap               put the heap backend on the host tier\n"
		"  --sysfs DIR          module attributes folder (default " SYSFS_DEFAULT ")\n"
		"  --json               print JSON instead of a table\n",
		prog);
}

static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int parse_limit(const char *arg, struct ortmem_gov_opts *o)
{
	char name[16];
	const char *eq = strchr(arg, '=');
	int tier;

	if (!eq || (size_t)(eq - arg) >= sizeof(name))
		return -1;
	memcpy(name, arg, eq - arg);
	name[eq - arg] = '\0';
	tier = ortmem_tier_from_name(name);
	if (tier < 0)
		return -1;
	return parse_bytes(eq + 1, &o->limit[tier]);
}

static void print_table(const struct ortmem_gov_stats *st)
{
	int t;

	printf("%-7s %14s %14s %14s %14s %8s %12s %12s %8s %12s %s\n", "tier",
	       "used", "limit", "usable", "peak", "leases", "demoted",
	       "promoted", "reclaim", "quarantined", "backend");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		const struct ortmem_tier_stats *s = &st->tier[t];

		printf("%-7s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64
		       " %8" PRIu64 " %12" PRIu64 " %12" PRIu64 " %8" PRIu64
		       " %12" PRIu64 " %s%s\n", ortmem_tier_name(t), s->used,
		       s->limit, s->usable, s->peak, s->leases, s->demoted_bytes,
		       s->promoted_bytes, s->reclaim_calls, s->quarantined_bytes,
		       s->backend[0] ? s->backend : "-",
		       s->caps & ORTMEM_BACKEND_CAP_HOST_POINTER ? " (host-pointer)" : "");
	}
	printf("handles: %" PRIu64 " live of %" PRIu64 ", %" PRIu64 " retired; driver reserve %" PRIu64 "\n",
	       st->handles_live, st->handles_max, st->handles_retired,
	       st->tier[0].driver_reserve);
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_json_lib(const struct ortmem_gov_stats *st)
{
	int t;

	printf("\"library\": {\"tiers\": {");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		const struct ortmem_tier_stats *s = &st->tier[t];

		printf("%s\"%s\": {\"used\": %" PRIu64 ", \"limit\": %" PRIu64
		       ", \"usable\": %" PRIu64 ", \"peak\": %" PRIu64
		       ", \"driver_reserve\": %" PRIu64 ", \"leases\": %" PRIu64
		       ", \"demoted_bytes\": %" PRIu64 ", \"promoted_bytes\": %" PRIu64
		       ", \"reclaim_calls\": %" PRIu64 ", \"refusals\": %" PRIu64
		       ", \"quarantined_bytes\": %" PRIu64 ", \"deferred\": %" PRIu64
		       ", \"caps\": %u, \"backend\": ", t ? ", " : "",
		       ortmem_tier_name(t), s->used, s->limit, s->usable, s->peak,
		       s->driver_reserve, s->leases, s->demoted_bytes,
		       s->promoted_bytes, s->reclaim_calls, s->refusals,
		       s->quarantined_bytes, s->deferred, s->caps);
		print_json_string(s->backend);
		printf("}");
	}
	printf("}, \"handles_live\": %" PRIu64 ", \"handles_max\": %" PRIu64
	       ", \"handles_retired\": %" PRIu64 ", \"pins\": %" PRIu64
	       ", \"quarantined\": %" PRIu64 "}", st->handles_live,
	       st->handles_max, st->handles_retired, st->pins, st->quarantined);
}

/* Every readable regular attribute in @dir, one line each. */
static int print_sysfs(const char *dir, int json)
{
	struct dirent **names;
	int n, i, first = 1;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return 0;
	printf(json ? ", \"module\": {" : "\nmodule (%s):\n", dir);
	for (i = 0; i < n; i++) {
		char path[4096], val[4096];
		FILE *f;
		size_t len;

		if (names[i]->d_name[0] == '.' || names[i]->d_type == DT_DIR ||
		    names[i]->d_type == DT_LNK)
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		f = fopen(path, "re");
		if (!f)
			goto next;
		len = fread(val, 1, sizeof(val) - 1, f);
		fclose(f);
		val[len] = '\0';
		while (len && (val[len - 1] == '\n' || val[len - 1] == ' '))
			val[--len] = '\0';
		if (json) {
			printf("%s", first ? "" : ", ");
			print_json_string(names[i]->d_name);
			printf(": ");
			print_json_string(val);
		} else {
			printf("  %-24s %s\n", names[i]->d_name, val);
		}
		first = 0;
next:
		free(names[i]);
	}
	free(names);
	if (json)
		printf("}");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "limit", required_argument, NULL, 'l' },
		{ "driver-reserve", required_argument, NULL, 'r' },
		{ "heap", no_argument, NULL, 'H' },
		{ "sysfs", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	ORTMEM_OPTS(ortmem_gov_opts, o);
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	const char *sysfs = SYSFS_DEFAULT;
	struct ortmem_gov *gov;
	int json = 0, heap = 0, c;

	while ((c = getopt_long(argc, argv, "jl:r:Hs:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'H': heap = 1; break;
		case 's': sysfs = optarg; break;
		case 'l':
			if (parse_limit(optarg, &o)) {
				fprintf(stderr, "%s: --limit %s: expected TIER=BYTES with TIER device, host or disk\n",
					prog, optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_bytes(optarg, &o.driver_reserve)) {
				fprintf(stderr, "%s: --driver-reserve %s: not a byte count\n",
					prog, optarg);
				return 2;
			}
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
	if (ortmem_gov_open(&o, &gov)) {
		fprintf(stderr, "%s: open governor: %s\n", prog, ortmem_last_error_message());
		return 1;
	}
	if ((heap && ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST,
					    ortmem_backend_heap(), NULL)) ||
	    ortmem_gov_stats(gov, &st)) {
		fprintf(stderr, "%s: statistics: %s\n", prog, ortmem_last_error_message());
		ortmem_gov_close(gov);
		return 1;
	}
	ortmem_gov_close(gov);
	if (json) {
		printf("{");
		print_json_lib(&st);
		print_sysfs(sysfs, 1);
		printf("}\n");
	} else {
		print_table(&st);
		print_sysfs(sysfs, 0);
	}
	return 0;
}
