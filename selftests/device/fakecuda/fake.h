/* SPDX-License-Identifier: MIT */
/*
 * The fake CUDA driver's inside: a libcuda.so.1 for the device tier's
 * tests, exporting exactly the entry points of ORTMEM_CUDA_CALLS (their
 * prototypes come from lib/device/device_internal.h, so a signature that
 * differs does not compile) plus cuGetProcAddress and its _v2.
 *
 *   driver.c  init, devices, contexts, fault injection, cuGetProcAddress
 *   memory.c  device memory (anonymous mappings, apart from the host
 *             tier's), virtual backing on memfd, host registration
 *   stream.c  streams (a worker thread each), events, copies
 *
 * Environment:
 *   FAKECUDA_DEVICES=N         devices (default 2)
 *   FAKECUDA_MEM=BYTES         memory of each (default 256 MiB)
 *   FAKECUDA_GRANULARITY=BYTES virtual backing granule (default 64 KiB)
 *   FAKECUDA_NO_VMM=1          no virtual backing
 *   FAKECUDA_PROCADDR=v2|v1|none  which cuGetProcAddress to export as
 *                              working (default v2); the others answer
 *                              CUDA_ERROR_NOT_FOUND
 *   FAKECUDA_DELAY_US=N        each stream operation waits N us first
 *                              (default 200: long enough that a caller
 *                              reading before it synchronised races the
 *                              copy, and TSan says so)
 *   FAKECUDA_FAULTS=NAME:NTH:RESULT[:async][,...]
 *       the NTH call (from 1, counted since the variable last changed) of
 *       entry point NAME (base name, e.g. cuMemAlloc) fails with RESULT.
 *       With ":async" the call succeeds, and its stream operation does
 *       half its work and fails: the result comes out of the next event
 *       or stream synchronisation, as real asynchronous errors do.
 *       A RESULT that means a lost context (700, 709, 719, 46, 214)
 *       sticks: every later call on that device's context returns it.
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device_internal.h"

#define FAKE_API __attribute__((visibility("default")))

/* Every entry point, declared from the library's table: a definition
 * with another signature, or a missing one, does not build. */
#define FAKE_DECL(name, sym, req, args) FAKE_API CUresult sym args;
ORTMEM_CUDA_CALLS(FAKE_DECL)
#undef FAKE_DECL

struct CUctx_st {
	int dev;
	int retained;
	CUresult lost;		/* sticky error, 0 when fine */
};

extern struct CUctx_st fake_ctx[];
extern int fake_ndev;
extern size_t fake_granularity;
extern size_t fake_mem;

/* Entry check: 0, or the result the call must return (injected fault,
 * not initialised).  *@async: the result its stream operation fails
 * with instead (0: none); NULL where the call has none. */
CUresult fake_enter(const char *name, CUresult *async);
/* The calling thread's context, checked: 0 or an error to return. */
CUresult fake_ctx_check(struct CUctx_st **ctxp);
/* A result that loses the context: make it stick on @ctx. */
CUresult fake_result(struct CUctx_st *ctx, CUresult res);
bool fake_is_lost(CUresult res);
long long fake_env(const char *name, long long def);

/* memory.c: is [p, p + len) device memory of @dev that can be accessed? */
bool fake_dev_range(int dev, CUdeviceptr p, size_t len);
/* True when [p, p + len) lies in registered or cuMemHostAlloc memory. */
bool fake_host_pinned(const void *p, size_t len);
/*
 * Bytes copied asynchronously from or to host memory that is not pinned
 * (a real driver stages those through its own buffers, at a fraction of
 * the bus's rate).  Not a CUDA call: tests find it with dlsym().
 */
FAKE_API unsigned long long fakecuda_pageable_bytes(void);
void fake_mem_init(void);

#endif
