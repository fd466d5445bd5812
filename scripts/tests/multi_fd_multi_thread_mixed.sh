# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Two connections between four files of the module, one of them
# busy-polling, four threads on each file, 10 s of SEND/RECV, RDMA WRITE
# then READ back of a per-thread part of the peer's window, and
# fetch-and-add on a counter in it, all at once. The module serializes
# SENDs per message and one-sided operations per file, so concurrent
# callers all succeed: a SEND may only time out waiting for credits, a RECV
# for a message. Proves every message arrives exactly once and intact,
# every READ returns what its thread wrote and each window ends with each
# thread's last WRITE, each counter equals its number of adds and the adds
# saw every value once, and nothing deadlocks (the tool fails if no
# operation finishes for 30 s, and is killed after 120 s). Messages run
# from 0 B to 300000 B (up to 5 fragments) both ways, and the threads of a
# file receive concurrently. SENDs have a 200 ms timeout: one that found no
# credits by then (its peer's threads busy elsewhere) is counted, not a
# failure, and must have sent nothing.

DESCRIPTION="four threads on each of four files run every operation at once: all verified, no deadlock"

test_main() {
	ensure_loaded
	local out rc f line
	local atomics=() fadd='[1-9][0-9]*'
	if ! has_atomics; then
		atomics=(--no-atomics) fadd=0
		echo "  $PROV has no atomics: the mix leaves fetch-and-add out"
	fi
	out=$(timeout 120 "$KIT" stress --fds 2 --polled 1 --threads 4 --seconds 10 --port "$PORT" --max-msg 300000 --concurrent-recv "${atomics[@]}" 2>&1) &&
		rc=0 || rc=$?
	echo "$out" | sed 's/^/  /'
	[ $rc != 124 ] || fail "stress hung (killed after 120 s)"
	[ $rc != 3 ] || fail "stress hung: no operation finished for 30 s"
	[ $rc = 0 ] || fail "stress failed ($rc)"
	grep -q '^stress: all verified: ' <<<"$out" || fail "not verified"
	# Every kind of operation ran, and succeeded, on every file.
	for f in L0 C0 L1 C1; do
		line=$(grep "^stress: $f: " <<<"$out") || fail "no line for $f"
		[[ "$line" =~ sent\ [1-9][0-9]*\ .*received\ [1-9][0-9]*,\ rdma\ [1-9][0-9]*,\ fadd\ $fadd\  ]] ||
			fail "$f did not run every operation: $line"
	done
}
