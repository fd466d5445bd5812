# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# RDMA READ and WRITE between two fds of the module, 1 B to 1 MiB: the
# initiator checks what it reads, the target checks what was written.

DESCRIPTION="RDMA READ and WRITE between two fds of the module, 1 B to 1 MiB, checked on both sides"

test_main() {
	ensure_loaded
	local size port=$PORT out sinks expected
	for size in 1 4096 65536 1048576 12345; do
		port=$((port + 1))
		start_target $port --len $size --access rw --fill 7
		out=$(initiator $port --scenario rw --seed 7) || fail "initiator ($size): $out"
		wait "$TARGET_PID" || fail "target ($size): $(cat "$T/target.$port")"
		grep -q "^rw ok $size bytes$" <<<"$out" || fail "initiator ($size): $out"
		grep -q '^target done$' "$T/target.$port" || fail "target ($size): $(cat "$T/target.$port")"
		# iWARP: each 256 KiB of the two READs landed in a sink of its own.
		sinks=$(conn_field "$(grep '^after conn:' <<<"$out")" read_sinks)
		expected=0
		[ "$(conn_field "$(grep '^after conn:' <<<"$out")" iwarp)" = 1 ] &&
			expected=$((2 * ((size + 262143) / 262144)))
		expect_eq "$sinks" "$expected" "READ sinks registered ($size bytes)"
		echo "  rw ok $size bytes, checked on both sides; READ sinks: $sinks"
	done
}
