// SPDX-License-Identifier: MIT
/*
 * The plain peer of the spill benchmark: synchronous O_DIRECT pread() of a
 * file in blocks, one at a time (queue depth 1).  Prints MiB/s.
 *
 *   pread-qd1 FILE SIZE BLOCK
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long long size, bs, off;
	struct timespec a, b;
	void *buf;
	ssize_t n;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: pread-qd1 FILE SIZE BLOCK\n");
		return 2;
	}
	size = strtoull(argv[2], NULL, 0);
	bs = strtoull(argv[3], NULL, 0);
	fd = open(argv[1], O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0 || !bs || posix_memalign(&buf, 4096, bs)) {
		fprintf(stderr, "pread-qd1: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (off = 0; off < size; off += (unsigned long long)n) {
		n = pread(fd, buf, bs, (off_t)off);
		if (n <= 0) {
			fprintf(stderr, "pread-qd1: pread at %llu: %s\n", off,
				n ? strerror(errno) : "end of file");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", (double)size / 1048576.0 /
	       ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9));
	free(buf);
	close(fd);
	return 0;
}
