// SPDX-License-Identifier: MIT
/*
 * Host-tier buffers as io_uring fixed buffers.  Each lane's ring keeps
 * ORTMEM__FIXED_SLOTS empty slots after its bounce and tail buffers; a
 * buffer the host tier registers takes one slot index, the same in every
 * ring, filled and emptied with IORING_REGISTER_BUFFERS_UPDATE so that no
 * other registration is touched (re-registering the whole table would pin
 * every buffer again).  A transfer whose bytes lie inside a registered
 * buffer then moves its body with READ_FIXED/WRITE_FIXED: the kernel skips
 * pinning the pages of every I/O.
 *
 * A slot is updated under its lane's lock, so no I/O of that ring is in
 * flight and the kernel drops the old pages at once (kernels that defer
 * the unpin are covered by the module's EVICT retries).  Whether the kernel
 * accepts a kind of memory at all (6.1 refuses the module's mapping,
 * 6.12 takes it) is the host tier's probe; here a refusal is just an error.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "spill_internal.h"

struct ortmem__fixed {
	pthread_mutex_t lock;
	atomic_uint refs;
	struct ortmem__lane *lanes;	/* NULL once detached */
	uint32_t nlanes;
	uint32_t nslots;		/* slots every lane has */
	uint64_t regions;		/* slots in use */
	struct ortmem__fixed_user *users;	/* the host tiers attached */
	struct ortmem__ureg slot[ORTMEM__FIXED_SLOTS];
	/* Whose buffer each slot holds (NULL: the probe's, or none). */
	struct ortmem__fixed_user *owner[ORTMEM__FIXED_SLOTS];
};

struct ortmem__fixed *ortmem__fixed_new(struct ortmem__lane *lanes,
					uint32_t nlanes,
					struct ortmem__sengine *e)
{
	struct ortmem__fixed *fx = calloc(1, sizeof(*fx));
	uint32_t i;

	(void)e;
	if (!fx)
		return NULL;
	pthread_mutex_init(&fx->lock, NULL);
	atomic_init(&fx->refs, 1);
	fx->lanes = lanes;
	fx->nlanes = nlanes;
	fx->nslots = ORTMEM__FIXED_SLOTS;
	for (i = 0; i < nlanes; i++)
		if (lanes[i].nuser < fx->nslots)
			fx->nslots = lanes[i].nuser;
	return fx;
}

void ortmem__fixed_get(struct ortmem__fixed *fx)
{
	atomic_fetch_add(&fx->refs, 1);
}

