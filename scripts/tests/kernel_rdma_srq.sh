# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# kernel::rdma's shared receive queue, used by a module written against the
# safe API alone (kernel/tests/misuse/runtime/rdma_srq.rs, no unsafe):
# three userspace peers at once send 30 messages each, every one of which
# lands in a receive of the one SRQ; the module finds each message's
# connection by the completion's tag and echoes it there, so a peer that
# gets its own bytes back proves the attribution. Three receives are held
# back until the limit event the SRQ was armed for comes. Misuse is refused
# with EINVAL or ENOBUFS (KTAP from the module), and at unload every buffer
# the module made is back, the receives still queued on the SRQ included
# (the SRQ reclaims what no completion returned). A second device of the
# provider is the "other" device of the cross-device check (${PROV}21).

DESCRIPTION="kernel::rdma's SRQ: three connections' receives through one SRQ, echoed on their own, misuse refused, every buffer back"

SRQ_KO=$ROOT/kernel/tests/misuse/runtime/rdma_srq.ko

requires() {
	require_runtime_ko "$SRQ_KO"
}

test_main() {
	ensure_loaded
	trap 'runtime_ko_teardown rdma_srq 21' EXIT
	veth_dev ${PROV}21 21 203.0.113.21
	insmod "$SRQ_KO" || fail "insmod rdma_srq.ko"
	wait_for 10 eval "dmesg | grep -q 'rdma_srq: listening on port 7472'" ||
		fail "the SRQ module does not listen"
	local sizes i pids=() log verdict
	sizes=$(printf '1,100,4096,%.0s' $(seq 10))
	sizes=${sizes%,}
	for i in 1 2 3; do
		"$TOOL" raw-ping --userspace --connect "$IP:7472" --sizes "$sizes" >"$T/peer$i" 2>&1 &
		pids+=($!)
	done
	for i in 1 2 3; do
		wait "${pids[$((i - 1))]}" || fail "peer $i: $(cat "$T/peer$i"; dmesg | grep rdma_srq: | tail -20)"
	done
	wait_for 30 eval "dmesg | grep -q 'rdma_srq: srq: [0-9]* passed'" ||
		fail "no verdict from the SRQ module: $(dmesg | grep rdma_srq: | tail -20)"
	rmmod rdma_srq || fail "rmmod rdma_srq"
	timeout 20 rdma link delete ${PROV}21 || fail "rdma link delete ${PROV}21"
	ip link del kv21
	log=$(dmesg | grep 'rdma_srq: ' | sed 's/.*rdma_srq: //')
	sed 's/^/  /' <<<"$log"
	verdict=$(grep '^srq: [0-9]* passed' <<<"$log")
	expect_eq "$verdict" "srq: 14 passed, 0 failed" "the SRQ checks"
	for i in 1 2 3; do
		grep -q "^# connection $i: 30 messages echoed$" <<<"$log" ||
			fail "connection $i did not have its 30 messages echoed"
	done
	grep -q '^ok [0-9]* srq_foreign_device_buffer_refused$' <<<"$log" ||
		fail "the cross-device check did not run with ${PROV}21 present"
	expect_eq "$(grep '^srq: [0-9]* buffers live at exit$' <<<"$log")" \
		"srq: 0 buffers live at exit" "the module's buffers at unload"
}
