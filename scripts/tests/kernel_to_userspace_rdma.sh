# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The module READs, WRITEs and runs atomics on a window of the userspace
# peer; both sides check the data.

DESCRIPTION="the module READs, WRITEs and runs atomics on a userspace peer's window"

test_main() {
	ensure_loaded
	local size port=$PORT out
	for size in 1 4096 65536 1048576 12345; do
		port=$((port + 1))
		start_serve $port --mode target --len $size --access rw --fill 9
		out=$(initiator $port --scenario rw --seed 9) || fail "kernel-initiator ($size): $out"
		wait "$SERVE_PID" || fail "serve ($size): $(cat "$T/serve.$port")"
		grep -q "^rw ok $size bytes$" <<<"$out" || fail "$out"
	done
	echo "  READ/WRITE of $SIZES into userspace memory verified"
	if ! has_atomics; then
		echo "  no CAS or FADD: $PROV has no atomics (kernel_to_kernel_atomics checks the refusal)"
		return
	fi
	start_serve $((PORT + 9)) --mode target --len 8 --access a
	out=$(initiator $((PORT + 9)) --scenario atomic --adds 10) || fail "atomic: $out"
	wait "$SERVE_PID" || fail "serve: $(cat "$T/serve.$((PORT + 9))")"
	grep -q '^fadd ok: 10 adds, final 0x1143$' <<<"$out" || fail "$out"
	grep -q '^window value 0x1143$' "$T/serve.$((PORT + 9))" || fail "serve saw: $(cat "$T/serve.$((PORT + 9))")"
	echo "  CAS and FADD on userspace memory verified"
}
