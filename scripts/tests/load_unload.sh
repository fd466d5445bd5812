# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Load and unload three times; each load sees $DEV, each unload forgets it.

DESCRIPTION="load and unload three times: each load sees the device, each unload forgets it"

test_main() {
	ensure_unloaded
	local i
	for i in 1 2 3; do
		insmod "$KO" || fail "insmod $i failed"
		[ -c /dev/rdma_krust ] || fail "no /dev/rdma_krust after insmod $i"
		listed $DEV || fail "$DEV not listed after load $i"
		rmmod rdma_krust || fail "rmmod $i failed"
		[ ! -e /dev/rdma_krust ] || fail "/dev/rdma_krust left after rmmod $i"
		! loaded || fail "module still loaded after rmmod $i"
	done
	expect_eq "$(klog | grep -c 'loaded, ABI version')" 3 "load messages"
	expect_eq "$(klog | grep -c "add $DEV:")" 3 "ib_client add calls for $DEV"
	expect_eq "$(klog | grep -c "remove $DEV")" 3 "ib_client remove calls for $DEV"
	expect_eq "$(klog | grep -c 'unloading')" 3 "unload messages"
}
