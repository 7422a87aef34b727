// SPDX-License-Identifier: MIT
/*
 * ortmem-run: a small inference executor linked with libortmem the way a
 * runtime is.  The model is a stack of MLP blocks, x + W2 gelu(W1 x + b1)
 * + b2, in fp32, products by OpenBLAS.  `create` writes the weights from a
 * seeded generator, with their checksum list; `run` executes it in one of
 * four modes:
 *
 *   ortmem  weights are file-backed allocations streamed into a host
 *           budget far below the model, the next layers prefetched while
 *           the current one computes; activations placed by the planner
 *   ram     everything read into RAM first: the reference answer
 *   mmap    weights read through a page-cache mapping, cache dropped
 *           before each pass (as llama.cpp by default)
 *   pread   synchronous reads of each layer, no prefetch
 *
 * The model's layout and the numerics are in run/model.c, the command
 * line in run/cli.c, the activations' plan and transfers in run/acts.c
 * and run/xfer.c, and what a run prints in run/report.c; this file is the
 * weights' sources, the modes and the passes.  See ortmem-run(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ortmem/ortmem.h>

#include <cblas.h>

#include "run/acts.h"
#include "run/blas.h"
#include "run/cli.h"
#include "run/devtier.h"
#include "run/model.h"
#include "run/procio.h"
#include "run/refuse.h"
#include "run/report.h"
#include "run/xfer.h"


static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static void progress(const struct opts *o, uint32_t pass, uint32_t layer)
{
	uint32_t total = o->passes * o->cfg.layers, done = pass * o->cfg.layers + layer;
	int width = 40, fill = (int)((uint64_t)done * width / total), i;

	if (!o->progress)
		return;
	fprintf(stderr, "\r  %-6s [", o->mode);
	for (i = 0; i < width; i++)
		fputc(i < fill ? '#' : '.', stderr);
	fprintf(stderr, "] pass %u/%u layer %u/%u ", pass + 1, o->passes,
		layer, o->cfg.layers);
	if (done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* ---- weights sources, one per mode ---- */

static int cold_cache(int fd)
{
	/* Write-back first, so that DONTNEED can drop every page. */
	fdatasync(fd);
	return posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static int read_all(int fd, uint8_t *dst, uint64_t off, uint64_t len)
{
	uint64_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, dst + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (uint64_t)n;
	}
	return 0;
}

/* The mmap mode's mapping of the whole file. */
static int map_weights(struct source *s, uint64_t size)
{
	s->all = mmap(NULL, size, PROT_READ, MAP_SHARED, s->fd, 0);
	if (s->all == MAP_FAILED) {
		s->all = NULL;
		return -errno;
	}
	s->map_len = size;
	/* Sequential faults: the kernel reads ahead (as llama.cpp's mapping
	 * does, which advises the file sequential too). */
	madvise(s->all, size, MADV_SEQUENTIAL);
	return 0;
}

/*
 * Make the next pass read the file from the disk.  The kernel drops no
 * page that is still mapped, so the mmap mode unmaps the file first and
 * maps it again after the drop: without that, every pass after the first
 * would find the weights in the page cache.
 */
static int cold_pass(struct source *s)
{
	uint64_t size = s->map_len;
	int ret;

	if (s->map_len) {
		munmap(s->all, s->map_len);
		s->all = NULL;
		s->map_len = 0;
	}
	ret = cold_cache(s->fd);
	if (ret)
		fprintf(stderr, "ortmem-run: posix_fadvise(DONTNEED) failed; the pass may be warm\n");
	return size ? map_weights(s, size) : 0;
}

/* The ortmem mode's governor: the host tier (pinned, from /dev/ortmem
 * when loaded) with the budget; the weights as file-backed allocations. */
