// SPDX-License-Identifier: MIT
/*
 * The validator: an independent O(n log n) check of a plan.  It does not
 * reuse the packer or the liveness code: lifetimes are recomputed from the
 * graph, and overlap is checked by a sweep over time that keeps the live
 * buffers in a treap ordered by offset; a new buffer can only overlap its
 * neighbours there, since the live ones are disjoint.
 */
#include <errno.h>
#include <stdlib.h>

#include "plan_internal.h"

struct vt_node {
	uint64_t off, end;
	uint32_t id, prio;
	int32_t l, r;
};

#define VT_LCG_MUL 1103515245u
#define VT_LCG_INC 12345u

struct vt {
	struct vt_node *n;
	int32_t root;
	uint32_t seed;
};

static uint32_t vt_prio(struct vt *t)
{
	/* A linear congruential generator (the C standard's example): the
	 * treap needs only priorities in no order tied to the offsets. */
	t->seed = t->seed * VT_LCG_MUL + VT_LCG_INC;
	return t->seed >> 8;
}

/* Split @x into keys < (off, id) and >= (off, id). */
static void vt_split(struct vt *t, int32_t x, uint64_t off, uint32_t id,
		     int32_t *a, int32_t *b)
{
	if (x < 0) {
		*a = *b = -1;
		return;
	}
	if (t->n[x].off < off || (t->n[x].off == off && t->n[x].id < id)) {
		vt_split(t, t->n[x].r, off, id, &t->n[x].r, b);
		*a = x;
	} else {
		vt_split(t, t->n[x].l, off, id, a, &t->n[x].l);
		*b = x;
	}
}

static int32_t vt_merge(struct vt *t, int32_t a, int32_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	if (t->n[a].prio > t->n[b].prio) {
		t->n[a].r = vt_merge(t, t->n[a].r, b);
		return a;
	}
	t->n[b].l = vt_merge(t, a, t->n[b].l);
	return b;
}

static int32_t vt_max(struct vt *t, int32_t x)
{
	while (x >= 0 && t->n[x].r >= 0)
		x = t->n[x].r;
	return x;
}

static int32_t vt_min(struct vt *t, int32_t x)
{
	while (x >= 0 && t->n[x].l >= 0)
		x = t->n[x].l;
	return x;
}

/* Insert @i; return the id of a live item it overlaps, or -1. */
static int32_t vt_insert(struct vt *t, uint32_t i)
{
	int32_t a, b, p, s, hit = -1;

	vt_split(t, t->root, t->n[i].off, i, &a, &b);
	p = vt_max(t, a);
	s = vt_min(t, b);
	if (p >= 0 && t->n[p].end > t->n[i].off)
		hit = (int32_t)t->n[p].id;
	if (s >= 0 && t->n[s].off < t->n[i].end)
		hit = (int32_t)t->n[s].id;
	t->n[i].l = t->n[i].r = -1;
	t->n[i].prio = vt_prio(t);
	t->root = vt_merge(t, vt_merge(t, a, (int32_t)i), b);
	return hit;
}

static void vt_erase(struct vt *t, uint32_t i)
{
	int32_t a, b, c, d;

	vt_split(t, t->root, t->n[i].off, i, &a, &b);
	vt_split(t, b, t->n[i].off, i + 1, &c, &d);
	t->root = vt_merge(t, a, d);
	(void)c;
}

struct vt_ev {
	uint64_t t;
	uint32_t i;
	uint32_t start;
};

static int vt_ev_cmp(const void *a, const void *b)
{
	const struct vt_ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->start != y->start)
		return x->start ? 1 : -1;
	return (x->i > y->i) - (x->i < y->i);
}

