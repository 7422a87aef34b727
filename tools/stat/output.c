// SPDX-License-Identifier: MIT
/*
 * ortmem-stat's output: a table, one JSON object, or the Prometheus text
 * exposition format (HELP and TYPE before each metric's samples).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stat.h"

/* ---- output helpers ---- */

/* Length of the valid UTF-8 sequence at @s, 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
	uint32_t cp;
	int n, i;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A JSON string; bytes that are not UTF-8 appear as the text \xNN. */
void json_str(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putchar('"');
	while (*s) {
		int n = utf8_len(s);

		if (!n) {
			printf("\\\\x%02x", *s++);
		} else if (*s == '"' || *s == '\\') {
			printf("\\%c", *s++);
		} else if (*s < 0x20 || *s == 0x7f) {
			printf("\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, stdout);
			s += n;
		}
	}
	putchar('"');
}

/* A Prometheus label value: backslash, quote and newline escaped. */
static void prom_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			printf("\\n");
		else
			putchar(*s);
	}
	putchar('"');
}


/* ---- figures summed over the node ---- */

static const char *const tier_field[] = {
	"used", "limit", "peak", "demoted_bytes", "promoted_bytes",
	"quarantined_bytes", "refusals", "reclaim_calls",
};
#define NFIELDS (sizeof(tier_field) / sizeof(tier_field[0]))

static uint64_t tier_get(const struct ortmem_gov_tier_record *t, size_t f)
{
	const uint64_t v[] = {
		t->used, t->limit, t->peak, t->demoted_bytes, t->promoted_bytes,
		t->quarantined_bytes, t->refusals, t->reclaim_calls,
	};

	return v[f];
}

static uint64_t total(const struct node *nd, int tier, size_t f)
{
	uint64_t sum = 0;
	int i, g;

	for (i = 0; i < nd->nprocs; i++)
		for (g = 0; g < nd->procs[i].ngov; g++)
			sum += tier_get(&nd->procs[i].gov[g].tier[tier], f);
	return sum;
}

/* ---- prefetch figures (records of version 2 on) ---- */

static const struct {
	const char *field, *metric, *help;
} pf_field[] = {
	{ "issued", "ortmem_governor_prefetch_issued_total", "Promotions the governor's prefetch started." },
	{ "bytes", "ortmem_governor_prefetch_bytes_total", "Bytes of the promotions prefetch started." },
	{ "hits", "ortmem_governor_prefetch_hits_total", "Pins that found their prefetch done." },
	{ "waits", "ortmem_governor_prefetch_waits_total", "Pins that waited for a prefetch in flight." },
	{ "wait_ns", "ortmem_governor_prefetch_wait_seconds_total", "Time pins waited for prefetches in flight." },
	{ "misses", "ortmem_governor_prefetch_misses_total", "Pins that promoted synchronously (no prefetch)." },
	{ "refused", "ortmem_governor_prefetch_refused_total", "Prefetch calls refused: not one allocation fit." },
	{ "failed", "ortmem_governor_prefetch_failed_total", "Prefetches whose transfer failed." },
};
#define NPF (sizeof(pf_field) / sizeof(pf_field[0]))
#define PF_WAIT_NS 4	/* the one figure in nanoseconds */

static uint64_t pf_get(const struct ortmem_gov_prefetch_record *p, size_t f)
{
	const uint64_t v[NPF] = {
		p->issued, p->bytes, p->hits, p->waits, p->wait_ns, p->misses,
		p->refused, p->failed,
	};

	return v[f];
}

/* A writer of record version 1 published no prefetch figures. */
static bool has_prefetch(const struct ortmem_gov_record *r)
{
	return r->version >= ORTMEM_GOV_RECORD_PREFETCH;
}

/* ---- table ---- */

static void table_tier_head(void)
{
	printf("    %-7s %14s %14s %14s %14s %14s %12s\n", "tier", "used",
	       "limit", "peak", "demoted", "promoted", "quarantined");
}

