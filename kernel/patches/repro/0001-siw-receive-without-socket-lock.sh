#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0001 ("RDMA/siw: Fix the receive path run without the
# socket lock"), with rdma-core's rping and plain TCP sockets (mpa.py).
#
# Eight siw clients (rping -c) connect to a peer written with plain sockets,
# which sends each its MPA reply and, right behind it, two seconds of
# zero-length RDMA WRITEs (valid FPDUs that need no memory registered),
# while siw's connection-management workqueue, which runs one item at a
# time, is kept busy by 40 other connections to a siw listener that each
# send a byte. The segments that arrive before the reply is processed
# each queue a work item; those that run after it find the endpoint in
# RDMA mode and, without the fix, read the socket from the workqueue
# without its lock, while the softirq reads it for the next segment: the
# kernel warns in __tcp_read_sock(), frees an skb twice, or hangs. With
# the fix the work takes the socket lock and nothing is reported.
#
#   0001-siw-receive-without-socket-lock.sh ADDR [PORT]
#
# Exit 0: nothing reported in any round; 1: the kernel reported it; 2:
# could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7170}
rounds=${REPRO_ROUNDS:-25}
clients=8
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
command -v rping >/dev/null || { echo "repro 0001: rping missing (rdmacm-utils)"; exit 2; }

load_listener 0001 $((port + 1))
dmesg -C

# Up to 25 rounds, or as many as fit in 150 s (the kernel that has the fix
# is slower here).
end=$((SECONDS + 150))
round=0
while [ $round -lt "$rounds" ] && [ $SECONDS -lt $end ]; do
	round=$((round + 1))
	# The peer: "ready" once listening, then how much it sent.
	REPRO_DIR=$repro_dir python3 - "$addr" "$port" $((port + 1)) $clients >"$tmp/peer" 2>&1 <<'PY' &
import os, socket, sys, threading, time
sys.path.insert(0, os.environ["REPRO_DIR"])
import mpa
addr, port, load_port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
dummies = mpa.busy_cm(addr, load_port)
lsock = mpa.listen(addr, port)
print("ready", flush=True)
# The clients that come within 20 s (an rping -c that fails to connect
# must not leave the round waiting).
lsock.settimeout(20)
conns = []
try:
    for _ in range(n):
        conn, _ = lsock.accept()
        conn.settimeout(20)
        conns.append((mpa.nodelay(conn), mpa.reply_to(mpa.read_request_or_reply(conn))))
except (socket.timeout, TypeError):
    pass
n = len(conns)
mpa.kick(dummies)
sent = [0] * n
def flood(i):
    conn, reply = conns[i]
    burst = mpa.zero_write() * 50
    end = time.monotonic() + 2
    conn.settimeout(2)
    try:
        conn.send(reply)
        while time.monotonic() < end:
            conn.send(burst)
            sent[i] += 50
    except OSError:
        pass
threads = [threading.Thread(target=flood, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"sent {sum(sent)} WRITEs on {n} connections", flush=True)
PY
	peer=$!
	wait_for "$tmp/peer" ready || { echo "repro 0001: the peer did not start:"; cat "$tmp/peer"; exit 2; }
	pids=()
	for _ in $(seq $clients); do
		timeout 20 rping -c -a "$addr" -p "$port" -C 1 -S 64 >/dev/null 2>&1 &
		pids+=($!)
	done
	wait $peer
	# The peer has gone: each client's connection was reset.
	sleep 1
	left=0
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && left=$((left + 1))
	done
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	report=$(dmesg | grep -E -m3 'WARNING|BUG|Oops|refcount_t|list_(add|del) corruption')
	echo "repro 0001: round $round: $(tail -1 "$tmp/peer"), $left clients still up 1 s after${report:+; the kernel: }$(head -1 <<<"$report")"
	if [ -n "$report" ]; then
		echo "repro 0001: bug: the receive path ran without the socket lock:"
		sed 's/^/  /' <<<"$report"
		exit 1
	fi
done
echo "repro 0001: fixed: $round rounds, nothing reported"
exit 0
