// SPDX-License-Identifier: MIT
/*
 * The registry of mechanisms: each tier's backend, with an identity, a
 * lifecycle (registered when set, active once it allocated, draining while
 * ortmem_gov_drain() frees what it holds, retired after), a coherence class
 * derived from its capabilities, and a snapshot for the statistics that
 * keeps the bytes of shared prefixes (charged once) apart from the rest.
 *
 * Draining goes fastest tier first: device, host, disk.  A device tier may
 * stage through host memory and an allocation demoted from the device sits
 * on a lower tier, so the upper tiers let go of what they hold before the
 * ones below them are emptied, and each reports what it still held.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "gov_internal.h"

static int mech_coherence(uint32_t caps, bool has_backend)
{
	if (!has_backend)
		return ORTMEM_COHERENCE_NONE;
	if (caps & ORTMEM_BACKEND_CAP_SHARED_MAPPING)
		return ORTMEM_COHERENCE_SHARED;
	if (caps & ORTMEM_BACKEND_CAP_HOST_POINTER)
		return ORTMEM_COHERENCE_HOST;
	return ORTMEM_COHERENCE_DEVICE_ONLY;
}

static void mech_snapshot(struct ortmem_gov *gov, int tier,
			  const struct ortmem_gov_stats *st,
			  struct ortmem_mechanism *m)
{
	struct gov_tier *t = &gov->tiers[tier];
	const struct ortmem_tier_stats *ts = &st->tier[tier];
	uint8_t late = atomic_load(&gov->reg.mech[tier]);

	memset(m, 0, sizeof(*m));
	m->id = gov->serial << 8 | (uint64_t)(tier + 1);
	m->tier = tier;
	m->caps = ts->caps;
	m->coherence = mech_coherence(ts->caps, t->has_backend);
	if (late)
		m->lifecycle = late;
	else if (!t->has_backend)
		m->lifecycle = ORTMEM_MECH_ABSENT;
	else
		m->lifecycle = ts->peak || ts->leases ? ORTMEM_MECH_ACTIVE :
			       ORTMEM_MECH_REGISTERED;
	snprintf(m->name, sizeof(m->name), "%s", ts->backend);
	m->used = ts->used;
	m->shared_bytes = atomic_load(&gov->reg.shared[tier]);
	m->private_bytes = m->used > m->shared_bytes ?
			   m->used - m->shared_bytes : 0;
	m->bindings = ts->leases;
	m->prefixes = gov->reg.prefixes[tier];
	m->sharers = gov->reg.sharers[tier];
	m->deferred = ts->deferred;
	m->quarantined_bytes = ts->quarantined_bytes;
}

ORTMEM_API int ortmem_gov_mechanisms(struct ortmem_gov *gov,
				     struct ortmem_mechanism *out, size_t max)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	int t, ret;

	if (!gov || (!out && max))
		return ortmem__err_invalid(-1, 0, "%s", !gov ? "gov is NULL" :
					   "out is NULL but max is not 0");
	ret = ortmem_gov_stats(gov, &st);
	if (ret)
		return ret;
	pthread_mutex_lock(&gov->lock);
	for (t = 0; t < ORTMEM_TIER_COUNT && (size_t)t < max; t++)
		mech_snapshot(gov, t, &st, &out[t]);
	pthread_mutex_unlock(&gov->lock);
	return ORTMEM_TIER_COUNT;
}

int ortmem__mech_check(struct ortmem_gov *gov, int tier, uint64_t size)
{
	if (atomic_load_explicit(&gov->reg.mech[tier], memory_order_acquire) <
	    ORTMEM_MECH_DRAINING)
		return 0;
	return ortmem__err_invalid(tier, size,
		"the %s tier's mechanism was drained and retired (ortmem_gov_drain()); it takes no more bindings, close the governor",
		ortmem_tier_name(tier));
}

/* Release every live binding on @tier, pinned or not (the caller drains). */
static void mech_free_tier_locked(struct ortmem_gov *gov, int tier)
{
	uint32_t i;

	for (i = 0; i < gov->nslots; i++) {
		struct gov_slot *s = &gov->slots[i];
		uint64_t w = atomic_load(&s->word);
		uint32_t gen = slot_gen(w);

		if (!slot_live_or_demoted(w) || atomic_load(&s->tier) != tier)
			continue;
		if (slot_pins(w))
			pr_warn("draining the %s tier: handle %#" PRIx64 " still holds %u pins; freeing it",
				ortmem_tier_name(tier),
				handle_make(gen, gov->tag, i), slot_pins(w));
		if (!atomic_compare_exchange_strong(&s->word, &w,
				slot_word(gen, 0, SLOT_MOVING)))
			continue;	/* the caller does not race us */
		if (ortmem__backend_release_locked(gov, i,
				handle_make(gen, gov->tag, i)) < 0)
			pr_err("draining the %s tier: %s",
			       ortmem_tier_name(tier),
			       ortmem_last_error_message());
	}
}