void ortmem__fixed_put(struct ortmem__fixed *fx)
{
	if (!fx || atomic_fetch_sub(&fx->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&fx->lock);
	free(fx);
}

bool ortmem__fixed_usable(struct ortmem__fixed *fx)
{
	bool ok;

	pthread_mutex_lock(&fx->lock);
	ok = fx->lanes && fx->nslots;
	pthread_mutex_unlock(&fx->lock);
	return ok;
}

/* Fill (or with @ptr NULL, empty) slot @i of one lane: 0 or -errno. */
static int lane_set(struct ortmem__lane *l, uint32_t i, const void *ptr,
		    uint64_t len)
{
	struct iovec iov = { .iov_base = (void *)ptr, .iov_len = len };
	int ret;

	pthread_mutex_lock(&l->lock);
	ret = io_uring_register_buffers_update_tag(&l->ring, l->ubase + i, &iov,
						   NULL, 1);
	if (ret == 1) {
		l->ureg[i].ptr = ptr;
		l->ureg[i].len = ptr ? len : 0;
		if (ptr && i >= l->uhigh)
			l->uhigh = i + 1;
		while (!ptr && l->uhigh && !l->ureg[l->uhigh - 1].ptr)
			l->uhigh--;
		ret = 0;
	} else if (ret >= 0) {
		ret = -EIO;
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

/* Empty slot @i in lanes [0, n); under fx->lock. */
static void slot_clear(struct ortmem__fixed *fx, uint32_t i, uint32_t n)
{
	uint32_t k;
	int ret;

	for (k = 0; k < n; k++) {
		ret = lane_set(&fx->lanes[k], i, NULL, 0);
		if (ret)
			pr_warn("spill: unregistering host buffer %p from lane %u failed (%s)",
				(const void *)fx->slot[i].ptr, k, ortmem_strerror(ret));
	}
}

int ortmem__fixed_add(struct ortmem__fixed *fx, struct ortmem__fixed_user *user,
		      const void *ptr, uint64_t len)
{
	uint32_t i, k;
	int ret = 0;

	if (!ptr || !len)
		return -EINVAL;
	if (len > ORTMEM__FIXED_LEN_MAX)
		return -E2BIG;
	pthread_mutex_lock(&fx->lock);
	if (!fx->lanes) {
		ret = -ESHUTDOWN;
		goto out;
	}
	for (i = 0; i < fx->nslots && fx->slot[i].ptr; i++)
		;
	if (i == fx->nslots) {
		ret = -ENOSPC;
		goto out;
	}
	for (k = 0; k < fx->nlanes; k++) {
		ret = lane_set(&fx->lanes[k], i, ptr, len);
		if (ret) {
			slot_clear(fx, i, k);
			goto out;
		}
	}
	fx->slot[i].ptr = ptr;
	fx->slot[i].len = len;
	fx->owner[i] = user;
	if (user)
		user->buffers++;
	fx->regions++;
out:
	pthread_mutex_unlock(&fx->lock);
	return ret;
}

void ortmem__fixed_del(struct ortmem__fixed *fx, const void *ptr)
{
	uint32_t i;

	pthread_mutex_lock(&fx->lock);
	for (i = 0; fx->lanes && i < fx->nslots; i++) {
		if (fx->slot[i].ptr != ptr)
			continue;
		slot_clear(fx, i, fx->nlanes);
		fx->slot[i].ptr = NULL;
		fx->slot[i].len = 0;
		if (fx->owner[i])
			fx->owner[i]->buffers--;
		fx->owner[i] = NULL;
		fx->regions--;
		break;
	}
	pthread_mutex_unlock(&fx->lock);
}

void ortmem__fixed_detach(struct ortmem__fixed *fx)
{
	struct ortmem__fixed_user *u;
	uint32_t i;

	pthread_mutex_lock(&fx->lock);
	for (i = 0; fx->lanes && i < fx->nslots; i++) {
		if (!fx->slot[i].ptr)
			continue;
		slot_clear(fx, i, fx->nlanes);
		fx->slot[i].ptr = NULL;
		fx->owner[i] = NULL;
	}
	for (u = fx->users; u; u = u->next)
		u->buffers = 0;
	fx->regions = 0;
	fx->lanes = NULL;
	pthread_mutex_unlock(&fx->lock);
	ortmem__fixed_put(fx);
}

void ortmem__fixed_join(struct ortmem__fixed *fx, struct ortmem__fixed_user *user,
			uint32_t state, int err)
{
	struct ortmem__fixed_user **at;

	user->next = NULL;
	user->state = state;
	user->err = err < 0 ? -err : err;
	user->buffers = 0;
	pthread_mutex_lock(&fx->lock);
	for (at = &fx->users; *at; at = &(*at)->next)
		;
	*at = user;
	pthread_mutex_unlock(&fx->lock);
}

/* After the tier's buffers are unregistered: none of its slots is left. */
void ortmem__fixed_leave(struct ortmem__fixed *fx, struct ortmem__fixed_user *user)
{
	struct ortmem__fixed_user **at;

	pthread_mutex_lock(&fx->lock);
	for (at = &fx->users; *at && *at != user; at = &(*at)->next)
		;
	if (*at)
		*at = user->next;
	pthread_mutex_unlock(&fx->lock);
	user->next = NULL;
}

void ortmem__fixed_user_stats(struct ortmem__fixed *fx,
			      const struct ortmem__fixed_user *user,
			      uint32_t *state, int32_t *err, uint64_t *buffers)
{
	pthread_mutex_lock(&fx->lock);
	*state = user->state;
	*err = user->err;
	*buffers = user->buffers;
	pthread_mutex_unlock(&fx->lock);
}

/*
 * Over the tiers attached now: NONE without any, ON or OFF when they all
 * agree, MIXED when they do not; the error is that of the earliest
 * attached tier that is off.  @regions counts every tier's buffers.
 */
void ortmem__fixed_stats(struct ortmem__fixed *fx, uint32_t *state, int32_t *err,
			 uint64_t *regions)
{
	const struct ortmem__fixed_user *u;
	bool on = false, off = false;

	*err = 0;
	pthread_mutex_lock(&fx->lock);
	for (u = fx->users; u; u = u->next) {
		if (u->state == ORTMEM_SPILL_FIXED_ON) {
			on = true;
			continue;
		}
		if (!off)
			*err = u->err;
		off = true;
	}
	*regions = fx->regions;
	pthread_mutex_unlock(&fx->lock);
	*state = on && off ? ORTMEM_SPILL_FIXED_MIXED :
		 on ? ORTMEM_SPILL_FIXED_ON :
		 off ? ORTMEM_SPILL_FIXED_OFF : ORTMEM_SPILL_FIXED_NONE;
}
