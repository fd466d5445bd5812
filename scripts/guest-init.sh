#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# PID 1 of the QEMU guest (see scripts/qemu-test.sh). The root filesystem is
# the host's, read-only over 9p; this mounts the kernel filesystems and a
# tmpfs, mounts the host's result directory, brings up the NIC and soft-RoCE,
# runs scripts/guest-tests.sh (or the demo), and reboots, which ends QEMU.
#
# From the kernel command line: KRUST_MODE (test|demo|bench|pair|repro), KRUST_TESTS
# (comma-separated names, empty for all), and for a pair KRUST_ROLE (a or b)
# and KRUST_IP. The repository is the 9p share krust_src, mounted at
# /run/krust-src; a pair's shared directory is krust_ctl, at /tmp/ctl.

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /tmp/out /run/krust-src
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 krust_out /tmp/out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro krust_src /run/krust-src
export KRUST_OUT=/tmp/out KRUST_ROOT=/run/krust-src

finish() {
	{ echo "=== end"; dmesg; } >>"$KRUST_OUT/dmesg.txt" 2>&1
	sync
	echo b >/proc/sysrq-trigger
	sleep 10
}

ip link set lo up
# The NIC is whatever virtio-net device the guest has; its name varies.
nic=
for d in /sys/class/net/*; do
	[ -e "$d/device" ] && nic=$(basename "$d") && break
done
if [ -z "$nic" ]; then
	echo "guest-init: no NIC found" >&2
	finish
fi
# TEST-NET-1: alone, the QEMU NIC is on a hub with no other port; in a pair
# it reaches the other guest only, through the host's relay on loopback.
# Either way nothing this address sends leaves the host.
KRUST_IP=${KRUST_IP:-192.0.2.1}
ip addr add "$KRUST_IP/24" dev "$nic"
ip link set "$nic" up
export KRUST_NIC=$nic KRUST_IP

cd "$KRUST_ROOT" || finish
if [ "${KRUST_MODE:-test}" = pair ]; then
	mkdir -p /tmp/ctl
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 krust_ctl /tmp/ctl
	bash "$KRUST_ROOT/scripts/guest-pair.sh"
elif [ "${KRUST_MODE:-test}" = repro ]; then
	bash "$KRUST_ROOT/scripts/guest-repro.sh"
elif [ "${KRUST_MODE:-test}" = bench ]; then
	p=${KRUST_PROVIDER:-rxe}
	rdma link add "${p}0" type "$p" netdev "$nic"
	sleep 1
	bash "$KRUST_ROOT/scripts/guest-bench.sh"
else
	bash "$KRUST_ROOT/scripts/guest-tests.sh" --mode "${KRUST_MODE:-test}" --tests "${KRUST_TESTS:-}"
fi
finish
