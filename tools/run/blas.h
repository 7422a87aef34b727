/* SPDX-License-Identifier: MIT */
/*
 * tools/run/blas.h - which OpenBLAS kernels ortmem-run computes with.
 *
 * Debian's OpenBLAS is built for every x86-64 core (DYNAMIC_ARCH) and picks
 * its kernels from the CPU's model number when it loads.  A library older
 * than the CPU does not know the model and falls back to its oldest
 * kernels (Prescott: SSE3), which run the model's products two to three
 * times slower than the AVX2 or AVX-512 kernels the same library ships.
 * blas_pick() chooses the kernels from the CPU's features instead when that
 * happens, so every mode computes at the machine's speed.
 */
#ifndef ORTMEM_TOOLS_RUN_BLAS_H
#define ORTMEM_TOOLS_RUN_BLAS_H

/*
 * When OpenBLAS fell back to pre-AVX kernels on a CPU with AVX2 or AVX-512
 * (and the user set no OPENBLAS_CORETYPE), set OPENBLAS_CORETYPE to the
 * kernel family the CPU's features allow and run this program again with
 * the same arguments: OpenBLAS reads the variable only when it loads.
 * Returns only when nothing is to be done or the re-run failed.
 */
void blas_pick(char **argv);

/*
 * BLAS threads when the user gives no --threads: the CPUs this process may
 * run on (its affinity, which a cpuset or taskset narrows) less one, at
 * least one.  The one left is for the thread that reads and verifies the
 * next layers: a BLAS thread that loses its core to it stalls its partners
 * at the next barrier, so the product would run at the pace of the slowest.
 */
unsigned int blas_default_threads(void);

/* The kernels in use, as OpenBLAS names them ("SkylakeX", "Haswell"...). */
const char *blas_core(void);

#endif /* ORTMEM_TOOLS_RUN_BLAS_H */
