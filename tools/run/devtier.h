/* SPDX-License-Identifier: MIT */
/*
 * tools/run/devtier.h - ortmem-run's device tier: with a GPU, the hot
 * buffers (the layer being computed and the activation arena) live in
 * device memory, streamed there by the governor's asynchronous promotion.
 *
 * ortmem-run computes with OpenBLAS on the CPU, so a layer's weights and
 * the activations it reads are copied back to pinned host staging buffers
 * for the arithmetic, and its results pushed to the device again: the
 * bytes take the path a GPU runtime's would (disk -> device), and the
 * output stays bit-identical to the other modes.
 */
#ifndef ORTMEM_TOOLS_RUN_DEVTIER_H
#define ORTMEM_TOOLS_RUN_DEVTIER_H

#include <stdint.h>

#include <ortmem/device.h>

struct devtier {
	struct ortmem_device *dev;
	uint8_t *wstage;	/* host copy of the layer being computed */
	uint8_t *astage;	/* host mirror of the device's activation arena */
	uint64_t wbytes, abytes;
	uint64_t budget;
	uint64_t arena;		/* the arena's device address */
	const uint8_t *poison;	/* --poison-evicted's pattern, as many bytes
				 * as the largest value (the caller's) */
	int ordinal;
	char name[64];
};

/*
 * Open GPU @ordinal with @budget bytes and pinned staging buffers for one
 * layer of @wbytes and an arena of @abytes.  0 when it is ready, 1 when
 * there is no device (the reason, from the library, in @why), < 0 on error
 * (with the library's detailed error).
 */
int devtier_open(struct devtier *d, int ordinal, uint64_t budget,
		 uint64_t wbytes, uint64_t abytes, const char **why);
void devtier_close(struct devtier *d);
/* The copies below refuse a range outside the buffer it names with
 * run_refuse() (refuse.h): -EINVAL, and an error naming the range. */
/* Copy the @len bytes at device address @dptr to the weights stage. */
int devtier_weights(struct devtier *d, uint64_t dptr, uint64_t len,
		    const uint8_t **wp);
/* Move [off, off + len) of the arena: to the device, or back from it. */
int devtier_push(struct devtier *d, uint64_t off, uint64_t len);
int devtier_pull(struct devtier *d, uint64_t off, uint64_t len);

/* The transfer schedule's copies (xfer.h) on the GPU's arena at
 * d->arena, from and to memory registered with the driver; a move is a
 * copy within the device (ortmem_device_copy_within()), made on the host
 * mirror too, where the CPU computes. */
struct xfer_ops;
struct xfer_ops devtier_xfer_ops(struct devtier *d);

#endif /* ORTMEM_TOOLS_RUN_DEVTIER_H */