static void table_tier(const char *tier, const uint64_t *v)
{
	printf("    %-7s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64
	       " %14" PRIu64 " %12" PRIu64 "\n", tier, v[0], v[1], v[2], v[3],
	       v[4], v[5]);
}

static void table_prefetch(const struct ortmem_gov_record *r)
{
	const struct ortmem_gov_prefetch_record *p = &r->prefetch;

	if (!has_prefetch(r)) {
		printf("    prefetch: not published (record version %u)\n",
		       r->version);
		return;
	}
	printf("    prefetch: issued %" PRIu64 " (%" PRIu64 " bytes), hits %"
	       PRIu64 ", waits %" PRIu64 " (%.3f ms), misses %" PRIu64
	       ", refused %" PRIu64 ", failed %" PRIu64 "\n", p->issued,
	       p->bytes, p->hits, p->waits, (double)p->wait_ns / 1e6,
	       p->misses, p->refused, p->failed);
}

void print_table(const struct node *nd, const struct attr *a, int na,
			const char *sysfs)
{
	int i, k, g, t;
	size_t f;

	for (i = 0; i < nd->nprocs; i++) {
		const struct proc *p = &nd->procs[i];

		printf("pid %d (%s)\n", p->pid, p->name[0] ? p->name : "?");
		if (p->clients) {
			printf("  module: %d open file%s", p->clients,
			       p->clients == 1 ? "" : "s");
			for (k = 0; k < p->nkeys; k++)
				printf("%s %s %" PRIu64, k ? "," : ";",
				       p->keys[k].key, p->keys[k].value);
			printf("\n");
		}
		for (g = 0; g < p->ngov; g++) {
			printf("  governor %" PRIu64 " (%s):\n",
			       p->gov[g].serial, p->gov[g].name);
			table_tier_head();
			for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
				uint64_t v[NFIELDS];

				for (f = 0; f < NFIELDS; f++)
					v[f] = tier_get(&p->gov[g].tier[t], f);
				table_tier(ortmem_tier_name(t), v);
			}
			table_prefetch(&p->gov[g]);
		}
	}
	if (!nd->nprocs)
		printf("no process uses ortmem\n");
	printf("totals over governors:\n");
	table_tier_head();
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		uint64_t v[NFIELDS];

		for (f = 0; f < NFIELDS; f++)
			v[f] = total(nd, t, f);
		table_tier(ortmem_tier_name(t), v);
	}
	if (na < 0)
		return;
	printf("module (%s):\n", sysfs);
	for (k = 0; k < na; k++)
		printf("  %-24s %s\n", a[k].name, a[k].value);
}

/* ---- JSON ---- */

static void json_tiers(const struct ortmem_gov_record *r, const struct node *nd)
{
	int t;
	size_t f;

	printf("{");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		printf("%s\"%s\": {", t ? ", " : "", ortmem_tier_name(t));
		for (f = 0; f < NFIELDS; f++)
			printf("%s\"%s\": %" PRIu64, f ? ", " : "", tier_field[f],
			       r ? tier_get(&r->tier[t], f) : total(nd, t, f));
		printf("}");
	}
	printf("}");
}

/* The prefetch figures, or null from a writer that published none. */
static void json_prefetch(const struct ortmem_gov_record *r)
{
	size_t f;

	if (!has_prefetch(r)) {
		printf("null");
		return;
	}
	printf("{");
	for (f = 0; f < NPF; f++)
		printf("%s\"%s\": %" PRIu64, f ? ", " : "", pf_field[f].field,
		       pf_get(&r->prefetch, f));
	printf("}");
}

