# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A file of the module whose peer disconnects while one of its READs is in
# flight puts its own disconnect off for the READ (on IB and RoCE, where
# the peer may have answered it: Conn::defer_hang_up), at most
# retry_count + 1 ACK timeouts. The file's owner then calls nothing. The
# peer is the kit's userspace endpoint, which connects with a retry count
# of 7 (rxe retries forever) and drops every request before the READ, so
# the READ never completes. The module must answer the peer's DREQ once
# the grace is over all the same. Before, only a waiter or the READ's
# completion paid that debt: the peer's rdma_disconnect() returned only
# when the CM gave up on its DREQ, after about 67 s (16 tries of about
# 4.2 s); the ioctl fuzzer on two CPUs saw a DISCONNECT wait that long.
#
# Guards: Conn::hang_up_timer (src/conn/mod.rs)

DESCRIPTION="a file that calls nothing after its peer's close answers the peer within the grace it gives what is in flight"

requires() {
	[ "$PROV" != siw ] && return 0
	echo "on $PROV: the module answers an iWARP peer's close at once (no grace)"
	return 1
}

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" idle-close --port "$PORT" 2>&1) || fail "idle-close: $out"
	grep "returned after\|closed in" <<<"$out" | sed 's/^/  /'
}
