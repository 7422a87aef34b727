// SPDX-License-Identifier: MIT
/*
 * The device tier's transfers: asynchronous copies and their events, host
 * registration, a copy failing half-way, a lost context, releases gated on
 * events, the governor moving device bytes to host and disk and back, and
 * disk->device streaming with spill faults.
 */
#include <pthread.h>

#include "common.h"

#define MiB (1ull << 20)

static bool has(const char *s, const char *what)
{
	return s && strstr(s, what);
}

TEST(async_copies_complete_on_their_events)
{
	struct ortmem_device_event *ev_to, *ev_from;
	struct ortmem_device *dev;
	size_t len = 2 * MiB;
	char *src = malloc(len), *dst = malloc(len);
	uint64_t d;

	NEED_DEVICES(1);
	/* Slow streams: a reader that did not wait would see stale bytes. */
	setenv("FAKECUDA_DELAY_US", "20000", 1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_register(dev, src, len));
	ASSERT_EQ(0, ortmem_device_register(dev, dst, len));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &d));
	fill(src, len, 5);
	memset(dst, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, src, len, &ev_to));
	/* The other direction waits for the first on the GPU, not here. */
	ASSERT_EQ(0, ortmem_device_copy_from(dev, dst, d, len, &ev_from));
	if (on_fake())
		ASSERT_EQ(0, ortmem_device_event_query(ev_from));
	ASSERT_EQ(0, ortmem_device_event_wait(ev_from));
	ASSERT_EQ(1, ortmem_device_event_query(ev_from));
	ASSERT_EQ(1, ortmem_device_event_query(ev_to));
	ASSERT_TRUE(filled(dst, len, 5));
	ortmem_device_event_put(ev_to);
	ortmem_device_event_put(ev_from);
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ASSERT_EQ(0, ortmem_device_unregister(dev, src));
	ASSERT_EQ(0, ortmem_device_unregister(dev, dst));
	ortmem_device_close(dev);
	free(src);
	free(dst);
}

TEST(host_registration)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	ORTMEM_OPTS(ortmem_host_stats, hs);
	struct ortmem_device *dev;
	struct ortmem_host *host;
	void *p, *q;

	NEED_DEVICES(1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_host_open(NULL, &host));
	ASSERT_EQ(0, ortmem_device_host_alloc(dev, host, 64 << 10, &p));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(64 << 10, st.registered_bytes);
	/* Twice is refused, by us, naming the overlap. */
	ASSERT_EQ(-EEXIST, ortmem_device_register(dev, (char *)p + 4096, 4096));
	ASSERT_TRUE(has(reason(), "already registered"));
	ASSERT_EQ(-EINVAL, ortmem_device_unregister(dev, (char *)p + 4096));
	ASSERT_EQ(0, ortmem_device_host_free(dev, host, p));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.registered_bytes);
	if (on_fake()) {
		/* The driver refuses: the host memory goes back too. */
		setenv("FAKECUDA_FAULTS", "cuMemHostRegister:1:999", 1);
		ASSERT_EQ(-EIO, ortmem_device_host_alloc(dev, host, 64 << 10, &q));
		ASSERT_TRUE(has(reason(), "cuMemHostRegister: CUDA_ERROR_UNKNOWN"));
		ASSERT_EQ(0, ortmem_host_stats(host, &hs));
		ASSERT_EQ(0, hs.buffers);
		ASSERT_EQ(0, ortmem_device_stats(dev, &st));
		ASSERT_EQ(0, st.registered_bytes);
		ASSERT_EQ(0, st.lost);
	}
	/* Left registered at close: unregistered by the close. */
	ASSERT_EQ(0, ortmem_device_host_alloc(dev, host, 8192, &q));
	ortmem_device_close(dev);
	ortmem_host_close(host);
}

FIXTURE(midway) {};
FIXTURE_VARIANT(midway) { bool to_device; };
FIXTURE_VARIANT_ADD(midway, host_to_device) { .to_device = true };
FIXTURE_VARIANT_ADD(midway, device_to_host) { .to_device = false };
FIXTURE_SETUP(midway) {}
FIXTURE_TEARDOWN(midway) {}

