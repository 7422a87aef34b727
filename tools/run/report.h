/* SPDX-License-Identifier: MIT */
/*
 * ortmem-run's own state, shared by its main file (the modes and the
 * passes) and report.c (what a run prints): what a run measured, and
 * where its weights come from in each mode.
 */
#ifndef ORTMEM_RUN_REPORT_H
#define ORTMEM_RUN_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <ortmem/ortmem.h>

#include "acts.h"
#include "cli.h"
#include "devtier.h"
#include "xfer.h"

/* What a run measured. */
struct result {
	double *pass_s;
	double compute_cpu_s;	/* this thread's CPU in the passes */
	double proc_cpu_s;	/* every thread's CPU in the passes */
	double load_s;
	uint64_t disk_bytes;	/* bytes read from the file in the passes */
	int disk_measured;	/* the kernel's count (/proc/self/io), not ours */
	uint64_t out_hash;
	uint64_t host_peak;
	uint64_t host_promoted;	/* disk -> host, by the governor */
	uint64_t host_dropped;	/* host copies dropped, never written */
	uint64_t arena;
	struct ortmem_prefetch_stats pf;
	int have_gov;
	uint64_t dev_peak;
	uint64_t dev_promoted;	/* disk -> device, by the governor */
	uint64_t dev_h2d, dev_d2h, dev_d2d;
	const char *dev_absent;	/* why no GPU took the hot buffers */
};

/* ---- weights sources, one per mode ---- */

struct source {
	const struct opts *o;
	struct ortmem_wfile *wf;
	/* ortmem */
	struct ortmem_gov *gov;
	struct ortmem_host *host;
	struct ortmem_handle *h;
	struct ortmem_handle arena_h;
	struct devtier dt;	/* with a GPU: weights and arena live there */
	int on_device;
	/* the activations' transfer schedule, their home and its poison */
	struct xfer xf;
	uint8_t *home, *poison;
	int home_registered;
	struct ortmem_spill *spill;	/* the home of those sent to disk */
	/* ram, mmap, pread */
	uint8_t *all;
	size_t map_len;
	int fd;
	uint8_t *layer_buf;
};

/* Print what the run measured: a JSON object with --json, else lines. */
void report(const struct opts *o, const struct result *r, struct source *s,
	    const struct acts *a);

#endif
