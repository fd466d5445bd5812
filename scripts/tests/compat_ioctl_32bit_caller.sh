# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A 32-bit program (scripts/compat32.c, gcc -m32 -static) calls the ioctls
# on the 64-bit kernel: IOCTL_VERSION (ABI version, and the module's command
# numbers equal the ones the 32-bit macros make), IOCTL_LIST_DEVICES through
# a 32-bit pointer in the u64 field ($DEV listed), EFAULT for a bad one,
# ENOTTY for an unknown command. Without compat_ioctl every call was ENOTTY.
#
# Guards: c437eca (compat_ioctl: without it every call was ENOTTY)

DESCRIPTION="a 32-bit program calls the ioctls on the 64-bit kernel"

test_main() {
	ensure_loaded
	local out
	out=$("$ROOT/userspace-peer/target/compat32" $DEV 2>&1) || fail "compat32: $out"
	echo "$out" | sed 's/^/  /'
	expect_eq "$(grep -c "^ok " <<<"$out")" 5 "checks passed"
}
