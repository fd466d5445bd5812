# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A connect to a port nobody listens on fails with ECONNREFUSED, every
# time: rdma_cm moves the QP to the error state before it reports the
# reject, and the receives it flushes used to close the connection first,
# with ECONNRESET, whenever ib_core's completion worker ran before the cm
# event's (3 of 3 runs on rxe once the test kernels had PREEMPT_DYNAMIC).
# rping's retry loop above waits for "Connection refused".
#
# Guards: 4f368f7 (the flushed receives closed the connection first, with ECONNRESET)

DESCRIPTION="a connect to a port nobody listens on fails with ECONNREFUSED, every time"

test_main() {
	ensure_loaded
	local i out
	for i in 1 2 3 4 5 6 7 8; do
		out=$("$TOOL" rping --client --addr "$IP:$((PORT + i))" -C 1 -S 64 2>&1) &&
			fail "connect $i to no listener succeeded: $out"
		grep -q 'ioctl IOCTL_CONNECT: Connection refused (os error 111)' <<<"$out" ||
			fail "connect $i: $out"
	done
	echo "  8 connects to no listener: ECONNREFUSED each"
}
