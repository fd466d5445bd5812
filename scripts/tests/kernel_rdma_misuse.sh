# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# kernel::rdma is sound for any caller: what its types cannot rule out is
# refused with an errno. A test module written against the safe API alone
# (kernel/tests/misuse/runtime/rdma_misuse.rs, no unsafe) tries each misuse
# on a live connection and prints KTAP; each check asserts the errno (or,
# for the CQ batch check, that a completion after its QP was destroyed
# finds it gone). A second device of the provider is the "other" device of
# the cross-device checks (${PROV}20). The debug kernel runs it under KASAN and lockdep.

DESCRIPTION="kernel::rdma refuses misuse from safe code with an errno (KTAP from a test module)"

MISUSE_KO=$ROOT/kernel/tests/misuse/runtime/rdma_misuse.ko

requires() {
	require_runtime_ko "$MISUSE_KO"
}

# peer_until N PATTERN WHAT: a peer that connects, sends one byte and
# waits for an echo that never comes, until the module logs PATTERN (its
# checks on that connection are done, and ended it); WHAT fails the test
# if that takes over 60 s.
peer_until() {
	"$TOOL" raw-ping --userspace --connect "$IP:7471" --sizes 1 >"$T/misuse.peer$1" 2>&1 &
	local peer=$!
	wait_for 60 eval "dmesg | grep -q 'rdma_misuse: $2'" ||
		fail "$3: $(dmesg | grep rdma_misuse: | tail -20)"
	kill $peer 2>/dev/null || true
	wait $peer || true # killed, or failed without its echo
}

test_main() {
	ensure_loaded
	# Whatever happens, the module, the device and the link go at the end.
	# (Each command may fail, having been done already: none may end the
	# test, which runs under set -e.)
	trap 'runtime_ko_teardown rdma_misuse 20' EXIT
	veth_dev ${PROV}20 20 203.0.113.20
	insmod "$MISUSE_KO" || fail "insmod rdma_misuse.ko"
	wait_for 10 eval "dmesg | grep -q 'rdma_misuse: listening on port 7471'" ||
		fail "the misuse module does not listen"
	# Then three peers, one after the other: each sends one byte and waits for
	# an echo that never comes; the module's checks run once its connection
	# is up, and end it. The first connection is accepted with an initiator
	# depth of 0, the second with 1.
	local out
	# The first request's child is dropped in its own request handler: the
	# request is refused, and the handler returns (before, it hung in
	# rdma_destroy_id(), and the CM's worker with it).
	if out=$(timeout 60 "$TOOL" raw-ping --userspace --connect "$IP:7471" --sizes 1 2>&1); then
		fail "the first request was accepted: $out"
	fi
	wait_for 10 eval "dmesg | grep -q 'rdma_misuse: ok 1 adopted_child_dropped_in_request_handler'" ||
		fail "the request handler did not return: $(dmesg | grep rdma_misuse: | tail -20)"
	peer_until 1 '# connection 1 done' "the first connection's check did not run"
	peer_until 2 '# connection 2 done' "the second connection's checks did not run"
	# The third: dropped in a completion handler on ib_core's workqueue,
	# which must return at once (it hung, draining the QP, before).
	peer_until 3 'misuse: [0-9]* passed' "no verdict from the misuse module"
	# And the connection is ended by the work item: no PD of the module's.
	wait_for 10 eval '! rdma resource show pd | grep -q rdma_misuse' ||
		fail "a connection of the misuse module is left: $(rdma resource show pd | grep rdma_misuse)"
	local log verdict
	log=$(dmesg | grep 'rdma_misuse: ' | sed 's/.*rdma_misuse: //')
	sed 's/^/  /' <<<"$log"
	verdict=$(grep '^misuse: ' <<<"$log")
	rmmod rdma_misuse || fail "rmmod rdma_misuse"
	timeout 20 rdma link delete ${PROV}20 || fail "rdma link delete ${PROV}20"
	ip link del kv20
	expect_eq "$verdict" "misuse: 12 passed, 0 failed" "the misuse checks"
	grep -q '^ok [0-9]* foreign_device_buffer_refused$' <<<"$log" ||
		fail "the cross-device check did not run with ${PROV}20 present"
}
