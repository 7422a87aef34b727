/* SPDX-License-Identifier: MIT */
/*
 * lib/gov/gov_internal.h - the governor's interface inside lib/gov/; never
 * installed.  The backends (backend_*.c) are plugins: they include only the
 * public <ortmem/governor.h>.
 *
 * The files, lowest floor first (each calls only those above it here):
 *
 *   gov_publish.c   the published statistics file (seqlock, no syscall)
 *   gov_tier.c      tier accounting: charge, uncharge, peak, checks
 *   gov_tctx.c      the per-thread context: TLS, slot cache, credit blocks
 *   gov_credit.c    per-thread budget credit; reports "no fast fit"
 *   gov_binding.c   the handle table: slots, generations, lookup
 *   gov_registry.c  registered authorities and provider contexts
 *   gov_backend.c   backend registration, capabilities, moving bytes
 *   gov_deferred.c  deferred release and quarantine
 *   gov_move.c      demotion to a lower tier, the move back home
 *   gov_reclaim.c   the full charge: drain, poll, callbacks, demotion;
 *                   promotion on pin
 *   gov_handle.c    release, pin, unpin, query, demote of one handle
 *   gov_claim.c     claims (authority, provider context), release_as,
 *                   what holds a context, validated views
 *   gov_stats.c     statistics
 *   gov_mech.c      the registry of mechanisms: snapshots, ordered drain
 *   gov.c           open, close, limits, reserve, alloc (the public top)
 *   gov_prefix.c    shared prefixes over committed ranges (above the
 *                   public top: a prefix is a lease and sharers' leases)
 *   backend_heap.c, backend_host.c, backend_spill.c: the built-in backends
 *   share_memfd.c   the built-in shared mapping of prefixes (a plugin too)
 *
 * Locking (outermost first): ortmem__thr_lock (global, per-thread blocks)
 * -> gov->lock (slow paths, queues) -> gov->thr_lock (thread list,
 * credit drains) -> gov->slot_lock (global free-slot stack).  A tier's
 * hook_lock (one backend hook at a time, for backends that are not
 * ORTMEM_BACKEND_CONCURRENT) is taken after any of them and nothing is
 * taken under it.  The copy of a move runs without gov->lock.
 * The fast paths take none of them.
 */
#ifndef ORTMEM_LIB_GOV_INTERNAL_H
#define ORTMEM_LIB_GOV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <ortmem/binding.h>
#include <ortmem/governor.h>

#include "internal.h"

#define GOV_CACHELINE 64
#define GOV_DEFAULT_HANDLES 65536u
/* Sizes beyond this cannot be summed without overflow checks. */
#define GOV_MAX_SIZE (1ull << 62)

/* ---- slot word: generation(32) | pins(24) | state(8) ---- */
enum gov_state {
	SLOT_FREE = 0,
	SLOT_LIVE = 1,		/* resident on its home tier */
	SLOT_DEMOTED = 2,	/* live, on a lower tier */
	SLOT_MOVING = 3,	/* owned by a slow path (move, alloc, free) */
	SLOT_RELEASING = 4,	/* deferred release queued */
	SLOT_QUARANTINED = 5,
	SLOT_RETIRED = 6,	/* generation ran out; never reused */
};
#define SLOT_PENDING 0x80u	/* release when the last pin goes */
#define SLOT_STATE_MASK 0x7fu
#define SLOT_PINS_SHIFT 8
#define SLOT_PINS_MAX ((1u << 24) - 1)
/* A handle carries 24 bits of generation (below). */
#define SLOT_GEN_MAX ((1u << 24) - 1)

static inline uint32_t slot_gen(uint64_t w) { return (uint32_t)(w >> 32); }
static inline uint32_t slot_pins(uint64_t w)
{
	return (uint32_t)(w >> SLOT_PINS_SHIFT) & SLOT_PINS_MAX;
}
static inline unsigned int slot_state(uint64_t w) { return w & SLOT_STATE_MASK; }
/* A binding that holds bytes, on its home tier or a lower one. */
static inline bool slot_live_or_demoted(uint64_t w)
{
	return slot_state(w) == SLOT_LIVE || slot_state(w) == SLOT_DEMOTED;
}
static inline uint64_t slot_word(uint32_t gen, uint32_t pins, unsigned int st)
{
	return (uint64_t)gen << 32 | (uint64_t)pins << SLOT_PINS_SHIFT | st;
}

