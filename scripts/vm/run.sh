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
	-append "console=ttyS0 quiet loglevel=4 panic=-1 $extra" \
	-drive "file=$disk,if=virtio,format=raw,cache=unsafe" \
	-drive "file=$swap,if=virtio,format=raw,cache=unsafe" $spill_drive \
	-nographic -no-reboot -monitor none -serial stdio -nodefaults
