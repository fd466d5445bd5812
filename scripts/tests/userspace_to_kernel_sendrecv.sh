# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The userspace peer sends to the module, which echoes.
#
# Guards: 87948a8 (a receive failed on the credits it returned as the echoing side closed)

DESCRIPTION="the userspace peer sends to the module, which echoes: 1 B to 2 MiB, checked"

test_main() {
	ensure_loaded
	start_echo "$PORT" 5
	local out
	out=$("$TOOL" ping --connect "$IP:$PORT" --sizes $SIZES 2>&1) || fail "ping: $out"
	wait "$ECHO_PID" || fail "kernel-echo: $(cat "$T/echo.$PORT")"
	grep -q '^5 message(s) echoed and verified$' <<<"$out" || fail "$out"
	echo "  userspace -> kernel -> userspace: $SIZES verified"
	# As in kernel_to_userspace_sendrecv: the last echo is 1 MiB.
	start_echo $((PORT + 1)) 2
	out=$("$TOOL" ping --connect "$IP:$((PORT + 1))" --sizes 2097152,1048576 2>&1) ||
		fail "ping, last echo 1 MiB: $out"
	wait "$ECHO_PID" || fail "kernel-echo: $(cat "$T/echo.$((PORT + 1))")"
	grep -q '^2 message(s) echoed and verified$' <<<"$out" || fail "$out"
	echo "  2 MiB then 1 MiB, the last echo received as the peer closes: verified"
}