/* A copy fails half-way: its source is intact, the handle still works. */
TEST_F(midway, source_intact)
{
	struct ortmem_device_event *ev;
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device *dev;
	size_t len = MiB;
	char *host = malloc(len), *check = malloc(len);
	uint64_t d;

	NEED_FAKE();
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &d));
	fill(host, len, 1);
	ASSERT_EQ(0, ortmem_device_copy_to(dev, d, host, len, NULL));
	fill(host, len, 2);
	setenv("FAKECUDA_FAULTS", variant->to_device ?
	       "cuMemcpyHtoDAsync:1:999:async" :
	       "cuMemcpyDtoHAsync:1:999:async", 1);
	if (variant->to_device)
		ASSERT_EQ(0, ortmem_device_copy_to(dev, d, host, len, &ev));
	else
		ASSERT_EQ(0, ortmem_device_copy_from(dev, host, d, len, &ev));
	ASSERT_EQ(-EIO, ortmem_device_event_wait(ev));
	ASSERT_TRUE(has(reason(), "CUDA_ERROR_UNKNOWN"));
	/* Failed stays failed. */
	ASSERT_EQ(-EIO, ortmem_device_event_query(ev));
	ortmem_device_event_put(ev);
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.lost);
	if (variant->to_device) {
		ASSERT_TRUE(filled(host, len, 2));	/* the source */
	} else {
		/* The source is the device: read it again, whole. */
		ASSERT_EQ(0, ortmem_device_copy_from(dev, check, d, len, NULL));
		ASSERT_TRUE(filled(check, len, 1));
	}
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
	free(host);
	free(check);
}

struct tiers {
	struct ortmem_device *dev;
	struct ortmem_host *host;
	struct ortmem_spill *spill;
	struct ortmem_gov *gov;
};

static int tiers_open(struct tiers *t, uint64_t device_limit)
{
	ORTMEM_OPTS(ortmem_gov_opts, o,
		    .limit = { device_limit, 16 * MiB, 64 * MiB });
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MiB);
	int ret;

	memset(t, 0, sizeof(*t));
	if ((ret = ortmem_device_open(0, NULL, &t->dev)) ||
	    (ret = ortmem_host_open(NULL, &t->host)) ||
	    (ret = ortmem_spill_open(&so, &t->spill)) ||
	    (ret = ortmem_gov_open(&o, &t->gov)))
		return ret;
	if ((ret = ortmem_gov_set_backend(t->gov, ORTMEM_TIER_DEVICE,
					  ortmem_backend_device(), t->dev)) ||
	    (ret = ortmem_gov_set_backend(t->gov, ORTMEM_TIER_HOST,
					  ortmem_backend_host(), t->host)))
		return ret;
	return ortmem_gov_set_backend(t->gov, ORTMEM_TIER_DISK,
				      ortmem_backend_spill(), t->spill);
}

/* The governor is closed before the tiers it uses. */
static void tiers_close(struct tiers *t)
{
	ortmem_gov_close(t->gov);
	ortmem_spill_close(t->spill);
	ortmem_host_close(t->host);
	ortmem_device_close(t->dev);
}

/* Demotion device -> host -> disk and promotion back are bit-exact. */
TEST(governor_moves_bit_exact)
{
	struct ortmem_alloc_info info;
	struct ortmem_handle h;
	size_t len = 3 * MiB + 123;
	char *buf = malloc(len);
	struct tiers t;
	void *p, *q;

	NEED_DEVICES(1);
	ASSERT_EQ(0, tiers_open(&t, 16 * MiB));
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE,
				      len, ORTMEM_ALLOC_MOVABLE, &h));
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, 0, &p));
	fill(buf, len, 7);
	ASSERT_EQ(0, ortmem_device_copy_to(t.dev, (uintptr_t)p, buf, len, NULL));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	ASSERT_EQ(0, ortmem_gov_demote(t.gov, h));
	ASSERT_EQ(0, ortmem_gov_query(t.gov, h, &info));
	ASSERT_EQ(ORTMEM_TIER_HOST, info.tier);
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, ORTMEM_PIN_NO_PROMOTE, &q));
	ASSERT_TRUE(filled(q, len, 7));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	ASSERT_EQ(0, ortmem_gov_demote(t.gov, h));
	ASSERT_EQ(0, ortmem_gov_query(t.gov, h, &info));
	ASSERT_EQ(ORTMEM_TIER_DISK, info.tier);
	/* Pinning promotes it home, to the GPU. */
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, 0, &p));
	ASSERT_EQ(0, ortmem_gov_query(t.gov, h, &info));
	ASSERT_EQ(ORTMEM_TIER_DEVICE, info.tier);
	memset(buf, 0, len);
	ASSERT_EQ(0, ortmem_device_copy_from(t.dev, buf, (uintptr_t)p, len, NULL));
	ASSERT_TRUE(filled(buf, len, 7));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	ASSERT_EQ(0, ortmem_gov_release(t.gov, h, 0));
	tiers_close(&t);
	free(buf);
}

