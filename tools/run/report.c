// SPDX-License-Identifier: MIT
/*
 * What ortmem-run prints after its passes (report.h): the JSON object the
 * tests and benchmarks read, or the lines ortmem-run(1) describes.
 */
#include <inttypes.h>
#include <stdio.h>

#include "blas.h"
#include "model.h"
#include "report.h"

#define MIB (1024.0 * 1024.0)

void report(const struct opts *o, const struct result *r,
		   struct source *s, const struct acts *a)
{
	ORTMEM_OPTS(ortmem_wfile_stats, ws);
	uint64_t wbytes = model_file_bytes(&o->cfg);
	double best = r->pass_s[0], sum = 0;
	uint32_t p;

	ortmem_wfile_stats(s->wf, &ws);
	for (p = 0; p < o->passes; p++) {
		sum += r->pass_s[p];
		if (r->pass_s[p] < best)
			best = r->pass_s[p];
	}
	if (o->json) {
		printf("{\"mode\":\"%s\",\"layers\":%u,\"hidden\":%u,\"ffn\":%u,\"batch\":%u,"
		       "\"weights_bytes\":%" PRIu64 ",\"budget_bytes\":%" PRIu64 ",\"arena_bytes\":%" PRIu64 ","
		       "\"passes\":%u,\"pass_s\":[", o->mode, o->cfg.layers, o->cfg.hidden,
		       o->cfg.ffn, o->batch, wbytes, o->budget, r->arena, o->passes);
		for (p = 0; p < o->passes; p++)
			printf("%s%.6f", p ? "," : "", r->pass_s[p]);
		printf("],\"compute_cpu_s\":%.6f,\"process_cpu_s\":%.6f,\"load_s\":%.6f,\"disk_bytes\":%" PRIu64 ",\"file_bytes_verified\":%" PRIu64 ","
		       "\"host_peak_bytes\":%" PRIu64 ",\"host_promoted_bytes\":%" PRIu64 ",\"host_dropped_bytes\":%" PRIu64 ",\"prefetch\":{\"issued\":%" PRIu64 ",\"hits\":%" PRIu64
		       ",\"waits\":%" PRIu64 ",\"wait_s\":%.6f,\"misses\":%" PRIu64 ",\"failed\":%" PRIu64 "},", r->compute_cpu_s, r->proc_cpu_s, r->load_s, r->disk_bytes, ws.bytes_read,
		       r->host_peak, r->host_promoted, r->host_dropped, r->pf.issued, r->pf.hits, r->pf.waits, r->pf.wait_ns / 1e9,
		       r->pf.misses, r->pf.failed);
		if (s->on_device)
			printf("\"device\":{\"ordinal\":%d,\"name\":\"%s\",\"budget_bytes\":%" PRIu64
			       ",\"peak_bytes\":%" PRIu64 ",\"promoted_bytes\":%" PRIu64
			       ",\"h2d_bytes\":%" PRIu64 ",\"d2h_bytes\":%" PRIu64
			       ",\"d2d_bytes\":%" PRIu64 "},",
			       s->dt.ordinal, s->dt.name, s->dt.budget, r->dev_peak,
			       r->dev_promoted, r->dev_h2d, r->dev_d2h, r->dev_d2d);
		if (a->skip || o->act_budget)
			printf("\"activations\":{\"skip\":%u,\"budget_bytes\":%" PRIu64 ",\"arena_bytes\":%" PRIu64
			       ",\"home_bytes\":%" PRIu64 ",\"host_budget_bytes\":%" PRIu64 ",\"disk_bytes\":%" PRIu64
			       ",\"disk_in_bytes\":%" PRIu64 ",\"disk_out_bytes\":%" PRIu64 ",\"plan_disk_prefetch_bytes\":%" PRIu64
			       ",\"plan_disk_spill_bytes\":%" PRIu64 ",\"transfers\":%u,\"read_backs\":%u,\"read_backs_ahead\":%u,\"issued_ahead\":%" PRIu64 ",\"write_outs\":%u,\"write_outs_ahead\":%u,\"outs_issued_ahead\":%" PRIu64 ",\"in_bytes\":%" PRIu64 ",\"out_bytes\":%" PRIu64
			       ",\"plan_prefetch_bytes\":%" PRIu64 ",\"plan_spill_bytes\":%" PRIu64
			       ",\"schedule_in_bytes\":%" PRIu64 ",\"schedule_out_bytes\":%" PRIu64 ",\"stall_bytes\":%" PRIu64
			       ",\"moves\":%u,\"move_bytes\":%" PRIu64 ",\"plan_move_bytes\":%" PRIu64
			       ",\"schedule_move_bytes\":%" PRIu64 ",\"plan_step_move_bytes\":%" PRIu64 "},",
			       o->skip, o->act_budget, a->arena, a->home, o->act_host_budget, a->disk,
			       s->xf.disk_in, s->xf.disk_out, s->xf.plan_disk_in, s->xf.plan_disk_out, s->xf.n_items, s->xf.n_reads,
			       s->xf.n_ahead, s->xf.issued_ahead, s->xf.n_outs, s->xf.n_outs_ahead,
			       s->xf.outs_issued_ahead, s->xf.moved_in,
			       s->xf.moved_out, a->stats.prefetch_bytes, a->stats.spill_bytes,
			       s->xf.plan_in, s->xf.plan_out, s->xf.plan_stall, s->xf.n_moves,
			       s->xf.moved_dev, a->stats.move_bytes, s->xf.plan_move, s->xf.plan_step_move);
		printf("\"disk_measured\":%s,", r->disk_measured ? "true" : "false");
		printf("\"blas\":{\"core\":\"%s\",\"threads\":%u},", blas_core(), o->threads);
		printf("\"output\":\"%016" PRIx64 "\"}\n", r->out_hash);
		return;
	}
	printf("mode        %s\n", o->mode);
	printf("model       %u layers, hidden %u, ffn %u, batch %u: %.1f MiB of weights\n",
	       o->cfg.layers, o->cfg.hidden, o->cfg.ffn, o->batch, wbytes / MIB);
	if (r->have_gov)
		printf("host budget %.1f MiB (peak %.1f MiB), activations %.2f MiB (planned arena)\n",
		       o->budget / MIB, r->host_peak / MIB, r->arena / MIB);
	printf("pass        %.3f s best, %.3f s mean over %u\n", best, sum / o->passes, o->passes);
	printf("cpu         %.3f s computing, %.3f s in all threads (over the passes)\n",
	       r->compute_cpu_s, r->proc_cpu_s);
	printf("blas        OpenBLAS %s kernels, %u thread%s\n", blas_core(), o->threads,
	       o->threads == 1 ? "" : "s");
	if (r->load_s > 0)
		printf("load        %.3f s (before the passes)\n", r->load_s);
	if (r->disk_bytes)
		printf("disk        %.1f MiB read, %.1f MiB/s effective\n",
		       r->disk_bytes / MIB, r->disk_bytes / MIB / sum);
	if (s->on_device)
		printf("device      GPU %d (%s): budget %.1f MiB (peak %.1f MiB), %.1f MiB promoted from the file, %.1f MiB to and %.1f MiB from it in all, %.1f MiB within it\n",
		       s->dt.ordinal, s->dt.name, s->dt.budget / MIB, r->dev_peak / MIB,
		       r->dev_promoted / MIB, r->dev_h2d / MIB, r->dev_d2h / MIB,
		       r->dev_d2d / MIB);
	else if (r->have_gov && r->dev_absent && o->device >= 0)
		printf("device      none, the host tier takes the hot buffers: %s\n", r->dev_absent);
	if (r->have_gov)
		printf("prefetch    %" PRIu64 " issued, %" PRIu64 " hits, %" PRIu64 " waits (%.3f s), %" PRIu64 " misses\n",
		       r->pf.issued, r->pf.hits, r->pf.waits, r->pf.wait_ns / 1e9, r->pf.misses);
	if (o->act_budget)
		printf("activations budget %.2f MiB: arena %.2f MiB, home %.2f MiB in RAM and %.2f MiB on disk;"
		       " moved %" PRIu64 " bytes in and %" PRIu64 " out over %u pass%s (disk %" PRIu64 " in, %" PRIu64
		       " out), the plan %" PRIu64 " in and %" PRIu64 " out a pass (%u transfers, %" PRIu64 " bytes stall)\n",
		       o->act_budget / MIB, a->arena / MIB, a->home / MIB, a->disk / MIB, s->xf.moved_in,
		       s->xf.moved_out, o->passes, o->passes == 1 ? "" : "es", s->xf.disk_in, s->xf.disk_out,
		       a->stats.prefetch_bytes, a->stats.spill_bytes, s->xf.n_items, s->xf.plan_stall);
	if (o->act_budget && (s->xf.n_moves || a->stats.move_bytes))
		printf("            within the arena: moved %" PRIu64 " bytes over %u pass%s, the plan %" PRIu64
		       " a pass (%u moves)\n", s->xf.moved_dev, o->passes, o->passes == 1 ? "" : "es",
		       a->stats.move_bytes, s->xf.n_moves);
	printf("output      %016" PRIx64 "\n", r->out_hash);
}
