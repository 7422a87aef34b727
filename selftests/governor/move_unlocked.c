// SPDX-License-Identifier: MIT
/*
 * A move's copy runs without the governor's lock: while one thread's
 * demotion or promotion sits in a backend's copy, other threads' governor
 * calls on other handles (alloc, pin and unpin, stats, release) finish.
 * The host tier's backend here holds its copy (write on the way down, read
 * on the way up) until the main thread has made those calls; with the
 * lock held across the copy they would wait for it, the copy's gate would
 * time out (GATE_WAIT_S, a deadlock check, not a timing) and the test
 * fails.  The same holds for the free of a move's source, and for the
 * hooks of a backend that demotes and promotes in place (the host tier's
 * disk write and read back).  Also: a copy failing half way leaves the slot, its bytes and
 * every budget as they were, and the hooks of a backend that does not say
 * ORTMEM_BACKEND_CONCURRENT never overlap, and calls on the handle being
 * moved are refused as busy, not as stale.
 */
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "../harness.h"
#include "testbackend.h"

#define KIB 1024ull
#define GATE_WAIT_S 30

enum gate_hook { GATE_NONE, GATE_WRITE, GATE_READ, GATE_FREE, GATE_DEMOTE,
		 GATE_PROMOTE };

/* The test backend (alloc + write + read, no CPU pointer) with a gate. */
struct gated {
	struct tb tb;		/* first: tb_caps() takes the ctx as a tb */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum gate_hook gate;	/* the hook that waits at the gate */
	bool entered;		/* a copy is waiting at the gate */
	bool open;
	bool timed_out;
	int fail_read;		/* read returns this when non-zero */
	_Atomic int in_hook, overlaps;
	int demotes, promotes;	/* in-place hook calls */
};

/* Wait (bounded) until @flag is true; false when the wait timed out. */
static bool wait_flag(struct gated *g, bool *flag)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += GATE_WAIT_S;
	pthread_mutex_lock(&g->lock);
	while (!*flag && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&g->cond, &g->lock, &dl);
	ret = *flag;
	pthread_mutex_unlock(&g->lock);
	return ret;
}

static void set_flag(struct gated *g, bool *flag)
{
	pthread_mutex_lock(&g->lock);
	*flag = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

/* The copy waits here until the other thread opens the gate. */
static int gate_pass(struct gated *g, enum gate_hook hook)
{
	if (g->gate != hook)
		return 0;
	g->gate = GATE_NONE;
	set_flag(g, &g->entered);
	if (wait_flag(g, &g->open))
		return 0;
	g->timed_out = true;
	return -ETIMEDOUT;
}

/* Count hooks that start while another runs; each stays a little, so
 * that hooks called at once would overlap on any machine. */
static void hook_enter(struct gated *g)
{
	if (atomic_fetch_add(&g->in_hook, 1))
		atomic_fetch_add(&g->overlaps, 1);
	usleep(50);
}

static void hook_exit(struct gated *g)
{
	atomic_fetch_sub(&g->in_hook, 1);
}

static int gd_alloc(void *ctx, uint64_t size, uint64_t *bhp)
{
	int ret;

	hook_enter(ctx);
	ret = tb_alloc(&((struct gated *)ctx)->tb, size, bhp);
	hook_exit(ctx);
	return ret;
}

static int gd_free(void *ctx, uint64_t bh, uint64_t size, uint64_t *freedp)
{
	struct gated *g = ctx;
	int ret;

	hook_enter(g);
	ret = gate_pass(g, GATE_FREE);
	if (!ret)
		ret = tb_free(&g->tb, bh, size, freedp);
	hook_exit(g);
	return ret;
}

/* In place: the bytes stay where they are; only the calls are counted. */
static int gd_demote(void *ctx, uint64_t bh, uint64_t size)
{
	struct gated *g = ctx;
	int ret;

	(void)bh;
	(void)size;
	hook_enter(g);
	ret = gate_pass(g, GATE_DEMOTE);
	g->demotes += !ret;
	hook_exit(g);
	return ret;
}

static int gd_promote(void *ctx, uint64_t bh, uint64_t size)
{
	struct gated *g = ctx;
	int ret;

	(void)bh;
	(void)size;
	hook_enter(g);
	ret = gate_pass(g, GATE_PROMOTE);
	g->promotes += !ret;
	hook_exit(g);
	return ret;
}

static int gd_write(void *ctx, uint64_t bh, const void *src, uint64_t len)
{
	struct gated *g = ctx;
	int ret;

	hook_enter(g);
	ret = gate_pass(g, GATE_WRITE);
	if (!ret)
		ret = tb_write(&g->tb, bh, src, len);
	hook_exit(g);
	return ret;
}

static int gd_read(void *ctx, uint64_t bh, void *dst, uint64_t len)
{
	struct gated *g = ctx;
	int ret;

	hook_enter(g);
	ret = gate_pass(g, GATE_READ);
	if (!ret)
		ret = g->fail_read ? g->fail_read : tb_read(&g->tb, bh, dst, len);
	hook_exit(g);
	return ret;
}

FIXTURE(mu) {
	struct ortmem_gov *gov;
	struct gated host;
};

static struct ortmem_backend_ops gated_ops(struct gated *g)
{
	struct ortmem_backend_ops ops = tb_ops(&g->tb);

	ops.name = "gated";
	ops.alloc = gd_alloc;
	ops.free = gd_free;
	ops.write = gd_write;
	ops.read = gd_read;
	return ops;
}

FIXTURE_SETUP(mu)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_DEVICE] = 64 * KIB, [ORTMEM_TIER_HOST] = 64 * KIB });
	struct ortmem_backend_ops ops;

	memset(&self->host, 0, sizeof(self->host));
	tb_init(&self->host.tb);
	ops = gated_ops(&self->host);
	pthread_mutex_init(&self->host.lock, NULL);
	pthread_cond_init(&self->host.cond, NULL);
	ASSERT_EQ(0, ortmem_gov_open(&o, &self->gov));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_DEVICE, ortmem_backend_heap(), NULL));
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &self->host));
}

