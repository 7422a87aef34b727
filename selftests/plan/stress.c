// SPDX-License-Identifier: MIT
/*
 * Random graphs and packing instances nobody tuned for, checked against
 * what plan.h and the man pages promise: values of 0 bytes to 2^40 bytes,
 * graph inputs, nodes without inputs or outputs, one value read several
 * times by a node, views, in-place hints anywhere a node allows them,
 * symbolic sizes, any alignment, budgets around the largest step's
 * footprint, tier masks, thread counts and tiny time budgets.  A solved
 * plan must pass the validator, keep every offset in its arena, and list
 * transfers that add up to ortmem_plan_step_moves() and the stats; a
 * device budget at or above the largest step's footprint (a slower,
 * unbudgeted tier allowed) is never refused, one below it always is.
 *
 * The default run takes a few seconds; ORTMEM_STRESS_ROUNDS=N runs N
 * rounds of each (ORTMEM_STRESS_SEED picks the first seed, and
 * ORTMEM_STRESS_NMAX the most nodes), printing every failing seed, for runs
 * under the sanitizers; ORTMEM_STRESS_DUMP=seed shrinks and prints one
 * failing graph (stress_reduce.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ortmem/ortmem.h>

#include "../harness.h"
#include "plan_test.h"
#include "plan_moves.h"

#define VMAX 400
#define NMAX 300
#define EMAX 8

struct gval {
	uint64_t size;		/* resolved */
	bool symbolic;		/* given as ORTMEM_PLAN_SIZE_SYMBOLIC */
	bool defer;		/* the oracle keeps it symbolic */
	bool output;
	int view_of;		/* -1 */
	int def;		/* -1: graph input */
};

struct gnode {
	uint32_t in[EMAX], out[EMAX];
	uint32_t n_in, n_out;
	int hint_out, hint_in;	/* -1: none */
};

struct gen {
	struct gval v[VMAX];
	struct gnode nd[NMAX];
	uint32_t nv, nn;
	bool hints, deferred, oracle;
};

static uint64_t pick_size(uint64_t *s)
{
	switch (rnd(s) % 12) {
	case 0:
		return 0;
	case 1:
		return 1 + rnd(s) % 8;
	case 2:
		return 1ull << (rnd(s) % 41);			/* 1 .. 2^40 */
	case 3:
		return (1ull << (rnd(s) % 41)) - 1;
	case 4:
		return (1ull << (20 + rnd(s) % 21)) + rnd(s) % 4096;
	default:
		return 1 + rnd(s) % 100000;
	}
}

static uint32_t root_of(const struct gen *g, uint32_t v)
{
	while (g->v[v].view_of >= 0)
		v = (uint32_t)g->v[v].view_of;
	return v;
}

static void gen_graph(struct gen *g, uint64_t *s, uint32_t nmax)
{
	uint32_t n = 1 + (uint32_t)(rnd(s) % nmax), i, k;
	int shape = (int)(rnd(s) % 4);	/* 0 random, 1 chain, 2 fan-out, 3 fan-in */
	bool may_defer = rnd(s) % 5 == 0;

	memset(g, 0, sizeof(*g));
	/* a few graph inputs first */
	for (i = 0; i < rnd(s) % 3; i++)
		g->v[g->nv++] = (struct gval){ .size = pick_size(s), .view_of = -1, .def = -1 };
	for (i = 0; i < n && g->nv + EMAX < VMAX; i++) {
		struct gnode *nd = &g->nd[g->nn];
		uint32_t nin = (uint32_t)(rnd(s) % 5), nout = (uint32_t)(rnd(s) % 4);

		if (rnd(s) % 8)
			nout += !nout;
		if (shape == 1)
			nin = g->nv ? 1 : 0, nout = 1;
		if (shape == 2 && i)
			nin = 1;
		if (shape == 3 && i == n - 1)
			nin = EMAX;
		nd->hint_out = nd->hint_in = -1;
		for (k = 0; k < nin && g->nv; k++) {
			uint32_t x = (uint32_t)(rnd(s) % g->nv);

			if (shape == 1)
				x = g->nv - 1;
			else if (shape == 2)
				x = g->nv > 1 ? (uint32_t)(rnd(s) % 2) : 0;
			else if (k && rnd(s) % 4 == 0)
				x = nd->in[k - 1];	/* read twice */
			nd->in[nd->n_in++] = x;
		}
		for (k = 0; k < nout; k++) {
			struct gval *y = &g->v[g->nv];

			*y = (struct gval){ .size = pick_size(s), .view_of = -1, .def = (int)g->nn,
					    .output = rnd(s) % 10 == 0 };
			if (nd->n_in && rnd(s) % 7 == 0)
				y->view_of = (int)nd->in[rnd(s) % nd->n_in];
			if (rnd(s) % 9 == 0) {
				y->symbolic = true;
				g->oracle = true;
				y->defer = may_defer && rnd(s) % 6 == 0;
			}
			nd->out[nd->n_out++] = g->nv++;
		}
		if (nd->n_in && nd->n_out && rnd(s) % 3 == 0) {
			nd->hint_in = (int)nd->in[rnd(s) % nd->n_in];
			nd->hint_out = (int)nd->out[rnd(s) % nd->n_out];
			g->hints = true;
		}
		g->nn++;
	}
	/* A value never produced, but made a view, is a view of a graph input:
	 * keep the views' sources produced no later (the planner checks). */
	for (i = 0; i < g->nv; i++)
		if (g->v[i].view_of >= 0 && g->v[i].symbolic)
			g->v[i].symbolic = false;
	for (i = 0; i < g->nv; i++)
		if (!g->v[i].symbolic || g->v[i].view_of >= 0)
			g->v[i].defer = false;
	for (i = 0; i < g->nv; i++)
		g->deferred |= g->v[i].defer && g->v[i].def >= 0;
}

