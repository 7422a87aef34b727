#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Boot a kernel with an initramfs under qemu (TCG; KVM hangs guests on these
# machines) with a scratch virtio disk, the serial console on stdout.
#
#   run.sh KERNEL INITRAMFS DISK_IMAGE SWAP_IMAGE TIMEOUT_S [EXTRA_CMDLINE]
#
# DISK_IMAGE is /dev/vda in the guest (raw, for O_DIRECT), SWAP_IMAGE
# /dev/vdb (the swap device of the never-swapped tests).  With SPILL_IMAGE
# set in the environment, that image (ext4, made by the caller) is /dev/vdc,
# the file system of the spill-mapping tests.
#
# tsc=unstable: with a stable TSC the guest kernel turns sched_clock's static
# key on about 2 s into boot, patching sched_clock_cpu() while the other vCPU
# runs it from the timer interrupt.  Multi-threaded TCG (qemu 7.2) can then
# run a stale translation of the int3 that the patch left for a moment, and
# the kernel dies of it ("Fatal exception in interrupt" at sched_clock_cpu;
# seen once in CI, at 1.9 s into boot).  An unstable TSC from the start leaves
# the key off: nothing is patched, and the guest reads the HPET instead.
set -eu
kernel=$1
initrd=$2
disk=$3
swap=$4
limit=$5
extra=${6:-}
spill_drive=
[ -n "${SPILL_IMAGE:-}" ] && spill_drive="-drive file=$SPILL_IMAGE,if=virtio,format=raw,cache=unsafe"

exec timeout -k 5 "$limit" qemu-system-x86_64 \
	-accel tcg -machine q35 -cpu max -smp 2 -m 1024 \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet loglevel=4 panic=-1 tsc=unstable $extra" \
	-drive "file=$disk,if=virtio,format=raw,cache=unsafe" \
	-drive "file=$swap,if=virtio,format=raw,cache=unsafe" $spill_drive \
	-nographic -no-reboot -monitor none -serial stdio -nodefaults
