// SPDX-License-Identifier: MIT
/*
 * pagebench - the numbers behind the module's page design (run in the VM by
 * "make bench-kmod"): io_uring O_DIRECT reads into
 *   1. a /dev/ortmem region (module-owned pages; 6.1 cannot register it as a
 *      fixed buffer, so plain IORING_OP_READ, pages pinned per I/O),
 *   2. a memfd mapping, mlock'ed and registered (IORING_OP_READ_FIXED),
 *   3. the same memfd mapping with plain IORING_OP_READ,
 *   4. the region registered as a fixed buffer (IORING_OP_READ_FIXED), on
 *      kernels that accept it (6.12 does),
 * and the cost of setting up each kind of buffer.  The ratio lines compare 1
 * against its peer 2, and 4 against 1 where 4 exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uapi/linux/ortmem.h>

#define BUF (4u << 20)
#define DISK_SPAN (32u << 20)
#define QD 8
#define SETUP_SIZE (64u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "pagebench: %s: %s\n", what, strerror(err));
	exit(1);
}

static void *region_buf(int dev, size_t size)
{
	struct ortmem_alloc_args a = { .size = size, .numa_node = -1 };
	void *p;

	if (ioctl(dev, ORTMEM_IOC_ALLOC, &a))
		die("ORTMEM_IOC_ALLOC", errno);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		 dev, (off_t)a.mmap_offset);
	if (p == MAP_FAILED)
		die("mmap region", errno);
	return p;
}

static void *memfd_buf(size_t size)
{
	int fd = memfd_create("pagebench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	if (fd < 0 || ftruncate(fd, size))
		die("memfd", errno);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap memfd", errno);
	if (mlock(p, size))
		die("mlock memfd", errno);
	close(fd);
	return p;
}

/*
 * MiB/s of QD reads of @chunk bytes over DISK_SPAN, @rounds times, into
 * @buf: registered buffer @fixed (READ_FIXED), or plain READ when -1.
 */
static double read_rate(struct io_uring *ring, int disk, char *buf, int fixed,
			int rounds, unsigned int chunk)
{
	const unsigned int CHUNK = chunk;

	unsigned long long done = 0, off = 0, inflight = 0, total;
	struct io_uring_cqe *cqe;
	double t0 = now();
	unsigned int slot = 0;

	total = (unsigned long long)rounds * (DISK_SPAN / CHUNK);
	while (done < total) {
		while (inflight < QD && done + inflight < total) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			char *dst = buf + (slot++ % (BUF / CHUNK)) * CHUNK;

			if (fixed >= 0)
				io_uring_prep_read_fixed(sqe, disk, dst, CHUNK, off, fixed);
			else
				io_uring_prep_read(sqe, disk, dst, CHUNK, off);
			off = (off + CHUNK) % DISK_SPAN;
			inflight++;
		}
		if (io_uring_submit_and_wait(ring, 1) < 0)
			die("io_uring_submit_and_wait", errno);
		while (io_uring_peek_cqe(ring, &cqe) == 0) {
			if (cqe->res != (int)CHUNK)
				die("short or failed read", cqe->res < 0 ? -cqe->res : EIO);
			io_uring_cqe_seen(ring, cqe);
			inflight--;
			done++;
		}
	}
	return (double)total * CHUNK / (1 << 20) / (now() - t0);
}

