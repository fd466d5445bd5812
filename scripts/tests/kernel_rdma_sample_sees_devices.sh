# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The second user of kernel::rdma: the series' sample
# (samples/rust/rust_rdma_devices.rs, no unsafe), an ib_client built into
# the test kernel, next to the module's own. A device added now must be
# logged by it with its name, one port, its transport and the limits
# ibv_devinfo reports; deleted, logged as removed. The sample saw $DEV at
# boot.

DESCRIPTION="the series' device sample logs a device added and removed, with the limits ibv_devinfo reports"

# The kernel::rdma sample (samples/rust/rust_rdma_devices.rs of the series
# in kernel/patches/rust-rdma), built into the test kernels: its init line
# is in the boot log.
requires() {
	boot_log | grep -q 'rust_rdma_devices: Rust RDMA device client sample (init)' && return 0
	echo "the kernel has no kernel::rdma sample (CONFIG_SAMPLE_RUST_RDMA_DEVICES, kernel/patches/rust-rdma)"
	return 1
}

test_main() {
	ensure_loaded
	local transport=IB/RoCE line info
	[ "$PROV" = siw ] && transport=iWARP
	boot_log | grep -q "rust_rdma_devices: add $DEV: " || fail "the sample did not log $DEV"
	veth_dev ${PROV}18 18
	line=$(dmesg | grep "rust_rdma_devices: add ${PROV}18: " | tail -1)
	echo "  ${line#*] }"
	info=$(ibv_devinfo -v -d ${PROV}18)
	[[ "$line" == *"add ${PROV}18: 1 port(s), $transport, max_mr_size $(awk '/max_mr_size:/ { print $2 }' <<<"$info"), max_qp_rd_atom $(awk '/max_qp_rd_atom:/ { print $2 }' <<<"$info")" ]] ||
		fail "the sample's line does not match ibv_devinfo -v -d ${PROV}18: $line"
	rdma link delete ${PROV}18 || fail "rdma link delete ${PROV}18"
	wait_for 10 eval "dmesg | grep -q 'rust_rdma_devices: remove ${PROV}18\$'" ||
		fail "the sample did not log the removal of ${PROV}18"
	ip link del kv18
}
