/* SPDX-License-Identifier: MIT */
/*
 * ortmem/ortmem.h - the whole public API of libortmem (-lortmem).
 *
 * Include this header; it pulls in one header per object, each with its own
 * banner, contracts and thread-safety note.
 */
#ifndef ORTMEM_ORTMEM_H
#define ORTMEM_ORTMEM_H

#include <ortmem/core.h>
#include <ortmem/plan.h>
#include <ortmem/spill.h>
#include <ortmem/governor.h>
#include <ortmem/binding.h>
#include <ortmem/host.h>
#include <ortmem/wfile.h>
#include <ortmem/device.h>

#endif /* ORTMEM_ORTMEM_H */
