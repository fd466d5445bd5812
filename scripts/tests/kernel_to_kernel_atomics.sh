# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Compare-and-swap that succeeds and one that fails, 20 fetch-and-adds with
# every returned value checked, the final value checked by the target, and
# a misaligned atomic refused with EINVAL. On a device without atomics
# (siw), the module refuses them instead (atomics_refused).

DESCRIPTION="CAS, fetch-and-add and a misaligned atomic, checked; on a device without atomics, refused"

test_main() {
	ensure_loaded
	if ! has_atomics; then
		atomics_refused
		return
	fi
	start_target "$PORT" --len 8 --access a
	local out
	out=$(initiator "$PORT" --scenario atomic --adds 20) || fail "initiator: $out"
	wait "$TARGET_PID" || fail "target: $(cat "$T/target.$PORT")"
	echo "$out" | sed 's/^/  /'
	grep -q '^cas ok' <<<"$out" || fail "no CAS"
	grep -q '^fadd ok: 20 adds, final 0x1175$' <<<"$out" || fail "FADD"
	grep -q '^misaligned atomic refused: EINVAL' <<<"$out" || fail "misaligned"
	grep -q '^window value 0x1175$' "$T/target.$PORT" || fail "target saw: $(cat "$T/target.$PORT")"
}

# A device without atomics: an atomic on a window without atomic access is
# refused by the module with EOPNOTSUPP before anything is posted, and so
# is a window exposed with atomic access; the connection still carries
# READ and WRITE afterwards.
atomics_refused() {
	local out
	start_target "$PORT" --len 8 --access rw --fill 3
	out=$(initiator "$PORT" --scenario atomic --adds 1 2>&1) && fail "an atomic on $PROV succeeded: $out"
	grep -q 'CAS' <<<"$out" && grep -q 'Operation not supported' <<<"$out" ||
		fail "CAS on $PROV: expected EOPNOTSUPP: $out"
	echo "  CAS on $PROV refused: EOPNOTSUPP"
	kill "$TARGET_PID" 2>/dev/null || true
	wait "$TARGET_PID" 2>/dev/null || true
	start_target $((PORT + 1)) --len 8 --access a
	out=$(initiator $((PORT + 1)) --scenario rw --seed 3 2>&1) && fail "rw against a refused window: $out"
	wait "$TARGET_PID" && fail "exposing an atomic window on $PROV succeeded"
	grep -q 'IOCTL_EXPOSE' "$T/target.$((PORT + 1))" && grep -q 'Operation not supported' "$T/target.$((PORT + 1))" ||
		fail "expose with atomic access: $(cat "$T/target.$((PORT + 1))")"
	echo "  window with atomic access on $PROV refused: EOPNOTSUPP"
	start_target $((PORT + 2)) --len 4096 --access rw --fill 3
	out=$(initiator $((PORT + 2)) --scenario rw --seed 3) || fail "rw after the refusals: $out"
	wait "$TARGET_PID" || fail "target: $(cat "$T/target.$((PORT + 2))")"
	grep -q '^rw ok 4096 bytes$' <<<"$out" || fail "rw: $out"
	echo "  READ and WRITE still work"
}
