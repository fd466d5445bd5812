# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A device leaves while a file is open; the file keeps working.

DESCRIPTION="a device leaves while a file is open; the file keeps working"

test_main() {
	ensure_loaded
	veth_dev ${PROV}2 2
	exec 3</dev/rdma_krust
	rdma link delete ${PROV}2 || fail "rdma link delete ${PROV}2"
	ip link del kv2
	wait_for 10 not_listed ${PROV}2 || fail "${PROV}2 still listed"
	exec 3<&-
	listed $DEV || fail "$DEV lost"
}
