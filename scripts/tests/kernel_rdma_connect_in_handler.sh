# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A handler may connect its own id (after ROUTE_RESOLVED, as nvme-rdma
# does): rdma_cm holds the id's handler mutex there, so CmId::connect must
# use rdma_connect_locked(); rdma_connect() would wait for the mutex its
# caller holds, forever. The test module kernel/tests/misuse/runtime/
# rdma_active.rs (no unsafe) resolves the echo sample on ${PROV}26 and does
# everything else from its id's handler: route, QP, receive, connect, and
# on ESTABLISHED a "ping", whose echo it checks.

DESCRIPTION="connect() from the id's own handler connects, and the echo sample answers"

ACTIVE_KO=$ROOT/kernel/tests/misuse/runtime/rdma_active.ko

requires() {
	require_runtime_ko "$ACTIVE_KO" || return 1
	boot_log | grep -q 'rust_rdma_echo: echoing on port 7$' && return 0
	echo "the kernel has no kernel::rdma echo sample (CONFIG_SAMPLE_RUST_RDMA_ECHO)"
	return 1
}

test_main() {
	ensure_loaded
	trap 'runtime_ko_teardown rdma_active 26' EXIT
	veth_dev ${PROV}26 26 203.0.113.26
	insmod "$ACTIVE_KO" || fail "insmod rdma_active.ko"
	wait_for 30 eval "dmesg | grep -q 'rdma_active: echo received: ok'" ||
		fail "no echo: $(dmesg | grep 'rdma_active:' | tail -20)"
	dmesg | grep -q 'rdma_active: connect() in its own handler returned' ||
		fail "connect() did not return in the handler"
	dmesg | grep 'rdma_active: ' | sed 's/^/  /'
	timeout 20 rmmod rdma_active || fail "rmmod rdma_active"
	timeout 20 rdma link delete ${PROV}26 || fail "rdma link delete ${PROV}26"
	ip link del kv26
}
