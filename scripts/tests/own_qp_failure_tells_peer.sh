# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# When a connection's QP fails on a completion error of its own (not a
# flush) while the peer's QP stays up, the module disconnects, so the peer
# learns now and not when the file is closed. Two raw files of the module:
# the listener keeps its 2 receives posted and reads nothing, and asks for
# an RNR retry count of 0, which rdma_cm gives the connector's QP; the
# connector's third SEND meets an RNR NAK and fails (RNR_RETRY_EXC_ERR,
# ETIMEDOUT). The listener's end must close (ECONNRESET) within 10 s with
# the connector's file still open, and still hand over the two messages
# that came before. Before, the failing end closed only locally: the peer
# stayed CONNECTED, its requests retrying into a QP in the error state
# (rxe's retry count 7 is forever) until the failing file was closed.
#
# Guards: the hang-up on a failed completion (src/conn/mod.rs,
# Conn::complete)

DESCRIPTION="a connection whose own QP fails disconnects, so its peer learns at once"

requires() {
	[ "$PROV" != siw ] && return 0
	echo "on $PROV: iWARP has no RNR NAK (a SEND without a receive fails the receiver's QP)"
	return 1
}

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" own-qp-fails --port "$PORT" 2>&1) || fail "own-qp-fails: $out"
	grep -v '^after: the file closed' <<<"$out" | sed 's/^/  /'
}
