# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# KRUST_READ_KILL_ROUNDS (40; 15 on the debug kernel) times: a module file
# READs from another one, one 64-byte READ at a time (bench --op read --mode
# lat), and the other one's process is killed 300 to 700 ms in. Each READ is
# posted to an idle send queue, so on siw it is taken into the ORQ at once
# and waits for siw's transmit thread; the peer's close flushes the QP at
# any moment. Every READ stream must end with a connection error, not hang
# or finish, and the run leaves no splat. On 6.12's siw a flush that came
# before the transmit thread completed the READ twice (kernel/patches/0004):
# the module freed the request's context twice, and the kernel warned of a
# refcount_t underflow and then faulted in kmalloc.
#
# Guards: 0a48319 and kernel/patches/0004 (siw completed a flushed READ twice: a double free)

DESCRIPTION="READ streams whose peer is killed mid-stream end with a connection error, no splat"

test_main() {
	ensure_loaded
	local rounds=${KRUST_READ_KILL_ROUNDS:-$(rounds 40 15)} i port peer rd out reads=0
	for i in $(seq "$rounds"); do
		port=$((PORT + i % 50))
		"$TOOL" bench --timeout-ms 20000 --listen "$IP:$port" --op read --mode lat \
			--size 64 --iters 100000 >"$T/rk.peer" 2>&1 &
		peer=$!
		wait_for 10 grep -q '^listening' "$T/rk.peer" || fail "round $i: peer: $(cat "$T/rk.peer")"
		"$TOOL" bench --timeout-ms 20000 --connect "$IP:$port" --op read --mode lat \
			--size 64 --iters 100000 >"$T/rk.out" 2>&1 &
		rd=$!
		sleep "0.$((RANDOM % 5 + 3))"
		kill -9 "$peer"
		# Both end within a minute of the kill (the READs' timeout is 20
		# s): one still there is a hang, shown with its tasks' kernel
		# stacks rather than waited for until the suite's timeout.
		if ! wait_for 60 eval '! kill -0 "$peer" 2>/dev/null && ! kill -0 "$rd" 2>/dev/null'; then
			stacks_of "$peer"
			stacks_of "$rd"
			kill -9 "$peer" "$rd" 2>/dev/null
			fail "round $i: still running 60 s after the peer's kill: $(tail -2 "$T/rk.out")"
			return
		fi
		wait "$peer" 2>/dev/null || true
		if wait "$rd"; then
			fail "round $i: the READ stream finished although its peer was killed: $(tail -2 "$T/rk.out")"
		fi
		out=$(cat "$T/rk.out")
		grep -qE 'Connection reset by peer|Transport endpoint is not connected|Connection refused|nothing listens' <<<"$out" ||
			fail "round $i: unexpected: $out"
		grep -qE 'Connection refused|nothing listens' <<<"$out" || reads=$((reads + 1))
	done
	echo "  $rounds rounds, $reads of them ended mid-stream with a connection error"
	[ "$reads" -gt 0 ] || fail "no round got its READs going before the kill"
}
