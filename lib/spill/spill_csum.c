// SPDX-License-Identifier: MIT
/*
 * Integrity of extents: CRC32C of the payload (ISA-L), kept in the
 * extent table and written in a trailer at the end of the extent together
 * with the extent's identity, so a torn, misplaced or stale extent is caught
 * as well as flipped bits.  Documentation/lib/spill.rst has the measurement
 * behind the choice of CRC32C (ISA-L) over XXH3 (libxxhash).
 */
#include <endian.h>
#include <limits.h>
#include <isa-l/crc.h>

#include "spill_internal.h"

uint64_t ortmem__csum(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned int crc = 0;

	/* crc32_iscsi() takes an int length: feed it at most 1 GiB a call. */
	while (len) {
		size_t n = len < (1u << 30) ? len : (1u << 30);

		crc = crc32_iscsi((unsigned char *)p, (int)n, crc);
		p += n;
		len -= n;
	}
	return crc;
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

void ortmem__trailer_pack(void *dst, uint64_t id, uint64_t off, uint64_t len,
			  uint64_t csum)
{
	uint8_t *p = dst;

	put64(p, ORTMEM__TRAILER_MAGIC);
	put64(p + 8, id);
	put64(p + 16, off);
	put64(p + 24, len);
	put64(p + 32, csum);
}

int ortmem__trailer_check(const void *src, uint64_t id, uint64_t off,
			  uint64_t len, uint64_t csum, const char **why)
{
	const uint8_t *p = src;

	if (get64(p) != ORTMEM__TRAILER_MAGIC)
		*why = "its trailer is missing (torn or never written)";
	else if (get64(p + 8) != id || get64(p + 16) != off)
		*why = "its trailer belongs to another extent (misplaced or stale write)";
	else if (get64(p + 24) != len)
		*why = "its trailer records another length";
	else if (get64(p + 32) != csum)
		*why = "its trailer records another checksum";
	else
		return 0;
	return -ORTMEM_E_CHECKSUM;
}
