# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Every attribute: ioctl view == libibverbs view, and the limits equal what
# ibv_devinfo -v prints.

DESCRIPTION="every attribute: the ioctl view equals the libibverbs view, the limits what ibv_devinfo -v prints"

test_main() {
	ensure_loaded
	local ours verbs line
	# MAX_WINDOW, the last column, only the module knows.
	ours=$("$TOOL" devices | tail -n +2 | sed 's/ *[^ ]*$//')
	verbs=$("$TOOL" devices --verbs | tail -n +2 | sed 's/ *[^ ]*$//')
	expect_eq "$ours" "$verbs" "full table, ioctl vs libibverbs"
	line=$(grep "^$DEV " <<<"$ours") || fail "$DEV missing: $ours"
	local info rd init cap mr
	info=$(ibv_devinfo -v -d $DEV)
	rd=$(awk '/max_qp_rd_atom:/ { print $2 }' <<<"$info")
	init=$(awk '/max_qp_init_rd_atom:/ { print $2 }' <<<"$info")
	cap=$(awk '/atomic_cap:/ { print $2 }' <<<"$info")
	mr=$(awk '/max_mr_size:/ { print $2 }' <<<"$info")
	set -- $line
	expect_eq "$4" "$rd" "max_qp_rd_atom"
	expect_eq "$5" "$init" "max_qp_init_rd_atom"
	expect_eq "ATOMIC_$6" "$cap" "atomic_cap"
	expect_eq "$7" "$mr" "max_mr_size"
	[[ "$3" == 1:ACTIVE/*/Eth ]] || fail "port 1 of $DEV: $3"
}