int ortmem__plan_check_disjoint(const struct pk_item *it, const uint64_t *off,
			      uint32_t n, uint32_t *pa, uint32_t *pb)
{
	struct vt t = { .root = -1, .seed = 1 };
	struct vt_ev *ev = malloc(sizeof(*ev) * 2 * (n ? n : 1));
	uint32_t i, k = 0;
	int ret = 0;

	t.n = malloc(sizeof(*t.n) * (n ? n : 1));
	if (!ev || !t.n) {
		ret = ortmem__err_plain(-ENOMEM, "validator: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!it[i].size || it[i].hi <= it[i].lo)
			continue;
		t.n[i] = (struct vt_node){ .off = off[i], .end = off[i] + it[i].size, .id = i };
		ev[k++] = (struct vt_ev){ it[i].lo, i, 1 };
		ev[k++] = (struct vt_ev){ it[i].hi, i, 0 };
	}
	qsort(ev, k, sizeof(*ev), vt_ev_cmp);
	for (i = 0; i < k && !ret; i++) {
		int32_t hit;

		if (!ev[i].start) {
			vt_erase(&t, ev[i].i);
			continue;
		}
		hit = vt_insert(&t, ev[i].i);
		if (hit >= 0) {
			if (pa)
				*pa = ev[i].i;
			if (pb)
				*pb = (uint32_t)hit;
			ret = ortmem__err_plain(-EFAULT,
				"validator: buffers %u [%llu, +%llu) and %d [%llu, +%llu) are live together and overlap",
				ev[i].i, (unsigned long long)off[ev[i].i],
				(unsigned long long)it[ev[i].i].size, hit,
				(unsigned long long)off[hit], (unsigned long long)it[hit].size);
		}
	}
out:
	free(ev);
	free(t.n);
	return ret;
}

/* Each value's own lifetime [def, last + 1), graph outputs to the end. */
static int vl_value_span(const struct ortmem_plan *plan, uint32_t *lo, uint32_t *hi)
{
	uint32_t v, s, k;

	for (v = 0; v < plan->n_vals; v++) {
		int32_t def = plan->vals[v].def;

		/* a view no node produces lives within its root's buffer */
		if (def < 0)
			def = plan->vals[plan->vals[v].root].def;
		lo[v] = def < 0 ? 0 : (uint32_t)def;
		hi[v] = lo[v] + 1;
		if (plan->vals[v].flags & ORTMEM_PLAN_VALUE_OUTPUT)
			hi[v] = plan->n_nodes;
	}
	for (s = 0; s < plan->n_nodes; s++)
		for (k = 0; k < plan->nodes[s].n_in; k++) {
			uint32_t x = plan->edges[plan->nodes[s].in + k];

			if (s + 1 > hi[x])
				hi[x] = s + 1;
		}
	/* A view's span lies in its source's: walk each chain up. */
	for (v = 0; v < plan->n_vals; v++) {
		int32_t x = (int32_t)v;

		while (plan->vals[x].view_of >= 0) {
			int32_t src = plan->vals[x].view_of;

			if (hi[v] > hi[src])
				hi[src] = hi[v];
			x = src;
		}
	}
	return 0;
}

static int vl_buffer(const struct ortmem_plan *plan, uint32_t v,
		     const uint32_t *lo, const uint32_t *hi)
{
	const struct pl_value *x = &plan->vals[v];
	int32_t bi = x->inplace_of >= 0 ? x->buf : plan->vals[x->root].buf;
	const struct pl_buf *b;

	if (plan->vals[x->root].def < 0)
		return 0;
	if (bi < 0 || (uint32_t)bi >= plan->n_bufs)
		return ortmem__err_plain(-EFAULT, "validator: value %u has no buffer", v);
	b = &plan->bufs[bi];
	if (b->lo > lo[v] || b->hi < hi[v])
		return ortmem__err_plain(-EFAULT,
			"validator: value %u is live over [%u, %u) but its buffer only over [%u, %u)",
			v, lo[v], hi[v], b->lo, b->hi);
	/* a view too: it reads within its root's buffer */
	if ((x->view_of < 0 || x->rsize != ORTMEM_PLAN_SIZE_SYMBOLIC) && x->rsize > b->size)
		return ortmem__err_plain(-EFAULT,
			"validator: value %u needs %llu bytes, its buffer has %llu", v,
			(unsigned long long)x->rsize, (unsigned long long)b->size);
	if (x->inplace_of >= 0) {
		uint32_t src = (uint32_t)x->inplace_of, k;
		bool hinted = false;

		for (k = 0; k < plan->n_hints; k++)
			hinted |= plan->hints[k].out == v && plan->hints[k].in == src &&
				  plan->hints[k].node == (uint32_t)x->def;
		if (!hinted || hi[src] != lo[v] + 1 ||
		    (plan->vals[src].flags & ORTMEM_PLAN_VALUE_OUTPUT))
			return ortmem__err_plain(-EFAULT,
				"validator: value %u reuses the buffer of %u without a safe hint", v, src);
	}
	return 0;
}

static int vl_arenas(const struct ortmem_plan *plan)
{
	uint32_t b;

	for (b = 0; b < plan->n_bufs; b++) {
		const struct pl_buf *pb = &plan->bufs[b];
		uint64_t a = plan->o.align[pb->tier];

		if (pb->off & (a - 1))
			return ortmem__err_plain(-EFAULT,
				"validator: buffer %u at offset %llu is not aligned to %llu", b,
				(unsigned long long)pb->off, (unsigned long long)a);
		if (pb->size && pb->off + pb->size > plan->st.arena[pb->tier])
			return ortmem__err_plain(-EFAULT,
				"validator: buffer %u ends past the %s arena", b,
				ortmem_tier_name(pb->tier));
	}
	for (b = 0; b < ORTMEM_TIER_COUNT; b++)
		if (plan->o.budget[b] && plan->st.arena[b] > plan->o.budget[b])
			return ortmem__err_plain(-EFAULT,
				"validator: the %s arena (%llu bytes) exceeds its budget (%llu)",
				ortmem_tier_name((int)b), (unsigned long long)plan->st.arena[b],
				(unsigned long long)plan->o.budget[b]);
	return 0;
}

/* Each move of buffer @b lies in a gap it spends on the device, one with a
 * touch after it, at a step of that gap, and goes somewhere else. */
static int vl_move_steps(const struct ortmem_plan *plan, uint32_t b)
{
	uint32_t j, end = plan->touch_idx[b + 1], s;

	for (j = plan->touch_idx[b]; j < end; j++) {
		if (!(s = plan->move_step[j]))
			continue;
		if (j + 1 == end || plan->gap_off[j])
			return ortmem__err_plain(-EFAULT,
				"validator: buffer %u moves within the device arena before step %u, after its last touch or while it is off the device",
				b, s);
		if (s <= plan->touch_step[j] || s > plan->touch_step[j + 1] ||
		    plan->touch_off[j + 1] == plan->touch_off[j])
			return ortmem__err_plain(-EFAULT,
				"validator: buffer %u moves before step %u, outside its gap [%u, %u] or to where it is (offset %llu)",
				b, s, plan->touch_step[j] + 1, plan->touch_step[j + 1],
				(unsigned long long)plan->touch_off[j]);
	}
	if (plan->bufs[b].tier == ORTMEM_TIER_DEVICE && plan->bufs[b].off != plan->touch_off[plan->touch_idx[b]])
		return ortmem__err_plain(-EFAULT,
			"validator: buffer %u moves on the device, but its offset is not where it is produced",
			b);
	return 0;
}

/*
 * The device intervals of a buffer sent off it (or moved within the
 * arena): from a touch, over the kept gaps, to the touch that opens an off
 * gap (or the buffer's end).  Every touch of one interval must have the
 * interval's offset.  A move before step s ends one interval at s and
 * starts the next at s; vl_move_dests() checks the step before.
 */
static int vl_intervals(const struct ortmem_plan *plan, uint32_t b,
			struct pk_item *it, uint64_t *off, uint32_t *n)
{
	const struct pl_buf *pb = &plan->bufs[b];
	const uint32_t *ms = plan->move_step;
	uint32_t k, j, end = plan->touch_idx[b + 1];
	int ret = ms ? vl_move_steps(plan, b) : 0;

	for (k = plan->touch_idx[b]; k < end && !ret; k = j + 1) {
		uint64_t lo = k > plan->touch_idx[b] && ms && ms[k - 1] ?
			      ms[k - 1] : plan->touch_step[k];

		for (j = k; j + 1 < end && !plan->gap_off[j] && !(ms && ms[j]); j++)
			if (plan->touch_off[j + 1] != plan->touch_off[k])
				return ortmem__err_plain(-EFAULT,
					"validator: buffer %u moves on the device between steps %u and %u without leaving it or a move step",
					b, plan->touch_step[j], plan->touch_step[j + 1]);
		off[*n] = plan->touch_off[k];
		it[(*n)++] = (struct pk_item){ lo,
			ms && ms[j] ? ms[j] : plan->gap_off[j] || j + 1 < end ?
			plan->touch_step[j] + 1ull : pb->hi, pb->size };
	}
	return ret;
}

struct vl_end {
	uint32_t step;		/* the step it is still used after, + 1 */
	uint32_t buf;
	uint64_t off, size;
	uint64_t to;		/* a move's destination; UINT64_MAX: a write-out */
};

static int vl_end_cmp(const void *x, const void *y)
{
	const struct vl_end *a = x, *b = y;

	return (a->step > b->step) - (a->step < b->step);
}

/*
 * A move before step s lands where nothing is still in use after step
 * s - 1 (no range that leaves the device then: a write-out may read it),
 * but its own source (a move runs as a memmove) and the sources of the
 * step's moves that run before it: those to a lower destination (a
 * step's moves run in increasing order of destination); under
 * ORTMEM_PLAN_F_MOVE_APART, neither.  A move onto part of its own source
 * shifts by 1/ORTMEM__PLAN_MOVE_PIECES of its size at least.  Only an interval
 * that ends with its buffer's life gives its range up at once.  The
 * intervals still used after their last step, sorted by that step, are
 * looked up per move: O((intervals + moves) log intervals).
 */
static int vl_move_dests(const struct ortmem_plan *plan)
{
	const uint32_t *ms = plan->move_step;
	bool apart = plan->o.flags & ORTMEM_PLAN_F_MOVE_APART;
	uint32_t b, k, n = 0, lo, hi, i, nt = plan->touch_idx[plan->n_bufs];
	struct vl_end *e = malloc(sizeof(*e) * (nt + 1));
	int ret = 0;

	if (!e)
		return ortmem__err_plain(-ENOMEM, "validator: out of memory");
	/* every touch: a graph output sent off after its last touch is
	 * written out then too (vl_move_steps() refused a move there) */
	for (b = 0; b < plan->n_bufs; b++)
		for (k = plan->touch_idx[b]; k < plan->touch_idx[b + 1]; k++)
			if (ms[k] || plan->gap_off[k])
				e[n++] = (struct vl_end){ ms[k] ? ms[k] : plan->touch_step[k] + 1,
					b, plan->touch_off[k], plan->bufs[b].size,
					ms[k] ? plan->touch_off[k + 1] : UINT64_MAX };
	qsort(e, n, sizeof(*e), vl_end_cmp);
	for (b = 0; b < plan->n_bufs && !ret; b++)
		for (k = plan->touch_idx[b]; k + 1 < plan->touch_idx[b + 1] && !ret; k++) {
			uint64_t to = plan->touch_off[k + 1], size = plan->bufs[b].size, from, shift;

			if (!ms[k] || !size)
				continue;
			from = plan->touch_off[k];
			shift = to > from ? to - from : from - to;
			if (!ortmem__plan_move_pieces_ok(shift, size)) {
				ret = ortmem__err_plain(-EFAULT,
					"validator: buffer %u (%llu bytes) moves before step %u by %llu bytes onto its own source: less than 1/%u of its size, too many pieces to copy",
					b, (unsigned long long)size, ms[k], (unsigned long long)shift,
					ORTMEM__PLAN_MOVE_PIECES);
				break;
			}
			for (lo = 0, hi = n; lo < hi;) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (e[mid].step < ms[k])
					lo = mid + 1;
				else
					hi = mid;
			}
			for (i = lo; i < n && e[i].step == ms[k] && !ret; i++)
				if (e[i].size && e[i].off < to + size && to < e[i].off + e[i].size &&
				    (apart || e[i].to == UINT64_MAX || (e[i].buf != b && e[i].to > to)))
					ret = ortmem__err_plain(-EFAULT,
						"validator: buffer %u moves before step %u to [%llu, +%llu), which buffer %u still uses after step %u (%s)",
						b, ms[k], (unsigned long long)to,
						(unsigned long long)size, e[i].buf, ms[k] - 1,
						e[i].to == UINT64_MAX ? "it is written out" :
						apart ? "a move's source, and the plan keeps moves apart" :
						"the source of a move to a higher offset, which runs after");
		}
	free(e);
	return ret;
}

