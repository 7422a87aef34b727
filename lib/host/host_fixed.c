// SPDX-License-Identifier: MIT
/*
 * Host buffers as io_uring fixed buffers of the spill engine, where the
 * running kernel takes them.  Whether it does depends on the kernel and the
 * backend: 6.1 refuses the module's mapping (EOPNOTSUPP: io_uring there
 * takes no file-backed pages), 6.12 accepts it; anonymous memory (the
 * mlock fallback) is accepted by every kernel we support.  So the first
 * ortmem_host_set_spill() of a process probes once per backend: it
 * registers a one-page buffer of that backend, unregisters and frees it,
 * and the answer is kept for the process.  Documentation/kmod/page-design.rst
 * has the figures.
 *
 * With the answer "yes", every resident buffer holds a slot of the spill
 * handle's rings: registered when it is allocated (or the spill handle
 * set) and when it is promoted, unregistered before it is freed, demoted
 * (the module's EVICT refuses pinned pages, and the fallback's release
 * would leave the ring holding the old pages) or the spill handle changes.
 * Any refusal leaves that buffer on plain reads and writes, silently: the
 * fast path is an optimisation, never a new way to fail.
 */
#include <errno.h>
#include <linux/capability.h>
#include <search.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "host_internal.h"
#include "spill/spill_internal.h"

/* Per backend: 0 not probed, 1 accepted, else the kernel's -errno. */
static atomic_int probe_answer[3];

/*
 * io_uring charges registered pages to RLIMIT_MEMLOCK unless the process
 * has CAP_IPC_LOCK; the host tier's pages are charged already, so with a
 * finite limit registering would halve what the tier can hold.
 */
static bool memlock_free_of_charge(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = { { 0 } };
	struct rlimit rl;

	if (!syscall(SYS_capget, &hdr, data) &&
	    (data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))))
		return true;
	return !getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur == RLIM_INFINITY;
}

/* Register one page of the backend and take it back: 0 or -errno. */
static int fixed_probe(struct ortmem_host *host, struct ortmem__fixed *fx)
{
	struct ortmem__host_buf b = { .size = (uint64_t)host->page_size };
	int backend = host->ops->backend, answer, ret;

	if (backend < 0 || backend >= (int)ORTMEM_ARRAY_SIZE(probe_answer))
		return -EINVAL;
	answer = atomic_load(&probe_answer[backend]);
	if (answer)
		return answer > 0 ? 0 : answer;
	ret = host->ops->alloc(host, &b, -1);
	if (ret) {
		/* Not the caller's failure: the tier just takes plain I/O. */
		ortmem_error_clear();
		return ret;
	}
	ret = ortmem__fixed_add(fx, NULL, b.ptr, b.size);
	if (!ret)
		ortmem__fixed_del(fx, b.ptr);
	if (host->ops->free(host, &b))
		pr_warn("host tier: freeing the fixed-buffer probe's page failed");
	/* Only the kernel's verdict on the memory is kept, not a shortage. */
	if (!ret || ret == -EOPNOTSUPP || ret == -EFAULT)
		atomic_store(&probe_answer[backend], ret ? ret : 1);
	return ret;
}

/* host.c's ortmem_host_backend_name(), which this floor may not call. */
static const char *backend_word(const struct ortmem_host *host)
{
	return host->ops->backend == ORTMEM_HOST_BACKEND_MODULE ? "module" : "mlock";
}

static const char *fixed_why(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return "this kernel's io_uring does not register this memory";
	case -ENXIO:
		return "the spill handle's rings have no slots for them (no io_uring, ORTMEM_SPILL_F_NO_REGBUF or ORTMEM_SPILL_F_NO_FIXED_HOST)";
	case -EPERM:
		return "io_uring would charge them to RLIMIT_MEMLOCK a second time (no CAP_IPC_LOCK, finite limit)";
	default:
		return ortmem_strerror(err);
	}
}

void ortmem__host_fixed_add(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	int ret;

	if (!host->fixed_on || b->fixed)
		return;
	ret = ortmem__fixed_add(host->fixed, &host->fixed_user, b->ptr, b->size);
	b->fixed = !ret;
	if (ret)
		pr_debug("host tier: %p stays on plain reads and writes (%s)",
			 b->ptr, ortmem_strerror(ret));
}

void ortmem__host_fixed_del(struct ortmem_host *host, struct ortmem__host_buf *b)
{
	if (!b->fixed)
		return;
	ortmem__fixed_del(host->fixed, b->ptr);
	b->fixed = false;
	b->unregistered = true;
}

static void walk_add(const void *node, VISIT v, void *arg)
{
	struct ortmem__host_buf *b = *(struct ortmem__host_buf *const *)node;

	if ((v == postorder || v == leaf) && !b->demoted)
		ortmem__host_fixed_add(arg, b);
}

static void walk_del(const void *node, VISIT v, void *arg)
{
	if (v == postorder || v == leaf)
		ortmem__host_fixed_del(arg, *(struct ortmem__host_buf *const *)node);
}

void ortmem__host_fixed_detach(struct ortmem_host *host)
{
	if (!host->fixed)
		return;
	twalk_r(host->bufs, walk_del, host);
	ortmem__fixed_leave(host->fixed, &host->fixed_user);
	ortmem__fixed_put(host->fixed);
	host->fixed = NULL;
	host->fixed_on = false;
}

void ortmem__host_fixed_attach(struct ortmem_host *host, struct ortmem_spill *spill)
{
	int ret;

	ortmem__host_fixed_detach(host);
	if (!spill)
		return;
	host->fixed = ortmem__spill_fixed(spill);
	if (!ortmem__fixed_usable(host->fixed))
		ret = -ENXIO;
	else if (!memlock_free_of_charge())
		ret = -EPERM;
	else
		ret = fixed_probe(host, host->fixed);
	host->fixed_on = !ret;
	ortmem__fixed_join(host->fixed, &host->fixed_user,
			   ret ? ORTMEM_SPILL_FIXED_OFF : ORTMEM_SPILL_FIXED_ON, ret);
	if (ret) {
		pr_info("host tier: %s buffers move to and from disk with plain reads and writes: %s",
			backend_word(host), fixed_why(ret));
		return;
	}
	pr_info("host tier: %s buffers are io_uring fixed buffers of the spill engine (READ_FIXED/WRITE_FIXED)",
		backend_word(host));
	twalk_r(host->bufs, walk_add, host);
}

void ortmem__host_fixed_stats(struct ortmem_host *host, uint32_t *state,
			      int32_t *err, uint64_t *buffers)
{
	*state = ORTMEM_SPILL_FIXED_NONE;
	*err = 0;
	*buffers = 0;
	if (host->fixed)
		ortmem__fixed_user_stats(host->fixed, &host->fixed_user, state,
					 err, buffers);
}
