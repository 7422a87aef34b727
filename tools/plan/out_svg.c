// SPDX-License-Identifier: MIT
/*
 * The memory timeline as SVG: on top, the bytes live at each step with the
 * lower bound and the arena; below, one panel per tier in use, where every
 * buffer is a rectangle over its steps (x) and its offset (y), coloured by
 * tier, its name, size and steps in a <title> shown on hover.  The width is
 * fixed, so a 1,000-step model gets sub-pixel columns that still read as a
 * skyline; rectangles keep a minimum width of one pixel.
 *
 * When the plan moves bytes, a transfers panel sits under the curve: the
 * schedule of ortmem_plan_transfers(), the bytes read back before each
 * step above the axis and written out after it below, coloured by the
 * slower tier, with the stall bytes (read-backs that cannot start ahead of
 * their step) outlined in red; in the device panel each read-back is drawn
 * as a hatched band over the steps it may overlap (earliest .. step).
 * Moves within the device arena (ORTMEM_PLAN_XFER_MOVE) cross no tier:
 * their bytes sit above the read-backs in their own colour, and in the
 * device panel an arrow at the step goes from the old offset to the new,
 * the buffer's rectangle following it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_model.h"

#define W 1200.0
#define LEFT 90.0
#define RIGHT 20.0
#define CURVE_H 180.0
#define PANEL_H 300.0
#define GAP 50.0
#define XFER_H 140.0

static const char *const tier_names[ORTMEM_TIER_COUNT] = { "device", "host", "disk" };
static const char *const tier_fill[ORTMEM_TIER_COUNT] = { "#4e79a7", "#f28e2b", "#8c8c8c" };
#define MOVE_FILL "#9467bd"

static void xml_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		switch (ch) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			/* XML 1.0 forbids most control characters. */
			if (ch < 0x20 && ch != '\t')
				fputc('?', f);
			else
				fputc(ch, f);
		}
	}
}

static void human(char *buf, size_t len, double b)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int k = 0;

	while (b >= 1024 && k < 4) {
		b /= 1024;
		k++;
	}
	snprintf(buf, len, k ? "%.1f %s" : "%.0f %s", b, u[k]);
}

static double xs(double step, uint32_t n)
{
	return LEFT + (W - LEFT - RIGHT) * step / (n ? n : 1);
}

static void axis_steps(FILE *f, uint32_t n, double y)
{
	static const uint32_t mant[3] = { 1, 2, 5 };
	uint64_t tick = 1, pow10 = 1;
	uint32_t k = 0, s;

	/* Ticks of 1, 2 or 5 times a power of ten, about ten of them. */
	while (n / tick > 10) {
		if (++k % 3 == 0)
			pow10 *= 10;
		tick = mant[k % 3] * pow10;
	}
	for (s = 0; s <= n; s += (uint32_t)tick)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"middle\">%u</text>\n",
			xs(s, n), y + 14, s);
}

static void curve(FILE *f, const struct pm_result *r, const uint64_t *live,
		  double top)
{
	uint64_t maxv = r->st.lower_bound, arena = r->st.arena[ORTMEM_TIER_DEVICE];
	uint32_t s, n = r->n_steps;
	char b1[32];
	double sy;

	for (s = 0; s < n; s++)
		if (live[s] > maxv)
			maxv = live[s];
	if (arena > maxv)
		maxv = arena;
	sy = maxv ? (CURVE_H - 20) / (double)maxv : 0;
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"h\">bytes live at each step</text>\n",
		LEFT, top - 6);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>\n",
		LEFT, top, W - LEFT - RIGHT, CURVE_H);
	fprintf(f, "<polyline class=\"live\" points=\"");
	for (s = 0; s < n; s++)
		fprintf(f, "%.1f,%.1f %.1f,%.1f ", xs(s, n), top + CURVE_H - sy * live[s],
			xs(s + 1, n), top + CURVE_H - sy * live[s]);
	fprintf(f, "\"><title>bytes live per step</title></polyline>\n");
	human(b1, sizeof(b1), (double)r->st.lower_bound);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"lb\"><title>lower bound %" PRIu64 " bytes</title></line>\n",
		LEFT, W - RIGHT, top + CURVE_H - sy * r->st.lower_bound,
		top + CURVE_H - sy * r->st.lower_bound, r->st.lower_bound);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s</text>\n",
		LEFT - 4, top + CURVE_H - sy * r->st.lower_bound + 4, b1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">0</text>\n",
		LEFT - 4, top + CURVE_H);
	axis_steps(f, n, top + CURVE_H);
}

