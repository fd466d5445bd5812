# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A message the peer finished before it disconnected is delivered, whole,
# even when the disconnect is handled before the message's completions
# are: then the close (ECONNRESET). A polled receiver makes the order
# certain: it starts after the disconnect is in, and each of its waits
# reaps at most 16 completions (the turn's wait, then the message's), while
# the 2 MiB message takes 33 receives. Before the fix the receive saw 32
# fragments and the close, and returned ECONNRESET with the last fragment
# still in the CQ.
#
# Guards: 371eb26 (a whole message whose last completion was still in the CQ got ECONNRESET)

DESCRIPTION="a message the peer finished before it disconnected is delivered whole, then the close"

test_main() {
	ensure_loaded
	local port=$PORT out
	"$KIT" kernel-echo --listen "$IP:$port" --count 1 --poll --sink --hold-ms 60000 >"$T/echo.$port" 2>&1 &
	ECHO_PID=$!
	wait_for 10 grep -q '^listening' "$T/echo.$port" || fail "listener on $port: $(cat "$T/echo.$port")"
	out=$("$KIT" kernel-ping --connect "$IP:$port" --one-way --no-verdict --sizes 2097152 2>&1) ||
		fail "kernel-ping: $out"
	grep -q "^sent 2097152 bytes$" <<<"$out" || fail "kernel-ping: $out"
	grep -q '^disconnected in [0-9]* ms$' <<<"$out" || fail "kernel-ping: $out"
	# The sink's verdict then meets the closed connection: ECONNRESET,
	# which it takes as the peer's goodbye.
	wait "$ECHO_PID" || fail "sink: $(cat "$T/echo.$port")"
	out=$(cat "$T/echo.$port")
	echo "$out" | grep -v '^listening' | sed 's/^/  sink: /'
	grep -q '^after holding: conn: .* state=CLOSED ' <<<"$out" ||
		fail "the disconnect was not in before the receive"
	grep -q "^ok 2097152 bytes$" <<<"$out" || fail "the message was not delivered whole"
}
