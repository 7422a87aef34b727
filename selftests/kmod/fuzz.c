// SPDX-License-Identifier: MIT
/*
 * Random ioctl commands and arguments, random mmaps and munmaps, random
 * spill-mapping steps on a file of the spill disk (when there is one), for
 * ORTMEM_FUZZ_SECONDS (default 60) seconds.  Afterwards nothing is pinned,
 * nothing is outstanding, and the runner checks that the kernel log shows no
 * warning.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "../harness.h"
#include "ortmem_test.h"
#include "spill_test.h"

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/*
 * Touch a new mapping (write when @write, else read); 1 when the touch got
 * SIGBUS.  A touch may land on a page the loop evicted, and its fault-back
 * may rightly fail (over the module cap the run sets): SIGBUS, not a crash
 * of the fuzzer.
 */
static int touch(volatile char *p, int write)
{
	if (sigsetjmp(bus_jmp, 1))
		return 1;
	if (write)
		*p = 1;
	else
		(void)*p;
	return 0;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t rnd_value(uint64_t *s)
{
	static const uint64_t edges[] = {
		0, 1, 4095, 4096, 4097, 8192, 65536, 1ull << 20, 1ull << 31,
		1ull << 32, ORTMEM_REGION_MAX_SIZE, ORTMEM_REGION_MAX_SIZE + 1,
		UINT64_MAX, UINT64_MAX - 4095, INT64_MAX, 0xffffffffull,
	};

	switch (rnd(s) % 4) {
	case 0:
		return edges[rnd(s) % (sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return rnd(s) % 64;
	case 2:
		return (rnd(s) % 32) * 4096;
	default:
		return rnd(s);
	}
}

/*
 * One random spill-mapping step on a real spill file: bind, unbind, evict
 * (with the CRCs of zero pages, right for untouched pages whose sparse
 * extent reads back zeroes, wrong for touched ones; or a discard, which
 * keeps the zero CRCs of the last evict), restore in either
 * form, or the statistics.  Random handles and ranges, mostly small.
 */
static int spill_step(uint64_t *s, int fd, int file)
{
	static uint32_t zero_crcs[4];
	uint32_t h = (uint32_t)(rnd(s) % 40);
	uint64_t off = (rnd(s) % 16) * 4096, len = (rnd(s) % 4 + 1) * 4096;
	struct ortmem_spill_stats_args st;
	struct ortmem_evict_args e;
	static char zero[4096];
	uint64_t kind;
	int i;

	if (!zero_crcs[0])
		for (i = 0; i < 4; i++)
			zero_crcs[i] = crc32c_sw(0, zero, sizeof(zero));
	switch (rnd(s) % 6) {
	case 0:
		return spill_bind(fd, h, off, len, file, (rnd(s) % 64) * 4096);
	case 1:
		return spill_unbind(fd, h, off, len);
	case 2:
	case 3:
		memset(&e, 0, sizeof(e));
		e.handle = h;
		e.offset = off;
		e.length = len;
		e.crcs = (uintptr_t)zero_crcs;
		/* A third are discards (no CRCs), some with a CRC array or
		 * an unknown flag, which must be refused. */
		kind = rnd(s) % 9;
		if (kind < 3)
			e.flags = ORTMEM_EVICT_DISCARD;
		if (kind < 2)
			e.crcs = 0;
		else if (kind == 3)
			e.flags = (uint32_t)rnd(s);
		return ioctl(fd, ORTMEM_IOC_EVICT, &e) ? -errno : 0;
	case 4:
		return spill_restore(fd, h, off, len,
				     rnd(s) % 2 ? ORTMEM_RESTORE_NOFILL : 0);
	default:
		return spill_stats(fd, rnd(s) % 2 ? h : 0, &st);
	}
}

static unsigned long rnd_cmd(uint64_t *s)
{
	static const unsigned long cmds[] = {
		ORTMEM_IOC_GET_VERSION, ORTMEM_IOC_ALLOC, ORTMEM_IOC_FREE,
		ORTMEM_IOC_QUERY, ORTMEM_IOC_BIND, ORTMEM_IOC_UNBIND,
		ORTMEM_IOC_EVICT, ORTMEM_IOC_RESTORE, ORTMEM_IOC_SPILL_STATS,
	};
	unsigned long dir = rnd(s) % 4, nr = rnd(s) % 8, size = rnd(s) % 80;

	if (rnd(s) % 4)
		return cmds[rnd(s) % (sizeof(cmds) / sizeof(cmds[0]))];
	if (rnd(s) % 2)
		return _IOC(dir, ORTMEM_IOC_MAGIC, nr, size);
	return (unsigned long)rnd(s);
}

struct mapping {
	void *addr;
	size_t len;
};

TEST_TIMEOUT(random_ioctls_and_mappings, 200)
{
	const char *env = getenv("ORTMEM_FUZZ_SECONDS");
	long seconds = env ? atol(env) : 60;
	int64_t pinned = pinned_bytes(), out = outstanding();
	struct mapping maps[64] = { 0 };
	uint64_t seed = (uint64_t)time(NULL) * 2654435761u | 1;
	uint64_t words[8];
	unsigned long calls = 0, ok = 0, bus = 0;
	struct sigaction bus_action = { .sa_handler = on_sigbus };
	char spill_path[256];
	time_t end;
	int fd, i, file;

	OPEN_OR_SKIP(fd);
	/* A small cap keeps random sizes from filling the VM's RAM. */
	if (geteuid() == 0 && sysfs_write(PARAM_CAP, "64") == 0)
		TH_LOG("max_pinned_mb set to 64 for the run");
	if (getenv("ORTMEM_FUZZ_SEED"))
		seed = strtoull(getenv("ORTMEM_FUZZ_SEED"), NULL, 0) | 1;
	file = spill_file_open("fuzz", 0, spill_path, sizeof(spill_path));
	/*
	 * Every extent spill_step() binds lies in the file's first 67 pages,
	 * which read back as zeroes: the zero pages it evicts fault back.
	 */
	if (file >= 0)
		ASSERT_EQ(0, ftruncate(file, 1 << 20));
	ASSERT_EQ(0, sigaction(SIGBUS, &bus_action, NULL));
	TH_LOG("seed 0x%llx, %ld s, %s", (unsigned long long)seed, seconds,
	       file >= 0 ? "with a spill file" : "no spill file system");
	end = time(NULL) + seconds;
	while (time(NULL) < end) {
		for (i = 0; i < 256; i++, calls++) {
			unsigned int k;
			uint64_t r = rnd(&seed) % 16;

			for (k = 0; k < 8; k++)
				words[k] = rnd(&seed) % 3 ? rnd_value(&seed) : 0;
			/* Keep allocations small so the fuzzer stays in RAM. */
			if (r < 8) {
				if (rnd(&seed) % 2)
					words[0] &= 0xfffff;
				ok += ioctl(fd, rnd_cmd(&seed), words) == 0;
			} else if (r < 11) {
				struct mapping *m = &maps[rnd(&seed) % 64];
				/* ALLOC hands out offsets from one page up. */
				uint64_t off = (rnd(&seed) % 1024) * 4096 +
					       (rnd(&seed) % 16 ? 0 : rnd(&seed) % 4096);
				int prot = (int)(rnd(&seed) % 8);
				int flags = rnd(&seed) % 4 ? MAP_SHARED : MAP_PRIVATE;

				if (m->addr)
					munmap(m->addr, m->len);
				m->len = (rnd(&seed) % 8 + 1) * 4096;
				m->addr = mmap(NULL, m->len, prot, flags, fd, (off_t)off);
				if (m->addr == MAP_FAILED) {
					m->addr = NULL;
				} else {
					ok++;
					if (prot & PROT_WRITE)
						bus += touch((char *)m->addr + rnd(&seed) % m->len, 1);
					else if (prot & PROT_READ)
						bus += touch(m->addr, 0);
				}
			} else if (r < 13) {
				struct ortmem_alloc_args a = {
					.size = (rnd(&seed) % 16 + 1) * 4096,
					.numa_node = -1,
				};

				ok += ioctl(fd, ORTMEM_IOC_ALLOC, &a) == 0;
			} else if (r < 15) {
				struct ortmem_free_args f = {
					.handle = (uint32_t)(rnd(&seed) % 40),
				};

				ok += ioctl(fd, ORTMEM_IOC_FREE, &f) == 0;
			} else if (file >= 0 && rnd(&seed) % 2) {
				ok += spill_step(&seed, fd, file) == 0;
			} else {
				struct mapping *m = &maps[rnd(&seed) % 64];

				if (m->addr) {
					size_t cut = (rnd(&seed) % (m->len / 4096)) * 4096;

					/* Split: unmap the head, keep the tail. */
					if (cut && !munmap(m->addr, cut)) {
						m->addr = (char *)m->addr + cut;
						m->len -= cut;
					}
				}
			}
			if (rnd(&seed) % 20000 == 0) {
				close(fd);
				fd = dev_open();
				ASSERT_LE(0, fd);
			}
		}
	}
	TH_LOG("%lu calls, %lu succeeded, %lu touches got SIGBUS", calls, ok, bus);
	for (i = 0; i < 64; i++)
		if (maps[i].addr)
			munmap(maps[i].addr, maps[i].len);
	close(fd);
	if (file >= 0) {
		close(file);
		unlink(spill_path);
	}
	if (geteuid() == 0)
		sysfs_write(PARAM_CAP, "0");
	EXPECT_LT(1000, calls);
	EXPECT_LT(0, ok);
	EXPECT_EQ(pinned, pinned_bytes());
	EXPECT_EQ(out, outstanding());
}

TEST_HARNESS_MAIN