/*
 * ---- handle id: generation(24) | tag(16) | index(24) ----
 * The tag names the governor among those open at once (never two live
 * governors share one); the generation tells the governors that held the
 * same tag over the process's life apart, because a governor's slots start
 * above every generation the tag's earlier governors issued (gov_binding.c).
 */
#define HANDLE_IDX_BITS 24
#define HANDLE_IDX_MASK ((1u << HANDLE_IDX_BITS) - 1)
#define HANDLE_TAG_SHIFT HANDLE_IDX_BITS
#define HANDLE_GEN_SHIFT 40

static inline uint64_t handle_make(uint32_t gen, uint16_t tag, uint32_t idx)
{
	return (uint64_t)gen << HANDLE_GEN_SHIFT |
	       (uint64_t)tag << HANDLE_TAG_SHIFT | idx;
}
static inline uint32_t handle_idx(uint64_t id) { return id & HANDLE_IDX_MASK; }
static inline uint16_t handle_tag(uint64_t id)
{
	return (uint16_t)(id >> HANDLE_TAG_SHIFT);
}
static inline uint32_t handle_gen(uint64_t id)
{
	return (uint32_t)(id >> HANDLE_GEN_SHIFT);
}
/* Governor tags a handle carries: 1..65535 (0 is never issued). */
#define GOV_TAGS 65535u
/* A tag is given to a new governor only while at least this many
 * generations of it are left, so its slots do not retire early. */
#define GOV_TAG_GENS_LEFT (1u << 23)
/* A handle's index names every slot of the largest table. */
#define GOV_MAX_HANDLES (1u << HANDLE_IDX_BITS)

#define SLOT_KIND_LEASE 0u
#define SLOT_KIND_ALLOC 1u

/*
 * A page-aligned bounce buffer (so the file's O_DIRECT reads land in it
 * without the lane's own bounce copy), kept between promotions: a layer
 * streamed per step must not cost a fresh mapping, its page faults and
 * its zeroing (nor, for the device tier, pinning it again) each time.
 * It comes from the tier backend's staging_alloc where it has one: the
 * device tier's is registered with the GPU, and a copy from pageable
 * memory goes through the driver's own staging at a fraction of the bus's
 * rate.  It is freed by the hook that made it, whatever the tier's backend
 * is by then.
 */
struct gov_bounce {
	uint64_t size;
	uint8_t *data;
	void *(*made_by)(void *ctx, uint64_t size);	/* NULL: aligned_alloc */
	void (*release)(void *ctx, void *p, uint64_t size);
	void *ctx;
};

struct gov_slot {
	_Atomic uint64_t word;
	/* Fixed while live (written before the word publishes the slot). */
	_Atomic uint64_t size;
	_Atomic uint32_t role;
	_Atomic uint8_t kind;
	_Atomic uint8_t movable;
	_Atomic uint8_t home;
	/* Changed only by the slot's owner in state MOVING. */
	_Atomic uint8_t tier;
	_Atomic uint8_t in_place;	/* demoted by the backend's demote hook */
	_Atomic uint64_t bh;
	_Atomic uint64_t last_use;
	/* File-backed allocations: their source (struct gov_fsrc *), else 0;
	 * fixed while live.  Such a slot not on its home tier holds no
	 * bytes and no charge: tier says disk, the bytes are in the file. */
	_Atomic uint64_t src;
	/* Prefetch state (enum gov_pf_state, lib/gov_prefetch.c). */
	_Atomic uint8_t pf;
	/* Claims (gov_claim.c), 0 until claimed; reset by ortmem__slot_get():
	 * the authority that may release it, the provider context it holds. */
	_Atomic uint32_t auth;
	_Atomic uint32_t pctx;
	/* A sharer of a prefix: its struct gov_sharer * (gov_prefix.c), 0 if
	 * none; written and freed under gov->lock. */
	_Atomic uint64_t share;
	/* A staging buffer (struct gov_bounce *, gov_backend.c) that an
	 * announced read of this file-backed slot is filling, for a home
	 * tier without host pointers; 0 if none.  Set and taken by the
	 * slot's owner in state MOVING (the prefetch, then its worker). */
	_Atomic uint64_t ahead;
};

