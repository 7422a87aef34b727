/* SPDX-License-Identifier: MIT */
/*
 * tools/run/procio.h - what the kernel counts of this process's storage
 * reads, so the peer modes' disk bytes are measured, not assumed.
 */
#ifndef ORTMEM_TOOLS_RUN_PROCIO_H
#define ORTMEM_TOOLS_RUN_PROCIO_H

#include <stdint.h>

/* read_bytes of /proc/self/io: bytes this process made the kernel fetch
 * from storage (page-cache readahead of its faults and reads included).
 * 0, or -1 where the kernel keeps no such count. */
int procio_read_bytes(uint64_t *out);

#endif /* ORTMEM_TOOLS_RUN_PROCIO_H */
