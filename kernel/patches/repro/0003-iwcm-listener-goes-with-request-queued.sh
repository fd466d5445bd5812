#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0003 ("RDMA/iwcm: Fix a connect request dropped while its
# listener goes"), with rdma-core's rping and plain TCP sockets (mpa.py),
# on an iWARP device (siw).
#
# Each round starts a listener (rping -s), opens 50 TCP connections to it,
# sends an MPA request on each at once and kills the listener right
# behind them, while their connect requests are queued to it. Each request
# must then be answered: accepted, rejected, or its connection closed.
# Without the fix iw_cm drops the requests still queued when the listener
# goes: nothing accepts or rejects them, siw keeps their endpoints (a
# leak kmemleak reports) and their connections stay open with no answer.
#
#   0003-iwcm-listener-goes-with-request-queued.sh ADDR [PORT]
#
# Exit 0: every request was answered in every round; 1: one was not within
# 8 s; 2: could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7175}
rounds=${REPRO_ROUNDS:-60}
# shellcheck source=kernel/patches/repro/lib.sh
. "$(dirname "$0")/lib.sh"
command -v rping >/dev/null || { echo "repro 0003: rping missing (rdmacm-utils)"; exit 2; }

# Up to 60 rounds, or as many as fit in 200 s: a request is caught in the
# window only now and then.
end=$((SECONDS + 200))
round=0
while [ $round -lt "$rounds" ] && [ $SECONDS -lt $end ]; do
	round=$((round + 1))
	rping -s -a "$addr" -p "$port" >/dev/null 2>&1 &
	server=$!
	wait_listening "$port" || { echo "repro 0003: rping -s did not listen"; exit 2; }
	REPRO_DIR=$repro_dir python3 - "$addr" "$port" $server <<'PY' >"$tmp/peer" 2>&1
import os, select, signal, sys, time
sys.path.insert(0, os.environ["REPRO_DIR"])
import mpa
addr, port, server = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = mpa.busy_cm(addr, port, 50)
for s in socks:
    s.send(mpa.request())
os.kill(server, signal.SIGKILL)
waiting, answers = set(socks), {"accepted": 0, "rejected": 0, "closed": 0}
end = time.monotonic() + 8
while waiting and time.monotonic() < end:
    ready, _, _ = select.select(list(waiting), [], [], 0.5)
    for s in ready:
        try:
            rr = mpa.read_request_or_reply(s)
        except ConnectionResetError:
            rr = None
        if rr is None:
            answers["closed"] += 1
        elif rr[1] & mpa.F_REJECT:
            answers["rejected"] += 1
        else:
            answers["accepted"] += 1
        waiting.discard(s)
print(", ".join(f"{n} {k}" for k, n in answers.items()) + f", {len(waiting)} unanswered", flush=True)
PY
	wait $server 2>/dev/null
	line=$(tail -1 "$tmp/peer")
	echo "repro 0003: round $round: $line"
	case "$line" in
	*", 0 unanswered") ;;
	*unanswered)
		echo "repro 0003: bug: connect requests dropped with their listener (neither accepted nor rejected)"
		exit 1
		;;
	*)
		echo "repro 0003: the peer failed:"
		cat "$tmp/peer"
		exit 2
		;;
	esac
done
echo "repro 0003: fixed: $round rounds, every connect request answered"
exit 0