/* Buffers and device intervals of one tier must not collide. */
static int vl_overlap(const struct ortmem_plan *plan, int tier)
{
	/* No uses indexed when no budget let a buffer leave the device. */
	uint32_t b, n = 0, cap = plan->n_bufs +
		(plan->touch_idx ? plan->touch_idx[plan->n_bufs] : 0);
	struct pk_item *it = malloc(sizeof(*it) * (cap ? cap : 1));
	uint64_t *off = malloc(sizeof(*off) * (cap ? cap : 1));
	int ret = 0;

	if (!it || !off) {
		ret = ortmem__err_plain(-ENOMEM, "validator: out of memory");
		goto out;
	}
	for (b = 0; b < plan->n_bufs && !ret; b++) {
		const struct pl_buf *pb = &plan->bufs[b];

		if (pb->tier == tier && !(tier == ORTMEM_TIER_DEVICE && ortmem__plan_buf_moves(plan, b))) {
			off[n] = pb->off;
			it[n++] = (struct pk_item){ pb->lo, pb->hi, pb->size };
		} else if (tier == ORTMEM_TIER_DEVICE) {
			ret = plan->gap_off ? vl_intervals(plan, b, it, off, &n) :
				ortmem__err_plain(-EFAULT,
					"validator: buffer %u is off the device but no gap says when", b);
		}
	}
	for (b = 0; b < n && !ret; b++)
		if (tier == ORTMEM_TIER_DEVICE &&
		    ((off[b] & (plan->o.align[tier] - 1)) ||
		     (it[b].size && off[b] + it[b].size > plan->st.arena[tier])))
			ret = ortmem__err_plain(-EFAULT,
				"validator: a device interval at offset %llu (+%llu) is misaligned or ends past the device arena (%llu)",
				(unsigned long long)off[b], (unsigned long long)it[b].size,
				(unsigned long long)plan->st.arena[tier]);
	/* the moves' rules first: a move onto a range in use names what it
	 * breaks more precisely than the overlap it also makes */
	if (!ret && tier == ORTMEM_TIER_DEVICE && plan->move_step)
		ret = vl_move_dests(plan);
	if (!ret)
		ret = ortmem__plan_check_disjoint(it, off, n, NULL, NULL);
out:
	free(it);
	free(off);
	return ret;
}