/* A release gated on an event waits for it and frees nothing before. */
TEST(release_waits_for_its_event)
{
	ORTMEM_OPTS(ortmem_gov_stats, gs);
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_event *ev;
	struct ortmem_handle h;
	size_t len = MiB;
	char *buf = malloc(len);
	struct tiers t;
	void *p;

	NEED_FAKE();
	/* Long enough that the polls below come before the copy ends. */
	setenv("FAKECUDA_DELAY_US", "300000", 1);
	ASSERT_EQ(0, tiers_open(&t, 16 * MiB));
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WORKSPACE,
				      len, 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, 0, &p));
	fill(buf, len, 3);
	/* Stands for a kernel of the runtime still using the memory. */
	ASSERT_EQ(0, ortmem_device_copy_to(t.dev, (uintptr_t)p, buf, len, &ev));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	ASSERT_EQ(1, ortmem_device_release_after(t.gov, h, ev));
	ASSERT_EQ(0, ortmem_gov_poll(t.gov));
	ASSERT_EQ(0, ortmem_gov_stats(t.gov, &gs));
	ASSERT_EQ(1, gs.tier[ORTMEM_TIER_DEVICE].deferred);
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(len, st.used_bytes);		/* not freed yet */
	ASSERT_EQ(0, ortmem_device_event_wait(ev));
	ortmem_device_event_put(ev);
	ASSERT_EQ(1, ortmem_gov_poll(t.gov));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(0, ortmem_gov_stats(t.gov, &gs));
	ASSERT_EQ(0, gs.tier[ORTMEM_TIER_DEVICE].deferred);
	ASSERT_EQ(0, gs.tier[ORTMEM_TIER_DEVICE].used);
	tiers_close(&t);
	free(buf);
}

/* A release while a copy of the handle still uses the memory waits (busy). */
TEST(release_waits_for_a_copy_in_flight)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_event *ev;
	struct ortmem_handle h;
	size_t len = MiB;
	char *buf = malloc(len);
	struct tiers t;
	void *p;

	NEED_FAKE();
	setenv("FAKECUDA_DELAY_US", "300000", 1);
	ASSERT_EQ(0, tiers_open(&t, 16 * MiB));
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_ACTIVATION,
				      len, 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, 0, &p));
	fill(buf, len, 4);
	ASSERT_EQ(0, ortmem_device_copy_to(t.dev, (uintptr_t)p, buf, len, &ev));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	/* Queued, not freed: the copy still writes the memory. */
	ASSERT_EQ(1, ortmem_gov_release(t.gov, h, 0));
	ASSERT_EQ(0, ortmem_gov_poll(t.gov));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(len, st.used_bytes);
	ASSERT_EQ(0, ortmem_device_event_wait(ev));
	ortmem_device_event_put(ev);
	ASSERT_EQ(1, ortmem_gov_poll(t.gov));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	tiers_close(&t);
	free(buf);
}

struct worker {
	struct ortmem_device *dev;
	unsigned int seed;
	int failures;
};

/* Allocate, upload, read back with events, check, free: many times. */
static void *worker_run(void *arg)
{
	struct worker *w = arg;
	size_t len = 96 << 10;
	char *src = malloc(len), *dst = malloc(len);
	struct ortmem_device_event *a, *b;
	unsigned int i;
	uint64_t d;

	for (i = 0; i < 40; i++) {
		fill(src, len, w->seed + i);
		if (ortmem_device_alloc(w->dev, len, 0, &d) ||
		    ortmem_device_copy_to(w->dev, d, src, len, &a) ||
		    ortmem_device_copy_from(w->dev, dst, d, len, &b) ||
		    ortmem_device_event_wait(b) || !filled(dst, len, w->seed + i))
			w->failures++;
		ortmem_device_event_put(a);
		ortmem_device_event_put(b);
		if (ortmem_device_free(w->dev, d))
			w->failures++;
	}
	free(src);
	free(dst);
	return NULL;
}

/* Several threads on one handle at once (TSan checks the locking). */
TEST(threads_share_a_handle)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct worker w[4];
	pthread_t th[4];
	struct ortmem_device *dev;
	int i;

	NEED_DEVICES(1);
	setenv("FAKECUDA_DELAY_US", "100", 1);
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker){ .dev = dev, .seed = 100u * (unsigned int)i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_run, &w[i]));
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, w[i].failures);
	}
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(4 * 40 * 2, st.copies);
	ortmem_device_close(dev);
}

