# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The ioctl fuzzer (rdma-krust-kit fuzz) for KRUST_FUZZ_SECONDS (20), seeded with
# KRUST_FUZZ_SEED if set (the seed a run prints replays its decisions), every
# call printed if KRUST_FUZZ_TRACE is set (its --trace): real and
# random command numbers; arguments at NULL, unmapped and kernel addresses,
# misaligned, cut short by a PROT_NONE page, read-only, or valid with random
# and boundary fields; across four files that connect to each other (event
# driven or busy-polling, raw or not), expose windows and are closed at
# random. Proves no input crashes the module or trips a kernel check (the
# splat scan), hangs it (the fuzzer's watchdog, the timeout), or gets an
# errno outside the sane set; that bad pointers get exactly EFAULT and
# random numbers ENOTTY or EINVAL; that every ABI command was exercised; and
# that afterwards the module still moves data, then unloads and loads again
# (no file or reference leaked).
#
# Guards: 371eb26 and kernel/patches/0002 (the fuzzer hung on siw: a QP left in RTS on a closed stream)

DESCRIPTION="the ioctl fuzzer: no crash, hang or errno outside the sane set; the module then moves data and unloads"

test_main() {
	ensure_loaded
	local secs=${KRUST_FUZZ_SECONDS:-20} out rc last
	# A hang is reported with what it leaves to look at, while the call is
	# still blocked: the fuzzer's kernel stacks, the QPs, cm ids and TCP
	# sockets (iWARP), the kernel log's end; then each file's CONN_INFO.
	out=$(KRUST_FUZZ_ON_HANG='for t in /proc/$FUZZ_PID/task/*; do echo "task ${t##*/}:"; cat $t/stack; done
		rdma res show qp; rdma res show cm_id; ss -tnoi; dmesg | tail -20' \
		timeout $((secs + 120)) "$KIT" fuzz --seconds "$secs" --count 1000000000 \
		--fds 4 --port-base "$PORT" ${KRUST_FUZZ_SEED:+--seed "$KRUST_FUZZ_SEED"} ${KRUST_FUZZ_TRACE:+--trace} 2>&1) && rc=0 || rc=$?
	echo "$out" | grep -v '^fuzz: VIOLATION' | sed 's/^/  /'
	[ $rc != 124 ] || fail "the fuzzer hung (killed after $((secs + 120)) s)"
	[ $rc = 0 ] || fail "fuzz failed ($rc): $(grep -m5 VIOLATION <<<"$out")"
	last=$(tail -1 <<<"$out")
	[[ "$last" =~ ^fuzz:\ ([0-9]+)\ calls,\ ([0-9]+)\ commands,\ seed\ [0-9]+$ ]] ||
		fail "last line: $last"
	# A fuzzer whose calls wait out operation timeouts makes a few calls a
	# second; the main kernel makes ~200 a second, the debug one ~85. The
	# floor catches the first and not a slow kernel.
	[ "${BASH_REMATCH[1]}" -ge $((secs * 20)) ] || fail "only ${BASH_REMATCH[1]} calls in $secs s"
	grep -q ', 17 of 17 ABI commands exercised, 0 violation(s)$' <<<"$out" || fail "coverage or violations"
	# The module still works: a connection moves data both ways, verified.
	start_echo $((PORT + 256)) 2
	out=$("$TOOL" kernel-ping --connect "$IP:$((PORT + 256))" --sizes 1,65536 2>&1) ||
		fail "kernel-ping after fuzzing: $out; kernel-echo: $(cat "$T/echo.$((PORT + 256))"); log: $(klog | tail -5)"
	wait "$ECHO_PID" || fail "kernel-echo after fuzzing: $(cat "$T/echo.$((PORT + 256))")"
	grep -q '^2 message(s) echoed and verified$' <<<"$out" || fail "after fuzzing: $out"
	# No reference left behind: the module unloads, and loads again.
	rmmod rdma_krust || fail "rmmod after fuzzing failed"
	insmod "$KO" || fail "insmod after fuzzing failed"
	out=$("$KIT" abi) || fail "abi after reloading: $out"
	[[ "$out" =~ ^ABI\ version\ [0-9]+:\ 17\ commands\ agree$ ]] || fail "abi after reloading: $out"
	echo "  after fuzzing: 2 messages echoed and verified; rmmod and insmod clean"
}
