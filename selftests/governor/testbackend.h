/* SPDX-License-Identifier: MIT */
/*
 * A backend for the governor tests: allocations are numbered records held
 * in memory, with no CPU pointer unless asked (so data must move through
 * store/read/write, like a disk), and with fault injection: fail the Nth
 * alloc, free or write, free only part of the bytes, report bytes busy.
 */
#ifndef ORTMEM_SELFTEST_TESTBACKEND_H
#define ORTMEM_SELFTEST_TESTBACKEND_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ortmem/ortmem.h>

#define TB_MAX 256

struct tb {
	pthread_mutex_t lock;
	int host_pointer;	/* advertise CAP_HOST_POINTER */
	int with_store;		/* offer store (else alloc + write) */
	int allocs, frees, writes;	/* calls so far */
	int fail_alloc_at;	/* 1-based call number that fails, 0 none */
	int fail_free_at;
	int fail_write_at;
	uint64_t partial_free;	/* bytes the failing free still releases */
	int busy_err;		/* busy() returns this when non-zero */
	int live;
	unsigned char *buf[TB_MAX];
	uint64_t len[TB_MAX];
	int busy[TB_MAX];
	int freed_order[TB_MAX];	/* bh of each completed free, in order */
	int nfreed;
};

static uint32_t tb_caps(void *ctx)
{
	struct tb *tb = ctx;

	return tb->host_pointer ? ORTMEM_BACKEND_CAP_HOST_POINTER : 0;
}

static int tb_new(struct tb *tb, uint64_t size, uint64_t *bhp)
{
	int i;

	for (i = 1; i < TB_MAX; i++)
		if (!tb->buf[i])
			break;
	if (i == TB_MAX)
		return -ENOSPC;
	tb->buf[i] = calloc(1, size);
	if (!tb->buf[i])
		return -ENOMEM;
	tb->len[i] = size;
	tb->live++;
	*bhp = (uint64_t)i;
	return 0;
}

static int tb_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	struct tb *tb = ctx;
	int ret;

	pthread_mutex_lock(&tb->lock);
	if (++tb->allocs == tb->fail_alloc_at)
		ret = -ENOMEM;
	else
		ret = tb_new(tb, size, bhp);
	pthread_mutex_unlock(&tb->lock);
	return ret;
}

static int tb_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	struct tb *tb = ctx;
	int ret = 0;

	pthread_mutex_lock(&tb->lock);
	if (bh == 0 || bh >= TB_MAX || !tb->buf[bh]) {
		ret = -EBADF;	/* a double free would land here */
	} else if (++tb->frees == tb->fail_free_at) {
		*freedp = tb->partial_free;
		tb->len[bh] -= tb->partial_free;
		ret = -EIO;
	} else if (size != tb->len[bh]) {
		ret = -EINVAL;	/* freed with the wrong size */
	} else {
		free(tb->buf[bh]);
		tb->buf[bh] = NULL;
		tb->live--;
		if (tb->nfreed < TB_MAX)	/* the first TB_MAX only */
			tb->freed_order[tb->nfreed++] = (int)bh;
		*freedp = size;
	}
	pthread_mutex_unlock(&tb->lock);
	return ret;
}

static void *tb_ptr(void *ctx, uint64_t bh)
{
	struct tb *tb = ctx;

	return tb->buf[bh];
}

static int tb_store(void *ctx, const void *src, uint64_t len, uint64_t *bhp)
{
	struct tb *tb = ctx;
	int ret;

	pthread_mutex_lock(&tb->lock);
	ret = tb_new(tb, len, bhp);
	if (!ret)
		memcpy(tb->buf[*bhp], src, len);
	pthread_mutex_unlock(&tb->lock);
	return ret;
}

static int tb_write(void *ctx, uint64_t bh, const void *src, uint64_t len)
{
	struct tb *tb = ctx;

	if (len != tb->len[bh])
		return -EINVAL;
	if (++tb->writes == tb->fail_write_at)
		return -EIO;
	memcpy(tb->buf[bh], src, len);
	return 0;
}

static int tb_read(void *ctx, uint64_t bh, void *dst, uint64_t len)
{
	struct tb *tb = ctx;

	if (len != tb->len[bh])
		return -EINVAL;
	memcpy(dst, tb->buf[bh], len);
	return 0;
}

static int tb_busy(void *ctx, uint64_t bh)
{
	struct tb *tb = ctx;
	int ret;

	pthread_mutex_lock(&tb->lock);
	ret = tb->busy_err ? tb->busy_err : tb->busy[bh];
	pthread_mutex_unlock(&tb->lock);
	return ret;
}

static struct ortmem_backend_ops tb_ops(struct tb *tb)
{
	struct ortmem_backend_ops ops = {
		.sz = sizeof(ops),
		.name = "testmem",
		.caps = tb_caps,
		.alloc = tb_alloc,
		.free = tb_free,
		.ptr = tb->host_pointer ? tb_ptr : NULL,
		.store = tb->with_store ? tb_store : NULL,
		.write = tb_write,
		.read = tb_read,
		.busy = tb_busy,
	};
	return ops;
}

static void tb_init(struct tb *tb)
{
	memset(tb, 0, sizeof(*tb));
	pthread_mutex_init(&tb->lock, NULL);
}

static void tb_fini(struct tb *tb)
{
	int i;

	for (i = 0; i < TB_MAX; i++)
		free(tb->buf[i]);
	pthread_mutex_destroy(&tb->lock);
}

#endif
