# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Leaking is safe Rust, so a module that leaks what it made through
# kernel::rdma and is then unloaded must leave nothing that calls into it.
# The test module kernel/tests/misuse/runtime/rdma_leak.rs (no unsafe)
# forgets its listener and keeps a connection and its ib_client in an Arc
# cycle; after rmmod, a message to the connection (its receive completes),
# a connection request to the listener, rdma resource show reading the
# ids' names and a new device must not reach the module's freed memory,
# and the leaked client is ended as the module goes. Before kernel::rdma
# gated its callbacks, the request jumped into freed module text (BUG:
# unable to handle page fault, in cma_ib_req_handler or iw_conn_req_handler).
#
# The leftovers stay on their own device (${PROV}22 on kv22), which is
# never deleted: a device whose objects are leaked cannot finish its
# removal, as in C.

DESCRIPTION="a module that leaks its kernel::rdma objects unloads, and nothing calls into it after"

LEAK_KO=$ROOT/kernel/tests/misuse/runtime/rdma_leak.ko
LEAK_IP=203.0.113.22

requires() {
	require_runtime_ko "$LEAK_KO"
}

# The peer's pid, global: the EXIT trap runs after test_main has returned.
LEAK_PEER=

test_main() {
	local out log
	ensure_loaded
	trap 'kill $LEAK_PEER 2>/dev/null || true; runtime_ko_teardown rdma_leak 24' EXIT
	veth_dev ${PROV}22 22 $LEAK_IP
	insmod "$LEAK_KO" || fail "insmod rdma_leak.ko"
	wait_for 10 eval "dmesg | grep -q 'rdma_leak: listening on port 7472'" ||
		fail "the leak module does not listen"
	# Two messages, the second 6 s after the first's echo: by then the
	# module is gone, and the second's receive completes on its leaked QP.
	timeout 45 "$KIT" raw-ping --userspace --connect "$LEAK_IP:7472" --sizes 1,1 \
		--pause-ms 6000 >"$T/peer" 2>&1 &
	LEAK_PEER=$!
	wait_for 20 eval "dmesg | grep -q 'rdma_leak: received 1 bytes'" ||
		fail "the first message did not arrive: $(cat "$T/peer")"
	rmmod rdma_leak || fail "rmmod rdma_leak"
	grep -q '^rdma_leak ' /proc/modules && fail "rdma_leak still loaded"
	# The client it leaked was ended as it went: remove ran for each device.
	dmesg | grep -q "rdma_leak: client removed from device" ||
		fail "the leaked client was not ended: $(dmesg | grep rdma_leak: | tail)"
	# The second message goes to the leaked QP: nothing echoes it (the
	# peer fails, or is stopped by timeout).
	if wait $LEAK_PEER; then
		fail "the second message was echoed after rmmod: $(cat "$T/peer")"
	fi
	LEAK_PEER=
	grep -q '2 echo(es) checked' "$T/peer" &&
		fail "the peer saw both echoes: $(cat "$T/peer")"
	# A request to the leaked listener is refused.
	if out=$(timeout 30 "$TOOL" raw-ping --userspace --connect "$LEAK_IP:7472" --sizes 1 2>&1); then
		fail "a request to the leaked listener was accepted: $out"
	fi
	# Resource tracking still reads the leaked ids' names: copies.
	out=$(rdma resource show cm_id 2>&1) || fail "rdma resource show cm_id: $out"
	grep -q 'rdma_leak' <<<"$out" || fail "no cm id of rdma_leak listed: $out"
	# A device that comes now is offered to no client of the module.
	veth_dev ${PROV}24 24
	log=$(dmesg | grep 'rdma_leak: ')
	sed 's/^/  /' <<<"$log"
	if grep -q "client added to device" <<<"$(sed -n '/client removed/,$p' <<<"$log")"; then
		fail "the gone module's client was called for a new device"
	fi
	rdma link delete ${PROV}24 || fail "rdma link delete ${PROV}24"
	ip link del kv24
}