static int oracle(uint32_t v, uint64_t *size, void *user)
{
	const struct gen *g = user;

	if (v >= g->nv)
		return -EINVAL;
	if (g->v[v].defer)
		return 1;
	*size = g->v[v].size;
	return 0;
}

/* Build @g into @p; 0 or the first error. */
static int build(struct ortmem_plan *p, const struct gen *g)
{
	uint32_t i;
	int ret;

	for (i = 0; i < g->nv; i++) {
		ret = ortmem_plan_add_value(p, g->v[i].symbolic ? ORTMEM_PLAN_SIZE_SYMBOLIC :
					    g->v[i].size,
					    g->v[i].output ? ORTMEM_PLAN_VALUE_OUTPUT : 0);
		if (ret != (int)i)
			return ret < 0 ? ret : -1;
	}
	for (i = 0; i < g->nv; i++)
		if (g->v[i].view_of >= 0 &&
		    (ret = ortmem_plan_set_view(p, i, (uint32_t)g->v[i].view_of)))
			return ret;
	for (i = 0; i < g->nn; i++) {
		const struct gnode *nd = &g->nd[i];

		ret = ortmem_plan_add_node(p, nd->in, nd->n_in, nd->out, nd->n_out);
		if (ret != (int)i)
			return ret < 0 ? ret : -1;
		if (nd->hint_out >= 0 &&
		    (ret = ortmem_plan_hint_inplace(p, i, (uint32_t)nd->hint_out,
						    (uint32_t)nd->hint_in)))
			return ret;
	}
	if (g->oracle)
		return ortmem_plan_set_size_fn(p, oracle, (void *)g);
	return 0;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * The largest step's footprint: the distinct planned buffers (view roots,
 * each as large as its largest view) a step reads or writes, aligned;
 * with @hi, each in-place output counted
 * at its chain's largest size (an upper bound of its buffer).
 * Sets *sum to the sum of the planned buffers' sizes (saturating).
 */