int main(int argc, char **argv)
{
	const char *disk_path = argc > 1 ? argv[1] : "/dev/vda";
	int rounds = argc > 2 ? atoi(argv[2]) : 4;
	double region, fixed, plain, rfixed = 0, t;
	struct iovec iov, bufs[2];
	struct io_uring ring;
	int region_ok;
	char *rbuf, *mbuf;
	int dev, disk, ret;

	dev = open("/dev/ortmem", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die("/dev/ortmem", errno);
	disk = open(disk_path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (disk < 0)
		die(disk_path, errno);
	ret = io_uring_queue_init(QD * 2, &ring, 0);
	if (ret)
		die("io_uring_queue_init", -ret);

	t = now();
	rbuf = region_buf(dev, SETUP_SIZE);
	printf("pagebench: setup of %u MiB: region alloc + mmap(MAP_POPULATE) %.1f ms\n",
	       SETUP_SIZE >> 20, (now() - t) * 1e3);
	munmap(rbuf, SETUP_SIZE);
	t = now();
	mbuf = memfd_buf(SETUP_SIZE);
	printf("pagebench: setup of %u MiB: memfd + ftruncate + mmap + mlock %.1f ms\n",
	       SETUP_SIZE >> 20, (now() - t) * 1e3);
	iov = (struct iovec){ .iov_base = mbuf, .iov_len = SETUP_SIZE };
	t = now();
	ret = io_uring_register_buffers(&ring, &iov, 1);
	printf("pagebench: setup of %u MiB: IORING_REGISTER_BUFFERS on memfd %.1f ms (%s)\n",
	       SETUP_SIZE >> 20, (now() - t) * 1e3, ret ? strerror(-ret) : "ok");
	if (!ret)
		io_uring_unregister_buffers(&ring);
	munmap(mbuf, SETUP_SIZE);

	rbuf = region_buf(dev, BUF);
	mbuf = memfd_buf(BUF);
	memset(rbuf, 1, BUF);
	/* Fill the span the reads cover. */
	for (unsigned int off = 0; off < DISK_SPAN; off += BUF)
		if (pwrite(disk, rbuf, BUF, off) != (ssize_t)BUF)
			die("pwrite", errno);

	iov = (struct iovec){ .iov_base = rbuf, .iov_len = BUF };
	ret = io_uring_register_buffers(&ring, &iov, 1);
	printf("pagebench: IORING_REGISTER_BUFFERS on a region: %s\n",
	       ret ? strerror(-ret) : "accepted");
	region_ok = !ret;
	if (!ret)
		io_uring_unregister_buffers(&ring);
	/* Buffer 0: the memfd; buffer 1: the region, where it is accepted. */
	bufs[0] = (struct iovec){ .iov_base = mbuf, .iov_len = BUF };
	bufs[1] = (struct iovec){ .iov_base = rbuf, .iov_len = BUF };
	ret = io_uring_register_buffers(&ring, bufs, region_ok ? 2 : 1);
	if (ret)
		die("IORING_REGISTER_BUFFERS", -ret);

	read_rate(&ring, disk, rbuf, -1, 1, 128 << 10);	/* warm-up */
	for (int i = 0; i < 2; i++) {
		unsigned int chunk = i ? 128u << 10 : 4096;
		int r = i ? rounds : 1;

		region = read_rate(&ring, disk, rbuf, -1, r, chunk);
		fixed = read_rate(&ring, disk, mbuf, 0, r, chunk);
		plain = read_rate(&ring, disk, mbuf, -1, r, chunk);
		if (region_ok)
			rfixed = read_rate(&ring, disk, rbuf, 1, r, chunk);
		region = (region + read_rate(&ring, disk, rbuf, -1, r, chunk)) / 2;
		fixed = (fixed + read_rate(&ring, disk, mbuf, 0, r, chunk)) / 2;
		if (region_ok) {
			rfixed = (rfixed + read_rate(&ring, disk, rbuf, 1, r, chunk)) / 2;
			printf("pagebench: io_uring O_DIRECT %u KiB reads, QD %d: region READ_FIXED (registered) %.1f MiB/s\n",
			       chunk >> 10, QD, rfixed);
			printf("pagebench: registered region READ_FIXED / region READ (%u KiB reads) = %.2f\n",
			       chunk >> 10, rfixed / region);
		}
		printf("pagebench: io_uring O_DIRECT %u KiB reads, QD %d: region READ %.1f MiB/s, memfd READ_FIXED (registered) %.1f MiB/s, memfd READ %.1f MiB/s\n",
		       chunk >> 10, QD, region, fixed, plain);
		if (i)
			printf("pagebench: region READ / registered memfd READ_FIXED (%u KiB reads) = %.2f\n",
			       chunk >> 10, region / fixed);
		else
			printf("pagebench: region READ / registered memfd READ_FIXED (4 KiB reads) = %.2f\n",
			       region / fixed);
	}
	io_uring_queue_exit(&ring);
	return 0;
}
