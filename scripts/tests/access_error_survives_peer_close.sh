# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The target of a WRITE across its window's end closes as soon as it sees
# the access error, so the initiator's DISCONNECTED can be handled before
# rxe has processed the NAK that answers the WRITE. The module failed the
# QP at once, rxe dropped the NAK, and the WRITE completed flushed:
# ECONNRESET instead of the peer's EACCES (access_outside_window_is_contained
# failed so in about 1 of 20 suite runs). Two CPU hogs widen the window. On
# iWARP the closed stream ends what is in flight (REFUSED is ECONNRESET
# there, providers.rst), so this runs on IB and RoCE only. Rounds:
# KRUST_ACCESS_CLOSE_ROUNDS, by default 30 (10 on the debug kernel).
#
# Guards: the deferred hang-up of one-sided steps (src/conn/cm.rs,
# Conn::defer_hang_up)

DESCRIPTION="a WRITE the peer refused fails with EACCES when the peer closes right after, under CPU load"

requires() {
	[ "$PROV" != siw ] && return 0
	echo "on $PROV: iWARP's closed stream ends what is in flight; access_outside_window_is_contained checks its errno"
	return 1
}

test_main() {
	ensure_loaded
	local i n=${KRUST_ACCESS_CLOSE_ROUNDS:-$(rounds 30 10)} port out bad=()
	start_hogs 2
	for ((i = 0; i < n; i++)); do
		port=$((PORT + i))
		start_target "$port" --len 4096 --fill 3 --access rw
		out=$(initiator "$port" --scenario outside-write --seed 3 2>&1)
		wait "$TARGET_PID" && bad+=("round $i: the target did not see its connection fail")
		grep -q "^write across the window's end refused: EACCES" <<<"$out" ||
			bad+=("round $i: $(tail -1 <<<"$out")")
		grep -q '^window intact after the failure$' "$T/target.$port" ||
			bad+=("round $i, target: $(tail -1 "$T/target.$port")")
	done
	stop_hogs
	echo "  $n rounds of a refused WRITE whose target closes at once, ${#bad[@]} wrong"
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}")"
}
