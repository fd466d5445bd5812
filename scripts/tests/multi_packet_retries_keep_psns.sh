# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Multi-packet SENDs (up to 300000 B), WRITEs, READs and fetch-and-adds
# from four threads on two connections, with the shortest ACK timeout
# (exponent 1: rxe's retry timer fires on its first tick), for 10 s: the
# requester retries all the time, and the ACKs of first tries arrive while
# the same WQEs are being resent. rxe took such an ACK, at a resent WQE's
# last PSN, as progress past the WQE; the next retry then skipped all of
# it, resent it as an empty SEND carrying the next request's PSN, and every
# later packet went out one PSN late: the responder failed a SEND
# (IB_WC_REM_INV_REQ_ERR, status 9), or took the empty one for a message
# (the module's EPROTO), and the connection was lost. Without
# kernel/patches/0009-rxe-fix-an-ack-of-a-resent-wqe-moving-the-completer-past-it.patch
# ten attempts of ten lost a connection after about a thousand retries.
# Every check of the stress tool must hold, no connection may be lost,
# and rxe must have retried.

DESCRIPTION="multi-packet SENDs under constant rxe retries (ACK timeout exponent 1): no PSN shift, no lost connection"

requires() {
	[ "$PROV" = rxe ] && return 0
	echo "on $PROV: the retries come from rxe's retry timer (siw runs over TCP)"
	return 1
}

test_main() {
	ensure_loaded
	retry_stress 1 10 $((PORT + 4))
}