static uint64_t footprint(const struct gen *g, uint64_t align, bool hi, uint64_t *sum,
			  uint64_t *asum)
{
	uint64_t foot = 0, up[VMAX], grown[VMAX];
	uint32_t s, k, j, i;

	/* A root's buffer holds its largest view; an output that takes its
	 * input's buffer in place has that buffer's size: at most the
	 * largest of its hinted chain. */
	for (i = 0; i < g->nv; i++)
		up[i] = g->v[i].size;
	for (i = 0; i < g->nv; i++)
		if (g->v[i].view_of >= 0 && g->v[root_of(g, i)].def >= 0 &&
		    g->v[i].size > up[root_of(g, i)])
			up[root_of(g, i)] = g->v[i].size;
	for (i = 0; i < g->nv; i++)
		grown[i] = up[i];
	for (s = 0; hi && s < g->nn; s++)
		if (g->nd[s].hint_out >= 0) {
			uint32_t y = (uint32_t)g->nd[s].hint_out, x = root_of(g, (uint32_t)g->nd[s].hint_in);

			if (up[x] > up[y])
				up[y] = up[x];
		}
	*sum = *asum = 0;
	for (i = 0; i < g->nv; i++)
		if (g->v[i].view_of < 0 && g->v[i].def >= 0) {
			if (__builtin_add_overflow(*sum, grown[i], sum))
				*sum = UINT64_MAX;
			if (__builtin_add_overflow(*asum, align_up(grown[i], align), asum) ||
			    align_up(grown[i], align) < grown[i])
				*asum = UINT64_MAX;
		}
	for (s = 0; s < g->nn; s++) {
		const struct gnode *nd = &g->nd[s];
		uint32_t r[2 * EMAX], nr = 0;
		uint64_t f = 0;

		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			uint32_t x = k < nd->n_in ? nd->in[k] : nd->out[k - nd->n_in];
			uint32_t rt = root_of(g, x);

			if (g->v[rt].def < 0)
				continue;
			for (j = 0; j < nr && r[j] != rt; j++)
				;
			if (j < nr)
				continue;
			r[nr++] = rt;
			f += align_up(up[rt], align);
		}
		if (f > foot)
			foot = f;
	}
	return foot;
}

struct run {
	uint64_t seed;
	char why[256];
};

/* What the rounds ran into: solved, with transfers, refused, overflow,
 * deferred (logged, to see the draws reach every case). */
static uint64_t seen[5];

#define FAIL(r, ...) do { snprintf((r)->why, sizeof((r)->why), __VA_ARGS__); goto out; } while (0)

