// SPDX-License-Identifier: MIT
/*
 * Fake CUDA driver: streams, events and copies.  Each stream has a worker
 * thread that runs its operations in order, after FAKECUDA_DELAY_US, so an
 * asynchronous copy really is asynchronous: a caller that reads before
 * synchronising sees stale bytes (and TSan a race).  An event completes
 * when the worker reaches its record; cuStreamWaitEvent holds a stream's
 * worker until another stream's event completes.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake.h"

enum { OP_COPY, OP_RECORD, OP_WAIT };

struct CUevent_st {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long recorded, completed;	/* record generations */
	CUresult err;
	int refs;		/* the user's and queued operations' */
};

struct fake_op {
	int kind;
	void *dst;
	const void *src;
	size_t len;
	CUresult fail;		/* injected asynchronous failure */
	struct CUevent_st *ev;
	unsigned long gen;
	struct fake_op *next;
};

struct CUstream_st {
	struct CUctx_st *ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond, idle;
	struct fake_op *head, **tail;
	bool busy, stop;
	CUresult err;		/* failure not yet reported */
};

static void event_put(struct CUevent_st *ev)
{
	int left;

	pthread_mutex_lock(&ev->lock);
	left = --ev->refs;
	pthread_mutex_unlock(&ev->lock);
	if (left)
		return;
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->cond);
	free(ev);
}

static void op_run(struct CUstream_st *s, struct fake_op *op)
{
	long delay = (long)fake_env("FAKECUDA_DELAY_US", 200);

	if (delay > 0)
		usleep((useconds_t)delay);
	switch (op->kind) {
	case OP_COPY:
		/* A failing copy stops half-way, as a transfer cut short. */
		memcpy(op->dst, op->src, op->fail ? op->len / 2 : op->len);
		if (op->fail) {
			pthread_mutex_lock(&s->lock);
			if (!s->err)
				s->err = op->fail;
			pthread_mutex_unlock(&s->lock);
			fake_result(s->ctx, op->fail);
		}
		break;
	case OP_RECORD:
		/* The event reports the failure before it (once). */
		pthread_mutex_lock(&s->lock);
		op->fail = s->err;
		s->err = 0;
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_lock(&op->ev->lock);
		if (op->gen > op->ev->completed) {
			op->ev->completed = op->gen;
			op->ev->err = op->fail;
		}
		pthread_cond_broadcast(&op->ev->cond);
		pthread_mutex_unlock(&op->ev->lock);
		break;
	case OP_WAIT:
		pthread_mutex_lock(&op->ev->lock);
		while (op->ev->completed < op->gen)
			pthread_cond_wait(&op->ev->cond, &op->ev->lock);
		pthread_mutex_unlock(&op->ev->lock);
		break;
	}
	if (op->ev)
		event_put(op->ev);
	free(op);
}

static void *stream_worker(void *arg)
{
	struct CUstream_st *s = arg;
	struct fake_op *op;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->head)
			break;
		op = s->head;
		s->head = op->next;
		if (!s->head)
			s->tail = &s->head;
		s->busy = true;
		pthread_mutex_unlock(&s->lock);
		op_run(s, op);
		pthread_mutex_lock(&s->lock);
		s->busy = false;
		if (!s->head)
			pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static CUresult stream_push(struct CUstream_st *s, struct fake_op *op)
{
	pthread_mutex_lock(&s->lock);
	op->next = NULL;
	*s->tail = op;
	s->tail = &op->next;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Wait until @s ran everything queued; its unreported failure, cleared. */
static CUresult stream_drain(struct CUstream_st *s)
{
	CUresult err;

	pthread_mutex_lock(&s->lock);
	while (s->head || s->busy)
		pthread_cond_wait(&s->idle, &s->lock);
	err = s->err;
	s->err = 0;
	pthread_mutex_unlock(&s->lock);
	return err;
}

FAKE_API CUresult cuStreamCreate(CUstream *sp, unsigned int flags)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult res = fake_enter("cuStreamCreate", NULL);

	if (res || (res = fake_ctx_check(&ctx)))
		return res;
	if (!sp || flags > CU_STREAM_NON_BLOCKING)
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->ctx = ctx;
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->idle, NULL);
	if (pthread_create(&s->thread, NULL, stream_worker, s)) {
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*sp = s;
	return 0;
}

FAKE_API CUresult cuStreamDestroy_v2(CUstream s)
{
	CUresult res = fake_enter("cuStreamDestroy", NULL);

	if (res)
		return res;
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	/* The driver lets queued work finish. */
	stream_drain(s);
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	pthread_cond_destroy(&s->idle);
	free(s);
	return 0;
}