enum gov_pf_state {
	PF_NONE = 0,
	PF_INFLIGHT = 1,	/* a prefetch owns the slot (state MOVING) */
	PF_READY = 2,		/* brought in by a prefetch, not pinned since */
	PF_FAILED = 3,		/* the prefetch failed; the next pin says why */
};

struct gov_tier {
	_Atomic uint64_t used;
	_Atomic uint64_t usable;	/* limit less driver reserve */
	_Atomic uint64_t peak;
	_Atomic uint64_t batch;		/* credit a thread takes at once */
	_Atomic uint32_t exact;		/* charges about to refuse */
	_Atomic uint64_t limit;
	_Atomic uint64_t demoted;
	_Atomic uint64_t promoted;
	_Atomic uint64_t reclaim_calls;
	_Atomic uint64_t refusals;
	_Atomic uint64_t quarantined;
	_Atomic uint64_t deferred;
	/* Moves (gov_move.c) copying from or to the tier now, which run
	 * without gov->lock: the backend cannot change under them.  Changed
	 * under gov->lock. */
	_Atomic uint32_t moving;
	/* Backend: set before use, read-only after (ortmem_gov_set_backend). */
	struct ortmem_backend_ops ops;
	void *ctx;
	bool has_backend;
	bool concurrent;	/* ops.flags has ORTMEM_BACKEND_CONCURRENT */
	char name[32];
	/* Held around each hook of a backend that is not concurrent:
	 * innermost, after gov->lock where that is held. */
	pthread_mutex_t hook_lock;
} __attribute__((aligned(GOV_CACHELINE)));

/* Serialize a hook call of @t unless its backend is concurrent; pass what
 * this returned to ortmem__hook_unlock(). */
static inline bool ortmem__hook_lock(struct gov_tier *t)
{
	if (t->concurrent)
		return false;
	pthread_mutex_lock(&t->hook_lock);
	return true;
}

static inline void ortmem__hook_unlock(struct gov_tier *t, bool locked)
{
	if (locked)
		pthread_mutex_unlock(&t->hook_lock);
}

#define GOV_MAG 64
#define GOV_MAG_BATCH 32
/* The most credit one thread takes from a tier at once. */
#define GOV_CREDIT_BATCH_MAX (4ull << 20)

/* A thread's credit word while its owner is charging the tier for it. */
#define GOV_CREDIT_REFILLING (1ull << 63)

/*
 * Per-thread, per-governor state: a cache of free slots and, per tier, a
 * credit: bytes charged to the tier that no lease holds yet, which the
 * thread's reserves take from and its releases give back to without
 * touching the tier's shared counter (lib/gov/gov_credit.c).
 */
struct gov_thread {
	/* Owner: takes and gives with CAS; drainers take it all. */
	_Atomic uint64_t credit[ORTMEM_TIER_COUNT];
	/* Bytes the thread released: freed - taken more credit, which the
	 * owner or a drainer claims by advancing taken with a CAS. */
	_Atomic uint64_t freed[ORTMEM_TIER_COUNT];	/* owner writes */
	_Atomic uint64_t taken[ORTMEM_TIER_COUNT];
	struct ortmem_gov *gov;		/* NULL once the governor closed */
	struct gov_thread *gov_next;	/* gov->threads list */
	struct gov_thread *thr_next;	/* this thread's list */
	uint32_t nmag;
	uint32_t mag[GOV_MAG];
} __attribute__((aligned(GOV_CACHELINE)));

struct gov_reclaim {
	int id;
	int tier;
	int priority;
	ortmem_reclaim_fn fn;
	void *arg;
	char name[32];
	struct gov_reclaim *next;
};

