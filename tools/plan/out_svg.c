// SPDX-License-Identifier: MIT
/*
 * The memory timeline as SVG: on top, the bytes live at each step with the
 * lower bound and the arena; below, one panel per tier in use, where every
 * buffer is a rectangle over its steps (x) and its offset (y), coloured by
 * tier, its name, size and steps in a <title> shown on hover.  The width is
 * fixed, so a 1,000-step model gets sub-pixel columns that still read as a
 * skyline; rectangles keep a minimum width of one pixel.
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

static const char *const tier_names[ORTMEM_TIER_COUNT] = { "device", "host", "disk" };
static const char *const tier_fill[ORTMEM_TIER_COUNT] = { "#4e79a7", "#f28e2b", "#8c8c8c" };

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

static void panel(FILE *f, const struct md_model *m, const struct pm_result *r,
		  const int64_t *lo, const int64_t *hi, int tier, double top)
{
	uint64_t arena = r->st.arena[tier];
	double sy = arena ? PANEL_H / (double)arena : 0;
	uint32_t p, n = r->n_steps;
	char b1[32], name[600];

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
		fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" class=\"buf\"><title>",
			x0, top + sy * (double)off, x1 - x0 < 1 ? 1 : x1 - x0, h < 0.5 ? 0.5 : h,
			tier_fill[tier]);
		xml_text(f, name);
		human(b1, sizeof(b1), (double)r->pval_size[p]);
		fprintf(f, ": %s (%" PRIu64 " bytes), steps %lld-%lld, offset %" PRIu64 "</title></rect>\n",
			b1, r->pval_size[p], (long long)lo[p], (long long)hi[p], off);
	}
	axis_steps(f, n, top + PANEL_H);
}

int out_svg(FILE *f, const struct md_model *m, const struct pm_result *r,
	    const char *title)
{
	int64_t *lo = calloc(r->n_pvals + 1, sizeof(*lo)), *hi = calloc(r->n_pvals + 1, sizeof(*hi));
	uint64_t *live = calloc(r->n_steps + 2, sizeof(*live));
	double height, top;
	uint32_t p, s;
	int t, panels = 0, ret = -1;
	char b1[32], b2[32];

	if (!lo || !hi || !live || pm_intervals(m, r, lo, hi))
		goto out;
	for (p = 0; p < r->n_pvals; p++)
		if (r->pval_root[p] == p && lo[p] >= 0)
			for (s = (uint32_t)lo[p]; s <= (uint32_t)hi[p]; s++)
				live[s] += r->pval_size[p];
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		panels += r->st.arena[t] > 0;
	height = 90 + CURVE_H + GAP + panels * (PANEL_H + GAP) + 20;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
		W, height, W, height);
	fprintf(f, "<style>text{font-family:sans-serif;font-size:13px}.ax{font-size:11px;fill:#444}"
		".h{font-weight:bold}.frame{fill:none;stroke:#bbb}.live{fill:none;stroke:#222;stroke-width:1.2}"
		".buf{stroke:#fff;stroke-width:0.4}.lb{stroke:#d62728;stroke-dasharray:6 4;stroke-width:1.5}rect:hover{stroke:#000;stroke-width:1}</style>\n");
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
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		if (!r->st.arena[t])
			continue;
		panel(f, m, r, lo, hi, t, top);
		top += PANEL_H + GAP;
	}
	fprintf(f, "</svg>\n");
	ret = ferror(f) ? -1 : 0;
out:
	free(lo);
	free(hi);
	free(live);
	return ret;
}
