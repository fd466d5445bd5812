# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Busy-polling connections (CONN_POLL) carry the same data: both ends
# polled, then a polled end against one reaped by the workqueue. 2 MiB
# messages and more fragments than receives make the credits come back
# through completions that only a waiting thread reaps.

DESCRIPTION="busy-polling connections carry the same data, and a signal ends a polled wait"

test_main() {
	ensure_loaded
	local sizes=2097152,1,65536,1048576,2097152,12345,1048576 out port poll
	for port in "$PORT" $((PORT + 1)); do
		poll=--poll
		[ $port = $((PORT + 1)) ] && poll=
		start_echo $port 7 $poll
		out=$("$TOOL" kernel-ping --connect "$IP:$port" --poll --sizes $sizes 2>&1) ||
			fail "kernel-ping --poll ($port): $out"
		wait "$ECHO_PID" || fail "kernel-echo $poll: $(cat "$T/echo.$port")"
		grep -q '^7 message(s) echoed and verified$' <<<"$out" || fail "$out"
		echo "  polled ping, echo ${poll:-with workqueue completions}: $sizes verified"
	done
	# A signal ends a polled wait too.
	interrupted_recv $((PORT + 2)) --poll
	echo "  polled recv: $INTR_LINE"
}