/* Check what a solved plan promises; "" when it keeps them all. */
static void check_solved(struct run *r, struct ortmem_plan *p, const struct gen *g,
			 const struct ortmem_plan_opts *o)
{
	ORTMEM_OPTS(ortmem_plan_stats, st);
	ORTMEM_OPTS(ortmem_plan_moves, m);
	struct ortmem_plan_transfer x[2 * VMAX];
	uint64_t pre[ORTMEM_TIER_COUNT] = { 0 }, spill = 0, pref = 0, mv = 0, off, stall;
	uint64_t tot_pre = 0, tot_spill = 0, tot_mv = 0;
	uint32_t s, v, ordered = 0, self = 0;
	const char *why;
	int n, i, t;

	if (ortmem_plan_validate(p))
		FAIL(r, "validate: %s", ortmem_last_error_message());
	if (ortmem_plan_stats(p, &st))
		FAIL(r, "stats: %s", ortmem_last_error_message());
	/* (the bound is in device-aligned bytes: with buffers on other
	 * tiers, aligned finer, the arenas may sum to less) */
	if (st.arena_over_lb < 1.0 && st.lower_bound && !st.arena[1] && !st.arena[2])
		FAIL(r, "arena_over_lb %f < 1", st.arena_over_lb);
	for (v = 0; v < g->nv; v++) {
		uint32_t rt = root_of(g, v);

		t = ortmem_plan_offset(p, v, &off);
		if (g->v[rt].def < 0) {
			if (t != -ENOENT)
				FAIL(r, "offset of graph input %u: %d", v, t);
			continue;
		}
		if (t < 0 || t >= ORTMEM_TIER_COUNT)
			FAIL(r, "offset of value %u: %d (%s)", v, t, ortmem_last_error_message());
		if (off % o->align[t] ||
		    (g->v[rt].size && off + align_up(g->v[rt].size, o->align[t]) > st.arena[t]))
			FAIL(r, "value %u (%llu bytes) at %llu of %s arena %llu (align %llu)", v,
			     (unsigned long long)g->v[v].size, (unsigned long long)off,
			     ortmem_tier_name(t), (unsigned long long)st.arena[t],
			     (unsigned long long)o->align[t]);
		if (o->budget[t] && st.arena[t] > o->budget[t])
			FAIL(r, "%s arena %llu over budget %llu", ortmem_tier_name(t),
			     (unsigned long long)st.arena[t], (unsigned long long)o->budget[t]);
	}
	for (s = 0; s < g->nn; s++) {
		n = ortmem_plan_transfers(p, s, NULL, 0, NULL);
		if (n < 0 || n > (int)(sizeof(x) / sizeof(x[0])))
			FAIL(r, "transfers(%u) count %d", s, n);
		if (ortmem_plan_transfers(p, s, x, sizeof(x) / sizeof(x[0]), &stall) != n)
			FAIL(r, "transfers(%u): two counts", s);
		if (ortmem_plan_step_moves(p, s, &m))
			FAIL(r, "step_moves(%u): %s", s, ortmem_last_error_message());
		memset(pre, 0, sizeof(pre));
		spill = pref = mv = 0;
		for (i = 0; i < n; i++) {
			uint64_t vsz = x[i].bytes;

			if (x[i].value >= g->nv || x[i].earliest > s)
				FAIL(r, "step %u transfer %d: value %u earliest %u", s, i,
				     x[i].value, x[i].earliest);
			if (x[i].device_offset + align_up(vsz, o->align[0]) > st.arena[0] ||
			    x[i].src_offset + align_up(vsz, o->align[0]) > st.arena[0])
				FAIL(r, "step %u transfer %d of %llu bytes at %llu/%llu outside device arena %llu",
				     s, i, (unsigned long long)vsz,
				     (unsigned long long)x[i].device_offset,
				     (unsigned long long)x[i].src_offset,
				     (unsigned long long)st.arena[0]);
			switch (x[i].dir) {
			case ORTMEM_PLAN_XFER_IN:
				if (x[i].to_tier != 0 || x[i].from_tier <= 0 ||
				    x[i].from_tier >= ORTMEM_TIER_COUNT)
					FAIL(r, "step %u IN tiers %d -> %d", s, x[i].from_tier,
					     x[i].to_tier);
				pre[x[i].from_tier] += vsz;
				pref += vsz;
				if (ortmem_plan_staging_offset(p, x[i].value, s, &off) == 0 &&
				    off != x[i].device_offset)
					FAIL(r, "step %u IN of %u at %llu, staged at %llu", s,
					     x[i].value, (unsigned long long)x[i].device_offset,
					     (unsigned long long)off);
				break;
			case ORTMEM_PLAN_XFER_OUT:
				if (x[i].from_tier != 0 || x[i].to_tier <= 0 ||
				    x[i].to_tier >= ORTMEM_TIER_COUNT)
					FAIL(r, "step %u OUT tiers %d -> %d", s, x[i].from_tier,
					     x[i].to_tier);
				if (m.spill[x[i].to_tier] < vsz)
					FAIL(r, "step %u OUT %llu > spill %llu", s,
					     (unsigned long long)vsz,
					     (unsigned long long)m.spill[x[i].to_tier]);
				spill += vsz;
				break;
			case ORTMEM_PLAN_XFER_MOVE:
				if (o->flags & ORTMEM_PLAN_F_NO_MOVE)
					FAIL(r, "step %u MOVE under NO_MOVE", s);
				mv += vsz;
				break;
			default:
				FAIL(r, "step %u transfer dir %u", s, x[i].dir);
			}
		}
		why = moves_in_order(x, n, o->align[0] ? o->align[0] : ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE,
				     o->flags & ORTMEM_PLAN_F_MOVE_APART, &ordered, &self);
		if (why)
			FAIL(r, "step %u: %s", s, why);
		for (t = 1; t < ORTMEM_TIER_COUNT; t++)
			if (pre[t] != m.prefetch[t])
				FAIL(r, "step %u: read-backs from %s %llu, step_moves %llu", s,
				     ortmem_tier_name(t), (unsigned long long)pre[t],
				     (unsigned long long)m.prefetch[t]);
		if (m.prefetch[0] || m.spill[0])
			FAIL(r, "step %u: device prefetch/spill", s);
		if (spill != m.spill[1] + m.spill[2] || mv != m.device_move || stall > pref)
			FAIL(r, "step %u: spill %llu vs %llu, move %llu vs %llu, stall %llu", s,
			     (unsigned long long)spill,
			     (unsigned long long)(m.spill[1] + m.spill[2]),
			     (unsigned long long)mv, (unsigned long long)m.device_move,
			     (unsigned long long)stall);
		tot_pre += pref;
		tot_spill += spill;
		tot_mv += mv;
	}
	if (tot_pre != st.prefetch_bytes || tot_spill != st.spill_bytes || tot_mv != st.move_bytes)
		FAIL(r, "totals: prefetch %llu/%llu spill %llu/%llu move %llu/%llu",
		     (unsigned long long)tot_pre, (unsigned long long)st.prefetch_bytes,
		     (unsigned long long)tot_spill, (unsigned long long)st.spill_bytes,
		     (unsigned long long)tot_mv, (unsigned long long)st.move_bytes);
out:
	return;
}