struct gov_deferred {
	uint32_t idx;
	uint64_t id;			/* the handle released */
	int (*ready)(void *arg);	/* NULL: wait for backend busy() */
	void *arg;
	struct gov_deferred *next;
};

struct gov_quarantine {
	struct ortmem_quarantine_entry e;
	int32_t slot;			/* -1: the slot lives on */
	uint64_t bh;
	int (*ready)(void *arg);
	void *arg;
	struct gov_quarantine *next;
};

/* One registered authority or provider context (gov_registry.c). */
struct gov_reg_entry {
	uint32_t id;		/* gen << 8 | index + 1; 0: free */
	char name[32];
	_Atomic uint64_t views;	/* contexts: owned views holding it */
};

struct gov_prefix;

/* A binding that maps a shared prefix (gov_prefix.c): fixed from its
 * bind to its unbind; freed under gov->lock once its slot is released. */
struct gov_sharer {
	struct gov_prefix *p;
	uint64_t addr;		/* the start of its range */
	uint64_t total;		/* prefix + private tail */
	uint64_t plen;		/* the prefix's bytes at the start */
	bool writable;		/* the prefix is writable through it */
	bool at;		/* in a range the caller reserved (map_at) */
};

/* Under gov->lock, but for the atomics. */
struct gov_registry {
	struct gov_reg_entry auth[64];
	struct gov_reg_entry ctx[64];
	uint32_t next_gen;
	uint32_t prefix_auth;	/* the prefixes' authority, 0 until needed */
	/* enum ortmem_mech_lifecycle past ACTIVE (DRAINING, RETIRED). */
	_Atomic uint8_t mech[ORTMEM_TIER_COUNT];
	_Atomic uint64_t shared[ORTMEM_TIER_COUNT];
	uint64_t prefixes[ORTMEM_TIER_COUNT], sharers[ORTMEM_TIER_COUNT];
	struct gov_prefix *prefix_list;
	/* Destroyed prefixes whose detach hook has yet to run: it runs
	 * outside gov->lock (prefix_reap), as it may call the governor. */
	struct gov_prefix *prefix_dead;
	/* Set by the first prefix (gov_prefix.c sits above gov_mech.c);
	 * prefix_reap is called without gov->lock. */
	void (*prefix_drain)(struct ortmem_gov *gov, int tier);
	void (*prefix_reap)(struct ortmem_gov *gov);
};

/* Prefetch counters: gov_prefetch.c counts, gov_publish.c copies. */
struct gov_pf_counts {
	_Atomic uint64_t issued, bytes, hits, waits, wait_ns, misses, refused,
		failed, inflight;
};

#define GOV_BOUNCE_SPARES 2

struct ortmem_gov {
	struct gov_tier tiers[ORTMEM_TIER_COUNT];
	uint64_t serial;
	uint16_t tag;
	uint32_t gen_base;	/* the generation every slot starts at */
	uint32_t nslots;
	struct gov_slot *slots;
	_Atomic uint64_t tick;
	_Atomic uint64_t retired;
	_Atomic uint64_t driver_reserve;

	pthread_mutex_t lock;
	struct gov_reclaim *reclaims;
	int next_reclaim_id;
	struct gov_deferred *deferred, **deferred_tail;
	struct gov_quarantine *quarantine;

	pthread_mutex_t thr_lock;
	struct gov_thread *threads;

	pthread_mutex_t slot_lock;
	uint32_t nfree;
	uint32_t *free_idx;

	struct gov_pub *pub;		/* NULL: not published */
	/* Asynchronous promotion, made at the first prefetch (gov->lock). */
	struct gov_prefetch *_Atomic pf;
	/* Its counters, here so that gov_publish.c reads them without
	 * calling up into gov_prefetch.c, and before any prefetch. */
	struct gov_pf_counts pfc;
	/* The spare bounce buffers of file-backed promotions to a tier
	 * without host pointers (gov_file.c): two, so that a prefetch and a
	 * pin promoting at once both find one; taken and given back by
	 * exchange. */
	struct gov_bounce *_Atomic bounce[GOV_BOUNCE_SPARES];
	struct gov_registry reg;
};

