# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Kernel to kernel over rxe loopback, two fds of the module: messages from
# 0 B to 1 MiB go out and come back, and the data is checked both ways.

DESCRIPTION="kernel to kernel, two fds: messages of 0 B to 1 MiB go out and come back, checked both ways"

test_main() {
	ensure_loaded
	start_echo "$PORT" 6
	local out
	out=$("$TOOL" kernel-ping --connect "$IP:$PORT" --sizes 1,4096,65536,1048576,12345,0 2>&1) || {
		kill "$ECHO_PID" 2>/dev/null || true
		wait "$ECHO_PID" || true
		fail "kernel-ping failed: $out" "(echo side: $(cat "$T/echo.$PORT"))"
	}
	echo "$out" | sed 's/^/  /'
	wait "$ECHO_PID" || fail "kernel-echo failed: $(cat "$T/echo.$PORT")"
	grep -q '^6 message(s) echoed and verified$' <<<"$out" || fail "not all verified"
	grep -q '^echoed 6 message(s)$' "$T/echo.$PORT" || fail "echo side: $(cat "$T/echo.$PORT")"
}