FIXTURE_TEARDOWN(mu)
{
	ortmem_gov_close(self->gov);
	EXPECT_EQ(0, self->host.tb.live);
	EXPECT_EQ(0, atomic_load(&self->host.overlaps));
	tb_fini(&self->host.tb);
	pthread_cond_destroy(&self->host.cond);
	pthread_mutex_destroy(&self->host.lock);
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

/* A device allocation holding @want. */
static int put(struct ortmem_gov *gov, const unsigned char *want, size_t n,
	       uint32_t flags, struct ortmem_handle *hp)
{
	void *p;
	int ret;

	ret = ortmem_gov_alloc(gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_KV_CACHE, n,
			       flags, hp);
	if (ret)
		return ret;
	ret = ortmem_gov_pin(gov, *hp, 0, &p);
	if (ret)
		return ret;
	memcpy(p, want, n);
	return ortmem_gov_unpin(gov, *hp);
}

static int tier_of(struct ortmem_gov *gov, struct ortmem_handle h)
{
	struct ortmem_alloc_info info;

	if (ortmem_gov_query(gov, h, &info))
		return -1;
	return info.tier;
}

/* The mover: demote, pin (which promotes) or allocate under pressure. */
enum mover_op { MOVE_DEMOTE, MOVE_PIN, MOVE_PRESSURE };

struct mover {
	struct ortmem_gov *gov;
	enum mover_op op;
	struct ortmem_handle h;		/* MOVE_PRESSURE: the new allocation */
	uint64_t size;			/* MOVE_PRESSURE */
	int ret;
};

static void *mover_run(void *arg)
{
	struct mover *m = arg;
	void *p;

	switch (m->op) {
	case MOVE_DEMOTE:
		m->ret = ortmem_gov_demote(m->gov, m->h);
		break;
	case MOVE_PIN:
		m->ret = ortmem_gov_pin(m->gov, m->h, 0, &p);
		if (!m->ret)
			m->ret = ortmem_gov_unpin(m->gov, m->h);
		break;
	case MOVE_PRESSURE:
		m->ret = ortmem_gov_alloc(m->gov, ORTMEM_TIER_DEVICE,
					  ORTMEM_ROLE_KV_CACHE, m->size,
					  ORTMEM_ALLOC_MOVABLE, &m->h);
		break;
	}
	return NULL;
}

/*
 * Run @m on a thread; once its copy waits at the gate, make governor calls
 * on other handles, then open the gate.  The calls must all finish while
 * the copy waits: with the lock held across it they could not.
 */
static void while_copying(struct __test_metadata *_metadata,
			  FIXTURE_DATA(mu) *self, struct mover *m)
{
	ORTMEM_OPTS(ortmem_gov_stats, st);
	struct ortmem_handle other;
	pthread_t th;
	void *p;

	m->gov = self->gov;
	ASSERT_EQ(0, pthread_create(&th, NULL, mover_run, m));
	ASSERT_TRUE(wait_flag(&self->host, &self->host.entered));
	EXPECT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_DEVICE, ORTMEM_ROLE_WORKSPACE, 1024, 0, &other));
	EXPECT_EQ(0, ortmem_gov_pin(self->gov, other, 0, &p));
	EXPECT_EQ(0, ortmem_gov_unpin(self->gov, other));
	EXPECT_EQ(0, ortmem_gov_stats(self->gov, &st));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, other, 0));
	/* The tier a copy runs on keeps its backend until the copy is done. */
	EXPECT_EQ(-EBUSY, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, NULL, NULL));
	/* Nothing above waited for the copy. */
	EXPECT_FALSE(self->host.timed_out);
	set_flag(&self->host, &self->host.open);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_FALSE(self->host.timed_out);
}

