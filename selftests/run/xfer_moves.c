// SPDX-License-Identifier: MIT
/*
 * ortmem-run's schedule runner (tools/run/xfer.c, xfer_move.c) on plans
 * that move values within the arena (ORTMEM_PLAN_XFER_MOVE).
 *
 * ortmem-run's own models (a chain of layers with long skips, values of
 * two sizes) never fragment the arena, so none of their plans moves a
 * value (sched.sh scans them); random graphs of the same two sizes do.
 * Here the runner is compiled in, and every step computes its output from
 * its inputs' bytes in the arena, as ortmem-run's steps do, through the
 * same code (acts.c's offsets, xfer.c's copy thread and moves).  On random
 * graphs under budgets from the largest step's footprint to the
 * all-in-arena bound:
 *  - every output equals the one computed without a budget, with the
 *    ranges that values leave (by eviction or by a move) poisoned;
 *  - the bytes moved within the arena are the plan's move_bytes, those
 *    the schedule lists and the steps' device_move; in and out as before;
 *  - skipping any of a plan's moves changes an output;
 *  - each write-out starts once its value is produced (the plan's
 *    earliest), or after its value's move when it moves in between.
 * Then the same on a GPU's arena (the fake driver beside the device tests,
 * unless ORTMEM_CUDA_LIBRARY names another): the copies and moves are
 * devtier.c's, and each step pulls its inputs to the host mirror and
 * pushes its output back, as ortmem-run's do.
 */
#include <libgen.h>
#include <limits.h>

#include "../../tools/run/acts.c"
#include "../../tools/run/devtier.c"
#include "../../tools/run/refuse.c"
#include "../../tools/run/xfer.c"
#include "../../tools/run/xfer_move.c"

#include "../harness.h"

