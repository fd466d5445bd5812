# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The node is root-only: mode 0600, and another user gets EACCES.

DESCRIPTION="the node is root-only: mode 0600, and another user gets EACCES"

test_main() {
	ensure_loaded
	expect_eq "$(stat -c '%a %U %G %F' /dev/rdma_krust)" "600 root root character special file" "node"
	local err
	err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$TOOL" devices 2>&1) &&
		fail "an unprivileged user could use the device"
	[[ "$err" == *"Permission denied (os error 13)"* ]] || fail "unexpected error: $err"
}