static void expect_bytes(struct __test_metadata *_metadata,
			 struct ortmem_gov *gov, struct ortmem_handle h,
			 const unsigned char *want, size_t n)
{
	void *p;

	ASSERT_EQ(0, ortmem_gov_pin(gov, h, 0, &p));
	EXPECT_EQ(0, memcmp(p, want, n));
	EXPECT_EQ(0, ortmem_gov_unpin(gov, h));
}

TEST_F_TIMEOUT(mu, other_calls_finish_while_a_demotion_copies, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_DEMOTE };
	unsigned char want[8 * KIB];

	fill(want, sizeof(want), 1);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), 0, &m.h));
	self->host.gate = GATE_WRITE;
	while_copying(_metadata, self, &m);
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, m.h));
	expect_bytes(_metadata, self->gov, m.h, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
}

/*
 * While its demotion copies, the handle itself is busy, not stale: a
 * second demotion and a release are refused with -EBUSY (retry), a query
 * answers.  (A demotion racing a move, such as a prefetch's, was refused
 * as a stale handle whose slot had been "reused" though it had not.)
 */
TEST_F_TIMEOUT(mu, a_handle_being_moved_is_busy_not_stale, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_DEMOTE, .gov = self->gov };
	unsigned char want[8 * KIB];
	pthread_t th;

	fill(want, sizeof(want), 5);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), ORTMEM_ALLOC_MOVABLE, &m.h));
	self->host.gate = GATE_WRITE;
	ASSERT_EQ(0, pthread_create(&th, NULL, mover_run, &m));
	ASSERT_TRUE(wait_flag(&self->host, &self->host.entered));
	EXPECT_EQ(-EBUSY, ortmem_gov_demote(self->gov, m.h));
	EXPECT_NONNULL(strstr(ortmem_last_error_message(), "moving it between tiers"));
	EXPECT_EQ(-EBUSY, ortmem_gov_release(self->gov, m.h, 0));
	EXPECT_EQ(ORTMEM_TIER_DEVICE, tier_of(self->gov, m.h));
	set_flag(&self->host, &self->host.open);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, m.h));
	expect_bytes(_metadata, self->gov, m.h, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
}

TEST_F_TIMEOUT(mu, other_calls_finish_while_a_promotion_copies, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_PIN };
	unsigned char want[8 * KIB];

	fill(want, sizeof(want), 2);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), 0, &m.h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, m.h));
	self->host.gate = GATE_READ;
	while_copying(_metadata, self, &m);
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(ORTMEM_TIER_DEVICE, tier_of(self->gov, m.h));
	expect_bytes(_metadata, self->gov, m.h, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
}

TEST_F_TIMEOUT(mu, other_calls_finish_while_reclaim_demotes, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_PRESSURE, .size = 40 * KIB };
	unsigned char want[40 * KIB];
	struct ortmem_handle old;

	fill(want, sizeof(want), 3);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), ORTMEM_ALLOC_MOVABLE, &old));
	self->host.gate = GATE_WRITE;
	while_copying(_metadata, self, &m);
	ASSERT_EQ(0, m.ret);
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, old));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
	expect_bytes(_metadata, self->gov, old, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, old, 0));
}

