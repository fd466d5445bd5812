# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Four kernel connections fetch-and-add on one userspace window at the same
# time: the final value is the exact sum, and every value returned is unique.

DESCRIPTION="four connections fetch-and-add on one window at once: the exact sum, every value returned unique"

# siw has no atomics.
requires() {
	[ "$PROV" != siw ] && return 0
	echo "on $PROV: siw has no atomics (atomic_cap 0); kernel_to_kernel_atomics checks that the module refuses them with EOPNOTSUPP"
	return 1
}

test_main() {
	ensure_loaded
	local n=4 adds=25 i pids=()
	start_serve "$PORT" --mode target --len 8 --access a --connections $n
	for i in $(seq $n); do
		initiator "$PORT" --scenario fadd --adds $adds >"$T/fadd.$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail "an adder failed: $(cat "$T"/fadd.*)"; done
	wait "$SERVE_PID" || fail "serve: $(cat "$T/serve.$PORT")"
	local total=$((n * adds))
	expect_eq "$(cat "$T"/fadd.* | grep -c '^fadd-old ')" $total "FADDs done"
	expect_eq "$(cat "$T"/fadd.* | sed -n 's/^fadd-old //p' | sort -n | uniq | wc -l)" $total "distinct old values"
	expect_eq "$(cat "$T"/fadd.* | sed -n 's/^fadd-old //p' | sort -n | tail -1)" $((total - 1)) "largest old value"
	echo "  $n adders x $adds: $total distinct values 0..$((total - 1))"
}