/* The context is lost mid-run: a clear error, the other tiers go on. */
TEST(context_lost_mid_run)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_handle hd, hh, hx;
	const struct ortmem_error *e;
	struct tiers t;
	char buf[4096];
	void *p;

	NEED_FAKE();
	ASSERT_EQ(0, tiers_open(&t, 16 * MiB));
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WEIGHTS,
				      MiB, 0, &hd));
	/* The next allocation on the GPU meets an illegal address. */
	setenv("FAKECUDA_FAULTS", "cuMemAlloc:1:700", 1);
	ASSERT_GT(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WEIGHTS,
				      MiB, 0, &hx));
	for (e = ortmem_last_error(); e->cause; e = e->cause)
		;
	ASSERT_EQ(-ENXIO, e->code);
	ASSERT_TRUE(has(e->reason, "CUDA_ERROR_ILLEGAL_ADDRESS"));
	ASSERT_TRUE(has(e->reason, "context is lost"));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(1, st.lost);
	ASSERT_EQ(0, st.caps);
	/* Every later call says so. */
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, hd, 0, &p));
	ASSERT_EQ(-ENXIO, ortmem_device_copy_to(t.dev, (uintptr_t)p, buf, sizeof(buf), NULL));
	ASSERT_TRUE(has(reason(), "was lost"));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, hd));
	/* The host tier works, and the lost memory can be released. */
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
				      MiB, 0, &hh));
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, hh, 0, &p));
	memset(p, 1, MiB);
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, hh));
	ASSERT_EQ(0, ortmem_gov_release(t.gov, hh, 0));
	ASSERT_EQ(0, ortmem_gov_release(t.gov, hd, 0));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	tiers_close(&t);
}

/* The context is lost under a copy: its event says so, the handle is lost. */
TEST(context_lost_under_a_copy)
{
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_event *ev;
	struct ortmem_handle h;
	struct tiers t;
	char *buf = malloc(MiB);
	void *p;

	NEED_FAKE();
	ASSERT_EQ(0, tiers_open(&t, 16 * MiB));
	ASSERT_EQ(0, ortmem_gov_alloc(t.gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WEIGHTS,
				      MiB, 0, &h));
	ASSERT_EQ(0, ortmem_gov_pin(t.gov, h, 0, &p));
	setenv("FAKECUDA_FAULTS", "cuMemcpyHtoDAsync:1:719:async", 1);
	ASSERT_EQ(0, ortmem_device_copy_to(t.dev, (uintptr_t)p, buf, MiB, &ev));
	ASSERT_EQ(0, ortmem_gov_unpin(t.gov, h));
	/* Gated on the failing copy: released once the loss is known. */
	ASSERT_EQ(1, ortmem_device_release_after(t.gov, h, ev));
	ASSERT_EQ(-ENXIO, ortmem_device_event_wait(ev));
	ASSERT_TRUE(has(reason(), "CUDA_ERROR_LAUNCH_FAILED"));
	ortmem_device_event_put(ev);
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(1, st.lost);
	ASSERT_EQ(1, ortmem_gov_poll(t.gov));
	ASSERT_EQ(0, ortmem_device_stats(t.dev, &st));
	ASSERT_EQ(0, st.used_bytes);
	ASSERT_EQ(-ENXIO, ortmem_device_alloc(t.dev, 4096, 0, (uint64_t *)&p));
	tiers_close(&t);
	free(buf);
}

/* Streaming's bounce buffers cannot be registered: refused, no leak. */
TEST(stream_bounce_registration_fails)
{
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MiB);
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_extent ext = { .len = 4096 };
	struct ortmem_device *dev;
	struct ortmem_spill *spill;
	char buf[4096] = { 1 };
	uint64_t d;

	NEED_FAKE();
	if (ortmem_spill_open(&so, &spill))
		SKIP("no spill file: %s", reason());
	ASSERT_EQ(0, ortmem_spill_write(spill, buf, sizeof(buf), &ext.extent));
	ASSERT_EQ(0, ortmem_device_open(0, NULL, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, 4096, 0, &d));
	setenv("FAKECUDA_FAULTS", "cuMemHostRegister:2:2", 1);
	ASSERT_EQ(-ENOMEM, ortmem_device_stream_in(dev, spill, &ext, 1, d));
	ASSERT_TRUE(has(reason(), "cuMemHostRegister: CUDA_ERROR_OUT_OF_MEMORY"));
	/* The next call sets them up again and works. */
	ASSERT_EQ(0, ortmem_device_stream_in(dev, spill, &ext, 1, d));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(4096, st.streamed_bytes);
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
	ortmem_spill_close(spill);
}