/* A random graph and random options from @seed. */
static void draw(uint64_t seed, uint32_t nmax, struct gen *gp, struct ortmem_plan_opts *op)
{
	uint64_t s = seed, foot, sum, asum, dal;
	struct ortmem_plan_opts o = { .sz = sizeof(o) };
	int t;

	gen_graph(gp, &s, nmax);
	for (t = 0; t < ORTMEM_TIER_COUNT; t++)
		o.align[t] = rnd(&s) % 3 ? 0 : 1ull << (rnd(&s) % 50 ? rnd(&s) % 21 : 40 + rnd(&s) % 24);
	o.tiers = (uint32_t)(rnd(&s) % 5) * 2 % 8 | 1;	/* 1, 3, 5, 7 */
	if (rnd(&s) % 4 == 0)
		o.tiers = 0;
	o.flags = (uint32_t)(rnd(&s) % 16);
	o.threads = 1 + (uint32_t)(rnd(&s) % 8);
	o.max_iterations = rnd(&s) % 2 ? 0 : 1 + rnd(&s) % 20;
	o.time_budget_us = rnd(&s) % 3 ? 1 + rnd(&s) % 3000 : 1;
	o.seed = rnd(&s);
	/* from the seed's own bits, so the draws above and below stay those
	 * of the seeds before move_ratio */
	o.move_ratio = seed % 3 ? 0 : 1u << (seed / 3 % 11);
	dal = o.align[0] ? o.align[0] : ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE;
	foot = footprint(gp, dal, false, &sum, &asum);
	switch (rnd(&s) % 6) {
	case 0:
		break;
	case 1:
		o.budget[0] = foot ? foot - 1 - rnd(&s) % foot : 0;
		break;
	case 2:
		o.budget[0] = foot;
		break;
	case 3:
		o.budget[0] = foot + rnd(&s) % (foot + 1);
		break;
	default:
		o.budget[0] = 1 + rnd(&s) % (2 * foot + 1);
		break;
	}
	if (rnd(&s) % 5 == 0)
		o.budget[1] = 1 + rnd(&s) % (2 * foot + 1);
	*op = o;
}

/* Plan @g under @o and check it; r->why empty when all is well. */
static void run_one(struct run *r, const struct gen *gp, struct ortmem_plan_opts o)
{
	const struct gen *g = gp;
	uint64_t foot, sum, asum, dal;
	struct ortmem_plan *p = NULL;
	bool slower_free, exact_foot;
	int ret, t;

	r->why[0] = '\0';
	dal = o.align[0] ? o.align[0] : ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE;
	foot = footprint(g, dal, false, &sum, &asum);
	{
		static const uint64_t def[] = { ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE,
			ORTMEM_PLAN_DEFAULT_ALIGN_HOST, ORTMEM_PLAN_DEFAULT_ALIGN_DISK };
		uint64_t maxal = 1, a;

		for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
			a = o.align[t] ? o.align[t] : def[t];
			if ((!o.tiers || (o.tiers >> t & 1)) && a > maxal)
				maxal = a;
		}
		footprint(g, maxal, true, &sum, &asum);	/* what -EOVERFLOW looks at */
	}
	if (ortmem_plan_new(&o, &p))
		FAIL(r, "plan_new: %s", ortmem_last_error_message());
	if ((ret = build(p, g)))
		FAIL(r, "build: %d %s", ret, ortmem_last_error_message());
	ret = ortmem_plan_solve(p);
	if (g->deferred) {
		uint32_t ids[VMAX], i, want = 0;
		int n;

		seen[4]++;
		if (ret != -ORTMEM_E_PLAN_DEFERRED)
			FAIL(r, "deferred graph solved: %d", ret);
		for (i = 0; i < g->nv; i++)
			want += g->v[i].defer && g->v[i].def >= 0;
		n = ortmem_plan_deferred(p, ids, VMAX);
		if (n != (int)want)
			FAIL(r, "deferred: %d values named, %u deferred", n, want);
		for (i = 0; i < (uint32_t)n; i++)
			if (ids[i] >= g->nv || !g->v[ids[i]].defer)
				FAIL(r, "deferred: value %u named", ids[i]);
		if (ortmem_plan_offset(p, 0, &(uint64_t){ 0 }) != -ENODATA)
			FAIL(r, "deferred plan answers offsets");
		goto out;
	}
	if (ret == -EOVERFLOW) {
		seen[3]++;
		if (sum < (1ull << 62) && asum < (1ull << 62))
			FAIL(r, "EOVERFLOW with sizes summing to %llu: %s",
			     (unsigned long long)sum, ortmem_last_error_message());
		goto out;
	}
	if (sum >= (1ull << 62) && ret != -EOVERFLOW)
		FAIL(r, "sizes summing to %llu: %d, not EOVERFLOW", (unsigned long long)sum, ret);
	{
		uint32_t tiers = o.tiers ? o.tiers : 7;
		int next = tiers & 2 ? 1 : tiers & 4 ? 2 : -1;

		slower_free = next > 0 && !o.budget[next];
	}
	exact_foot = !g->hints || (o.flags & ORTMEM_PLAN_F_NO_INPLACE);
	if (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE) {
		const char *msg = ortmem_last_error_message();

		if (!msg || !strstr(msg, "step"))
			FAIL(r, "capacity error names no step: %s", msg ? msg : "(null)");
		seen[2]++;
		/* in-place sharing can make a step's buffers larger than its
		 * values, but the solve then plans without it: a budget that
		 * holds every step's values is never refused */
		if (o.budget[0] && o.budget[0] >= foot && slower_free)
			FAIL(r, "budget %llu >= footprint %llu refused: %s",
			     (unsigned long long)o.budget[0], (unsigned long long)foot, msg);
		goto out;
	}
	if (ret)
		FAIL(r, "solve: %d %s", ret, ortmem_last_error_message());
	if (o.budget[0] && o.budget[0] < foot && exact_foot)
		FAIL(r, "budget %llu below footprint %llu solved", (unsigned long long)o.budget[0],
		     (unsigned long long)foot);
	{
		static const uint64_t def[] = { ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE,
			ORTMEM_PLAN_DEFAULT_ALIGN_HOST, ORTMEM_PLAN_DEFAULT_ALIGN_DISK };

		for (t = 0; t < ORTMEM_TIER_COUNT; t++)
			o.align[t] = o.align[t] ? o.align[t] : def[t];
	}
	seen[0]++;
	seen[1] += ortmem_plan_transfers(p, 0, NULL, 0, NULL) > 0 ||
		   (g->nn > 1 && ortmem_plan_transfers(p, g->nn - 1, NULL, 0, NULL) > 0);
	check_solved(r, p, g, &o);