__attribute__((constructor)) static void fake_select(void)
{
	char exe[PATH_MAX], lib[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(lib, sizeof(lib), "%s/../device/fakecuda/libcuda.so.1", dirname(exe));
	setenv("ORTMEM_CUDA_LIBRARY", lib, 0);
}

#define GRAPHS 24
#define NODES 48
#define BUDGETS 8

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Node @i's output from its inputs: every byte depends on every input. */
static void compute(uint8_t *out, uint64_t len, uint32_t i, uint8_t *const *in,
		    const uint64_t *in_len, uint32_t n_in)
{
	uint64_t k;
	uint32_t j;

	for (k = 0; k < len; k++) {
		uint32_t h = i * 2654435761u + (uint32_t)k;

		for (j = 0; j < n_in; j++)
			h = h * 31 + in[j][k % in_len[j]];
		out[k] = (uint8_t)(h ^ h >> 11);
	}
}

/* A random graph of @n nodes as ortmem-run's acts: node i makes value i
 * (sizes by parity, as x_l and h_l), from one to three earlier values,
 * recent ones mostly; planned under @budget (0: none). */
static int plan_graph(struct acts *a, uint32_t n, uint64_t seed, uint64_t budget)
{
	ORTMEM_OPTS(ortmem_plan_opts, po, .tiers = 1u << ORTMEM_TIER_DEVICE,
		    .max_iterations = 200, .time_budget_us = 60000000,
		    .budget = { budget, 0, 0 });
	uint32_t i, k, in[ACTS_MAX_IN];
	int ret;

	if (budget) {
		po.tiers |= 1u << ORTMEM_TIER_HOST;
		po.flags |= ORTMEM_PLAN_F_VALIDATE;
	}
	a->xb = 768;
	a->hb = 2304;
	a->node = calloc(n, sizeof(*a->node));
	a->home_off = calloc(n, sizeof(*a->home_off));
	a->tier = calloc(n, sizeof(*a->tier));
	a->stats.sz = sizeof(a->stats);
	if (!a->node || !a->home_off || !a->tier)
		return -ENOMEM;
	ret = ortmem_plan_new(&po, &a->plan);
	for (i = 0; !ret && i < n; i++) {
		int v = ortmem_plan_add_value(a->plan, i % 2 ? a->hb : a->xb,
					      i + 1 == n ? ORTMEM_PLAN_VALUE_OUTPUT : 0);

		ret = v < 0 ? v : 0;
	}
	a->n_values = n;
	if (!ret)
		ret = add_node(a, NULL, 0, 0);
	for (i = 1; !ret && i < n; i++) {
		uint32_t nin = 1 + (uint32_t)(rnd(&seed) % ACTS_MAX_IN);

		for (k = 0; k < nin; k++) {
			/* two draws, sequenced (in one expression their order
			 * is unspecified, and compilers differ) */
			uint64_t draw = rnd(&seed);
			uint64_t reach = rnd(&seed) % 4 ? 4 : 24;
			uint32_t back = 1 + (uint32_t)(draw % reach);

			in[k] = back > i ? 0 : i - back;
		}
		ret = add_node(a, in, nin, i);
	}
	return ret ?: acts_solve(a);
}

/* The steps' outputs without a budget, per value. */
static uint8_t **reference(const struct acts *a)
{
	uint8_t **ref = calloc(a->n_values, sizeof(*ref)), *in[ACTS_MAX_IN];
	uint32_t s, j;

	for (s = 0; ref && s < a->n_nodes; s++) {
		const struct act_node *nd = &a->node[s];

		ref[nd->out] = malloc(nd->out_len);
		for (j = 0; j < nd->n_in; j++)
			in[j] = ref[nd->in[j]];
		compute(ref[nd->out], nd->out_len, s, in, nd->in_len, nd->n_in);
	}
	return ref;
}

/* One step in @arena; on the GPU @d (or NULL) its inputs are pulled to
 * the host mirror @arena first and its output pushed back after. */
static int step(const struct acts *a, struct devtier *d, uint8_t *arena, uint32_t s)
{
	const struct act_node *nd = &a->node[s];
	uint8_t *in[ACTS_MAX_IN];
	uint32_t j;
	int ret = 0;

	for (j = 0; d && !ret && j < nd->n_in; j++)
		ret = devtier_pull(d, nd->in_off[j], nd->in_len[j]);
	for (j = 0; j < nd->n_in; j++)
		in[j] = arena + nd->in_off[j];
	compute(arena + nd->out_off, nd->out_len, s, in, nd->in_len, nd->n_in);
	return ret || !d ? ret : devtier_push(d, nd->out_off, nd->out_len);
}

/*
 * Run @a's schedule as ortmem-run does, in host memory or on the GPU @d
 * (its arena allocated here), poisoning what leaves the arena, skipping
 * move @drop (0: none): the first step whose output differs from @ref, or
 * UINT32_MAX; the runner's figures in @x (closed by the caller; on the
 * GPU closed here, its bytes moved within the arena, in and out in @figs).
 */
static uint32_t run(const struct acts *a, struct devtier *d, uint8_t *const *ref,
		    uint64_t drop, struct xfer *x, int *err, uint64_t *figs)
{
	uint64_t hlen = (a->home + 4096) / 4096 * 4096, big = a->hb > a->xb ? a->hb : a->xb;
	uint8_t *home = aligned_alloc(4096, hlen), *poison = malloc(big);
	uint8_t *arena = d ? d->astage : calloc(1, a->arena + 1);
	struct xfer_ops ops = xfer_host_ops(arena);
	uint32_t s, bad_step = UINT32_MAX;

	memset(x, 0, sizeof(*x));
	*err = arena && home && poison ? 0 : -ENOMEM;
	if (d && !*err) {
		memset(poison, 0xff, big);
		d->poison = poison;
		ops = devtier_xfer_ops(d);
		*err = ortmem_device_alloc(d->dev, a->arena, 0, &d->arena);
		if (!*err)
			*err = ortmem_device_register(d->dev, home, hlen);
	}
	if (!*err)
		*err = xfer_open(x, a, &ops, home, NULL);
	x->do_poison = 1;
	x->drop_move = drop;
	for (s = 0; !*err && s < a->n_nodes; s++) {
		const struct act_node *nd = &a->node[s];

		*err = xfer_before(x, s);
		if (!*err)
			*err = step(a, d, arena, s);
		if (bad_step == UINT32_MAX && memcmp(arena + nd->out_off, ref[nd->out], nd->out_len))
			bad_step = s;
		if (!*err)
			*err = xfer_after(x, s);
	}
	if (!*err)
		*err = xfer_drain(x);
	if (d && d->arena) {
		figs[0] = x->moved_dev;
		figs[1] = x->moved_in;
		figs[2] = x->moved_out;
		xfer_close(x);	/* nothing in flight to the device's memory */
		ortmem_device_unregister(d->dev, home);
		ortmem_device_free(d->dev, d->arena);
		d->arena = 0;
	}
	if (!d)
		free(arena);
	free(home);
	free(poison);
	return bad_step;
}

static uint64_t footprint(const struct acts *a)
{
	uint64_t most = 0;
	uint32_t s, i, j;

	for (s = 0; s < a->n_nodes; s++) {
		const struct act_node *nd = &a->node[s];
		uint64_t f = nd->out_len;

		for (i = 0; i < nd->n_in; i++) {
			for (j = 0; j < i && nd->in[j] != nd->in[i]; j++)
				;
			f += j == i ? nd->in_len[i] : 0;
		}
		most = f > most ? f : most;
	}
	return most;
}

static void free_ref(uint8_t **ref, uint32_t n)
{
	uint32_t v;

	for (v = 0; ref && v < n; v++)
		free(ref[v]);
	free(ref);
}

/* The moves of @a's plan that land over part of their own source (a
 * slide: a GPU copies them in pieces) into *@self, those that land on the
 * source of a move of the step run before them into *@ordered. */
static void count_slides(const struct acts *a, uint32_t *self, uint32_t *ordered)
{
	struct ortmem_plan_transfer t[64];
	uint32_t s;
	int n, i, j;

	for (s = 0; s < a->n_nodes; s++) {
		n = ortmem_plan_transfers(a->plan, s, t, 64, NULL);
		for (i = 0; i < n && i < 64 && t[i].dir == ORTMEM_PLAN_XFER_MOVE; i++) {
			*self += t[i].device_offset < t[i].src_offset + t[i].bytes &&
				 t[i].src_offset < t[i].device_offset + t[i].bytes;
			for (j = 0; j < i; j++)
				if (t[i].device_offset < t[j].src_offset + t[j].bytes &&
				    t[j].src_offset < t[i].device_offset + t[i].bytes) {
					(*ordered)++;
					break;
				}
		}
	}
}

TEST_TIMEOUT(moves_run_as_planned_and_each_counts, 600)
{
	uint32_t g, b, plans = 0, moving = 0, dropped = 0, outs_ahead = 0, outs_moved = 0;
	uint32_t self = 0, ordered = 0;

	for (g = 0; g < GRAPHS; g++) {
		struct acts u = { 0 };
		uint64_t foot, full;
		uint8_t **ref;

		ASSERT_EQ(0, plan_graph(&u, NODES, 0x9e3779b97f4a7c15ull * (g + 1), 0));
		ref = reference(&u);
		ASSERT_NONNULL(ref);
		foot = footprint(&u);
		full = u.arena;
		for (b = 0; b < BUDGETS; b++) {
			struct acts a = { 0 };
			struct xfer x;
			uint64_t budget = foot + (full - foot) * b / (BUDGETS - 1), i, n;
			uint32_t at;
			int err;

			ASSERT_EQ(0, plan_graph(&a, NODES, 0x9e3779b97f4a7c15ull * (g + 1), budget));
			plans++;
			at = run(&a, NULL, ref, 0, &x, &err, NULL);
			if (err || at != UINT32_MAX)
				TH_LOG("graph %u, budget %lu: step %u differs, or %s", g,
				       (unsigned long)budget, at, xfer_error(&x) ? xfer_error(&x) : "an error");
			ASSERT_EQ(0, err);
			ASSERT_EQ(UINT32_MAX, at);
			ASSERT_EQ(x.moved_dev, a.stats.move_bytes);
			ASSERT_EQ(x.plan_move, a.stats.move_bytes);
			ASSERT_EQ(x.plan_step_move, a.stats.move_bytes);
			ASSERT_EQ(x.moved_in, a.stats.prefetch_bytes);
			ASSERT_EQ(x.moved_out, a.stats.spill_bytes);
			ASSERT_EQ(!!x.n_moves, !!a.stats.move_bytes);
			/* Each write-out started where the plan allows (after
			 * its value's last move, if it moved since made). */
			ASSERT_EQ(x.outs_issued_ahead, x.n_outs_ahead);
			outs_ahead += x.n_outs_ahead;
			outs_moved += x.n_outs_moved;
			count_slides(&a, &self, &ordered);
			n = x.n_moves;
			xfer_close(&x);
			moving += n > 0;
			/* Skipping any one move shows in an output. */
			for (i = 1; i <= n; i++) {
				at = run(&a, NULL, ref, i, &x, &err, NULL);
				ASSERT_EQ(0, err);
				if (at == UINT32_MAX)
					TH_LOG("graph %u, budget %lu: move %lu of %lu skipped unseen", g,
					       (unsigned long)budget, (unsigned long)i, (unsigned long)n);
				ASSERT_NE(UINT32_MAX, at);
				ASSERT_LT(x.moved_dev, a.stats.move_bytes);
				xfer_close(&x);
				dropped++;
			}
			acts_free(&a);
		}
		free_ref(ref, u.n_values);
		acts_free(&u);
	}
	TH_LOG("%u plans, %u with moves, %u moves skipped and caught; %u write-outs started ahead of their step, %u of a value moved since made",
	       plans, moving, dropped, outs_ahead, outs_moved);
	TH_LOG("%u moves over part of their own source, %u onto the source of one run before", self, ordered);
	/* The point of the test: some plans move values, some values move
	 * between their production and their write-out, and some moves
	 * need the order they run in (slides). */
	ASSERT_GT(moving, 0);
	ASSERT_GT(self, 0);
	ASSERT_GT(ordered, 0);
	ASSERT_GT(outs_ahead, 0);
	ASSERT_GT(outs_moved, 0);
}

static uint64_t d2d_bytes(struct devtier *d)
{
	ORTMEM_OPTS(ortmem_device_stats, st);

	return ortmem_device_stats(d->dev, &st) ? 0 : st.d2d_bytes;
}

/* On the GPU: fewer graphs (each step copies through the driver). */
TEST_TIMEOUT(moves_run_on_a_gpu_arena, 600)
{
	uint32_t g, b, moving = 0, caught = 0, self = 0, ordered = 0;
	const char *why = NULL;

	for (g = 0; g < GRAPHS; g++) {
		struct acts u = { 0 };
		uint64_t foot;
		uint8_t **ref;

		ASSERT_EQ(0, plan_graph(&u, NODES, 0x9e3779b97f4a7c15ull * (g + 1), 0));
		ref = reference(&u);
		ASSERT_NONNULL(ref);
		foot = footprint(&u);
		for (b = 0; b < BUDGETS; b++) {
			struct acts a = { 0 };
			struct devtier d;
			struct xfer x;
			uint64_t budget = foot + (u.arena - foot) * b / (BUDGETS - 1), figs[3], d2d;
			uint32_t at;
			int err, ret;

			ASSERT_EQ(0, plan_graph(&a, NODES, 0x9e3779b97f4a7c15ull * (g + 1), budget));
			if (!a.stats.move_bytes) {
				acts_free(&a);
				continue;
			}
			ret = devtier_open(&d, 0, 64u << 20, 4096, a.arena, &why);
			if (ret == 1)
				SKIP("no GPU: %s", why ? why : "none found");
			ASSERT_EQ(0, ret);
			d2d = d2d_bytes(&d);
			at = run(&a, &d, ref, 0, &x, &err, figs);
			ASSERT_EQ(0, err);
			ASSERT_EQ(UINT32_MAX, at);
			ASSERT_EQ(figs[0], a.stats.move_bytes);
			/* Every byte moved went device to device. */
			ASSERT_EQ(a.stats.move_bytes, d2d_bytes(&d) - d2d);
			ASSERT_EQ(figs[1], a.stats.prefetch_bytes);
			ASSERT_EQ(figs[2], a.stats.spill_bytes);
			count_slides(&a, &self, &ordered);
			moving++;
			/* The first move skipped shows in an output. */
			at = run(&a, &d, ref, 1, &x, &err, figs);
			ASSERT_EQ(0, err);
			ASSERT_NE(UINT32_MAX, at);
			caught++;
			devtier_close(&d);
			acts_free(&a);
		}
		free_ref(ref, u.n_values);
		acts_free(&u);
	}
	TH_LOG("%u plans with moves run on the GPU, %u skipped moves caught; %u moves over part of their own source (copied in pieces), %u onto the source of one run before",
	       moving, caught, self, ordered);
	ASSERT_GT(moving, 0);
	ASSERT_GT(self, 0);
}

/*
 * devtier's own checks (a range outside the arena: the run checked the
 * schedule before, so only a bug of ortmem-run's gets there) leave an
 * error in the library's form, naming the range and the arena, which the
 * runner's report carries; a library failure after one is the one told.
 */
TEST(devtier_refusals_name_the_range)
{
	struct xfer_item it = { .dir = ORTMEM_PLAN_XFER_MOVE, .value = 7, .len = 4096 };
	const struct ortmem_error *e;
	const char *why = NULL;
	struct xfer_ops ops;
	struct devtier d;
	struct xfer x;
	int ret;

	ret = devtier_open(&d, 0, 64u << 20, 4096, 8192, &why);
	if (ret == 1)
		SKIP("no GPU: %s", why ? why : "none found");
	ASSERT_EQ(0, ret);
	ops = devtier_xfer_ops(&d);
	memset(&x, 0, sizeof(x));
	x.ops = ops;
	it.src = 6144;
	ret = ops.move(ops.ctx, it.off, it.src, it.len);
	ASSERT_EQ(-EINVAL, ret);
	e = run_error(ret);
	ASSERT_NONNULL(e);
	ASSERT_EQ(ORTMEM_ERR_INVALID_REQUEST, e->kind);
	ASSERT_EQ(ORTMEM_TIER_DEVICE, e->tier);
	ASSERT_EQ(4096, e->requested);
	ASSERT_EQ(8192, e->limit);
	move_failed(&x, &it, ret);
	TH_LOG("%s", x.move_errmsg);
	ASSERT_NONNULL(strstr(x.move_errmsg, "moving value 7 (4096 bytes) within the arena from offset 6144 to 0: invalid request for 4096 bytes of device memory: moving from [6144, +4096) does not lie within the activation arena of 8192 bytes"));
	ASSERT_NONNULL(strstr(run_error_text(ops.move(ops.ctx, UINT64_MAX, 0, 2)),
			      "moving to [18446744073709551615, +2) does not lie within the activation arena of 8192 bytes"));
	ASSERT_NONNULL(strstr(run_error_text(devtier_pull(&d, 8192, 1)),
			      "pulling [8192, +1) does not lie within"));
	ASSERT_NONNULL(strstr(run_error_text(devtier_push(&d, 1, UINT64_MAX)),
			      "pushing [1, +18446744073709551615) does not lie within"));
	ASSERT_NONNULL(strstr(run_error_text(ops.poison(ops.ctx, 0, 16)),
			      "no poison pattern to write over the arena's [0, +16)"));
	/* The library's refusal after devtier's is the one told. */
	ret = ortmem_device_copy_within(d.dev, 0, 0, 16, NULL);
	ASSERT_EQ(-EINVAL, ret);
	ASSERT_NULL(strstr(run_error_text(ret), "poison"));
	ASSERT_NONNULL(strstr(run_error_text(ret), "overlap"));
	/* Neither: the code's own words. */
	ASSERT_STREQ(strerror(ENOSPC), run_error_text(-ENOSPC));
	devtier_close(&d);
}

TEST_HARNESS_MAIN
