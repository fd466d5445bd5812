# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The module's compiled command numbers (which encode sizes) equal the tool's.

DESCRIPTION="the module's compiled command numbers (which encode sizes) equal the tool's"

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" abi) || fail "rdma-krust-kit abi failed: $out"
	expect_eq "$out" "ABI version 11: 17 commands agree" "abi output"
}
