// SPDX-License-Identifier: MIT
/*
 * Registered authorities and provider contexts: two small tables of
 * names, each entry named by an id that carries a generation, so an id
 * kept after its entry was unregistered (and the entry reused) is refused
 * rather than taken for the new one.  Everything here runs under
 * gov->lock; the registration calls themselves are in gov_claim.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "gov_internal.h"

#define REG_IDX_MASK 0xffu
#define REG_GEN_MAX 0xffffffu

static struct gov_reg_entry *reg_table(struct ortmem_gov *gov, int kind)
{
	return kind == GOV_REG_AUTH ? gov->reg.auth : gov->reg.ctx;
}

static const char *reg_kind_name(int kind)
{
	return kind == GOV_REG_AUTH ? "authority" : "provider context";
}

int ortmem__reg_add(struct ortmem_gov *gov, int kind, const char *name,
		    uint32_t *idp)
{
	struct gov_reg_entry *tab = reg_table(gov, kind);
	uint32_t i, gen;

	for (i = 0; i < ORTMEM_REGISTRY_MAX; i++)
		if (tab[i].id && !strcmp(tab[i].name, name))
			return ortmem__err_plain(-EEXIST,
				"a %s named '%s' is already registered (id %#x); names must be unique within a governor",
				reg_kind_name(kind), name, tab[i].id);
	for (i = 0; i < ORTMEM_REGISTRY_MAX && tab[i].id; i++)
		;
	if (i == ORTMEM_REGISTRY_MAX)
		return ortmem__err_plain(-ENOSPC,
			"cannot register %s '%s': all %d entries are taken; unregister one no longer used",
			reg_kind_name(kind), name, ORTMEM_REGISTRY_MAX);
	/* Generations run 1..2^24-1 and wrap: an id kept across 16 million
	 * registrations of one entry is the only one that can be mistaken. */
	gen = gov->reg.next_gen % REG_GEN_MAX + 1;
	gov->reg.next_gen = gen;
	tab[i].id = gen << 8 | (i + 1);
	ortmem__text_fit(tab[i].name, sizeof(tab[i].name), name);
	atomic_store(&tab[i].views, 0);
	*idp = tab[i].id;
	return 0;
}

struct gov_reg_entry *ortmem__reg_find(struct ortmem_gov *gov, int kind,
				       uint32_t id)
{
	uint32_t i = (id & REG_IDX_MASK) - 1;
	struct gov_reg_entry *tab = reg_table(gov, kind);

	if (!id || i >= ORTMEM_REGISTRY_MAX || tab[i].id != id)
		return NULL;
	return &tab[i];
}

const char *ortmem__reg_name(struct ortmem_gov *gov, int kind, uint32_t id,
			     char *buf, size_t len)
{
	struct gov_reg_entry *e = ortmem__reg_find(gov, kind, id);

	if (e)
		snprintf(buf, len, "'%s' (id %#x)", e->name, id);
	else
		snprintf(buf, len, "an unregistered %s (id %#x)",
			 reg_kind_name(kind), id);
	return buf;
}

int ortmem__auth_refuse(struct ortmem_gov *gov, struct ortmem_handle h,
			uint32_t auth)
{
	char name[64];

	pthread_mutex_lock(&gov->lock);
	ortmem__reg_name(gov, GOV_REG_AUTH, auth, name, sizeof(name));
	pthread_mutex_unlock(&gov->lock);
	return ortmem__err_plain(-EPERM,
		"cannot release handle %#" PRIx64 ": authority %s owns its release; release it through that component (ortmem_gov_release_as() with its id)",
		h.id, name);
}