struct xfer_sched;
static void buf_rects(FILE *f, const struct xfer_sched *x, uint32_t p, uint64_t off,
		      double x0, double x1, double top, double sy, double h, const char *fill,
		      const char *name, const char *tail);

static void panel(FILE *f, const struct md_model *m, const struct pm_result *r,
		  const int64_t *lo, const int64_t *hi, int tier, double top,
		  const struct xfer_sched *x)
{
	uint64_t arena = r->st.arena[tier];
	double sy = arena ? PANEL_H / (double)arena : 0;
	uint32_t p, n = r->n_steps;
	char b1[32], name[600], tail[160];

	human(b1, sizeof(b1), (double)arena);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"h\">%s arena: %s (step &#215; offset)</text>\n",
		LEFT, top - 6, tier_names[tier], b1);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>\n",
		LEFT, top, W - LEFT - RIGHT, PANEL_H);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">0</text>\n",
		LEFT - 4, top + 10);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s</text>\n",
		LEFT - 4, top + PANEL_H, b1);
	for (p = 0; p < r->n_pvals; p++) {
		uint64_t off;
		double x0, x1, h;

		if (r->pval_root[p] != p || lo[p] < 0 || !r->pval_size[p] ||
		    ortmem_plan_offset(r->plan, p, &off) != tier)
			continue;
		x0 = xs((double)lo[p], n);
		x1 = xs((double)hi[p] + 1, n);
		h = sy * (double)r->pval_size[p];
		if (r->pval_value[p] >= 0)
			snprintf(name, sizeof(name), "%s", m->values[r->pval_value[p]].name);
		else
			snprintf(name, sizeof(name), "body peak of node %d", r->pval_node[p]);
		human(b1, sizeof(b1), (double)r->pval_size[p]);
		snprintf(tail, sizeof(tail), ": %s (%" PRIu64 " bytes), steps %lld-%lld, offset %" PRIu64,
			 b1, r->pval_size[p], (long long)lo[p], (long long)hi[p], off);
		buf_rects(f, tier == ORTMEM_TIER_DEVICE ? x : NULL, p, off, x0, x1, top, sy, h,
			  tier_fill[tier], name, tail);
	}
	axis_steps(f, n, top + PANEL_H);
}

/* The schedule of every step: bytes in and out per tier, stall bytes. */
struct xfer_sched {
	uint64_t (*in)[ORTMEM_TIER_COUNT];
	uint64_t (*out)[ORTMEM_TIER_COUNT];
	uint64_t *stall;
	uint64_t *move;		/* bytes moved within the device arena */
	uint64_t max_in, max_out, total, moved;
	uint32_t n_steps;
	/* the moves, in step order, for the device panel */
	struct ortmem_plan_transfer *mv;
	uint32_t *mv_step;
	size_t n_mv;
};

/* The transfers of step @s into *buf (grown as needed); their count or -1. */
static int xfer_get(const struct pm_result *r, uint32_t s, struct ortmem_plan_transfer **buf,
		    size_t *cap, uint64_t *stall)
{
	int n = ortmem_plan_transfers(r->plan, s, *buf, *cap, stall);

	if (n > 0 && (size_t)n > *cap) {
		struct ortmem_plan_transfer *grown = realloc(*buf, sizeof(**buf) * (size_t)n);

		if (!grown)
			return -1;
		*buf = grown;
		*cap = (size_t)n;
		n = ortmem_plan_transfers(r->plan, s, *buf, *cap, stall);
	}
	return n < 0 ? -1 : n;
}

/* Keep move @t of step @s for the device panel. */
static int move_keep(struct xfer_sched *x, const struct ortmem_plan_transfer *t, uint32_t s)
{
	struct ortmem_plan_transfer *mv = realloc(x->mv, sizeof(*mv) * (x->n_mv + 1));
	uint32_t *st = realloc(x->mv_step, sizeof(*st) * (x->n_mv + 1));

	if (mv)
		x->mv = mv;
	if (st)
		x->mv_step = st;
	if (!mv || !st)
		return -1;
	x->mv[x->n_mv] = *t;
	x->mv_step[x->n_mv++] = s;
	return 0;
}

