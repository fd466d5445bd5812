# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Names and GUIDs: ioctl view == libibverbs view == rdma-core's ibv_devices.

DESCRIPTION="names and GUIDs: the ioctl view, the libibverbs view and ibv_devices agree"

test_main() {
	ensure_loaded
	local ours verbs ibv
	ours=$("$TOOL" devices --brief) || fail "devices failed"
	verbs=$("$TOOL" devices --verbs --brief) || fail "devices --verbs failed"
	[ -n "$ours" ] || fail "the module lists no device"
	expect_eq "$ours" "$verbs" "ioctl list vs libibverbs list"
	ibv=$(ibv_devices | awk 'NR > 2 { print $1, $2 }' | sort)
	expect_eq "$(tr -d : <<<"$ours")" "$ibv" "ioctl list vs ibv_devices"
}