out:
	ortmem_plan_free(p);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *e = getenv(name);

	return e && *e ? strtoull(e, NULL, 0) : def;
}

static void one_graph(struct run *r, uint32_t nmax)
{
	static struct gen g;
	struct ortmem_plan_opts o;

	draw(r->seed, nmax, &g, &o);
	run_one(r, &g, o);
}

#include "stress_reduce.h"

/*
 * Found by the stress run: step 4 reads a zero-byte value seated at 0,
 * inside the 8 MiB buffer v0 below it, and the device is 1 KiB short of
 * everything step 4 and v3 need.  The allocator looking for a window to
 * clear took the zero-byte buffer's end (0) as a new window, missed v0
 * there, and sent v0 off at the very step that reads it: v4 then overlapped
 * it and the validator failed the plan.  v3's gap is what must go off.
 */
TEST(a_zero_size_resident_does_not_hide_a_step_input)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .budget = { 549772593152ull, 0, 0 },
		    .flags = ORTMEM_PLAN_F_VALIDATE, .threads = 1, .time_budget_us = 1);
	static const uint64_t size[] = { 8388607, 0, 549755815786ull, 4195293, 4194304, 0 };
	struct ortmem_plan *p = NULL;
	uint32_t v[6], in[3];
	int i;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	for (i = 0; i < 6; i++)
		v[i] = (uint32_t)ortmem_plan_add_value(p, size[i], 0);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(i, ortmem_plan_add_node(p, NULL, 0, &v[i], 1));
	in[0] = v[2];
	in[1] = v[1];
	in[2] = v[0];
	ASSERT_EQ(4, ortmem_plan_add_node(p, in, 3, &v[4], 1));
	ASSERT_EQ(5, ortmem_plan_add_node(p, &v[3], 1, &v[5], 1));
	EXPECT_EQ(0, ortmem_plan_solve(p));
	TH_LOG("%s", ortmem_last_error_message());
	EXPECT_EQ(0, ortmem_plan_validate(p));
	ortmem_plan_free(p);
}

/* A view no node produces, of a value node 1 produces, is planned with
 * its root (nothing reads it); the validator took it for live at step 0,
 * before its root, and failed a sound plan. */