static int xfer_collect(const struct pm_result *r, struct xfer_sched *x)
{
	struct ortmem_plan_transfer *xs_ = NULL;
	size_t cap = 0;
	uint32_t s;
	int n, i, ret = -1;

	x->in = calloc(r->n_steps + 1, sizeof(*x->in));
	x->out = calloc(r->n_steps + 1, sizeof(*x->out));
	x->stall = calloc(r->n_steps + 1, sizeof(*x->stall));
	x->move = calloc(r->n_steps + 1, sizeof(*x->move));
	x->n_steps = r->n_steps;
	if (!x->in || !x->out || !x->stall || !x->move)
		return -1;
	for (s = 0; s < r->n_steps; s++) {
		uint64_t in = 0, out = 0;

		n = xfer_get(r, s, &xs_, &cap, &x->stall[s]);
		if (n < 0)
			goto out;
		for (i = 0; i < n; i++) {
			const struct ortmem_plan_transfer *t = &xs_[i];
			int slow = t->dir == ORTMEM_PLAN_XFER_IN ? t->from_tier : t->to_tier;

			if (t->dir == ORTMEM_PLAN_XFER_MOVE) {
				if (move_keep(x, t, s))
					goto out;
				x->move[s] += t->bytes;
				in += t->bytes;
				x->moved += t->bytes;
				continue;
			}
			if (t->dir != ORTMEM_PLAN_XFER_OUT && t->dir != ORTMEM_PLAN_XFER_IN)
				continue;
			if (slow < 0 || slow >= ORTMEM_TIER_COUNT)
				continue;
			if (t->dir == ORTMEM_PLAN_XFER_IN)
				x->in[s][slow] += t->bytes, in += t->bytes;
			else
				x->out[s][slow] += t->bytes, out += t->bytes;
		}
		x->max_in = in > x->max_in ? in : x->max_in;
		x->max_out = out > x->max_out ? out : x->max_out;
		x->total += in + out - x->move[s];
	}
	ret = 0;
out:
	free(xs_);
	return ret;
}

static void xfer_free(struct xfer_sched *x)
{
	free(x->in);
	free(x->out);
	free(x->stall);
	free(x->move);
	free(x->mv);
	free(x->mv_step);
}

/*
 * Buffer @p over [@x0, @x1) from @off: one titled rectangle (class buf),
 * its later pieces (class bufmv) at the offsets its moves in @x take it
 * to, from the step of each.
 */
static void buf_rects(FILE *f, const struct xfer_sched *x, uint32_t p, uint64_t off,
		      double x0, double x1, double top, double sy, double h, const char *fill,
		      const char *name, const char *tail)
{
	const char *cls = "buf";
	size_t j = 0;
	int more;

	for (;;) {
		double end = x1;

		/* The next move of @p, if any, ends this piece. */
		while (x && j < x->n_mv && x->mv[j].value != p)
			j++;
		more = x && j < x->n_mv;
		if (more)
			end = xs(x->mv_step[j], x->n_steps);
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" class=\"%s\"><title>",
			x0, top + sy * (double)off, end - x0 < 1 ? 1 : end - x0, h < 0.5 ? 0.5 : h,
			fill, cls);
		xml_text(f, name);
		if (more)
			fprintf(f, "%s; moved to offset %" PRIu64 " before step %u</title></rect>\n",
				tail, x->mv[j].device_offset, x->mv_step[j]);
		else
			fprintf(f, "%s</title></rect>\n", tail);
		if (!more)
			return;
		x0 = end;
		off = x->mv[j].device_offset;
		cls = "bufmv";
		tail = ": after a move";
		j++;
	}
}

/* In the device panel: each move, an arrow at its step from the old range
 * to the new. */
static void move_arrows(FILE *f, const struct md_model *m, const struct pm_result *r,
			const struct xfer_sched *x, double top)
{
	uint64_t arena = r->st.arena[ORTMEM_TIER_DEVICE];
	double sy = arena ? PANEL_H / (double)arena : 0;
	size_t k;

	for (k = 0; k < x->n_mv; k++) {
		const struct ortmem_plan_transfer *t = &x->mv[k];
		double xm = xs(x->mv_step[k], r->n_steps), half = (double)t->bytes / 2;

		fprintf(f, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"%.2f\" y2=\"%.2f\" class=\"mv\" marker-end=\"url(#mvhead)\">"
			"<title>move of ", xm, xm, top + sy * ((double)t->src_offset + half),
			top + sy * ((double)t->device_offset + half));
		if (t->value < r->n_pvals && r->pval_value[t->value] >= 0)
			xml_text(f, m->values[r->pval_value[t->value]].name);
		else
			fprintf(f, "value %u", t->value);
		fprintf(f, " before step %u: offset %" PRIu64 " to %" PRIu64 " (%" PRIu64 " bytes)</title></line>\n",
			x->mv_step[k], t->src_offset, t->device_offset, t->bytes);
	}
}

