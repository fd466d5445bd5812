# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The examples of kernel::rdma ran as KUnit tests at boot: every one of
# kernel/rust/kernel/rdma/ (two fences an example) passed, and no doctest of
# the kernel crate failed. Examples that need a device are functions the
# test compiles but does not call; the runnable ones (access flags, region
# sizes) check values.

DESCRIPTION="every kernel::rdma example ran as a KUnit doctest at boot and passed"

# The kernel crate's doctests: CONFIG_RUST_KERNEL_DOCTESTS makes its
# examples a KUnit suite, which runs at boot (kunit.enable=1,
# scripts/qemu-guest.sh). Whether kernel::rdma's are among them is the
# test's business.
requires() {
	boot_log | grep -q '# Subtest: rust_doctests_kernel$' && return 0
	echo "KUnit ran no doctests of the kernel crate at boot (CONFIG_RUST_KERNEL_DOCTESTS, kunit.enable=1)"
	return 1
}

test_main() {
	local log ok failed want
	log=$(boot_log)
	ok=$(grep -E 'ok [0-9]+ rust_doctest_kernel_rdma_' <<<"$log" | grep -vc 'not ok' || true)
	failed=$(grep -c 'not ok [0-9]* rust_doctest_kernel_' <<<"$log" || true)
	want=$(($(cat "$ROOT"/kernel/rust/kernel/rdma/*.rs | grep -c '^ *///\s*```\s*$') / 2))
	echo "  kernel::rdma doctests passed: $ok of $want; $(grep -o '# rust_doctests_kernel: .*' <<<"$log" | tail -1)"
	expect_eq "$failed" 0 "failed kernel crate doctests"
	expect_eq "$ok" "$want" "kernel::rdma doctests passed"
}
