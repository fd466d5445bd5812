# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The module sends to the userspace peer, which echoes: 1 B to 1 MiB, data
# checked by the module's side after the round trip.
#
# Guards: 87948a8 (a receive failed on the credits it returned as the echoing side closed)

DESCRIPTION="the module sends to the userspace peer, which echoes: 1 B to 2 MiB, checked"

test_main() {
	ensure_loaded
	start_serve "$PORT" --mode echo --count 5
	local out
	out=$("$TOOL" kernel-ping --connect "$IP:$PORT" --sizes $SIZES 2>&1) || fail "kernel-ping: $out"
	wait "$SERVE_PID" || fail "serve: $(cat "$T/serve.$PORT")"
	grep -q '^5 message(s) echoed and verified$' <<<"$out" || fail "$out"
	grep -q '^echoed 5 message(s)$' "$T/serve.$PORT" || fail "serve: $(cat "$T/serve.$PORT")"
	echo "  kernel -> userspace -> kernel: $SIZES verified"
	# The last echo is 1 MiB: its receiver returns credits just as the
	# echoing side, done, closes. The receive must still succeed (it once
	# failed on that credit message).
	start_serve $((PORT + 1)) --mode echo --count 2
	out=$("$TOOL" kernel-ping --connect "$IP:$((PORT + 1))" --sizes 2097152,1048576 2>&1) ||
		fail "kernel-ping, last echo 1 MiB: $out"
	wait "$SERVE_PID" || fail "serve: $(cat "$T/serve.$((PORT + 1))")"
	grep -q '^2 message(s) echoed and verified$' <<<"$out" || fail "$out"
	echo "  2 MiB then 1 MiB, the last echo received as the peer closes: verified"
}
