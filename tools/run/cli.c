// SPDX-License-Identifier: MIT
/*
 * ortmem-run's command line: every value checked, a refusal naming what
 * was wrong (see cli.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_usage(FILE *f)
{
	fprintf(f,
		"usage: ortmem-run create [--layers N] [--hidden H] [--ffn F] [--seed S] FILE\n"
		"       ortmem-run [run] [--mode ortmem|ram|mmap|pread] [--budget SIZE]\n"
		"                  [--batch B] [--passes N] [--prefetch N] [--threads N]\n"
		"                  [--device N|--no-device] [--device-budget SIZE]\n"
		"                  [--skip K] [--act-budget SIZE [--act-host-budget SIZE]] [--json]"
		" [--progress|--no-progress] FILE\n"
		"SIZE takes K, M, G suffixes (powers of 1024).  See ortmem-run(1).\n");
}

/* A positive count or size; refuses what is not one, naming it. */
static int parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		mul = 1ull << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ull << 30;
	if (mul > 1)
		end++;
	/* strtoull takes blanks, a sign (negating "-1" to a huge value) and
	 * "0x"-less bases quietly: only digits and one suffix pass. */
	if (errno || !isdigit((unsigned char)*s) || *end || !v || v > max / mul) {
		fprintf(stderr, "ortmem-run: %s '%s' is not a number from 1 to %" PRIu64 "; give digits, optionally ending in K, M or G (powers of 1024)\n",
			opt, s, max);
		return -1;
	}
	*out = v * mul;
	return 0;
}

/* An option given last, with its value missing: said, not taken for an
 * unknown argument. */
static int missing(const char *opt, const char *what)
{
	fprintf(stderr, "ortmem-run: %s needs a value (%s) after it\n", opt, what);
	return -1;
}

int cli_parse(int argc, char **argv, struct opts *o, int *create)
{
	const char *gpu_opt = NULL;	/* the last option that names a GPU's use */
	bool no_device = false;
	uint64_t v;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

#define NUM(name, max, field) \
		if (!strcmp(a, name)) { \
			if (!val) \
				return missing(name, "a number"); \
			if (parse_u64(name, val, max, &v)) \
				return -1; \
			field = v; i++; continue; }
		if (!strcmp(a, "create") && i == 1) { *create = 1; continue; }
		if (!strcmp(a, "run") && i == 1)
			continue;
		NUM("--layers", MODEL_MAX_LAYERS, o->cfg.layers)
		NUM("--hidden", MODEL_MAX_DIM, o->cfg.hidden)
		NUM("--ffn", MODEL_MAX_DIM, o->cfg.ffn)
		NUM("--seed", UINT32_MAX, o->cfg.seed)
		NUM("--batch", 4096, o->batch)
		NUM("--passes", 1000, o->passes)
		NUM("--prefetch", 64, o->prefetch_depth)
		NUM("--threads", 256, o->threads)
		NUM("--inject-read-fault", UINT32_MAX, o->inject_nth)
		NUM("--skip", MODEL_MAX_LAYERS, o->skip)
		NUM("--act-budget", 1ull << 50, o->act_budget)
		NUM("--act-host-budget", 1ull << 50, o->act_host_budget)
		NUM("--drop-read-back", UINT32_MAX, o->drop_read_back)
		NUM("--drop-move", UINT32_MAX, o->drop_move)
		NUM("--inject-spill-fault", UINT32_MAX, o->inject_spill_nth)
		if (!strcmp(a, "--poison-evicted")) { o->poison_evicted = 1; continue; }
		if (!strcmp(a, "--device")) {
			char *end = NULL;
			unsigned long d = val ? strtoul(val, &end, 10) : 0;

			if (!val)
				return missing(a, "a GPU ordinal from 0 to 1023");
			if (end == val || *end || *val == '-' || d > 1023) {
				fprintf(stderr, "ortmem-run: --device '%s' is not a GPU ordinal from 0 to 1023\n",
					val ? val : "");
				return -1;
			}
			o->device = (int)d;
			gpu_opt = a;
			i++;
			continue;
		}
		if (!strcmp(a, "--device-budget")) {
			if (!val)
				return missing(a, "a size");
			if (parse_u64(a, val, 1ull << 50, &o->device_budget))
				return -1;
			gpu_opt = a;
			i++;
			continue;
		}
		if (!strcmp(a, "--no-device")) { no_device = true; continue; }
		if (!strcmp(a, "--budget")) {
			if (!val)
				return missing(a, "a size");
			if (parse_u64(a, val, 1ull << 50, &o->budget))
				return -1;
			i++;
			continue;
		}
#undef NUM
		if (!strcmp(a, "--mode")) {
			if (!val)
				return missing(a, "one of ortmem, ram, mmap, pread");
			o->mode = argv[++i];
			continue;
		}
		if (!strcmp(a, "--json")) { o->json = 1; continue; }
		if (!strcmp(a, "--progress")) { o->progress = 1; continue; }
		if (!strcmp(a, "--no-progress")) { o->progress = 0; continue; }
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { cli_usage(stdout); exit(0); }
		if (a[0] == '-' || o->path) {
			fprintf(stderr, "ortmem-run: unknown argument '%s'\n", a);
			cli_usage(stderr);
			return -1;
		}
		o->path = a;
	}
	if (!o->path) {
		cli_usage(stderr);
		return -1;
	}
	/* Which one the user meant is not ours to guess. */
	if (no_device && gpu_opt) {
		fprintf(stderr, "ortmem-run: %s sets up the GPU's device tier, which --no-device leaves out; drop one of them\n",
			gpu_opt);
		return -1;
	}
	if (no_device)
		o->device = -1;
	if (strcmp(o->mode, "ortmem") && strcmp(o->mode, "ram") &&
	    strcmp(o->mode, "mmap") && strcmp(o->mode, "pread")) {
		fprintf(stderr, "ortmem-run: --mode '%s' is not one of ortmem, ram, mmap, pread\n", o->mode);
		return -1;
	}
	if (strcmp(o->mode, "ortmem") &&
	    (o->act_budget || o->poison_evicted || o->drop_read_back || o->act_host_budget ||
	     o->inject_spill_nth || o->drop_move)) {
		fprintf(stderr, "ortmem-run: --act-budget and its options apply to the ortmem mode only (the %s mode keeps every activation in RAM); drop them or use --mode ortmem\n",
			o->mode);
		return -1;
	}
	if (strcmp(o->mode, "ortmem") && o->inject_nth) {
		fprintf(stderr, "ortmem-run: --inject-read-fault applies to the ortmem mode only (its weights are read through the governor, where the fault is injected; the %s mode would ignore it); drop it or use --mode ortmem\n",
			o->mode);
		return -1;
	}
	if ((o->poison_evicted || o->drop_read_back || o->act_host_budget ||
	     o->inject_spill_nth || o->drop_move) && !o->act_budget) {
		fprintf(stderr, "ortmem-run: --act-host-budget, --poison-evicted, --drop-read-back, --drop-move and --inject-spill-fault go with --act-budget (without it no activation leaves the arena, nor moves within it)\n");
		return -1;
	}
	return 0;
}

int cli_check_read_fault(const struct opts *o, uint64_t io_errors)
{
	if (!o->inject_nth || io_errors)
		return 0;
	fprintf(stderr, "ortmem-run: --inject-read-fault %" PRIu64 ": no read of the weights failed: the run ended before its read I/O number %" PRIu64 ", so no fault was injected; give a smaller number\n",
		o->inject_nth, o->inject_nth);
	return -1;
}