static void mech_report(const struct ortmem_mechanism *m)
{
	if (m->lifecycle == ORTMEM_MECH_ABSENT && !m->used)
		return;
	if (m->bindings || m->used || m->deferred || m->quarantined_bytes)
		pr_warn("draining the %s tier (%s): it still held %" PRIu64 " bytes (%" PRIu64 " shared, %" PRIu64 " private) in %" PRIu64 " bindings, %" PRIu64 " prefixes, %" PRIu64 " deferred releases, %" PRIu64 " quarantined bytes",
			ortmem_tier_name(m->tier), m->name[0] ? m->name : "no backend",
			m->used, m->shared_bytes, m->private_bytes, m->bindings,
			m->prefixes, m->deferred, m->quarantined_bytes);
	else
		pr_info("draining the %s tier (%s): it held nothing",
			ortmem_tier_name(m->tier), m->name[0] ? m->name : "no backend");
}

void ortmem__mech_drain(struct ortmem_gov *gov, struct ortmem_mechanism *out,
			size_t max)
{
	struct ortmem_gov_stats st = { .sz = sizeof(st) };
	void (*reap)(struct ortmem_gov *gov) = NULL;
	struct ortmem_mechanism m;
	int t;

	pthread_mutex_lock(&gov->lock);
	ortmem__poll_locked(gov);
	pthread_mutex_unlock(&gov->lock);
	/* One count for all tiers: draining one leaves the others' as they
	 * were (what moved down moved before the drain). */
	ortmem_gov_stats(gov, &st);
	for (t = 0; t < ORTMEM_TIER_COUNT; t++) {
		pthread_mutex_lock(&gov->lock);
		if (atomic_load(&gov->reg.mech[t]) == ORTMEM_MECH_RETIRED) {
			pthread_mutex_unlock(&gov->lock);
			if ((size_t)t < max)
				out[t].lifecycle = ORTMEM_MECH_RETIRED;
			continue;
		}
		mech_snapshot(gov, t, &st, &m);
		atomic_store(&gov->reg.mech[t], ORTMEM_MECH_DRAINING);
		mech_report(&m);
		/* Prefixes live above this file: reached through a pointer. */
		if (gov->reg.prefix_drain)
			gov->reg.prefix_drain(gov, t);
		reap = gov->reg.prefix_reap;
		if (m.bindings)
			mech_free_tier_locked(gov, t);
		atomic_store(&gov->reg.mech[t], ORTMEM_MECH_RETIRED);
		pthread_mutex_unlock(&gov->lock);
		if ((size_t)t < max) {
			out[t] = m;
			out[t].lifecycle = ORTMEM_MECH_RETIRED;
		}
	}
	/* The drained prefixes' detach hooks, without the lock. */
	if (reap)
		reap(gov);
}

ORTMEM_API int ortmem_gov_drain(struct ortmem_gov *gov,
				struct ortmem_mechanism *out, size_t max)
{
	if (!gov || (!out && max))
		return ortmem__err_invalid(-1, 0, "%s", !gov ? "gov is NULL" :
					   "out is NULL but max is not 0");
	if (out)
		memset(out, 0, (max < ORTMEM_TIER_COUNT ? max : ORTMEM_TIER_COUNT) *
			       sizeof(*out));
	ortmem__mech_drain(gov, out, max);
	return ORTMEM_TIER_COUNT;
}
