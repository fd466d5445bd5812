#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0007 ("RDMA/siw: Fix a request failed after its last
# segment went out"), with rdma-core's libraries (rc.c) and plain TCP
# sockets (mpa.py).
#
# A siw client (rc send) streams 16 KiB SENDs, each one FPDU, to a peer
# written with plain sockets, which reads them and, after the 20th whole
# message, half-closes the connection (a FIN) but reads on to the end.
# Without the fix a SEND whose last segment was sent when the FIN arrived
# completes with an error (IB_WC_LOC_QP_OP_ERR) although the peer read all
# of it. With it every SEND the peer read whole completed successfully.
#
#   0007-siw-request-failed-after-last-segment.sh ADDR [PORT]
#
# Exit 0: no delivered SEND failed in any round; 1: one did; 2: could not
# run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7177}
rounds=${REPRO_ROUNDS:-30}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
build_rc 0007

for round in $(seq "$rounds"); do
	# The peer: "ready" once listening, then the numbers of the messages
	# it read whole, one a line.
	REPRO_DIR=$repro_dir python3 - "$addr" "$port" >"$tmp/peer" 2>&1 <<'PY' &
import os, socket, struct, sys
sys.path.insert(0, os.environ["REPRO_DIR"])
import mpa
lsock = mpa.listen(sys.argv[1], int(sys.argv[2]))
print("ready", flush=True)
lsock.settimeout(30)
conn, _ = lsock.accept()
conn.sendall(mpa.reply_to(mpa.read_request_or_reply(conn)))
conn.settimeout(10)
whole, seq = 0, None
try:
    for ctrl, rest in mpa.fpdus(conn):
        if ctrl & mpa.DDP_TAGGED or (ctrl & 0xF) not in mpa.OPS_SEND:
            continue
        # Untagged header: invalidate STag, queue number, MSN, offset.
        _, qn, msn, mo = struct.unpack(">IIII", rest[:16])
        if mo == 0:
            seq = struct.unpack(">I", rest[16:20])[0]
        if ctrl & mpa.DDP_LAST and seq is not None:
            print(f"whole {seq}", flush=True)
            whole += 1
            if whole == 20:
                conn.shutdown(socket.SHUT_WR)
except (socket.timeout, ConnectionResetError):
    pass
print("end", flush=True)
PY
	peer=$!
	wait_for "$tmp/peer" ready || { echo "repro 0007: the peer did not start:"; cat "$tmp/peer"; exit 2; }
	timeout 60 "$tmp/rc" send "$addr" "$port" 16384 100000 >"$tmp/rc.out" 2>&1
	rc=$?
	wait $peer
	[ $rc = 0 ] || { echo "repro 0007: rc send failed ($rc):"; cat "$tmp/rc.out"; exit 2; }
	# A SEND that failed at the sender but that the peer read whole.
	bad=$(awk 'FNR == NR && $1 == "whole" { got[$2] = 1; next }
		$1 == "failed" && got[$2] { print $2 " (status " $3 ")" }' "$tmp/peer" "$tmp/rc.out")
	echo "repro 0007: round $round: $(tail -1 "$tmp/rc.out"); the peer read $(grep -c '^whole' "$tmp/peer") whole;" \
		"failed: $(awk '$1 == "failed" { printf "%s(%s) ", $2, $3 }' "$tmp/rc.out")"
	if [ -n "$bad" ]; then
		echo "repro 0007: bug: SEND $bad failed, yet the peer had read all of it"
		exit 1
	fi
done
echo "repro 0007: fixed: $rounds rounds, every SEND the peer read whole completed successfully"
exit 0
