# shellcheck shell=sh
# SPDX-License-Identifier: MIT
#
# Sourced by the benches that measure fio: huge pages for fio's buffers.
#
# fio is the peer and gets its best setting, which here includes huge pages.
# A 1 MiB O_DIRECT request in 4 KiB pages spans 256 scatter-gather segments,
# more than a virtio disk takes in one request (its queue's max_segments is
# 254 here), so the block layer splits it; in 2 MiB pages it is one segment.
# ortmem's host buffers are huge pages where the kernel gives them, so fio
# must have them too, or the bound is no floor (measured here: fio read
# 1.0-1.45 GB/s in 4 KiB pages, 1.6-1.95 GB/s in huge pages).  fio takes
# huge pages from the hugetlb pool (--iomem=shmhuge); as root the bench adds
# what fio needs to the pool for the run and gives it back at exit.
#
#   fio_huge_reserve MIB  sets FIO_HUGE=1 when the pool has MIB free for fio
#   fio_huge_release      puts the pool back as it was

# shellcheck disable=SC2034 # read by the benches that source this file
FIO_HUGE=0
fio_huge_pool=

fio_huge_free() {
	awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo
}

fio_huge_reserve() {
	hp_kb=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)
	[ -n "$hp_kb" ] || return 0
	# fio's buffers plus a page of alignment and a spare.
	need=$((($1 * 1024 + hp_kb - 1) / hp_kb + 2))
	free=$(fio_huge_free)
	if [ "$free" -lt "$need" ] && [ -w /proc/sys/vm/nr_hugepages ]; then
		fio_huge_pool=$(cat /proc/sys/vm/nr_hugepages)
		echo $((fio_huge_pool + need - free)) > /proc/sys/vm/nr_hugepages 2>/dev/null || :
		free=$(fio_huge_free)
	fi
	if [ "$free" -ge "$need" ]; then
		# shellcheck disable=SC2034
		FIO_HUGE=1
	else
		echo "note: fio runs without huge pages: the hugetlb pool has $free of the $need pages it needs (run as root, or reserve them in /proc/sys/vm/nr_hugepages); its 1 MiB requests may be split, so fio may be slower than it can be" >&2
	fi
}

fio_huge_release() {
	if [ -n "$fio_huge_pool" ]; then
		echo "$fio_huge_pool" > /proc/sys/vm/nr_hugepages 2>/dev/null || :
		fio_huge_pool=
	fi
}