/*
 * The files' interfaces, lowest floor first; a file calls only the ones
 * above it in this list (Documentation/lib/layers.rst).
 */

/* gov_publish.c: the published statistics file. */
int ortmem__publish_open(struct ortmem_gov *gov, const char *run_dir,
			 const char *name);
/* Copy the counters to the file; lock-free, no system call. */
void ortmem__publish(struct ortmem_gov *gov);
void ortmem__publish_close(struct ortmem_gov *gov);

/* gov_tier.c: tier accounting. */
void ortmem__tier_update_usable(struct ortmem_gov *gov, int tier);
int ortmem__check_tier(int tier, uint64_t size);
/* Charge without noting the peak; *@nowp: the tier's bytes after it. */
bool ortmem__tier_charge(struct ortmem_gov *gov, int tier, uint64_t size,
			 uint64_t *nowp);
bool ortmem__tier_try_charge(struct ortmem_gov *gov, int tier, uint64_t size);
void ortmem__tier_uncharge(struct ortmem_gov *gov, int tier, uint64_t size);
void ortmem__note_peak(struct ortmem_gov *gov, int tier, uint64_t now);

/* gov_tctx.c: the per-thread context. */
struct gov_thread *ortmem__gov_thread(struct ortmem_gov *gov);
/* Claim the bytes @gt released and nobody claimed yet. */
uint64_t ortmem__tctx_claim_freed(struct gov_thread *gt, int tier);
/* Take all of @gt's credit back to the tiers; under gov->thr_lock. */
void ortmem__tctx_return_credit_locked(struct ortmem_gov *gov,
				       struct gov_thread *gt);
void ortmem__tctx_fini(struct ortmem_gov *gov);

/* gov_credit.c: per-thread budget credit. */
bool ortmem__credit_refill(struct ortmem_gov *gov, struct gov_thread *gt,
			   int tier, uint64_t size);
void ortmem__credit(struct ortmem_gov *gov, int tier, uint64_t size);
void ortmem__credit_drain(struct ortmem_gov *gov);

/*
 * Take @size bytes of @tier from the thread's credit (the fast path).
 * False: no fast fit; the caller escalates with ortmem__gov_charge().
 */
static inline bool ortmem__credit_take(struct ortmem_gov *gov,
				       struct gov_thread *gt, int tier,
				       uint64_t size)
{
	struct gov_tier *t = &gov->tiers[tier];
	uint64_t c = atomic_load_explicit(&gt->credit[tier],
					  memory_order_relaxed);
	uint64_t now;

	if (__builtin_expect(c < size || !atomic_compare_exchange_strong_explicit(
			&gt->credit[tier], &c, c - size, memory_order_relaxed,
			memory_order_relaxed), 0))
		return ortmem__credit_refill(gov, gt, tier, size);
	/* Leased now, as far as this thread knows: others' credit counts. */
	now = atomic_load_explicit(&t->used, memory_order_relaxed);
	c = c - size + atomic_load_explicit(&gt->freed[tier], memory_order_relaxed) -
	    atomic_load_explicit(&gt->taken[tier], memory_order_relaxed);
	if (__builtin_expect(now > c && now - c > atomic_load_explicit(
				&t->peak, memory_order_relaxed), 0))
		ortmem__note_peak(gov, tier, now - c);
	return true;
}

/* gov_binding.c: the handle table, the process's governor tags. */
int ortmem__tag_take(struct ortmem_gov *gov);
void ortmem__tag_give(struct ortmem_gov *gov);
int ortmem__binding_init(struct ortmem_gov *gov, uint32_t n);
void ortmem__binding_fini(struct ortmem_gov *gov);
void ortmem__slot_put(struct ortmem_gov *gov, uint32_t idx, uint32_t gen);
int ortmem__slot_lookup(struct ortmem_gov *gov, struct ortmem_handle h,
			uint32_t *idxp, uint64_t *wordp);
/* The refusal of @what on @h whose slot holds @word: quarantined, busy
 * (another thread moves it), released, or stale. */
int ortmem__slot_refuse(struct ortmem_gov *gov, struct ortmem_handle h,
			uint64_t word, const char *what);
