# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The third user of kernel::rdma: the client sample of the series (no
# unsafe), samples/rust/rust_rdma_client.rs, built as a module. It connects
# to 203.0.113.28 (a device of this test's own): to the echo sample on port
# 7, whose echo of its SEND it checks, and to a passive side of its own on
# port 7471, in its PD, through which it WRITEs and READs a region of its
# own. Each verified step is a line in the kernel log. Loaded twice: the
# first time unloaded with its three connections up, the second time its
# device deleted under them, then unloaded; either way nothing of the
# sample's is left (rdma resource show: no cm_id, CQ, MR or PD of its name,
# no RC QP on its device), and the echo sample gives back its end.

DESCRIPTION="the series' client sample verifies SEND/RECV, RDMA WRITE and READ and leaves nothing behind"

CLIENT_KO=${KRUST_KDIR:-}/samples/rust/rust_rdma_client.ko

requires() {
	[ -n "${KRUST_KDIR:-}" ] && [ -f "$CLIENT_KO" ] || {
		echo "no rust_rdma_client.ko in the kernel's build directory (CONFIG_SAMPLE_RUST_RDMA_CLIENT=m, kernel/patches/rust-rdma)"
		return 1
	}
	boot_log | grep -q 'rust_rdma_echo: echoing on port 7$' && return 0
	echo "the kernel has no kernel::rdma echo sample (CONFIG_SAMPLE_RUST_RDMA_ECHO)"
	return 1
}

# client_log FROM: the sample's lines of the kernel log after line FROM,
# without the prefix.
client_log() {
	dmesg | tail -n +$(($1 + 1)) | sed -n 's/^\[[ 0-9.]*\] rust_rdma_client: //p'
}

# rc_qps: the RC QPs on ${PROV}28: the client's three and the echo
# sample's end of its connection (rdma_cm names QPs after itself).
rc_qps() {
	rdma resource show qp link ${PROV}28/1 2>/dev/null | grep 'type RC' || true
}

# sample_resources: what rdma resource show lists of the client's, and of
# the echo sample's connections (its listener stays).
sample_resources() {
	local r
	for r in cm_id cq mr pd; do
		rdma resource show $r | grep rust_rdma_client | sed "s/^/$r: /"
	done
	for r in cq pd; do
		rdma resource show $r | grep rust_rdma_echo | sed "s/^/$r: /"
	done
	rc_qps | sed 's/^/qp: /'
}

# run_client: loads the sample and checks each step's line.
run_client() {
	local from line
	from=$(dmesg | wc -l)
	insmod "$CLIENT_KO" || fail "insmod rust_rdma_client.ko"
	wait_for 30 eval "client_log $from | grep -q '^RDMA READ verified'" ||
		fail "the steps did not all pass: $(client_log "$from")"
	wait_for 10 eval "client_log $from | grep -q '^SEND/RECV verified'" ||
		fail "no echo verified: $(client_log "$from")"
	for line in \
		"connecting to 203.0.113.28, ports 7 (echo) and 7471 (own passive side)" \
		"echo: connected" \
		"loopback: connected" \
		"SEND/RECV verified: 1024 bytes echoed" \
		"2 regions of 8192 bytes registered" \
		"RDMA WRITE verified: 8192 bytes in the target" \
		"RDMA READ verified: 8192 bytes in the sink"; do
		client_log "$from" | grep -qxF "$line" || fail "no line '$line': $(client_log "$from")"
	done
	expect_eq "$(client_log "$from" | wc -l)" 7 "the sample's lines"
	client_log "$from" | sed 's/^/  /'
	rdma resource show pd | grep -q rust_rdma_client ||
		fail "no PD of the sample's while connected: $(rdma resource show pd)"
	[ "$(rc_qps | wc -l)" = 4 ] ||
		fail "not four RC QPs on ${PROV}28 (three of the client's, one of the echo sample's): $(rdma resource show qp)"
	CLIENT_FROM=$from
}

# no_leftovers WHEN: nothing of either sample's is left.
no_leftovers() {
	wait_for 10 eval '[ -z "$(sample_resources)" ]' ||
		fail "left $1: $(sample_resources)"
}

test_main() {
	ensure_loaded
	trap 'runtime_ko_teardown rust_rdma_client 28' EXIT
	veth_dev ${PROV}28 28 203.0.113.28
	# Unloaded with its connections up.
	run_client
	timeout 20 rmmod rust_rdma_client || fail "rmmod rust_rdma_client under connections"
	expect_eq "$(client_log "$CLIENT_FROM" | tail -1)" "unloading with 3 connection(s) up" "the exit's line"
	no_leftovers "after rmmod"
	echo "  unloaded with 3 connections up: nothing left"
	# Its device deleted under its connections: it drops each from its
	# own event, and the deletion completes.
	run_client
	timeout 20 rdma link delete ${PROV}28 ||
		fail "rdma link delete ${PROV}28 failed or hung under the sample's connections"
	# Each connection goes from an event of its own: DEVICE_REMOVAL, or
	# the disconnect of its peer's end that went first.
	wait_for 10 eval "[ \$(client_log $CLIENT_FROM | grep -c ' connection closed$') = 3 ]" ||
		fail "not three connections closed: $(client_log "$CLIENT_FROM")"
	client_log "$CLIENT_FROM" | grep -q '^DeviceRemoval (status 0): ' ||
		fail "no DEVICE_REMOVAL line: $(client_log "$CLIENT_FROM")"
	timeout 20 rmmod rust_rdma_client || fail "rmmod rust_rdma_client"
	expect_eq "$(client_log "$CLIENT_FROM" | tail -1)" "unloading with 0 connection(s) up" "the exit's line"
	no_leftovers "after ${PROV}28 went and rmmod"
	ip link del kv28
	echo "  ${PROV}28 deleted under the sample's connections: nothing left"
}
