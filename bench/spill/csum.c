// SPDX-License-Identifier: MIT
/*
 * Throughput of the candidate extent checksums over 1 MiB blocks of a
 * buffer larger than the caches: XXH3-64 (libxxhash) and, when built with
 * ISA-L, CRC32C (crc32_iscsi).  Prints "NAME MiB/s" lines.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#ifdef HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define TOTAL (256u << 20)
#define BLOCK (1u << 20)
#define PASSES 4

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t sink;

static double run(const uint8_t *buf, int which)
{
	double t0 = now_s();
	size_t off;
	int p;

	for (p = 0; p < PASSES; p++) {
		for (off = 0; off < TOTAL; off += BLOCK) {
			if (which == 0)
				sink += XXH3_64bits(buf + off, BLOCK);
#ifdef HAVE_ISAL
			else
				sink += crc32_iscsi((unsigned char *)buf + off, BLOCK, 0);
#endif
		}
	}
	return (double)TOTAL * PASSES / 1048576.0 / (now_s() - t0);
}

int main(void)
{
	uint8_t *buf = malloc(TOTAL);
	size_t i;

	if (!buf)
		return 1;
	for (i = 0; i < TOTAL; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	printf("xxh3 %.0f\n", run(buf, 0));
#ifdef HAVE_ISAL
	printf("crc32c %.0f\n", run(buf, 1));
#endif
	free(buf);
	return sink == 42;
}