int ortmem__slot_get(struct ortmem_gov *gov, struct gov_thread *gt,
		     uint32_t *idxp);
/* Test hook: set the generation of a free slot. */
int ortmem__binding_set_gen(struct ortmem_gov *gov, uint32_t idx,
			    uint32_t gen);

/* gov_registry.c: authorities and provider contexts (gov->lock held). */
#define GOV_REG_AUTH 0
#define GOV_REG_CTX 1
int ortmem__reg_add(struct ortmem_gov *gov, int kind, const char *name,
		    uint32_t *idp);
/* The entry of @id, or NULL when it names none registered now. */
struct gov_reg_entry *ortmem__reg_find(struct ortmem_gov *gov, int kind,
				       uint32_t id);
/* Its name for a message: "'name' (id N)", or "an unregistered ...". */
const char *ortmem__reg_name(struct ortmem_gov *gov, int kind, uint32_t id,
			     char *buf, size_t len);
/* Refuse a release of @h by the application when an authority claimed it. */
int ortmem__auth_refuse(struct ortmem_gov *gov, struct ortmem_handle h,
			uint32_t auth);

/* gov_backend.c: the backends' registration and hooks. */
int ortmem__backend_hook_failed(struct gov_tier *t, int tier, int ret,
				uint64_t size, const char *hook);
uint32_t ortmem__backend_caps(const struct gov_tier *t);
bool ortmem__backend_can_sink(const struct gov_tier *t);
int ortmem__backend_move(struct ortmem_gov *gov, int from, uint64_t bh,
			 int to, uint64_t size, uint64_t *newbhp);
int ortmem__backend_free(struct ortmem_gov *gov, int tier, uint64_t bh,
			 uint64_t size, uint64_t *freedp);
/* @t's busy hook (it has one) on @bh. */
int ortmem__backend_busy(struct gov_tier *t, uint64_t bh);

/* gov_deferred.c: deferred release and quarantine. */
int ortmem__backend_release_locked(struct ortmem_gov *gov, uint32_t idx,
				   uint64_t id);
void ortmem__quarantine_add(struct ortmem_gov *gov, int32_t slot, uint64_t id,
			    int tier, int owner, uint64_t size,
			    uint64_t residual, uint64_t bh, int code);
int ortmem__deferred_queue(struct ortmem_gov *gov, uint32_t idx, uint64_t id,
			   int (*ready)(void *arg), void *arg);
int ortmem__poll_locked(struct ortmem_gov *gov);
void ortmem__deferred_fini(struct ortmem_gov *gov);

/* gov_file.c: file-backed allocations (their source is a weights file). */
/* gov_backend.c: staging buffers of promotions to a tier without host
 * pointers, from its staging_alloc hook where it has one; two spares are
 * kept, freed at close or when a backend changes. */
struct gov_bounce *ortmem__staging_get(struct ortmem_gov *gov,
				       const struct gov_tier *t, uint64_t size);
void ortmem__staging_put(struct ortmem_gov *gov, struct gov_bounce *b);
void ortmem__staging_fini(struct ortmem_gov *gov);
/* Holds no bytes: a file-backed allocation not on its home tier. */
static inline bool ortmem__file_absent(struct gov_slot *s)
{
	return atomic_load_explicit(&s->src, memory_order_relaxed) &&
	       atomic_load_explicit(&s->tier, memory_order_relaxed) !=
		       atomic_load_explicit(&s->home, memory_order_relaxed);
}
/* The slot is being freed: forget its source (inline: the release paths
 * below gov_file.c call it). */
static inline void ortmem__file_forget(struct gov_slot *s)
{
	void *src = (void *)(uintptr_t)atomic_exchange(&s->src, 0);

	atomic_store(&s->pf, PF_NONE);
	free(src);
}
/* Allocate on @home (or, with @reuse, take *@nbhp) and fill it from the
 * file; *@nbhp the allocation.  On failure the allocation is freed. */
int ortmem__file_fill(struct ortmem_gov *gov, uint32_t idx, int home,
		      bool reuse, uint64_t *nbhp);