static void expect_used(struct __test_metadata *_metadata,
			struct ortmem_gov *gov, uint64_t dev, uint64_t host)
{
	ORTMEM_OPTS(ortmem_gov_stats, st);

	ASSERT_EQ(0, ortmem_gov_stats(gov, &st));
	EXPECT_EQ(dev, st.tier[ORTMEM_TIER_DEVICE].used);
	EXPECT_EQ(host, st.tier[ORTMEM_TIER_HOST].used);
}

TEST_F(mu, a_demotion_whose_copy_fails_changes_nothing)
{
	unsigned char want[8 * KIB];
	struct ortmem_handle h;

	fill(want, sizeof(want), 4);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), 0, &h));
	expect_used(_metadata, self->gov, sizeof(want), 0);
	self->host.tb.fail_write_at = self->host.tb.writes + 1;
	EXPECT_EQ(-EIO, ortmem_gov_demote(self->gov, h));
	EXPECT_NE(NULL, strstr(ortmem_last_error()->reason, "write returned"));
	EXPECT_EQ(ORTMEM_TIER_DEVICE, tier_of(self->gov, h));
	expect_used(_metadata, self->gov, sizeof(want), 0);
	EXPECT_EQ(0, self->host.tb.live);	/* the new copy was freed */
	expect_bytes(_metadata, self->gov, h, want, sizeof(want));
	/* And the slot moves again once the backend works. */
	EXPECT_EQ(0, ortmem_gov_demote(self->gov, h));
	expect_used(_metadata, self->gov, 0, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
	expect_used(_metadata, self->gov, 0, 0);
}

TEST_F(mu, a_promotion_whose_copy_fails_changes_nothing)
{
	unsigned char want[8 * KIB];
	struct ortmem_handle h;
	void *p;

	fill(want, sizeof(want), 5);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), 0, &h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, h));
	expect_used(_metadata, self->gov, 0, sizeof(want));
	self->host.fail_read = -EIO;
	EXPECT_EQ(-EIO, ortmem_gov_pin(self->gov, h, 0, &p));
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, h));
	expect_used(_metadata, self->gov, 0, sizeof(want));
	EXPECT_EQ(1, self->host.tb.live);
	self->host.fail_read = 0;
	expect_bytes(_metadata, self->gov, h, want, sizeof(want));
	expect_used(_metadata, self->gov, sizeof(want), 0);
	EXPECT_EQ(0, ortmem_gov_release(self->gov, h, 0));
}

/* A promotion frees its source (on the gated host tier) unlocked too. */
TEST_F_TIMEOUT(mu, other_calls_finish_while_a_move_frees_its_source, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_PIN };
	unsigned char want[8 * KIB];

	fill(want, sizeof(want), 6);
	ASSERT_EQ(0, put(self->gov, want, sizeof(want), 0, &m.h));
	ASSERT_EQ(0, ortmem_gov_demote(self->gov, m.h));
	self->host.gate = GATE_FREE;
	while_copying(_metadata, self, &m);
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(ORTMEM_TIER_DEVICE, tier_of(self->gov, m.h));
	EXPECT_EQ(0, self->host.tb.live);	/* the source was freed */
	expect_used(_metadata, self->gov, sizeof(want), 0);
	expect_bytes(_metadata, self->gov, m.h, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
}

/*
 * A host-tier allocation whose backend demotes and promotes in place: both
 * hooks run without the governor's lock, and the budget follows them.
 */
TEST_F_TIMEOUT(mu, other_calls_finish_while_a_backend_demotes_in_place, 2 * GATE_WAIT_S)
{
	struct mover m = { .op = MOVE_DEMOTE };
	struct ortmem_backend_ops ops;
	unsigned char want[8 * KIB];
	void *p;

	self->host.tb.host_pointer = 1;
	ops = gated_ops(&self->host);
	ops.demote = gd_demote;
	ops.promote = gd_promote;
	ASSERT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &self->host));
	fill(want, sizeof(want), 7);
	ASSERT_EQ(0, ortmem_gov_alloc(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_KV_CACHE,
				      sizeof(want), 0, &m.h));
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, m.h, 0, &p));
	memcpy(p, want, sizeof(want));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, m.h));
	self->host.gate = GATE_DEMOTE;
	while_copying(_metadata, self, &m);
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(1, self->host.demotes);
	expect_used(_metadata, self->gov, 0, 0);	/* budget given back */
	m.op = MOVE_PIN;
	self->host.gate = GATE_PROMOTE;
	while_copying(_metadata, self, &m);
	EXPECT_EQ(0, m.ret);
	EXPECT_EQ(1, self->host.promotes);
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, m.h));
	expect_used(_metadata, self->gov, 0, sizeof(want));
	expect_bytes(_metadata, self->gov, m.h, want, sizeof(want));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, m.h, 0));
}

