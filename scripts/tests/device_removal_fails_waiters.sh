# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A device leaves while a connection on it waits: the waiter fails with
# ENODEV, the device goes away promptly, nothing leaks (the module unloads).

DESCRIPTION="a device leaves under a waiting connection: the waiter gets ENODEV, the device goes promptly"

test_main() {
	ensure_loaded
	veth_dev ${PROV}4 4 198.51.100.1
	"$TOOL" kernel-echo --listen "198.51.100.1:$PORT" --count 1 --timeout-ms 60000 >"$T/rm.1" 2>&1 &
	local echo_pid=$!
	wait_for 10 grep -q '^listening' "$T/rm.1" || fail "no listener"
	"$KIT" kernel-ping --connect "198.51.100.1:$PORT" --hold-ms 60000 --sizes 8 >"$T/rm.2" 2>&1 &
	local ping=$!
	wait_for 10 grep -q "^conn: device=${PROV}4" "$T/rm.1" || fail "no connection on ${PROV}4: $(cat "$T/rm.1")"
	sleep 0.3
	timeout 20 rdma link delete ${PROV}4 || fail "rdma link delete ${PROV}4 failed or hung"
	wait $echo_pid && fail "the waiter did not fail"
	kill $ping 2>/dev/null || true
	wait $ping 2>/dev/null || true
	ip link del kv4
	grep -q 'No such device (os error 19)' "$T/rm.1" || fail "waiter got: $(cat "$T/rm.1")"
	echo "  waiter: $(tail -1 "$T/rm.1")"
	expect_eq "$(klog | grep -c "remove ${PROV}4: 2 connection(s) torn down")" 1 "teardown message"
}