/* Demotion of a file-backed allocation: drop the copy (gov->lock held). */
int ortmem__file_drop_locked(struct ortmem_gov *gov, uint32_t idx);
/* Hand slot @idx the buffer (and charge) of a same-size unused copy. */
bool ortmem__file_recycle_locked(struct ortmem_gov *gov, uint32_t idx,
				 int home, uint64_t *bhp);
/* Tell the weights file where a recycled buffer's read goes (best effort). */
void ortmem__file_announce(struct ortmem_gov *gov, uint32_t idx, int home,
			   uint64_t bh);

/* gov_move.c: demotion, and the move back home. */
/* Demote slot @idx if it still holds @gen; takes gov->lock itself (not
 * held on entry) and drops it while the bytes are copied. */
int ortmem__demote(struct ortmem_gov *gov, uint32_t idx, uint32_t gen);
int ortmem__move_in(struct ortmem_gov *gov, uint32_t idx, int home);

/* gov_reclaim.c: making room, and promotion that may need it. */
int ortmem__gov_charge(struct ortmem_gov *gov, int tier, uint32_t role,
		       uint64_t size);
int ortmem__promote(struct ortmem_gov *gov, uint32_t idx, uint64_t word);

/* Set by a prefetch around its charge: reclaim then spares what earlier
 * prefetches brought in and no pin has used yet (no thrashing). */
extern __thread bool ortmem__reclaim_spare_ready;

/* gov_prefetch.c: asynchronous promotion (ortmem_gov_prefetch()). */
/* Slot @idx was seen MOVING at @w: if a prefetch owns it, wait until it
 * is done and return true. */
bool ortmem__prefetch_wait(struct ortmem_gov *gov, uint32_t idx, uint64_t w);
/* Slot @idx, DEMOTED: the error of its failed prefetch, once, else 0. */
int ortmem__prefetch_failed(struct ortmem_gov *gov, uint32_t idx, uint32_t gen);
/* A pin took slot @idx: count a hit, a wait or a synchronous promotion. */
void ortmem__prefetch_note_pin(struct ortmem_gov *gov, struct gov_slot *s,
			       bool waited, bool promoted);
void ortmem__prefetch_fini(struct ortmem_gov *gov);
void ortmem__prefetch_stats(struct ortmem_gov *gov,
			    struct ortmem_prefetch_stats *ps);

/* gov_handle.c: operations on one binding. */
/*
 * Release, pin and unpin @h, whose slot @idx was seen at word @w (which may
 * be stale by now: the operation re-reads it and refuses with
 * -ORTMEM_E_STALE_HANDLE once the slot holds another generation).  The
 * public calls are ortmem__slot_lookup() followed by these; unit tests call
 * them with an old @w to replay a lost race deterministically.
 */
int ortmem__release_at(struct ortmem_gov *gov, struct ortmem_handle h,
		       uint32_t idx, uint64_t w, uint32_t flags);
int ortmem__pin_at(struct ortmem_gov *gov, struct ortmem_handle h,
		   uint32_t idx, uint64_t w, uint32_t flags, void **ptrp);
int ortmem__unpin_at(struct ortmem_gov *gov, struct ortmem_handle h,
		     uint32_t idx, uint64_t w);

int ortmem__gov_enter(struct ortmem_gov *gov, const char *bad,
		      struct ortmem_handle h, uint32_t *idx, uint64_t *w);

/* gov_claim.c: claims and views. */
/* Take a pin on live @h (no promotion) so its slot cannot be reused. */
int ortmem__hold(struct ortmem_gov *gov, struct ortmem_handle h,
		 uint32_t *idxp);
int ortmem__claim_locked(struct ortmem_gov *gov, struct ortmem_handle h,
			 uint32_t auth, uint32_t ctx);

/* gov_mech.c: the mechanisms. */
/* -ESHUTDOWN with a detailed error when @tier's mechanism is retired. */
int ortmem__mech_check(struct ortmem_gov *gov, int tier, uint64_t size);
void ortmem__mech_drain(struct ortmem_gov *gov, struct ortmem_mechanism *out,
			size_t max);

#endif /* ORTMEM_LIB_GOV_INTERNAL_H */
