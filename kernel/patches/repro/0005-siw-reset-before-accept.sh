#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0005 ("RDMA/siw: Fix a reset before accept releasing the
# listener"), with rdma-core's rping and plain TCP sockets only.
#
# A siw listener (rping -s) gets 300 TCP connections that are reset as soon
# as they are made (SO_LINGER 0), as a port scan does; then a real rping
# client connects. Without the fix, a reset that siw sees before it
# accepted the connection closes the listening socket: the client is
# refused (and closing the listener may touch freed memory: KASAN reports
# a slab-use-after-free in siw_destroy_listen()). With it, the client's
# ping completes.
#
#   0005-siw-reset-before-accept.sh ADDR [PORT]
#
# ADDR: an address of a siw device's netdev. Exit 0: the listener
# survived; 1: the bug; 2: could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7174}
command -v rping >/dev/null || { echo "repro 0005: rping missing (rdmacm-utils)"; exit 2; }

rping -s -a "$addr" -p "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
sleep 1
kill -0 $server 2>/dev/null || { echo "repro 0005: rping -s did not start"; exit 2; }

python3 - "$addr" "$port" <<'PY' || exit 2
import socket, struct, sys
addr, port = sys.argv[1], int(sys.argv[2])
refused = 0
for _ in range(300):
    try:
        s = socket.create_connection((addr, port), timeout=5)
    except ConnectionRefusedError:
        refused += 1
        continue
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    s.close()
print(f"repro 0005: 300 TCP connects reset, {refused} refused")
PY
sleep 1
if timeout 20 rping -c -a "$addr" -p "$port" -C 3 -S 64 >/dev/null 2>&1; then
	echo "repro 0005: fixed: rping connects after 300 resets"
	exit 0
fi
echo "repro 0005: bug: rping refused after 300 resets (the listener is gone)"
exit 1