/* Every value a node reads or writes is on the device at that step: a
 * buffer sent off has a touch (a resident interval) there. */
static int vl_resident(const struct ortmem_plan *plan)
{
	uint32_t s, k;

	for (s = 0; s < plan->n_nodes; s++) {
		const struct pl_node *nd = &plan->nodes[s];

		for (k = 0; k < nd->n_in + nd->n_out; k++) {
			const struct pl_value *x = &plan->vals[plan->edges[nd->in + k]];
			int32_t b = x->inplace_of >= 0 ? x->buf : plan->vals[x->root].buf;
			uint32_t lo, hi;

			if (plan->vals[x->root].def < 0 || b < 0 ||
			    plan->bufs[b].tier == ORTMEM_TIER_DEVICE)
				continue;
			lo = plan->touch_idx[b];
			hi = plan->touch_idx[b + 1];
			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (plan->touch_step[mid] < s)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == plan->touch_idx[b + 1] || plan->touch_step[lo] != s)
				return ortmem__err_plain(-EFAULT,
					"validator: step %u uses value %u, whose buffer is not on the device then",
					s, plan->edges[nd->in + k]);
		}
	}
	return 0;
}

ORTMEM_API int ortmem_plan_validate(const struct ortmem_plan *plan)
{
	uint32_t *lo, *hi, v;
	int ret = 0, t;

	if (!plan)
		return ortmem__err_invalid(-1, 0, "ortmem_plan_validate: plan is NULL");
	if (!plan->solved && !plan->n_bufs)
		return ortmem__err_plain(-ENODATA, "ortmem_plan_validate: no solved plan");
	lo = malloc(sizeof(*lo) * (plan->n_vals ? plan->n_vals : 1));
	hi = malloc(sizeof(*hi) * (plan->n_vals ? plan->n_vals : 1));
	if (!lo || !hi) {
		ret = ortmem__err_plain(-ENOMEM, "validator: out of memory");
		goto out;
	}
	vl_value_span(plan, lo, hi);
	for (v = 0; v < plan->n_vals && !ret; v++)
		ret = vl_buffer(plan, v, lo, hi);
	if (!ret)
		ret = vl_arenas(plan);
	if (!ret)
		ret = vl_resident(plan);
	for (t = 0; t < ORTMEM_TIER_COUNT && !ret; t++)
		ret = vl_overlap(plan, t);
out:
	free(lo);
	free(hi);
	return ret;
}
