#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0002 ("RDMA/siw: Fix a CM event dropped when the work pool
# is empty"), with rdma-core's rping and plain TCP sockets (mpa.py).
#
# A siw client (rping -c) connects to a peer written with plain sockets,
# which answers its MPA request in five TCP segments and half-closes the
# connection (a FIN) at once, while siw's connection-management workqueue,
# which runs one item at a time, is kept busy by 40 other connections to a
# siw listener that each send a byte. Each segment takes one of the
# client endpoint's four work items (one is held by its MPA timer), so the
# FIN finds none left. Without the fix siw drops the close: the client's
# QP stays up on a half-closed socket and rping waits for ever. With it
# siw closes the connection, rping fails at once and the peer reads the
# end of the stream.
#
#   0002-siw-cm-event-dropped.sh ADDR [PORT]
#
# Exit 0: every round's close was seen; 1: one was lost; 2: could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7172}
rounds=${REPRO_ROUNDS:-12}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
command -v rping >/dev/null || { echo "repro 0002: rping missing (rdmacm-utils)"; exit 2; }

load_listener 0002 $((port + 1))

for round in $(seq "$rounds"); do
	# The peer: "ready" once listening, then one line of verdict.
	REPRO_DIR=$repro_dir python3 - "$addr" "$port" $((port + 1)) >"$tmp/peer" 2>&1 <<'PY' &
import os, socket, sys, time
sys.path.insert(0, os.environ["REPRO_DIR"])
import mpa
addr, port, load_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dummies = mpa.busy_cm(addr, load_port)
lsock = mpa.listen(addr, port)
print("ready", flush=True)
lsock.settimeout(30)
conn, _ = lsock.accept()
mpa.nodelay(conn)
req = mpa.read_request_or_reply(conn)
reply = mpa.reply_to(req)
mpa.kick(dummies)
step = -(-len(reply) // 5)
for i in range(0, len(reply), step):
    conn.send(reply[i:i + step])
conn.shutdown(socket.SHUT_WR)
conn.settimeout(12)
start, got, state = time.monotonic(), 0, "closed"
try:
    while chunk := conn.recv(65536):
        got += len(chunk)
except socket.timeout:
    state = "open"
except ConnectionResetError:
    pass
print(f"{state} after {time.monotonic() - start:.1f} s, {got} bytes read", flush=True)
PY
	peer=$!
	wait_for "$tmp/peer" ready || { echo "repro 0002: the peer did not start:"; cat "$tmp/peer"; exit 2; }
	timeout 20 rping -c -v -a "$addr" -p "$port" -C 1 -S 64 >"$tmp/rping" 2>&1
	rc=$?
	if grep -q "Address already in use" "$tmp/rping"; then
		# rdma_cm gave the client a source port a TCP socket of an
		# earlier round still holds: no connection, nothing shown. The
		# round again.
		kill $peer 2>/dev/null
		wait $peer 2>/dev/null
		echo "repro 0002: round $round: rping's source port was in use (EADDRINUSE), the round again"
		continue
	fi
	wait $peer
	verdict=$(sed -n 's/^\(closed\|open\)/&/p' "$tmp/peer")
	echo "repro 0002: round $round: rping exit $rc ($(tail -1 "$tmp/rping")), the peer's socket: ${verdict:-no answer}"
	case "${verdict:-}" in
	closed*) ;;
	open*)
		echo "repro 0002: bug: round $round's close was lost (the client's QP stayed up)"
		exit 1
		;;
	*)
		echo "repro 0002: the peer failed:"
		cat "$tmp/peer" "$tmp/rping"
		exit 2
		;;
	esac
done
echo "repro 0002: fixed: siw saw all $rounds closes"
exit 0
