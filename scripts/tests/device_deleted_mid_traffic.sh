# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The device is deleted while two kernel connections on it move 1 MiB
# messages: both sides fail with a clear errno (ENODEV, or ECONNRESET for a
# side that saw the flush first or whose post siw refused), both processes
# exit and close their fds, the device goes promptly, and the module
# unloads clean later. Guards the post refusal: ENOTCONN in 3 of 40 runs
# on siw before it.
#
# Guards: 71e900a (a post the provider refuses closes with ECONNRESET; ENOTCONN in 3 of 40 runs on siw before)

DESCRIPTION="the device is deleted under two connections moving 1 MiB messages: clear errnos, prompt removal"

test_main() {
	ensure_loaded
	veth_dev ${PROV}6 6 198.51.100.9
	local sizes
	sizes=$(printf '1048576,%.0s' $(seq 500))
	"$TOOL" kernel-echo --listen "198.51.100.9:$PORT" --count 500 >"$T/del.1" 2>&1 &
	local echo_pid=$!
	wait_for 10 grep -q '^listening' "$T/del.1" || fail "no listener"
	"$TOOL" kernel-ping --connect "198.51.100.9:$PORT" --sizes "${sizes%,}" >"$T/del.2" 2>&1 &
	local ping=$!
	wait_for 30 grep -q '^ok 1048576 bytes' "$T/del.2" || fail "no traffic: $(cat "$T/del.2")"
	timeout 20 rdma link delete ${PROV}6 || fail "rdma link delete ${PROV}6 failed or hung"
	wait $ping && fail "kernel-ping finished although its device was deleted"
	wait $echo_pid && fail "kernel-echo finished although its device was deleted"
	ip link del kv6
	local moved
	moved=$(grep -c '^ok ' "$T/del.2")
	[ "$moved" -lt 500 ] || fail "all 500 messages went through"
	tail -1 "$T/del.2" | grep -qE 'No such device|Connection reset by peer' ||
		fail "ping got: $(tail -1 "$T/del.2")"
	tail -1 "$T/del.1" | grep -qE 'No such device|Connection reset by peer' ||
		fail "echo got: $(tail -1 "$T/del.1")"
	echo "  after $moved messages: ping: $(tail -1 "$T/del.2" | sed 's/.*: //'); echo: $(tail -1 "$T/del.1" | sed 's/.*: //')"
	expect_eq "$(klog | grep -c "remove ${PROV}6: [0-9]* connection(s) torn down")" 1 "teardown message"
	not_listed ${PROV}6 || fail "${PROV}6 still listed"
}
