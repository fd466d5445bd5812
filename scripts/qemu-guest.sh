# SPDX-License-Identifier: GPL-2.0
#
# Sourced by qemu-test.sh and qemu-pair.sh: what every guest of the project
# boots with.

# qemu_guest OUT: sets GUEST_APPEND (the kernel command line's common part:
# serial console, the host's root over 9p read-only, scripts/guest-init.sh as
# init) and GUEST_ARGS (no display, the serial console on stdio, no reboot,
# and three 9p shares: the host's root, the repository as krust_src, and OUT,
# writable, as krust_out for results). The caller adds the CPU, memory,
# kernel, its own -append and the NIC.
qemu_guest() {
	GUEST_APPEND="console=ttyS0 loglevel=4 panic=-1"
	GUEST_APPEND+=" root=/dev/root rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose ro"
	GUEST_APPEND+=" init=$ROOT/scripts/guest-init.sh"
	# KUnit runs the kernel crate's doctests at boot (kernel_rdma_doctests
	# reads them): allnoconfig leaves CONFIG_KUNIT_DEFAULT_ENABLED off.
	GUEST_APPEND+=" kunit.enable=1"
	GUEST_ARGS=(-display none -monitor none -serial stdio -no-reboot
		-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=root,mount_tag=/dev/root
		-fsdev local,id=src,path="$ROOT",security_model=none,readonly=on
		-device virtio-9p-pci,fsdev=src,mount_tag=krust_src
		-fsdev "local,id=out,path=$1,security_model=none"
		-device virtio-9p-pci,fsdev=out,mount_tag=krust_out)
}
