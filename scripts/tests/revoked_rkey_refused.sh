# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# After IOCTL_REVOKE the old rkey is refused with EACCES, for that
# connection alone: another connection, live throughout, is untouched.

DESCRIPTION="after IOCTL_REVOKE the old rkey is refused, for that connection alone"

test_main() {
	ensure_loaded
	start_bystander "$PORT" 6
	start_target $((PORT + 1)) --len 4096 --access rw --fill 6
	local out
	out=$(initiator $((PORT + 1)) --scenario revoke) || fail "initiator: $out"
	# The target's connection broke with the refused READ.
	wait "$TARGET_PID" && fail "the target's connection did not fail"
	grep -q '^revoked$' "$T/target.$((PORT + 1))" || fail "target: $(cat "$T/target.$((PORT + 1))")"
	grep -q "^read with a revoked key refused: $REFUSED" <<<"$out" || fail "$out"
	echo "$out" | tail -1 | sed 's/^/  /'
	check_bystander "$PORT"
}
