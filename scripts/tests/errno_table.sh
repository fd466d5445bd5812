# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Every invalid input of the ABI table gets its errno.

DESCRIPTION="every invalid input of the ABI table gets its errno"

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" errno-check)
	local rc=$?
	echo "$out" | sed 's/^/  /'
	[ $rc = 0 ] || fail "errno-check failed"
	expect_eq "$(grep -c '^ok ' <<<"$out")" 35 "cases passed"
}
