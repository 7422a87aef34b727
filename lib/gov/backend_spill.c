// SPDX-License-Identifier: MIT
/*
 * The "spill" backend: the disk tier of a governor, on the spill engine.
 * Its context is a struct ortmem_spill the caller opened and still owns
 * (the governor never closes it).  A spill extent has no CPU address, so
 * the backend offers store (demote) and read (promote) and nothing else;
 * the engine verifies every extent's checksum on the way back.
 */
#include <errno.h>

#include <ortmem/governor.h>
#include <ortmem/spill.h>

static int spill_store(void *ctx, const void *src, uint64_t len, uint64_t *bhp)
{
	return ortmem_spill_write(ctx, src, len, bhp);
}

static int spill_read(void *ctx, uint64_t bh, void *dst, uint64_t len)
{
	return ortmem_spill_read(ctx, bh, dst, len);
}

/* An extent is freed whole or not at all. */
static int spill_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	int ret = ortmem_spill_free(ctx, bh);

	*freedp = ret ? 0 : size;
	return ret;
}

static const struct ortmem_backend_ops spill_ops = {
	.sz = sizeof(struct ortmem_backend_ops),
	.name = "spill",
	/* ortmem_spill_open(3): its calls are thread-safe. */
	.flags = ORTMEM_BACKEND_CONCURRENT,
	.free = spill_free,
	.store = spill_store,
	.read = spill_read,
};

ORTMEM_API const struct ortmem_backend_ops *ortmem_backend_spill(void)
{
	return &spill_ops;
}
