# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A listener bound to a device's address is torn down when the device
# leaves, even while its file stays open: rdma_cm's removal waits for every
# id on the device, so a listener left standing would hang `rdma link
# delete` until its owner closed the file. The owner is stopped (SIGSTOP)
# in its ACCEPT, so its file stays open throughout.
#
# Guards: 10ac849 (device removal tears down bound listeners; rdma link delete waited for the file)

DESCRIPTION="a listener is torn down when its device leaves, its file still open"

test_main() {
	ensure_loaded
	veth_dev ${PROV}8 8 198.51.100.17
	"$TOOL" kernel-echo --listen "198.51.100.17:$PORT" --count 1 --timeout-ms 60000 >"$T/lrm.1" 2>&1 &
	local pid=$! t
	wait_for 10 grep -q '^listening' "$T/lrm.1" || fail "no listener"
	kill -STOP $pid
	t=$(date +%s%N)
	# In the background: a removal that waits for the file sleeps
	# uninterruptibly, beyond any signal; letting the owner go ends it.
	rdma link delete ${PROV}8 &
	local del=$!
	if ! wait_for 20 eval "! kill -0 $del"; then
		ls -l /proc/$pid/fd | grep -q rdma_krust || echo "  (the owner had closed its file)"
		kill -CONT $pid
		wait $del
		fail "rdma link delete ${PROV}8 waited for the listener's file to close"
	fi
	wait $del || fail "rdma link delete ${PROV}8 failed"
	t=$((($(date +%s%N) - t) / 1000000))
	ls -l /proc/$pid/fd | grep -q rdma_krust || fail "the owner closed its file"
	kill -CONT $pid
	wait $pid && fail "the listener's ACCEPT did not fail"
	ip link del kv8
	echo "  rdma link delete took $t ms with the listener's file open; owner: $(tail -1 "$T/lrm.1")"
	expect_eq "$(klog | grep -c "remove ${PROV}8: 1 connection(s) torn down")" 1 "teardown message"
	wait_for 10 not_listed ${PROV}8 || fail "${PROV}8 still listed"
}