/* Threads demoting, promoting and allocating on the gated tier at once:
 * its hooks (not ORTMEM_BACKEND_CONCURRENT) must run one at a time. */
struct churn {
	struct ortmem_gov *gov;
	unsigned int seed;
	int errors;
};

static void *churn_run(void *arg)
{
	struct churn *c = arg;
	unsigned char want[2 * KIB];
	struct ortmem_handle h;
	void *p;
	int i;

	fill(want, sizeof(want), c->seed);
	if (put(c->gov, want, sizeof(want), 0, &h))
		return (void *)(uintptr_t)++c->errors;
	for (i = 0; i < 200; i++) {
		if (ortmem_gov_demote(c->gov, h) ||
		    ortmem_gov_pin(c->gov, h, 0, &p))
			c->errors++;
		else if (memcmp(p, want, sizeof(want)) ||
			 ortmem_gov_unpin(c->gov, h))
			c->errors++;
	}
	if (ortmem_gov_release(c->gov, h, 0))
		c->errors++;
	return NULL;
}

TEST_F(mu, hooks_of_a_backend_that_is_not_concurrent_never_overlap)
{
	struct churn c[4];
	pthread_t th[4];
	int i;

	for (i = 0; i < 4; i++) {
		c[i] = (struct churn){ .gov = self->gov, .seed = 10u + i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_run, &c[i]));
	}
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_EQ(0, c[i].errors);
	}
	EXPECT_EQ(0, atomic_load(&self->host.overlaps));
	expect_used(_metadata, self->gov, 0, 0);
}

/* A weights file of @n bytes of @want under $ORTMEM_SPILL_DIR or /var/tmp
 * (O_DIRECT needs a real file system), its checksum list beside it. */
static int weights_file(char *path, size_t len, const unsigned char *want,
			size_t n, struct ortmem_wfile **wfp)
{
	const char *dir = getenv("ORTMEM_SPILL_DIR");
	int fd, ret;

	snprintf(path, len, "%s/ortmem-mu-XXXXXX", dir ? dir : "/var/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	ret = write(fd, want, n) == (ssize_t)n ? 0 : -EIO;
	close(fd);
	if (!ret)
		ret = ortmem_wfile_checksum(path, NULL, 64 * KIB);
	return ret ? ret : ortmem_wfile_open(path, NULL, wfp);
}

static void unlink_weights(const char *path)
{
	char csum[300];

	snprintf(csum, sizeof(csum), "%s.csum", path);
	unlink(csum);
	unlink(path);
}

/*
 * A prefetch that finds the home tier full takes over the buffer of a
 * file-backed allocation there: until its file read has filled it, the
 * buffer is in no slot, yet the tier's backend must stay (its write hook
 * is at work).  Re-registering the very backend is refused as any change.
 */
TEST_F_TIMEOUT(mu, a_prefetch_into_a_recycled_buffer_keeps_the_backend, 2 * GATE_WAIT_S)
{
	struct ortmem_backend_ops ops = gated_ops(&self->host);
	static unsigned char want[128 * KIB];
	struct ortmem_handle a, b;
	struct ortmem_wfile *wf = NULL;
	char path[256];
	void *p;
	int busy, i;

	fill(want, sizeof(want), 7);
	ASSERT_EQ(0, weights_file(path, sizeof(path), want, sizeof(want), &wf));
	ASSERT_EQ(0, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_WEIGHTS,
					   wf, 0, 64 * KIB, 0, &a));
	ASSERT_EQ(0, ortmem_gov_alloc_file(self->gov, ORTMEM_TIER_HOST, ORTMEM_ROLE_WEIGHTS,
					   wf, 64 * KIB, 64 * KIB, 0, &b));
	/* a fills the host tier; b's prefetch recycles its buffer. */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, a, 0, &p));
	ASSERT_EQ(0, ortmem_gov_unpin(self->gov, a));
	self->host.gate = GATE_WRITE;
	ASSERT_EQ(1, ortmem_gov_prefetch(self->gov, &b, 1, 0));
	ASSERT_TRUE(wait_flag(&self->host, &self->host.entered));
	EXPECT_EQ(ORTMEM_TIER_DISK, tier_of(self->gov, a));
	busy = ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &self->host);
	set_flag(&self->host, &self->host.open);
	EXPECT_EQ(-EBUSY, busy);
	EXPECT_NE(NULL, strstr(ortmem_last_error()->reason, "prefetch"));
	/* The pin waits for the prefetch; b is in a's old buffer, the only
	 * one (this backend has no CPU pointer to compare through). */
	ASSERT_EQ(0, ortmem_gov_pin(self->gov, b, 0, &p));
	EXPECT_EQ(0, ortmem_gov_unpin(self->gov, b));
	EXPECT_FALSE(self->host.timed_out);
	EXPECT_EQ(ORTMEM_TIER_HOST, tier_of(self->gov, b));
	ASSERT_EQ(1, self->host.tb.live);
	for (i = 1; i < TB_MAX && !self->host.tb.buf[i]; i++)
		;
	ASSERT_LT(i, TB_MAX);
	EXPECT_EQ(0, memcmp(self->host.tb.buf[i], want + 64 * KIB, 64 * KIB));
	/* Done: the tier's backend may change again once nothing is there. */
	EXPECT_EQ(0, ortmem_gov_release(self->gov, b, 0));
	EXPECT_EQ(0, ortmem_gov_release(self->gov, a, 0));
	EXPECT_EQ(0, ortmem_gov_set_backend(self->gov, ORTMEM_TIER_HOST, &ops, &self->host));
	ortmem_wfile_close(wf);
	unlink_weights(path);
}

