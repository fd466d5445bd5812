# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Messages the peer finished before it disconnected are delivered, whole,
# even when the disconnect is handled before their completions are: then
# the close (ECONNRESET). A polled receiver makes the order certain: it
# starts after the disconnect is in, and each of its waits reaps at most 16
# completions. Before the fix a receive that met the close returned
# ECONNRESET with the rest of a message still in the CQ. Then a 2 MiB
# message, announced and READ (wire version 2): the receiver READs it as
# it arrives (read_work), the sender's close waits for its DONE, and the
# receiver, holding for seconds after the close, still gets it whole.
# Last, a polled receiver, which READs only when its caller receives,
# holds 25 s before it does: the sender's close waits as long as its SEND
# would have (--msg-timeout-ms 90000). Before the fix the close waited the
# default 20 s and the message was lost (the two-host
# lossy_ack_timeout_table lost a 2 MiB echo so at ACK timeout 18).
#
# Guards: 371eb26 (a whole message whose last completion was still in the CQ got ECONNRESET)
DESCRIPTION="a message the peer finished before it disconnected is delivered whole, then the close"

test_main() {
	ensure_loaded
	local port=$PORT out sizes
	sizes=$(printf '8176,%.0s' $(seq 15))
	sizes=${sizes%,}
	"$KIT" kernel-echo --listen "$IP:$port" --count 15 --poll --sink --hold-ms 60000 >"$T/echo.$port" 2>&1 &
	ECHO_PID=$!
	wait_for 10 grep -q '^listening' "$T/echo.$port" || fail "listener on $port: $(cat "$T/echo.$port")"
	out=$("$KIT" kernel-ping --connect "$IP:$port" --one-way --no-verdict --sizes "$sizes" 2>&1) ||
		fail "kernel-ping: $out"
	grep -q '^disconnected in [0-9]* ms$' <<<"$out" || fail "kernel-ping: $out"
	# The sink's verdict then meets the closed connection: ECONNRESET,
	# which it takes as the peer's goodbye.
	wait "$ECHO_PID" || fail "sink: $(cat "$T/echo.$port")"
	out=$(cat "$T/echo.$port")
	grep -q '^after holding: conn: .* state=CLOSED ' <<<"$out" ||
		fail "the disconnect was not in before the receive: $out"
	[ "$(grep -c '^ok 8176 bytes$' <<<"$out")" = 15 ] || fail "not 15 messages delivered: $out"
	echo "  polled sink: 15 messages of 8176 bytes delivered after the close"
	port=$((port + 1))
	"$KIT" kernel-echo --listen "$IP:$port" --count 1 --sink --hold-ms 5000 >"$T/echo.$port" 2>&1 &
	ECHO_PID=$!
	wait_for 10 grep -q '^listening' "$T/echo.$port" || fail "listener on $port: $(cat "$T/echo.$port")"
	out=$("$KIT" kernel-ping --connect "$IP:$port" --one-way --no-verdict --sizes 2097152 2>&1) ||
		fail "kernel-ping: $out"
	grep -q "^sent 2097152 bytes$" <<<"$out" || fail "kernel-ping: $out"
	grep '^disconnected in [0-9]* ms$' <<<"$out" | sed 's/^/  sender: /'
	wait "$ECHO_PID" || fail "sink: $(cat "$T/echo.$port")"
	out=$(cat "$T/echo.$port")
	grep -q '^after holding: conn: .* state=CLOSED ' <<<"$out" ||
		fail "the disconnect was not in before the receive: $out"
	grep -q "^ok 2097152 bytes$" <<<"$out" || fail "the announced message was not delivered: $out"
	echo "  sink: 2 MiB, announced, READ ahead, delivered after the close"
	port=$((port + 1))
	"$KIT" kernel-echo --listen "$IP:$port" --count 1 --sink --poll --hold-ms 25000 >"$T/echo.$port" 2>&1 &
	ECHO_PID=$!
	wait_for 10 grep -q '^listening' "$T/echo.$port" || fail "listener on $port: $(cat "$T/echo.$port")"
	out=$("$KIT" --msg-timeout-ms 90000 kernel-ping --connect "$IP:$port" --one-way --no-verdict \
		--sizes 2097152 2>&1) || fail "kernel-ping: $out"
	grep -q "^sent 2097152 bytes$" <<<"$out" || fail "kernel-ping: $out"
	local ms
	ms=$(sed -n 's/^disconnected in \([0-9]*\) ms$/\1/p' <<<"$out")
	[ -n "$ms" ] || fail "kernel-ping: $out"
	wait "$ECHO_PID" || fail "sink: $(cat "$T/echo.$port")"
	out=$(cat "$T/echo.$port")
	grep -q "^ok 2097152 bytes$" <<<"$out" || fail "the message READ 25 s late was not delivered: $out"
	[ "$ms" -ge 20000 ] || fail "the sender closed after $ms ms, before the late READ"
	echo "  polled sink, READ 25 s late: 2 MiB delivered, the sender's close waited $ms ms"
}
