# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The same C program built 64-bit on include/uapi/linux/rdma_krust.h, as a
# C user would build it (gcc -I include/uapi): it lists the devices ($DEV
# among them, its name and ports as the tool reports them) and passes the
# same five checks.

DESCRIPTION="a C program built on the uapi header lists the devices and passes the same checks"

test_main() {
	ensure_loaded
	local out
	out=$("$ROOT/userspace-peer/target/uapi64" $DEV 2>&1) || fail "uapi64: $out"
	echo "$out" | sed 's/^/  /'
	grep -q "^checking as a 64-bit caller" <<<"$out" || fail "not a 64-bit build"
	expect_eq "$(grep -c "^ok " <<<"$out")" 5 "checks passed"
	grep -q "^device $DEV: " <<<"$out" || fail "$DEV not listed"
	expect_eq "$(grep -c '^device ' <<<"$out")" "$("$TOOL" devices -j | grep -o '"name"' | wc -l)" "devices listed, against rdma-krust devices -j"
}
