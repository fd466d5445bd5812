# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A connection with fewer receives (--recv-depth, the transport's
# recv_depth) holds less memory; each side tells the other its depth while
# connecting, as nvme-rdma tells its queue sizes. Since wire version 2 a
# message takes one receive, inline or announced and READ, so any depth
# carries the largest message: module to module at depth 6 both ends
# report 6 and carry 2 MiB both ways; a byte more than 2 MiB is EMSGSIZE
# before anything is sent, from either sender; the module at depth 2 (the
# least, where every receive reposted must be granted at once) meets the
# userspace peer at 40, and streams one way to a sink of depth 2.
DESCRIPTION="a smaller receive depth is told to the peer and still carries 2 MiB messages; a byte more is EMSGSIZE"

test_main() {
	ensure_loaded
	local most=2097152 out port=$PORT
	start_echo $port 4 --recv-depth 6
	out=$("$TOOL" kernel-ping --recv-depth 6 --connect "$IP:$port" --sizes $most,1,$most,0 2>&1) ||
		fail "kernel-ping at depth 6: $out" "(echo side: $(cat "$T/echo.$port"))"
	wait "$ECHO_PID" || fail "kernel-echo at depth 6: $(cat "$T/echo.$port")"
	grep -q '^4 message(s) echoed and verified$' <<<"$out" || fail "$out"
	grep -q ' recv_depth=6 peer_recv_depth=6 ' <<<"$out" || fail "ping's depths: $out"
	grep -q ' recv_depth=6 peer_recv_depth=6 ' "$T/echo.$port" ||
		fail "echo's depths: $(cat "$T/echo.$port")"
	echo "  depth 6 both ends: $most bytes and back, verified"
	local sender
	for sender in kernel-ping ping; do
		port=$((port + 1))
		start_echo $port 1 --recv-depth 6
		out=$("$TOOL" "$sender" --connect "$IP:$port" --sizes $((most + 1)) 2>&1) &&
			fail "$sender: $((most + 1)) bytes went: $out"
		kill "$ECHO_PID" 2>/dev/null || true
		wait "$ECHO_PID" || true
		grep -q "send message 0 ($((most + 1)) bytes): .*Message too long" <<<"$out" ||
			fail "$sender: not EMSGSIZE: $out"
		echo "  $sender: $((most + 1)) bytes: EMSGSIZE"
	done
	port=$((port + 1))
	start_echo $port 3 --recv-depth 2
	out=$("$TOOL" ping --connect "$IP:$port" --sizes 8176,0,$most 2>&1) ||
		fail "ping to depth 2: $out" "(echo side: $(cat "$T/echo.$port"))"
	wait "$ECHO_PID" || fail "kernel-echo at depth 2: $(cat "$T/echo.$port")"
	grep -q ' recv_depth=2 peer_recv_depth=40 ' "$T/echo.$port" ||
		fail "echo's depths: $(cat "$T/echo.$port")"
	grep -q '^3 message(s) echoed and verified$' <<<"$out" || fail "$out"
	echo "  module at 2, userspace peer at 40: verified both ways"
	port=$((port + 1))
	start_echo $port 12 --sink --seed 5 --recv-depth 2
	out=$("$TOOL" kernel-ping --recv-depth 2 --connect "$IP:$port" --seed 5 --one-way \
		--sizes 8176,1,$most,8177,0,8176,4096,65536,8176,$most,7,8176 2>&1) ||
		fail "stream at depth 2: $out" "(sink: $(cat "$T/echo.$port"))"
	wait "$ECHO_PID" || fail "sink at depth 2: $(cat "$T/echo.$port")"
	grep -q '^12 message(s) streamed and verified by the sink$' <<<"$out" || fail "$out"
	echo "  one-way stream of 12 at depth 2: verified by the sink"
}