void print_json(const struct node *nd, const struct attr *a, int na)
{
	int i, k, g;

	printf("\"processes\": [");
	for (i = 0; i < nd->nprocs; i++) {
		const struct proc *p = &nd->procs[i];

		printf("%s{\"pid\": %d, \"name\": ", i ? ", " : "", p->pid);
		json_str(p->name);
		printf(", \"module\": {\"files\": %d", p->clients);
		for (k = 0; k < p->nkeys; k++) {
			printf(", ");
			json_str(p->keys[k].key);
			printf(": %" PRIu64, p->keys[k].value);
		}
		printf("}, \"governors\": [");
		for (g = 0; g < p->ngov; g++) {
			printf("%s{\"serial\": %" PRIu64 ", \"name\": ",
			       g ? ", " : "", p->gov[g].serial);
			json_str(p->gov[g].name);
			printf(", \"tiers\": ");
			json_tiers(&p->gov[g], nd);
			printf(", \"prefetch\": ");
			json_prefetch(&p->gov[g]);
			printf("}");
		}
		printf("]}");
	}
	printf("], \"totals\": ");
	json_tiers(NULL, nd);
	if (na < 0)
		return;
	printf(", \"module\": {");
	for (k = 0; k < na; k++) {
		printf("%s", k ? ", " : "");
		json_str(a[k].name);
		printf(": ");
		json_str(a[k].value);
	}
	printf("}");
}

/* ---- Prometheus text exposition ---- */

static bool is_uint(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}


static void prom_head(const char *name, const char *type, const char *help)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_labels(const struct proc *p)
{
	printf("{pid=\"%d\",name=", p->pid);
	prom_str(p->name);
}

static const struct {
	const char *name, *type, *help;
} gov_metric[NFIELDS] = {
	{ "ortmem_governor_used_bytes", "gauge", "Bytes charged to the tier by the governor, including unspent thread credit." },
	{ "ortmem_governor_limit_bytes", "gauge", "The governor's budget of the tier (0: closed)." },
	{ "ortmem_governor_peak_bytes", "gauge", "Most bytes charged to the tier at once." },
	{ "ortmem_governor_demoted_bytes_total", "counter", "Bytes demoted from the tier to a lower one." },
	{ "ortmem_governor_promoted_bytes_total", "counter", "Bytes promoted back to the tier." },
	{ "ortmem_governor_quarantined_bytes", "gauge", "Bytes quarantined after a failed release." },
	{ "ortmem_governor_refusals_total", "counter", "Charges the tier refused." },
	{ "ortmem_governor_reclaim_calls_total", "counter", "Reclaim callbacks called for the tier." },
};

/* fdinfo keys with their metric: PREFIX-TIER or a plain name. */
static const struct {
	const char *key, *name, *type, *help;
	bool per_tier;
} mod_metric[] = {
	{ "regions", "ortmem_process_regions", "gauge", "Regions the process holds through /dev/ortmem.", false },
	{ "total-", "ortmem_process_total_bytes", "gauge", "Bytes of the process's regions.", true },
	{ "resident-", "ortmem_process_resident_bytes", "gauge", "Pinned (resident) bytes of the process's regions.", true },
	{ "evicted-", "ortmem_process_evicted_bytes", "gauge", "Bytes of the process's regions evicted to their spill file.", true },
	{ "fault-backs", "ortmem_process_fault_back_pages_total", "counter", "Evicted pages of the process brought back by a touch.", false },
	{ "restored", "ortmem_process_restored_pages_total", "counter", "Evicted pages of the process brought back by RESTORE.", false },
	{ "readahead", "ortmem_process_readahead_pages_total", "counter", "Evicted pages read back with a fault-back, after the touched one.", false },
	{ "fault-back-failures", "ortmem_process_fault_back_failures_total", "counter", "Fault-backs and restores of the process that failed.", false },
};

static void prom_module_keys(const struct node *nd)
{
	size_t m;
	int i, k;

	for (m = 0; m < sizeof(mod_metric) / sizeof(mod_metric[0]); m++) {
		size_t kl = strlen(mod_metric[m].key);
		bool head = false;

		for (i = 0; i < nd->nprocs; i++) {
			const struct proc *p = &nd->procs[i];

			for (k = 0; k < p->nkeys; k++) {
				const char *key = p->keys[k].key;

				if (mod_metric[m].per_tier ?
				    strncmp(key, mod_metric[m].key, kl) ||
				    ortmem_tier_from_name(key + kl) < 0 :
				    strcmp(key, mod_metric[m].key))
					continue;
				if (!head)
					prom_head(mod_metric[m].name,
						  mod_metric[m].type,
						  mod_metric[m].help);
				head = true;
				printf("%s", mod_metric[m].name);
				prom_labels(p);
				if (mod_metric[m].per_tier)
					printf(",tier=\"%s\"", key + kl);
				printf("} %" PRIu64 "\n", p->keys[k].value);
			}
		}
	}
}

