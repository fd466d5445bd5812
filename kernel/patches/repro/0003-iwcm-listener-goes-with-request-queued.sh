#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Reproducer for 0003 ("RDMA/iwcm: Fix a connect request dropped while its
# listener goes"), with rdma-core's rping only, on an iWARP device (siw).
#
# Each round starts a listener (rping -s), sends 16 clients (rping -c) at
# it at once, and kills the listener a moment later, while requests are
# queued to it. A request that iw_cm dropped with its dying listener is
# neither accepted nor rejected: its client waits out the provider's MPA
# timeout (siw: 10 s) instead of being refused at once, and the provider's
# endpoint leaks (kmemleak shows it on a kernel that has kmemleak). Without
# the fix some round has a client that waits 8 s or more; with it every
# client ends within a few seconds.
#
#   0003-iwcm-listener-goes-with-request-queued.sh ADDR [PORT]
#
# Exit 0: every client refused or served at once in every round; 1: a
# client waited out the MPA timeout; 2: could not run.
set -u
addr=${1:?usage: $0 ADDR [PORT]}
port=${2:-7175}
rounds=${REPRO_ROUNDS:-12}
command -v rping >/dev/null || { echo "repro 0003: rping missing (rdmacm-utils)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for round in $(seq "$rounds"); do
	rping -s -a "$addr" -p "$port" >/dev/null 2>&1 &
	server=$!
	sleep 0.5
	kill -0 $server 2>/dev/null || { echo "repro 0003: rping -s did not start"; exit 2; }
	for c in $(seq 16); do
		(
			start=$(date +%s%N)
			timeout 30 rping -c -a "$addr" -p "$port" -C 1 -S 64 >/dev/null 2>&1
			echo $((($(date +%s%N) - start) / 1000000)) >"$tmp/c$c"
		) &
	done
	sleep 0.$((RANDOM % 5))
	kill -9 $server
	wait
	slowest=$(cat "$tmp"/c* | sort -n | tail -1)
	if [ "$slowest" -ge 8000 ]; then
		echo "repro 0003: bug: round $round, a client waited $slowest ms (its request dropped with the listener)"
		exit 1
	fi
	rm -f "$tmp"/c*
done
echo "repro 0003: fixed: $rounds rounds, every client ended within 8 s"
exit 0
