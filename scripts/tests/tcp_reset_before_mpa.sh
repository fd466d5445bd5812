# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# iWARP listens on a TCP port, so anyone can open a TCP connection to a
# listener of the module and reset it before sending an MPA request: a port
# scan, a client that dies after its handshake, or a connecting siw whose
# own setup fails after TCP connects (what alloc_failure_sweep first showed
# on siw). 300 of those; then the same listener must still take a real
# connection and echo its message, and close cleanly. Before
# kernel/patches/0005, the reset of a connection siw had not yet accepted
# reached the listening endpoint (the new socket still carried it) and
# siw released the listener there: the real connect was refused, and the
# listener's close was a KASAN slab-use-after-free in siw_destroy_listen().
#
# Guards: ecbb32f and kernel/patches/0005 (the reset released siw's listener: refused connects, a use-after-free)

DESCRIPTION="TCP connections reset before their MPA request leave the iWARP listener working"

# RoCE has no TCP listener.
requires() {
	[ "$PROV" != rxe ] && return 0
	echo "on $PROV: RoCE runs over UDP: no TCP listener to reset (iWARP only)"
	return 1
}

test_main() {
	ensure_loaded
	start_echo "$PORT" 1
	local out
	out=$(run_bounded 120 "$KIT" tcp-reset --ip "$IP" --port "$PORT" --count 300) &&
		[[ "$out" =~ ^tcp-reset:\ 300\ connections:\ reset\ 300$ ]] &&
		echo "  $out" &&
		out=$("$TOOL" kernel-ping --connect "$IP:$PORT" --sizes 65536 2>&1) || {
		kill "$ECHO_PID" 2>/dev/null || true
		wait "$ECHO_PID" || true
		fail "after the resets: $out" "(echo side: $(cat "$T/echo.$PORT"))"
	}
	grep -q '^1 message(s) echoed and verified$' <<<"$out" || fail "not verified: $out"
	wait "$ECHO_PID" || fail "kernel-echo failed: $(cat "$T/echo.$PORT")"
	grep -q '^echoed 1 message(s)$' "$T/echo.$PORT" || fail "echo side: $(cat "$T/echo.$PORT")"
	rmmod rdma_krust || fail "rmmod failed"
	insmod "$KO" || fail "insmod failed"
}