TEST(unknown_backend_flags_are_refused)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 4096 });
	ORTMEM_OPTS(ortmem_backend_ops, ops, .name = "future", .alloc = tb_alloc,
		    .free = tb_free, .flags = 1ull << 40);
	struct ortmem_gov *gov;

	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &ops, NULL));
	EXPECT_NE(NULL, strstr(ortmem_last_error()->reason, "unknown flags"));
	ops.flags = ORTMEM_BACKEND_CONCURRENT;
	EXPECT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &ops, NULL));
	ortmem_gov_close(gov);
}

/* The struct's size as a caller built it: an older one without flags (the
 * bytes past its sz are not the library's to read), one whose sz cuts a
 * field (a half copied hook or flags), one larger than the library's. */
TEST(backend_ops_of_other_sizes)
{
	ORTMEM_OPTS(ortmem_gov_opts, o, .limit = { [ORTMEM_TIER_HOST] = 4096 });
	struct {
		struct ortmem_backend_ops ops;
		uint64_t future;
	} big;
	struct ortmem_gov *gov;

	memset(&big, 0, sizeof(big));
	big.ops.name = "sized";
	big.ops.alloc = tb_alloc;
	big.ops.free = tb_free;
	big.ops.flags = ~0ull;	/* past an old struct's end: never read */
	ASSERT_EQ(0, ortmem_gov_open(&o, &gov));
	big.ops.sz = offsetof(struct ortmem_backend_ops, flags);
	EXPECT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &big.ops, NULL));
	big.ops.sz = offsetof(struct ortmem_backend_ops, flags) + 4;
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &big.ops, NULL));
	EXPECT_NE(NULL, strstr(ortmem_last_error()->reason, "ortmem_backend_ops"));
	big.ops.flags = 0;
	big.ops.sz = offsetof(struct ortmem_backend_ops, staging_free) + 4;
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &big.ops, NULL));
	big.ops.sz = sizeof(big);
	EXPECT_EQ(0, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &big.ops, NULL));
	big.future = 1;
	EXPECT_EQ(-EINVAL, ortmem_gov_set_backend(gov, ORTMEM_TIER_HOST, &big.ops, NULL));
	EXPECT_NE(NULL, strstr(ortmem_last_error()->reason, "does not know"));
	ortmem_gov_close(gov);
}

TEST_HARNESS_MAIN