TEST(a_view_no_node_produces_passes_the_validator)
{
	ORTMEM_OPTS(ortmem_plan_opts, o, .flags = ORTMEM_PLAN_F_VALIDATE);
	struct ortmem_plan *p = NULL;
	uint32_t a, b, w;

	ASSERT_EQ(0, ortmem_plan_new(&o, &p));
	a = (uint32_t)ortmem_plan_add_value(p, 64, 0);
	b = (uint32_t)ortmem_plan_add_value(p, 64, 0);
	w = (uint32_t)ortmem_plan_add_value(p, 64, 0);
	ASSERT_EQ(0, ortmem_plan_set_view(p, w, b));
	ASSERT_EQ(0, ortmem_plan_add_node(p, NULL, 0, &a, 1));
	ASSERT_EQ(1, ortmem_plan_add_node(p, NULL, 0, &b, 1));
	EXPECT_EQ(0, ortmem_plan_solve(p));
	TH_LOG("%s", ortmem_last_error_message());
	EXPECT_EQ(0, ortmem_plan_validate(p));
	ortmem_plan_free(p);
}

TEST_TIMEOUT(random_graphs_keep_the_promises, 120)
{
	uint64_t rounds = env_u64("ORTMEM_STRESS_ROUNDS", 6000), seed = env_u64("ORTMEM_STRESS_SEED", 1);
	uint64_t k, bad = 0;
	struct run r;

	if (getenv("ORTMEM_STRESS_DUMP")) {
		static struct gen g;
		struct ortmem_plan_opts o;

		r.seed = env_u64("ORTMEM_STRESS_DUMP", 1);
		draw(r.seed, (uint32_t)env_u64("ORTMEM_STRESS_NMAX", 40), &g, &o);
		run_one(&r, &g, o);
		TH_LOG("%s", r.why);
		if (r.why[0]) {
			char why[sizeof(r.why)];

			strcpy(why, r.why);
			reduce(&g, &o, why);
			run_one(&r, &g, o);
			TH_LOG("reduced: %s", r.why);
		}
		dump(&g, &o);
		return;
	}
	for (k = 0; k < rounds; k++) {
		r.seed = (seed + k) * 0x9e3779b97f4a7c15ull | 1;
		one_graph(&r, k % 50 == 49 ? NMAX : (uint32_t)env_u64("ORTMEM_STRESS_NMAX", 40));
		if (r.why[0]) {
			TH_LOG("graph seed %llu (round %llu): %s", (unsigned long long)r.seed,
			       (unsigned long long)(seed + k), r.why);
			bad++;
		}
	}
	TH_LOG("%llu rounds: %llu solved (%llu with transfers at the first or last step), %llu refused, %llu overflow, %llu deferred",
	       (unsigned long long)rounds, (unsigned long long)seen[0], (unsigned long long)seen[1],
	       (unsigned long long)seen[2], (unsigned long long)seen[3], (unsigned long long)seen[4]);
	EXPECT_EQ(0, bad);
}

/*
 * One random ortmem_plan_pack() instance: empty and inverted lifetimes,
 * identical items, many tiny ones, huge times, sizes whose sum overflows,
 * any alignment and budget.  r->why empty when its answer keeps the
 * promises: disjoint, aligned offsets under the stated height, the bound
 * below it, a refusal only over budget.
 */
#define PMAX 600