static int gov_setup(struct source *s, uint64_t arena)
{
	const struct model_cfg *c = &s->o->cfg;
	/* A handle a layer and one for the arena: reclaim scans no more. */
	ORTMEM_OPTS(ortmem_gov_opts, go, .limit = { 0, s->o->budget, 0 },
		    .max_handles = c->layers + 8);
	int home = s->on_device ? ORTMEM_TIER_DEVICE : ORTMEM_TIER_HOST;
	uint32_t l;
	int ret;

	if (s->on_device)
		go.limit[ORTMEM_TIER_DEVICE] = s->dt.budget;
	ret = ortmem_gov_open(&go, &s->gov);
	if (!ret && s->on_device)
		/* The hot buffers' home: prefetch promotes each layer from
		 * the file to the GPU while the one before it computes. */
		ret = ortmem_gov_set_backend(s->gov, ORTMEM_TIER_DEVICE,
					     ortmem_backend_device(), s->dt.dev);
	if (ret)
		return ret;
	if (!ortmem_host_open(NULL, &s->host))
		ret = ortmem_gov_set_backend(s->gov, ORTMEM_TIER_HOST,
					     ortmem_backend_host(), s->host);
	else
		ret = ortmem_gov_set_backend(s->gov, ORTMEM_TIER_HOST,
					     ortmem_backend_heap(), NULL);
	if (ret)
		return ret;
	s->h = calloc(c->layers, sizeof(*s->h));
	if (!s->h)
		return -ENOMEM;
	for (l = 0; l < c->layers; l++) {
		ret = ortmem_gov_alloc_file(s->gov, home,
					    ORTMEM_ROLE_WEIGHTS, s->wf,
					    model_layer_offset(c, l),
					    model_layer_bytes(c), 0, &s->h[l]);
		if (ret)
			return ret;
	}
	return ortmem_gov_alloc(s->gov, home, ORTMEM_ROLE_ACTIVATION,
				arena, 0, &s->arena_h);
}