FAKE_API CUresult cuStreamSynchronize(CUstream s)
{
	CUresult res = fake_enter("cuStreamSynchronize", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	return stream_drain(s);
}

FAKE_API CUresult cuStreamWaitEvent(CUstream s, CUevent ev, unsigned int flags)
{
	struct fake_op *op;
	CUresult res = fake_enter("cuStreamWaitEvent", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!s || !ev || flags)
		return CUDA_ERROR_INVALID_HANDLE;
	op = calloc(1, sizeof(*op));
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->kind = OP_WAIT;
	op->ev = ev;
	pthread_mutex_lock(&ev->lock);
	ev->refs++;
	op->gen = ev->recorded;
	pthread_mutex_unlock(&ev->lock);
	return stream_push(s, op);
}

FAKE_API CUresult cuEventCreate(CUevent *evp, unsigned int flags)
{
	struct CUevent_st *ev;
	CUresult res = fake_enter("cuEventCreate", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!evp || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->cond, NULL);
	ev->refs = 1;
	*evp = ev;
	return 0;
}

FAKE_API CUresult cuEventRecord(CUevent ev, CUstream s)
{
	struct fake_op *op;
	CUresult res = fake_enter("cuEventRecord", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!ev || !s)
		return CUDA_ERROR_INVALID_HANDLE;
	op = calloc(1, sizeof(*op));
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->kind = OP_RECORD;
	op->ev = ev;
	pthread_mutex_lock(&ev->lock);
	ev->refs++;
	op->gen = ++ev->recorded;
	pthread_mutex_unlock(&ev->lock);
	return stream_push(s, op);
}

FAKE_API CUresult cuEventQuery(CUevent ev)
{
	CUresult res = fake_enter("cuEventQuery", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!ev)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev->lock);
	res = ev->completed < ev->recorded ? CUDA_ERROR_NOT_READY : ev->err;
	pthread_mutex_unlock(&ev->lock);
	return res;
}

FAKE_API CUresult cuEventSynchronize(CUevent ev)
{
	CUresult res = fake_enter("cuEventSynchronize", NULL);

	if (res || (res = fake_ctx_check(NULL)))
		return res;
	if (!ev)
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&ev->lock);
	while (ev->completed < ev->recorded)
		pthread_cond_wait(&ev->cond, &ev->lock);
	res = ev->err;
	pthread_mutex_unlock(&ev->lock);
	return res;
}

FAKE_API CUresult cuEventDestroy_v2(CUevent ev)
{
	CUresult res = fake_enter("cuEventDestroy", NULL);

	if (res)
		return res;
	if (!ev)
		return CUDA_ERROR_INVALID_HANDLE;
	event_put(ev);
	return 0;
}

/* ---- copies ---- */

static CUresult copy_check(const char *name, CUdeviceptr d, size_t len,
			   CUresult *async, struct CUctx_st **ctxp)
{
	CUresult res = fake_enter(name, async);

	if (res || (res = fake_ctx_check(ctxp)))
		return res;
	if (!fake_dev_range((*ctxp)->dev, d, len))
		return fake_result(*ctxp, CUDA_ERROR_INVALID_VALUE);
	return 0;
}

FAKE_API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *src, size_t len)
{
	struct CUctx_st *ctx;
	CUresult res = copy_check("cuMemcpyHtoD", d, len, NULL, &ctx);

	if (!res)
		memcpy((void *)(uintptr_t)d, src, len);
	return res;
}

FAKE_API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr d, size_t len)
{
	struct CUctx_st *ctx;
	CUresult res = copy_check("cuMemcpyDtoH", d, len, NULL, &ctx);

	if (!res)
		memcpy(dst, (void *)(uintptr_t)d, len);
	return res;
}

static _Atomic unsigned long long pageable_bytes;

FAKE_API unsigned long long fakecuda_pageable_bytes(void)
{
	return atomic_load(&pageable_bytes);
}

static CUresult copy_async(const char *name, void *dst, const void *src,
			   CUdeviceptr d, size_t len, CUstream s)
{
	struct CUctx_st *ctx;
	struct fake_op *op;
	CUresult async, res = copy_check(name, d, len, &async, &ctx);

	if (res)
		return res;
	if (!s || s->ctx != ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	op = calloc(1, sizeof(*op));
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!fake_host_pinned((uintptr_t)dst == d ? src : dst, len))
		atomic_fetch_add(&pageable_bytes, len);
	op->kind = OP_COPY;
	op->dst = dst;
	op->src = src;
	op->len = len;
	op->fail = async;
	return stream_push(s, op);
}

FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *src,
				       size_t len, CUstream s)
{
	return copy_async("cuMemcpyHtoDAsync", (void *)(uintptr_t)d, src, d,
			  len, s);
}

FAKE_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr d, size_t len,
				       CUstream s)
{
	return copy_async("cuMemcpyDtoHAsync", dst, (void *)(uintptr_t)d, d,
			  len, s);
}

/*
 * Both ranges must lie in the context's device memory.  The real driver
 * leaves overlapping ranges undefined; the fake refuses them, so a caller
 * that passes one is caught.  Neither end is host memory: no pageable
 * bytes to count.
 */
FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
				       size_t len, CUstream s)
{
	struct CUctx_st *ctx;
	struct fake_op *op;
	CUresult async, res = copy_check("cuMemcpyDtoDAsync", src, len, &async, &ctx);

	if (res)
		return res;
	if (!fake_dev_range(ctx->dev, dst, len) ||
	    (dst < src + len && src < dst + len))
		return fake_result(ctx, CUDA_ERROR_INVALID_VALUE);
	if (!s || s->ctx != ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	op = calloc(1, sizeof(*op));
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->kind = OP_COPY;
	op->dst = (void *)(uintptr_t)dst;
	op->src = (const void *)(uintptr_t)src;
	op->len = len;
	op->fail = async;
	return stream_push(s, op);
}