static void one_pack(struct run *r)
{
	static struct ortmem_plan_buffer b[PMAX];
	static uint64_t off[PMAX];
	ORTMEM_OPTS(ortmem_plan_opts, o);
	ORTMEM_OPTS(ortmem_plan_stats, st);
	uint64_t s = r->seed, sum = 0, top = 0, al, base;
	uint32_t n = (uint32_t)(rnd(&s) % (rnd(&s) % 4 ? 40 : PMAX)), i, j;
	bool empty = false, over = false, hollow = rnd(&s) % 6 == 0;
	int ret;

	r->why[0] = '\0';
	base = rnd(&s) % 3 ? 0 : UINT64_MAX - 1000 - rnd(&s) % 1000;
	for (i = 0; i < n; i++) {
		if (i && rnd(&s) % 5 == 0) {
			b[i] = b[rnd(&s) % i];		/* identical */
		} else {
			b[i].lower = base + rnd(&s) % 50;
			b[i].upper = b[i].lower + rnd(&s) % 20;
			if (rnd(&s) % 10 == 0 && hollow)
				b[i].size = 0;
			if (rnd(&s) % 40 == 0)
				b[i].upper = b[i].lower - rnd(&s) % 3;	/* empty or inverted */
			b[i].size = rnd(&s) % 3 ? 1 + rnd(&s) % 64 : pick_size(&s);
			if (rnd(&s) % 200 == 0)
				b[i].size = UINT64_MAX >> (rnd(&s) % 3);
		}
		empty |= b[i].size && b[i].upper <= b[i].lower;
		over |= b[i].size > (UINT64_MAX >> 2) ||
			__builtin_add_overflow(sum, b[i].size, &sum) || sum > (UINT64_MAX >> 2);
	}
	o.align[0] = rnd(&s) % 3 ? 0 : 1ull << (rnd(&s) % 24);
	al = o.align[0] ? o.align[0] : ORTMEM_PLAN_DEFAULT_ALIGN_DEVICE;
	o.max_iterations = rnd(&s) % 2 ? 0 : 1 + rnd(&s) % 10;
	o.time_budget_us = 1 + rnd(&s) % 2000;
	o.threads = 1 + (uint32_t)(rnd(&s) % 8);
	o.flags = ORTMEM_PLAN_F_VALIDATE;
	if (rnd(&s) % 3 == 0)
		o.budget[0] = 1 + rnd(&s) % (sum / 2 + 1);
	ret = ortmem_plan_pack(b, n, &o, off, &st);
	if (empty) {
		if (ret != -EINVAL && !(over && ret == -EOVERFLOW))
			FAIL(r, "pack: an empty lifetime with a size: %d", ret);
		goto out;
	}
	if (over) {
		if (ret != -EOVERFLOW)
			FAIL(r, "pack: sizes summing past 2^62: %d", ret);
		goto out;
	}
	if (ret == -ORTMEM_E_CAPACITY_UNAVAILABLE) {
		if (!o.budget[0])
			FAIL(r, "pack: refused with no budget");
		goto out;
	}
	if (ret == -EOVERFLOW) {
		uint64_t asum = 0;

		for (i = 0; i < n; i++)
			if (__builtin_add_overflow(asum, align_up(b[i].size, al), &asum))
				asum = UINT64_MAX;
		if (asum < (1ull << 62))
			FAIL(r, "pack: EOVERFLOW on aligned sizes summing to %llu",
			     (unsigned long long)asum);
		goto out;	/* aligned sizes reach 2^62 */
	}
	if (ret)
		FAIL(r, "pack: %d %s", ret, ortmem_last_error_message());
	for (i = 0; i < n; i++) {
		uint64_t sz = align_up(b[i].size, al);

		if (!b[i].size || b[i].upper <= b[i].lower)
			continue;
		if (off[i] % al || off[i] + sz < off[i])
			FAIL(r, "pack: item %u at %llu (align %llu)", i, (unsigned long long)off[i],
			     (unsigned long long)al);
		if (off[i] + sz > top)
			top = off[i] + sz;
		for (j = 0; j < i; j++)
			if (b[j].size && b[j].upper > b[j].lower &&
			    b[i].lower < b[j].upper && b[j].lower < b[i].upper &&
			    off[i] < off[j] + align_up(b[j].size, al) && off[j] < off[i] + sz)
				FAIL(r, "pack: items %u and %u overlap", i, j);
	}
	if (top != st.arena[0] || st.lower_bound > st.arena[0] ||
	    (o.budget[0] && st.arena[0] > o.budget[0]))
		FAIL(r, "pack: height %llu, stats arena %llu, bound %llu, budget %llu",
		     (unsigned long long)top, (unsigned long long)st.arena[0],
		     (unsigned long long)st.lower_bound, (unsigned long long)o.budget[0]);
out:
	return;
}

TEST_TIMEOUT(random_pack_instances_keep_the_promises, 120)
{
	uint64_t rounds = env_u64("ORTMEM_STRESS_ROUNDS", 6000), seed = env_u64("ORTMEM_STRESS_SEED", 1);
	uint64_t k, bad = 0;
	struct run r;

	for (k = 0; k < rounds; k++) {
		r.seed = (seed + k) * 0xbf58476d1ce4e5b9ull | 1;
		one_pack(&r);
		if (r.why[0]) {
			TH_LOG("pack seed %llu (round %llu): %s", (unsigned long long)r.seed,
			       (unsigned long long)(seed + k), r.why);
			bad++;
		}
	}
	EXPECT_EQ(0, bad);
}

TEST_HARNESS_MAIN