/*
 * A module attribute as a metric: ortmem_module_ and its name, '/' and
 * others made '_'; the spill/ counters count since load, so they are
 * counters (named for their unit, ending in _total), the rest gauges.
 */
static void prom_attr(const struct attr *at)
{
	static const struct { const char *attr, *metric; } counters[] = {
		{ "spill/fault_backs", "spill_fault_back_pages" },
		{ "spill/restored_pages", "spill_restored_pages" },
		{ "spill/readahead_pages", "spill_readahead_pages" },
		{ "spill/failed_", "spill_failed_" },	/* and the cause */
	};
	const char *type = "gauge";
	char name[128], *c;
	size_t i, n;

	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		n = strlen(counters[i].attr);
		if (strncmp(at->name, counters[i].attr, n))
			continue;
		if (counters[i].attr[n - 1] != '_' && at->name[n])
			continue;
		snprintf(name, sizeof(name), "ortmem_module_%s%s_total",
			 counters[i].metric, at->name + n);
		type = "counter";
		break;
	}
	if (i == sizeof(counters) / sizeof(counters[0]))
		snprintf(name, sizeof(name), "ortmem_module_%s", at->name);
	for (c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')))
			*c = '_';
	printf("# HELP %s The module's sysfs attribute %s.\n# TYPE %s %s\n%s %s\n",
	       name, at->name, name, type, name, at->value);
}

/* One metric per prefetch figure, a sample per governor that has them. */
static void prom_prefetch(const struct node *nd)
{
	size_t f;
	int i, g;

	for (f = 0; f < NPF; f++) {
		prom_head(pf_field[f].metric, "counter", pf_field[f].help);
		for (i = 0; i < nd->nprocs; i++) {
			const struct proc *p = &nd->procs[i];

			for (g = 0; g < p->ngov; g++) {
				uint64_t v = pf_get(&p->gov[g].prefetch, f);

				if (!has_prefetch(&p->gov[g]))
					continue;
				printf("%s", pf_field[f].metric);
				prom_labels(p);
				printf(",governor=\"%" PRIu64 "\"} ",
				       p->gov[g].serial);
				if (f == PF_WAIT_NS)	/* seconds, exactly */
					printf("%" PRIu64 ".%09" PRIu64 "\n",
					       v / 1000000000u, v % 1000000000u);
				else
					printf("%" PRIu64 "\n", v);
			}
		}
	}
}

void print_prom(const struct node *nd, const struct attr *a, int na)
{
	int i, g, t, k;
	size_t f;

	for (f = 0; f < NFIELDS; f++) {
		prom_head(gov_metric[f].name, gov_metric[f].type,
			  gov_metric[f].help);
		for (i = 0; i < nd->nprocs; i++) {
			const struct proc *p = &nd->procs[i];

			for (g = 0; g < p->ngov; g++)
				for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
					printf("%s", gov_metric[f].name);
					prom_labels(p);
					printf(",governor=\"%" PRIu64 "\",tier=\"%s\"} %" PRIu64 "\n",
					       p->gov[g].serial,
					       ortmem_tier_name(t),
					       tier_get(&p->gov[g].tier[t], f));
				}
		}
	}
	prom_head("ortmem_tier_used_bytes", "gauge",
		  "Bytes charged to the tier over every governor on the node.");
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		printf("ortmem_tier_used_bytes{tier=\"%s\"} %" PRIu64 "\n",
		       ortmem_tier_name(t), total(nd, t, 0));
	prom_prefetch(nd);
	prom_module_keys(nd);
	for (k = 0; k < na; k++)
		if (is_uint(a[k].value))
			prom_attr(&a[k]);
}