/* One bar: @sign -1 grows up from @axis (read-backs), +1 down (write-outs). */
static void xfer_bar(FILE *f, uint32_t s, uint32_t n, double axis, double y0, double h,
		     int sign, const char *fill, const char *what, uint64_t bytes,
		     const char *cls)
{
	char b1[32];
	double x0 = xs(s, n), x1 = xs(s + 1, n);

	human(b1, sizeof(b1), (double)bytes);
	fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" class=\"%s\">"
		"<title>step %u: %s %s (%" PRIu64 " bytes)</title></rect>\n",
		x0, sign < 0 ? axis - y0 - h : axis + y0, x1 - x0 < 1 ? 1 : x1 - x0,
		h < 0.5 ? 0.5 : h, fill, cls, s, what, b1, bytes);
}

static void xfer_panel(FILE *f, const struct pm_result *r, const struct xfer_sched *x,
		       double top)
{
	uint64_t maxv = x->max_in > x->max_out ? x->max_in : x->max_out;
	double half = XFER_H / 2, axis = top + half, sy = maxv ? (half - 4) / (double)maxv : 0;
	uint32_t s, n = r->n_steps;
	char b1[32], b2[32], what[64];
	int t;

	human(b1, sizeof(b1), (double)x->total);
	human(b2, sizeof(b2), (double)x->moved);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"h\">transfers: %s moved between tiers, "
		"%s within the device arena (read back or moved before a step above, written out after it below; red: stall)</text>\n",
		LEFT, top - 6, b1, b2);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>\n",
		LEFT, top, W - LEFT - RIGHT, XFER_H);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"frame\"/>\n",
		LEFT, W - RIGHT, axis, axis);
	human(b1, sizeof(b1), (double)maxv);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s in</text>\n",
		LEFT - 4, top + 10, b1);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ax\" text-anchor=\"end\">%s out</text>\n",
		LEFT - 4, top + XFER_H, b1);
	for (s = 0; s < n; s++) {
		double up = 0, down = 0;

		for (t = 1; t < ORTMEM_TIER_COUNT; t++) {
			if (x->in[s][t]) {
				snprintf(what, sizeof(what), "read back from %s", tier_names[t]);
				xfer_bar(f, s, n, axis, up, sy * (double)x->in[s][t], -1,
					 tier_fill[t], what, x->in[s][t], "xin");
				up += sy * (double)x->in[s][t];
			}
			if (x->out[s][t]) {
				snprintf(what, sizeof(what), "written out to %s", tier_names[t]);
				xfer_bar(f, s, n, axis, down, sy * (double)x->out[s][t], 1,
					 tier_fill[t], what, x->out[s][t], "xout");
				down += sy * (double)x->out[s][t];
			}
		}
		if (x->move[s])
			xfer_bar(f, s, n, axis, up, sy * (double)x->move[s], -1, MOVE_FILL,
				 "moved within the device arena", x->move[s], "xmove");
		if (x->stall[s])
			xfer_bar(f, s, n, axis, 0, sy * (double)x->stall[s], -1, "none",
				 "stall", x->stall[s], "stall");
	}
	axis_steps(f, n, top + XFER_H);
}

/* In the device panel: each read-back over the steps it may overlap. */
static void xfer_windows(FILE *f, const struct pm_result *r, double top)
{
	uint64_t arena = r->st.arena[ORTMEM_TIER_DEVICE];
	double sy = arena ? PANEL_H / (double)arena : 0;
	struct ortmem_plan_transfer *t = NULL;
	uint32_t s, n = r->n_steps;
	size_t cap = 0;
	int k, cnt;

	for (s = 0; s < n; s++) {
		cnt = xfer_get(r, s, &t, &cap, NULL);
		for (k = 0; k < cnt; k++) {
			double x0, x1;

			if (t[k].dir != ORTMEM_PLAN_XFER_IN)
				continue;
			x0 = xs(t[k].earliest, n);
			x1 = xs(s, n);
			fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" class=\"win\">"
				"<title>read-back of value %u for step %u: may start before step %u, offset %" PRIu64 "</title></rect>\n",
				x0, top + sy * (double)t[k].device_offset, x1 - x0 < 1 ? 1 : x1 - x0,
				sy * (double)t[k].bytes < 0.5 ? 0.5 : sy * (double)t[k].bytes,
				t[k].value, s, t[k].earliest, t[k].device_offset);
		}
	}
	free(t);
}

