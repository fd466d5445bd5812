# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# An open file pins the module: rmmod fails until it is closed.

DESCRIPTION="an open file pins the module: rmmod fails until it is closed"

test_main() {
	ensure_loaded
	exec 3</dev/rdma_krust
	if rmmod rdma_krust 2>/dev/null; then
		exec 3<&-
		fail "rmmod succeeded with a file open"
	fi
	loaded || fail "module gone"
	exec 3<&-
	rmmod rdma_krust || fail "rmmod failed after close"
	ensure_loaded
}
