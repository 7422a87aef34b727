/* SPDX-License-Identifier: MIT */
/*
 * A fresh spill folder for a host-tier test: the folder the VM suite names
 * (ORTMEM_VM_SPILL_DIR) first, then the user's choice (ORTMEM_SPILL_DIR),
 * then /var/tmp and /tmp.  NAME is the folder's prefix.
 */
#ifndef SELFTESTS_HOST_SPILL_DIR_H
#define SELFTESTS_HOST_SPILL_DIR_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static inline bool make_spill_dir(char *dir, size_t len, const char *name)
{
	const char *bases[] = { getenv("ORTMEM_VM_SPILL_DIR"),
				getenv("ORTMEM_SPILL_DIR"), "/var/tmp", "/tmp" };
	size_t i;

	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (!bases[i] || !*bases[i])
			continue;
		snprintf(dir, len, "%s/%s-XXXXXX", bases[i], name);
		if (mkdtemp(dir))
			return true;
	}
	return false;
}

#endif