int out_svg(FILE *f, const struct md_model *m, const struct pm_result *r,
	    const char *title)
{
	int64_t *lo = calloc(r->n_pvals + 1, sizeof(*lo)), *hi = calloc(r->n_pvals + 1, sizeof(*hi));
	uint64_t *live = calloc(r->n_steps + 2, sizeof(*live));
	struct xfer_sched x = { 0 };
	double height, top;
	uint32_t p, s;
	int t, panels = 0, ret = -1;
	char b1[32], b2[32];

	if (!lo || !hi || !live || pm_intervals(m, r, lo, hi) || xfer_collect(r, &x))
		goto out;
	for (p = 0; p < r->n_pvals; p++)
		if (r->pval_root[p] == p && lo[p] >= 0)
			for (s = (uint32_t)lo[p]; s <= (uint32_t)hi[p]; s++)
				live[s] += r->pval_size[p];
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		panels += r->st.arena[t] > 0;
	height = 90 + CURVE_H + GAP + panels * (PANEL_H + GAP) + 20 +
		 (x.total || x.moved ? XFER_H + GAP : 0);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
		W, height, W, height);
	fprintf(f, "<style>text{font-family:sans-serif;font-size:13px}.ax{font-size:11px;fill:#444}"
		".h{font-weight:bold}.frame{fill:none;stroke:#bbb}.live{fill:none;stroke:#222;stroke-width:1.2}"
		".buf{stroke:#fff;stroke-width:0.4}.lb{stroke:#d62728;stroke-dasharray:6 4;stroke-width:1.5}rect:hover{stroke:#000;stroke-width:1}"
		".xin,.xout{stroke:none}.stall{fill:none;stroke:#d62728;stroke-width:1}"
		".win{fill:#4e79a7;fill-opacity:0.12;stroke:#4e79a7;stroke-opacity:0.5;stroke-width:0.4;stroke-dasharray:2 2}"
		".bufmv{stroke:" MOVE_FILL ";stroke-width:0.8}.mv{stroke:" MOVE_FILL ";stroke-width:1.5}</style>\n");
	fprintf(f, "<defs><marker id=\"mvhead\" markerWidth=\"6\" markerHeight=\"6\" refX=\"5\" refY=\"3\" orient=\"auto\">"
		"<path d=\"M0,0 L6,3 L0,6 z\" fill=\"" MOVE_FILL "\"/></marker></defs>\n");
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%.1f\" y=\"22\" class=\"h\">", LEFT);
	xml_text(f, title);
	human(b1, sizeof(b1), (double)r->st.lower_bound);
	human(b2, sizeof(b2), (double)(r->st.arena[0] + r->st.arena[1] + r->st.arena[2]));
	fprintf(f, ": %u steps, %" PRIu64 " buffers, lower bound %s, arena %s (%.4fx)</text>\n",
		r->n_steps, r->st.n_buffers, b1, b2, r->st.arena_over_lb);
	/* Legend. */
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		fprintf(f, "<rect x=\"%.1f\" y=\"34\" width=\"14\" height=\"14\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"46\">%s</text>\n", LEFT + t * 110.0, tier_fill[t],
			LEFT + t * 110.0 + 20, tier_names[t]);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"41\" y2=\"41\" class=\"lb\"/><text x=\"%.1f\" y=\"46\">lower bound</text>\n",
		LEFT + 330, LEFT + 360, LEFT + 366);
	fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"41\" y2=\"41\" class=\"live\"/><text x=\"%.1f\" y=\"46\">bytes live</text>\n",
		LEFT + 470, LEFT + 500, LEFT + 506);
	top = 90;
	curve(f, r, live, top);
	top += CURVE_H + GAP;
	if (x.total || x.moved) {
		xfer_panel(f, r, &x, top);
		top += XFER_H + GAP;
	}
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		if (!r->st.arena[t])
			continue;
		panel(f, m, r, lo, hi, t, top, &x);
		if (t == ORTMEM_TIER_DEVICE && x.total)
			xfer_windows(f, r, top);
		if (t == ORTMEM_TIER_DEVICE)
			move_arrows(f, m, r, &x, top);
		top += PANEL_H + GAP;
	}
	fprintf(f, "</svg>\n");
	ret = ferror(f) ? -1 : 0;
out:
	free(lo);
	free(hi);
	free(live);
	xfer_free(&x);
	return ret;
}
