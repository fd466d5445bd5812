# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The second user of the whole of kernel::rdma: the echo server sample of
# the series (no unsafe), listening on port 7 of every device since boot.
# Raw messages from the module and from librdmacm must come back
# byte for byte, and a connection the client ends must be given back: no
# PD of the sample's (one a connection, held by its QP) is left.

DESCRIPTION="the series' echo sample echoes module and librdmacm clients and gives their connections back"

# The series' echo server sample (samples/rust/rust_rdma_echo.rs), built
# into the test kernels.
requires() {
	boot_log | grep -q 'rust_rdma_echo: echoing on port 7$' && return 0
	echo "the kernel has no kernel::rdma echo sample (CONFIG_SAMPLE_RUST_RDMA_ECHO, kernel/patches/rust-rdma)"
	return 1
}

test_main() {
	ensure_loaded
	local from out sizes=1,64,1000,4096,17,4096,333
	for from in module userspace; do
		out=$("$TOOL" raw-ping --connect "$IP:7" --sizes $sizes --seed 7 \
			$([ $from = userspace ] && echo --userspace) 2>&1) ||
			fail "raw-ping from the $from: $out"
		expect_eq "$out" "raw-ping ($from): 7 echo(es) checked" "raw-ping from the $from"
		echo "  $out"
	done
	# Three clients at once, each with its own connection.
	for from in 1 2 3; do
		"$TOOL" raw-ping --connect "$IP:7" --sizes 4096,4096,4096,4096 --seed $from \
			>"$T/echo.$from" 2>&1 &
	done
	wait
	for from in 1 2 3; do
		grep -q '^raw-ping (module): 4 echo(es) checked$' "$T/echo.$from" ||
			fail "concurrent client $from: $(cat "$T/echo.$from")"
	done
	wait_for 10 eval '! rdma resource show pd | grep -q rust_rdma_echo' ||
		fail "the sample kept a connection: $(rdma resource show pd | grep rust_rdma_echo)"
	# And it still serves.
	out=$("$TOOL" raw-ping --connect "$IP:7" --sizes 4096 2>&1) ||
		fail "raw-ping after the others: $out"
	# A device deleted under an open connection of the sample's: the
	# sample gives the id back from its DEVICE_REMOVAL event (its QP and
	# its PD and CQ, which its QP owns, go first), and the deletion completes.
	veth_dev ${PROV}19 19 203.0.113.19
	"$KIT" raw-ping --connect 203.0.113.19:7 --sizes 64 --hold-ms 60000 >"$T/echo.hold" 2>&1 &
	local holder=$!
	wait_for 20 grep -q 'echo(es) checked' "$T/echo.hold" ||
		fail "no echo over ${PROV}19: $(cat "$T/echo.hold")"
	rdma resource show pd | grep -q rust_rdma_echo ||
		fail "no PD of the sample's while connected: $(rdma resource show pd)"
	timeout 20 rdma link delete ${PROV}19 ||
		fail "rdma link delete ${PROV}19 failed or hung under a connection of the sample's"
	kill $holder 2>/dev/null
	wait $holder || true # killed
	ip link del kv19
	wait_for 10 eval '! rdma resource show pd | grep -q rust_rdma_echo' ||
		fail "the sample kept a connection after ${PROV}19 went: $(rdma resource show pd | grep rust_rdma_echo)"
	echo "  ${PROV}19 deleted under a connection of the sample's"
}