FIXTURE(stream) {};
FIXTURE_VARIANT(stream) { int nth; int fault; const char *driver_fault; };
FIXTURE_VARIANT_ADD(stream, clean) { .nth = 0 };
FIXTURE_VARIANT_ADD(stream, short_reads) { .nth = 3, .fault = ORTMEM_SPILL_FAULT_SHORT };
FIXTURE_VARIANT_ADD(stream, read_error) { .nth = 4, .fault = -EIO };
/* A copy that fails (on either reader): the driver's own error. */
FIXTURE_VARIANT_ADD(stream, copy_error) { .driver_fault = "cuMemcpyHtoDAsync:6:2" };
FIXTURE_SETUP(stream) {}
FIXTURE_TEARDOWN(stream) {}

/* Disk -> device through pinned bounce buffers, bit-exact under faults. */
TEST_F(stream, bit_exact)
{
	ORTMEM_OPTS(ortmem_device_opts, o, .bounce_bytes = 256 << 10);
	ORTMEM_OPTS(ortmem_spill_opts, so, .grow_bytes = 4 * MiB);
	ORTMEM_OPTS(ortmem_device_stats, st);
	struct ortmem_device_extent ext[24];
	struct ortmem_device *dev;
	struct ortmem_spill *spill;
	size_t piece = (256 << 10) - 1000, len = 24 * piece;
	char *src = malloc(len), *back = malloc(len);
	unsigned int i;
	uint64_t d;
	int ret;

	NEED_DEVICES(1);
	if (ortmem_spill_open(&so, &spill))
		SKIP("no spill file: %s", reason());
	ASSERT_EQ(0, ortmem_device_open(0, &o, &dev));
	ASSERT_EQ(0, ortmem_device_alloc(dev, len, 0, &d));
	fill(src, len, 11);
	for (i = 0; i < 24; i++) {
		ext[i].len = piece;
		ext[i].offset = (uint64_t)(23 - i) * piece;	/* any order */
		ASSERT_EQ(0, ortmem_spill_write(spill, src + ext[i].offset, piece,
						&ext[i].extent));
	}
	if (variant->nth)
		ASSERT_EQ(0, ortmem_spill_inject_fault(spill, variant->nth, variant->fault));
	if (variant->driver_fault) {
		NEED_FAKE();
		setenv("FAKECUDA_FAULTS", variant->driver_fault, 1);
	}
	ret = ortmem_device_stream_in(dev, spill, ext, 24, d);
	if (variant->driver_fault) {
		ASSERT_EQ(-ENOMEM, ret);
		ASSERT_TRUE(has(reason(), "cuMemcpyHtoDAsync"));
		ASSERT_EQ(-ENOMEM, ortmem_last_error()->code);
		setenv("FAKECUDA_FAULTS", "", 1);
		ASSERT_EQ(0, ortmem_device_stream_in(dev, spill, ext, 24, d));
	} else if (variant->fault < 0) {
		unsigned int bad = 99;
		const char *at = strstr(reason(), "streaming extent ");

		ASSERT_EQ(-EIO, ret);
		ASSERT_TRUE(at != NULL);
		ASSERT_EQ(1, sscanf(at, "streaming extent %u", &bad));
		ASSERT_LT(bad, 24);
		/* The extents before the failed one arrived (a group is read
		 * as one batch; its good reads still go to the GPU). */
		ASSERT_EQ(0, ortmem_device_copy_from(dev, back, d, len, NULL));
		for (i = 0; i < bad; i++)
			ASSERT_EQ(0, memcmp(src + ext[i].offset, back + ext[i].offset, piece));
		ASSERT_EQ(0, ortmem_spill_inject_fault(spill, 0, 0));
		/* The extents are kept: stream again. */
		ASSERT_EQ(0, ortmem_device_stream_in(dev, spill, ext, 24, d));
	} else {
		ASSERT_EQ(0, ret);
	}
	ASSERT_EQ(0, ortmem_device_copy_from(dev, back, d, len, NULL));
	ASSERT_EQ(0, memcmp(src, back, len));
	ASSERT_EQ(0, ortmem_device_stats(dev, &st));
	ASSERT_EQ(len, st.streamed_bytes);
	/* An extent larger than the bounce buffers is refused up front. */
	ext[0].len = 300 << 10;
	ASSERT_EQ(-EINVAL, ortmem_device_stream_in(dev, spill, ext, 1, d));
	ASSERT_EQ(0, ortmem_device_free(dev, d));
	ortmem_device_close(dev);
	ortmem_spill_close(spill);
	free(src);
	free(back);
}

TEST_HARNESS_MAIN
