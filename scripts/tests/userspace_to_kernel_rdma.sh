# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The userspace peer READs, WRITEs and runs atomics on a kernel window.

DESCRIPTION="the userspace peer READs, WRITEs and runs atomics on a kernel window"

test_main() {
	ensure_loaded
	local size port=$PORT out
	for size in 1 4096 65536 1048576 12345; do
		port=$((port + 1))
		start_target $port --len $size --access rw --fill 11
		out=$("$TOOL" initiate --connect "$IP:$port" --scenario rw --seed 11 2>&1) ||
			fail "initiate ($size): $out"
		wait "$TARGET_PID" || fail "target ($size): $(cat "$T/target.$port")"
		grep -q "^rw ok $size bytes$" <<<"$out" || fail "$out"
	done
	echo "  READ/WRITE of $SIZES into a kernel window verified"
	if ! has_atomics; then
		echo "  no CAS or FADD: $PROV has no atomics (kernel_to_kernel_atomics checks the refusal)"
		return
	fi
	start_target $((PORT + 9)) --len 8 --access a
	out=$("$TOOL" initiate --connect "$IP:$((PORT + 9))" --scenario atomic --adds 10 2>&1) || fail "atomic: $out"
	wait "$TARGET_PID" || fail "target: $(cat "$T/target.$((PORT + 9))")"
	grep -q '^fadd ok: 10 adds, final 0x1143$' <<<"$out" || fail "$out"
	echo "  CAS and FADD on a kernel window verified"
}
