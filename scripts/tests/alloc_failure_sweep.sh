# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Each allocation of a CONNECT (the id, PD, CQ, QP and its slots, every
# receive, the device's user record), of a 2 MiB SEND and of a 2 MiB RECV
# fails in turn: each call succeeds or fails with an errno, a failed
# CONNECT leaves its file CLOSED and tears down what it built, and a
# failed SEND or RECV leaves the connection whole (the same message then
# goes through, checked byte by byte: no fragment lost or sent twice, no
# credit or receive lost). The sweep's "0 allocations of the call
# failed" end proves every point was reached.

DESCRIPTION="each allocation of a CONNECT, a SEND and a RECV fails in turn: an errno, and nothing broken"

requires() { fault_injection_available; }

test_main() {
	ensure_loaded
	local k
	for k in "${FI_KINDS[@]}"; do
		echo N >$FI/$k/ignore-gfp-wait
		echo 0 >$FI/$k/probability
		echo 0 >$FI/$k/verbose
	done
	echo 0 >$FI/fail_page_alloc/min-order
	sweep connect
	sweep send
	sweep recv
}

# sweep OP: `rdma-krust-kit fail-sweep --op OP` on $DEV, fail-nth armed for
# each allocation of the call in turn.
sweep() {
	local out rc
	out=$(run_bounded 600 "$KIT" fail-sweep --op "$1" --ip "$IP" --port "$PORT") && rc=0 || rc=$?
	echo "$out" | tail -3 | sed "s/^/  $1: /"
	[ $rc = 0 ] || fail "fail-sweep --op $1 failed ($rc)"
	grep -q '^fail-sweep: every one of [1-9][0-9]* point(s) failed in turn' <<<"$out" ||
		fail "fail-sweep --op $1 did not reach a clean pass"
}
