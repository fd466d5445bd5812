#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0001 ("RDMA/siw: Fix the receive path run without the
# socket lock"), with rdma-core's rping and plain TCP sockets (mpa.py).
#
# Eight siw clients (rping -c) connect to a peer written with plain sockets,
# which sends each its MPA reply, announcing the largest IRD (16383: the
# client then allocates an ORQ of 16384 entries, 2 MiB, inside the window
# below, which widens it), then one zero-length RDMA WRITE (a valid FPDU
# that needs no memory registered) 0 to 1.5 ms later, then two seconds of
# them, while siw's connection-management workqueue, which
# runs one item at a time, is kept busy by 40 other connections to a siw
# listener that each send a byte. A segment that arrives while the
# client's work item has read the reply but not yet handed the socket to
# the QP queues one more work item (one that arrives before the read is
# refused as data behind the reply: the delay sweeps the window); that
# item runs in RDMA mode and, without the fix, reads the socket from the
# workqueue without its lock, while the softirq reads it for the next
# segment: the kernel warns in __tcp_read_sock(), siw parses the stream
# at a wrong offset ("received rdmap version unsupported"), frees an skb
# twice, or hangs. The window is short: a round hits only now and then,
# so up to 60 rounds run (7 minutes), stopping at the first report. With
# the fix the work takes the socket lock and nothing is reported.
#
#   0001-siw-receive-without-socket-lock.sh ADDR [PORT]
#
# Exit 0: nothing reported in any round; 1: the kernel reported it; 2:
# could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7170}
rounds=${REPRO_ROUNDS:-60}
clients=8
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
command -v rping >/dev/null || { echo "repro 0001: rping missing (rdmacm-utils)"; exit 2; }

load_listener 0001 $((port + 1))
dmesg -C

# Up to 60 rounds, or as many as fit in 420 s (the kernel that has the fix
# is slower here).
end=$((SECONDS + 420))
round=0
while [ $round -lt "$rounds" ] && [ $SECONDS -lt $end ]; do
	round=$((round + 1))
	# The peer: "ready" once listening, then how much it sent.
	REPRO_DIR=$repro_dir python3 - "$addr" "$port" $((port + 1)) $clients $round >"$tmp/peer" 2>&1 <<'PY' &
import os, socket, sys, threading, time
sys.path.insert(0, os.environ["REPRO_DIR"])
import mpa
addr, port, load_port, n, rnd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
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
        conns.append((mpa.nodelay(conn), mpa.reply_to(mpa.read_request_or_reply(conn), ird=mpa.IRD_ORD_MASK)))
except (socket.timeout, TypeError):
    pass
n = len(conns)
mpa.kick(dummies)
sent = [0] * n
def flood(i):
    conn, reply = conns[i]
    one = mpa.zero_write()
    burst = one * 50
    end = time.monotonic() + 2
    conn.settimeout(2)
    try:
        conn.send(reply)
        # The window: a segment that comes while the client's work item
        # has read the reply but not yet handed the socket to the QP
        # queues the work item that runs unlocked. Sooner, siw refuses
        # it as data behind the reply; later, no work item. Each
        # connection of each round waits a little longer (0 to 1.5 ms).
        time.sleep(((rnd * n + i) % 16) * 0.0001)
        conn.send(one)
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
	report=$(dmesg | grep -E -m3 'WARNING|BUG|Oops|refcount_t|list_(add|del) corruption|siw: received (rdmap|ddp) version unsupported')
	echo "repro 0001: round $round: $(tail -1 "$tmp/peer"), $left clients still up 1 s after${report:+; the kernel: }$(head -1 <<<"$report")"
	if [ -n "$report" ]; then
		echo "repro 0001: bug: the receive path ran without the socket lock:"
		sed 's/^/  /' <<<"$report"
		exit 1
	fi
done
echo "repro 0001: fixed: $round rounds, nothing reported"
exit 0