static int source_open(struct source *s, uint64_t arena, struct result *r)
{
	const struct model_cfg *c = &s->o->cfg;
	const char *m = s->o->mode;
	uint64_t size = model_file_bytes(c);
	double t0 = now_s();

	s->fd = -1;
	if (!strcmp(m, "ortmem"))
		return gov_setup(s, arena);
	s->fd = open(s->o->path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -errno;
	/* The peers' best setting: the whole model is read front to back, so
	 * the kernel may read ahead twice as far. */
	posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (!strcmp(m, "ram")) {
		/* Read and verified once, before the timed passes. */
		s->all = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
		if (!s->all)
			return -ENOMEM;
		int ret = ortmem_wfile_read(s->wf, 0, s->all, size);

		if (ret)
			return ret;
		r->load_s = now_s() - t0;
		return 0;
	}
	if (!strcmp(m, "mmap"))
		return map_weights(s, size);
	s->layer_buf = aligned_alloc(4096, (model_layer_bytes(c) + 4095) / 4096 * 4096);
	return s->layer_buf ? 0 : -ENOMEM;
}

static void source_close(struct source *s)
{
	uint32_t l;

	if (s->gov) {
		for (l = 0; s->h && l < s->o->cfg.layers; l++)
			if (s->h[l].id)
				ortmem_gov_release(s->gov, s->h[l], 0);
		ortmem_gov_close(s->gov);
	}
	xfer_close(&s->xf);
	if (s->home_registered)
		ortmem_device_unregister(s->dt.dev, s->home);
	free(s->home);
	free(s->poison);
	ortmem_spill_close(s->spill);
	devtier_close(&s->dt);
	ortmem_host_close(s->host);
	free(s->h);
	if (s->map_len)
		munmap(s->all, s->map_len);
	else
		free(s->all);
	free(s->layer_buf);
	if (s->fd >= 0)
		close(s->fd);
}

/* Prefetch layer @l and those after it (into the next pass), as many as
 * the budget holds: the governor stops at the first that does not fit. */
static void prefetch_ahead(struct source *s, uint32_t l, uint32_t pass)
{
	const struct opts *o = s->o;
	uint32_t n = o->cfg.layers, k, want = o->prefetch_depth + 1;
	struct ortmem_handle next[65];

	if (want > 65)
		want = 65;
	for (k = 0; k < want; k++) {
		uint32_t idx = l + k;

		if (idx >= n && pass + 1 >= o->passes)
			break;
		next[k] = s->h[idx % n];
	}
	/* A refusal just means the budget is full: the pin will wait. */
	ortmem_gov_prefetch(s->gov, next, k, 0);
}

/* The weights of layer @l, ready for compute. */
static int layer_get(struct source *s, uint32_t l, uint32_t pass,
		     const uint8_t **wp, struct result *r)
{
	const struct model_cfg *c = &s->o->cfg;
	const char *m = s->o->mode;
	void *p;
	int ret;

	if (!strcmp(m, "ortmem")) {
		/* Mostly home or in flight already (see layer_put). */
		prefetch_ahead(s, l, pass);
		ret = ortmem_gov_pin(s->gov, s->h[l], 0, &p);
		*wp = p;
		if (!ret && s->on_device)
			/* The CPU computes: it reads the layer back. */
			ret = devtier_weights(&s->dt, (uintptr_t)p,
					      model_layer_bytes(c), wp);
		return ret;
	}
	if (!strcmp(m, "pread")) {
		ret = read_all(s->fd, s->layer_buf, model_layer_offset(c, l),
			       model_layer_bytes(c));
		r->disk_bytes += model_layer_bytes(c);
		*wp = s->layer_buf;
		return ret;
	}
	*wp = s->all + model_layer_offset(c, l);
	return 0;
}

/* Done with layer @l: its place goes to the layers after it at once, so
 * the disk never waits for the next pin. */
static void layer_put(struct source *s, uint32_t l, uint32_t pass)
{
	if (!s->gov)
		return;
	ortmem_gov_unpin(s->gov, s->h[l]);
	if (l + 1 < s->o->cfg.layers || pass + 1 < s->o->passes)
		prefetch_ahead(s, (l + 1) % s->o->cfg.layers,
			       l + 1 < s->o->cfg.layers ? pass : pass + 1);
}

static int fail(const char *what, int ret)
{
	fprintf(stderr, "ortmem-run: %s: %s\n", what, run_error_text(ret));
	return 1;
}

/* With a GPU, [off, off + len) of the arena between the device and its
 * host mirror (where the CPU computes): where a GPU runtime would compute
 * in place. */
static int act_move(struct source *s, uint64_t off, uint64_t len, int to_device)
{
	if (!s->on_device)
		return 0;
	return to_device ? devtier_push(&s->dt, off, len) :
			   devtier_pull(&s->dt, off, len);
}

/* Step @st of the activations' graph (acts.h): 0 makes the input, then
 * two a layer, with @w the layer's weights.  The transfer schedule runs
 * around it. */
static int run_step(struct source *s, const struct acts *a, void *arena,
		    uint32_t st, const uint8_t *w)
{
	const struct opts *o = s->o;
	const struct act_node *nd = &a->node[st];
	uint32_t i;
	int ret;

	ret = xfer_before(&s->xf, st);
	for (i = 0; !ret && i < nd->n_in; i++)
		ret = act_move(s, nd->in_off[i], nd->in_len[i], 0);
	if (ret)
		return ret;
	if (!st) {
		model_input(&o->cfg, o->batch, act_out(a, arena, st));
	} else if (st % 2) {
		model_fc1(&o->cfg, o->batch, w, act_in(a, arena, st, 0),
			  act_out(a, arena, st));
	} else {
		model_fc2(&o->cfg, o->batch, w, act_in(a, arena, st, 1),
			  act_in(a, arena, st, 0), act_out(a, arena, st));
		if (nd->n_in > 2)
			model_skip_add(&o->cfg, o->batch, act_in(a, arena, st, 2),
				       act_out(a, arena, st));
	}
	ret = act_move(s, nd->out_off, nd->out_len, 1);
	return ret ? ret : xfer_after(&s->xf, st);
}

/* One forward pass over every layer; x_0 from the seed. */
static int run_pass(struct source *s, const struct acts *a, void *arena,
		    uint32_t pass, struct result *r)
{
	const struct opts *o = s->o;
	const uint8_t *w;
	uint32_t l;
	int ret;

	if (!strcmp(o->mode, "mmap") || !strcmp(o->mode, "pread")) {
		ret = cold_pass(s);
		if (ret)
			return fail("mapping the weights again", ret);
	}
	if (!strcmp(o->mode, "mmap"))
		r->disk_bytes += model_file_bytes(&o->cfg);
	ret = run_step(s, a, arena, 0, NULL);
	for (l = 0; !ret && l < o->cfg.layers; l++) {
		if (interrupted)
			return -EINTR;
		progress(o, pass, l);
		ret = layer_get(s, l, pass, &w, r);
		if (ret)
			return fail("reading the weights", ret);
		ret = run_step(s, a, arena, 1 + 2 * l, w);
		if (!ret)
			ret = run_step(s, a, arena, 2 + 2 * l, w);
		layer_put(s, l, pass);
	}
	if (!ret)
		ret = xfer_drain(&s->xf);
	if (ret && xfer_error(&s->xf)) {
		fprintf(stderr, "ortmem-run: %s\n", xfer_error(&s->xf));
		return 1;
	}
	if (ret)
		return fail(s->on_device ? "moving the activations to or from the GPU" :
			    "moving the activations to or from their home", ret);
	progress(o, pass, l);
	return 0;
}

/* The values' home (the planner's host tier) and the schedule. */
static int xfer_setup(struct source *s, const struct acts *a, void *arena)
{
	struct xfer_ops host = xfer_host_ops(arena);
	struct xfer_ops gpu = devtier_xfer_ops(&s->dt);
	uint64_t big = a->xb > a->hb ? a->xb : a->hb, len = (a->home + 4095) / 4096 * 4096;
	int ret;

	if (a->home) {
		s->home = aligned_alloc(4096, len);
		if (!s->home)
			return -ENOMEM;
		if (s->on_device) {
			ret = ortmem_device_register(s->dt.dev, s->home, len);
			if (ret)
				return ret;
			s->home_registered = 1;
		}
	}
	if (s->on_device && s->o->poison_evicted) {
		s->poison = malloc(big);
		if (!s->poison)
			return -ENOMEM;
		memset(s->poison, 0xff, big);
		s->dt.poison = s->poison;
	}
	if (a->disk) {
		/* In $ORTMEM_SPILL_DIR, else /var/tmp; gone at close. */
		ret = ortmem_spill_open(NULL, &s->spill);
		if (!ret && s->o->inject_spill_nth)
			ret = ortmem_spill_inject_fault(s->spill, s->o->inject_spill_nth, -EIO);
		if (ret)
			return ret;
	}
	ret = xfer_open(&s->xf, a, s->on_device ? &gpu : &host, s->home, s->spill);
	s->xf.do_poison = s->o->poison_evicted;
	s->xf.drop_nth = s->o->drop_read_back;
	s->xf.drop_move = s->o->drop_move;
	return ret;
}

static int check_budget(const struct opts *o, uint64_t arena, int on_device)
{
	uint64_t layer = model_layer_bytes(&o->cfg), need = layer + arena;
	uint64_t budget = on_device ? o->device_budget : o->budget;

	if (strcmp(o->mode, "ortmem") || budget >= need)
		return 0;
	fprintf(stderr,
		"ortmem-run: %s: a %s budget of %" PRIu64 " bytes cannot hold one layer (%" PRIu64 " bytes) plus the activation arena (%" PRIu64 " bytes); give %s of at least %" PRIu64 " bytes, or %" PRIu64 " to stream the next layer while one computes\n",
		ortmem_strerror(-ORTMEM_E_CAPACITY_UNAVAILABLE),
		on_device ? "device" : "host", budget, layer, arena,
		on_device ? "--device-budget" : "--budget", need, need + layer);
	return 1;
}

/* With a GPU (and not --no-device), the device tier takes the hot
 * buffers; without one, say why in the report. */
static int device_setup(struct source *s, struct result *r, uint64_t arena)
{
	const struct opts *o = s->o;
	int ret;

	if (strcmp(o->mode, "ortmem") || o->device < 0)
		return 0;
	ret = devtier_open(&s->dt, o->device, o->device_budget,
			   model_layer_bytes(&o->cfg), arena, &r->dev_absent);
	if (ret < 0)
		return fail("opening the GPU", ret);
	s->on_device = !ret;
	return 0;
}

static int do_run(struct opts *o)
{
	ORTMEM_OPTS(ortmem_wfile_opts, wo);
	struct source s = { .o = o, .fd = -1 };
	struct result r = { 0 };
	struct acts a = { 0 };
	void *arena = NULL;
	uint64_t io0 = 0, io1 = 0;
	uint32_t p;
	int ret, rc = 1, peer_io;
	bool budget_default;

	ret = ortmem_wfile_open(o->path, &wo, &s.wf);
	if (ret)
		return fail(o->path, ret);
	ret = model_read_header(s.wf, &o->cfg);
	if (ret)
		goto out;
	budget_default = !o->budget;
	if (budget_default)
		o->budget = model_file_bytes(&o->cfg) / 8;
	if (o->skip >= o->cfg.layers) {
		fprintf(stderr, "ortmem-run: --skip %u needs a model of more than %u layers; %s has %u\n",
			o->skip, o->skip, o->path, o->cfg.layers);
		goto out;
	}
	ret = acts_plan(&o->cfg, o->batch, o->skip, o->act_budget, o->act_host_budget, &a);
	if (ret) {
		if (ret != -EPROTO)	/* which acts_plan has explained */
			fail("planning the activations", ret);
		goto out;
	}
	if (o->inject_spill_nth && !a.disk) {
		fprintf(stderr, "ortmem-run: --inject-spill-fault %" PRIu64 ": no activation goes to disk under --act-host-budget %" PRIu64 " (%s), so no disk I/O could fail; give a smaller --act-host-budget, or drop --inject-spill-fault\n",
			o->inject_spill_nth, o->act_host_budget,
			o->act_host_budget ? "their home fits in RAM" : "unlimited");
		rc = 2;
		goto out;
	}
	r.arena = a.arena;
	/* The default streams whatever the model: 1/8 of the weights, or, on
	 * a model of few layers, the least that holds the layer computing, the
	 * next one arriving and the activation arena. */
	if (budget_default && o->budget < 2 * model_layer_bytes(&o->cfg) + a.arena)
		o->budget = 2 * model_layer_bytes(&o->cfg) + a.arena;
	if (!o->device_budget)
		o->device_budget = o->budget;
	if (device_setup(&s, &r, a.arena) || check_budget(o, a.arena, s.on_device))
		goto out_src;
	r.pass_s = calloc(o->passes, sizeof(double));
	ret = r.pass_s ? source_open(&s, a.arena, &r) : -ENOMEM;
	if (ret) {
		fail("setting up", ret);
		goto out_src;
	}
	if (s.gov) {
		r.have_gov = 1;
		if (o->inject_nth)
			ortmem_wfile_inject_fault(s.wf, o->inject_nth, -EIO);
		ret = ortmem_gov_pin(s.gov, s.arena_h, 0, &arena);
		if (!ret && s.on_device) {
			/* The arena is on the GPU; the CPU works in its mirror. */
			s.dt.arena = (uintptr_t)arena;
			arena = s.dt.astage;
		}
	} else {
		arena = aligned_alloc(64, (a.arena + 63) / 64 * 64);
		ret = arena ? 0 : -ENOMEM;
	}
	if (ret) {
		fail("placing the activations", ret);
		goto out_src;
	}
	ret = xfer_setup(&s, &a, arena);
	if (ret) {
		if (ret != -EPROTO)	/* which xfer_open has explained */
			fail("setting up the activations' transfers", ret);
		goto out_arena;
	}
	if (xfer_check_drop(&s.xf, o->drop_read_back, o->passes, o->act_budget) ||
	    xfer_check_drop_move(&s.xf, o->drop_move, o->passes, o->act_budget)) {
		rc = 2;
		goto out_arena;
	}
	/* The peers' disk bytes as the kernel counts them, where it does. */
	peer_io = s.fd >= 0 && !procio_read_bytes(&io0);
	for (p = 0; p < o->passes; p++) {
		/* Where the time goes: the compute thread's CPU, the whole
		 * process's (the I/O and verification threads too), the wall. */
		double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
		double q0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);

		if (run_pass(&s, &a, arena, p, &r))
			goto out_arena;
		r.pass_s[p] = now_s() - t0;
		r.compute_cpu_s += clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
		r.proc_cpu_s += clock_s(CLOCK_PROCESS_CPUTIME_ID) - q0;
	}
	if (o->inject_spill_nth) {
		/* A failed disk I/O stops the run: this one made fewer. */
		fprintf(stderr, "ortmem-run: --inject-spill-fault %" PRIu64 ": the run ended before its disk I/O number %" PRIu64 ", so no fault was injected; give a smaller number\n",
			o->inject_spill_nth, o->inject_spill_nth);
		rc = 2;
		goto out_arena;
	}
	if (s.gov) {
		ORTMEM_OPTS(ortmem_wfile_stats, ws);

		/* A read fault that stops the run ends it above; one past
		 * the run's reads injected nothing. */
		ortmem_wfile_stats(s.wf, &ws);
		if (cli_check_read_fault(o, ws.io_errors)) {
			rc = 2;
			goto out_arena;
		}
	}
	if (peer_io && !procio_read_bytes(&io1) && io1 > io0) {
		r.disk_bytes = io1 - io0;
		r.disk_measured = 1;
	}
	if (act_move(&s, a.node[a.n_nodes - 1].out_off, a.xb, 0)) {
		fail("reading the output back from the GPU", -EIO);
		goto out_arena;
	}
	r.out_hash = model_hash(act_out(&a, arena, a.n_nodes - 1), a.xb);
	if (s.gov) {
		struct ortmem_gov_stats st = { .sz = sizeof(st) };
		ORTMEM_OPTS(ortmem_wfile_stats, ws);

		ortmem_gov_stats(s.gov, &st);
		ortmem_wfile_stats(s.wf, &ws);
		r.pf = st.prefetch;
		r.host_peak = st.tier[ORTMEM_TIER_HOST].peak;
		r.host_promoted = st.tier[ORTMEM_TIER_HOST].promoted_bytes;
		r.host_dropped = st.tier[ORTMEM_TIER_HOST].demoted_bytes;
		r.disk_bytes = ws.bytes_read;
		r.dev_peak = st.tier[ORTMEM_TIER_DEVICE].peak;
		r.dev_promoted = st.tier[ORTMEM_TIER_DEVICE].promoted_bytes;
	}
	if (s.on_device) {
		ORTMEM_OPTS(ortmem_device_stats, ds);

		if (!ortmem_device_stats(s.dt.dev, &ds)) {
			r.dev_h2d = ds.h2d_bytes;
			r.dev_d2h = ds.d2h_bytes;
			r.dev_d2d = ds.d2d_bytes;
		}
	}
	report(o, &r, &s, &a);
	rc = 0;
out_arena:
	xfer_close(&s.xf);	/* no copy still in flight into the arena */
	if (s.gov)
		ortmem_gov_unpin(s.gov, s.arena_h);
	else
		free(arena);
out_src:
	source_close(&s);
out:
	if (interrupted)
		fprintf(stderr, "\nortmem-run: interrupted\n");
	acts_free(&a);
	free(r.pass_s);
	ortmem_wfile_close(s.wf);
	return interrupted ? 130 : rc;
}


int main(int argc, char **argv)
{
	struct opts o = {
		.mode = "ortmem", .batch = 16, .passes = 1, .prefetch_depth = 8,
		.device = 0,
		.progress = isatty(STDERR_FILENO),
		.cfg = { .layers = 18, .hidden = 2048, .ffn = 8192, .seed = 1 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	int create = 0;

	if (cli_parse(argc, argv, &o, &create))
		return 2;
	if (!create)
		blas_pick(argv);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (create)
		return model_create(&o.cfg, o.path, &interrupted);
	/* By default a core is left to the I/O (every mode computes alike,
	 * so the comparison holds). */
	if (!o.threads)
		o.threads = blas_default_threads();
	openblas_set_num_threads((int)o.threads);
	return do_run(&o);
}
