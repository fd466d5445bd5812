# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Fetch-and-adds beside SENDs (up to 300000 B, five fragments of up to 64
# packets), WRITEs and READs on connections whose ACK timeout (exponent
# KRUST_RETRY_ACK_TIMEOUT, default 10: 4.2 ms; 12, 16.8 ms, on the debug
# kernel, whose answers take several times as long) is shorter than an
# answer under load takes here, so rxe retries requests that were only
# slow: requests arrive twice, the first answers arrive after the retry
# began and are dropped, and the ACK of a repeated SEND carries the PSN of
# the last request the responder took, which may be a fetch-and-add or a
# READ queued behind it. Every fetch-and-add must still return the value
# it found (the adds on each counter saw 0..n-1 once each), every READ
# must return what its thread wrote, every message must arrive once and
# intact, and no connection may be lost: the stress tool's checks.
#
# rxe completed such a fetch-and-add on that plain ACK without its result
# (the module returned the buffer's zero fill), and cut a READ short on a
# stale one (kernel/patches/0008-rxe-fix-a-read-or-atomic-completed-by-a-plain-ack.patch;
# without it three runs of three failed: "values seen not 0..n:
# 0,0,1,..." and "READ back of 28292 bytes differs from the WRITE"). It
# also let the ACK of a WQE's first try move the completer past the WQE
# after a retry, so that the next retry resent it empty and every later
# packet went out one PSN late: the responder failed a multi-packet SEND
# and the connection went down
# (kernel/patches/0009-rxe-fix-an-ack-of-a-resent-wqe-moving-the-completer-past-it.patch,
# and the test multi_packet_retries_keep_psns).

DESCRIPTION="fetch-and-adds mixed with SENDs while rxe retries slow requests: every returned value right"

requires() {
	[ "$PROV" = rxe ] && return 0
	echo "on $PROV: the retries come from rxe's retry timer (siw runs over TCP, and has no atomics)"
	return 1
}

test_main() {
	ensure_loaded
	retry_stress "${KRUST_RETRY_ACK_TIMEOUT:-$(rounds 10 12)}" "${KRUST_RETRY_SECONDS:-$(rounds 20 10)}" $((PORT + 2))
}
