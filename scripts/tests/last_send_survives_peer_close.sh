# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The echo side closes as soon as it has echoed the last message, so the
# pinging side's DISCONNECTED can be handled before the acknowledgement of
# its own last SEND. rxe drops acknowledgements it has not processed once
# the QP is in the error state: the module, which failed the QP at once,
# reported that delivered SEND as ECONNRESET. Two CPU hogs widen the window
# (without them it failed about once in 60 suite runs, with them in 3 of 30
# rounds). siw failed such a SEND in its own transmit path, fixed in the
# test kernels. Every round must succeed on both sides, data verified. 30
# rounds a side on the main kernel, 10 on the debug kernel (rounds()).
#
# Guards: b69cafe (on IB and RoCE, a peer's close waits for the SENDs in flight)
# Guards: kernel/patches/0007 (siw completes a request whose last segment went out)

DESCRIPTION="a SEND the peer received is not failed by the peer's close right after it, under CPU load"

test_main() {
	ensure_loaded
	local i n who out bad=()
	n=$(rounds 30 10)
	start_hogs 2
	for who in kernel-ping ping; do
		for ((i = 0; i < n; i++)); do
			start_echo $((PORT + i)) 2
			out=$("$TOOL" "$who" --connect "$IP:$((PORT + i))" --sizes 65536,0 2>&1) ||
				bad+=("$who round $i: $(tail -1 <<<"$out")")
			grep -q '^2 message(s) echoed and verified$' <<<"$out" ||
				bad+=("$who round $i: not verified")
			wait "$ECHO_PID" || bad+=("$who round $i, echo side: $(tail -1 "$T/echo.$((PORT + i))")")
		done
		echo "  $who: $n rounds, the last SEND of each side as its peer closes"
	done
	stop_hogs
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}")"
}
