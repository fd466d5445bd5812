# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The tool's listening sides and the checks more than one test makes with
# them. Their output goes to the test's scratch directory $T, named by port
# ($T/echo.PORT, $T/target.PORT, $T/serve.PORT, $T/bench.PORT). Sourced by
# common.sh.
# shellcheck disable=SC2034 # SIZES is for the tests

# start_echo PORT COUNT [ARGS...]: a kernel-side echo listener in the
# background; waits until it listens. Its output goes to $T/echo.$PORT.
start_echo() {
	local port=$1 count=$2
	shift 2
	"$TOOL" kernel-echo --listen "$IP:$port" --count "$count" "$@" >"$T/echo.$port" 2>&1 &
	ECHO_PID=$!
	wait_for 10 grep -q '^listening' "$T/echo.$port" || fail "listener on $port: $(cat "$T/echo.$port")"
}

# start_target PORT ARGS...: a kernel-target in the background (output in
# $T/target.$PORT, pid in TARGET_PID); waits until it listens.
start_target() {
	local port=$1
	shift
	"$TOOL" kernel-target --listen "$IP:$port" "$@" >"$T/target.$port" 2>&1 &
	TARGET_PID=$!
	wait_for 10 grep -q '^listening' "$T/target.$port" || fail "target on $port: $(cat "$T/target.$port")"
}

# initiator PORT ARGS...: a kernel-initiator against the target on PORT.
initiator() {
	local port=$1
	shift
	"$TOOL" kernel-initiator --connect "$IP:$port" "$@" 2>&1
}

# start_serve PORT ARGS...: the userspace peer (librdmacm) in the background,
# output in $T/serve.$PORT, pid in SERVE_PID; waits until it listens.
start_serve() {
	local port=$1
	shift
	"$TOOL" serve --listen "$IP:$port" "$@" >"$T/serve.$port" 2>&1 &
	SERVE_PID=$!
	wait_for 10 grep -q '^listening' "$T/serve.$port" || fail "serve on $port: $(cat "$T/serve.$port")"
}

# conn_field LINE KEY: the value of KEY in a "conn: k=v ..." line.
conn_field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# The message and window sizes of the tests between the module and the
# userspace peer.
SIZES=1,4096,65536,1048576,12345

# interrupted_recv PORT [--poll]: a kernel-echo blocked in RECV (its peer
# holds still) gets SIGUSR1 and must fail with EINTR; its last line goes to
# INTR_LINE. Not for a command substitution, where a failure would not stop
# the test.
interrupted_recv() {
	local port=$1 log=$T/intr.$1
	shift
	"$KIT" --eintr-on-usr1 kernel-echo --listen "$IP:$port" --count 1 --timeout-ms 60000 "$@" \
		>"$log.echo" 2>&1 &
	local pid=$!
	wait_for 10 grep -q '^listening' "$log.echo" || fail "no listener"
	"$KIT" kernel-ping --connect "$IP:$port" --hold-ms 30000 --sizes 8 "$@" >"$log.ping" 2>&1 &
	local ping=$!
	wait_for 10 grep -q '^conn:' "$log.echo" || fail "no connection: $(cat "$log.echo")"
	sleep 0.3
	kill -USR1 $pid
	wait $pid && fail "recv was not interrupted"
	kill $ping 2>/dev/null || true
	wait $ping 2>/dev/null || true
	grep -q 'IOCTL_RECV: Interrupted system call (os error 4)' "$log.echo" || fail "$(cat "$log.echo")"
	INTR_LINE=$(tail -1 "$log.echo")
}

# start_bystander PORT SEED: a kernel target and a kernel initiator that
# connect at once, then hold the connection for 3 s before a READ/WRITE/
# READ-back round: a connection that lives through whatever the caller
# does meanwhile. check_bystander PORT SEED waits for both and checks the
# data.
start_bystander() {
	start_target "$1" --len 65536 --access rw --fill "$2"
	BYSTANDER_TARGET=$TARGET_PID
	"$KIT" kernel-initiator --connect "$IP:$1" --scenario rw --seed "$2" --hold-ms 3000 >"$T/bystander.$1" 2>&1 &
	BYSTANDER_PID=$!
	wait_for 10 grep -q '^window ' "$T/bystander.$1" || fail "bystander: $(cat "$T/bystander.$1")"
}
check_bystander() {
	wait "$BYSTANDER_PID" || fail "bystander initiator: $(cat "$T/bystander.$1")"
	wait "$BYSTANDER_TARGET" || fail "bystander target: $(cat "$T/target.$1")"
	grep -q '^rw ok 65536 bytes$' "$T/bystander.$1" || fail "bystander: $(cat "$T/bystander.$1")"
	echo "  bystander connection, live throughout: 64 KiB READ/WRITE/READ-back verified"
}

# bad_access PORT SCENARIO LINE [TARGET ARGS...]: a kernel target with a
# 4 KiB window, and an initiator running SCENARIO, which must end with LINE
# and EACCES; the target's connection fails and its window still holds its
# pattern.
bad_access() {
	local port=$1 scenario=$2 line=$3 out
	shift 3
	start_target "$port" --len 4096 --fill 3 "$@"
	out=$(initiator "$port" --scenario "$scenario" --seed 3 2>&1)
	wait "$TARGET_PID" && fail "the target of the bad access did not see its connection fail"
	grep -q "^$line: $REFUSED" <<<"$out" || fail "$scenario: $out"
	grep -q '^window intact after the failure$' "$T/target.$port" ||
		fail "$scenario: target: $(cat "$T/target.$port")"
	echo "  $(grep "^$line" <<<"$out"); target window intact"
}

# bench_pair PORT ARGS...: the listening side and the measuring side of
# `rdma-krust bench`; prints the measuring side's JSON line.
# Both ends ask for rdma_cm's own ACK timeout, 17 (537 ms), and RNR timer,
# code 0 (655 ms), not the module's 67 ms and 0.64 ms: on the debug kernel
# (KASAN under TCG, one vCPU, ~10 ms an operation) the raw SEND bandwidth
# run outpaces the sink's reposts, and a sender that retries every 0.64 ms
# starves the sink until its wait runs out (Documentation/transport.rst). A
# benchmark measures the loops, not recovery.
bench_pair() {
	local port=$1
	shift
	# Each end waits up to 120 s for the other's next message: a debug
	# kernel under TCG can take longer than the 10 s default to get a
	# 64 KiB SEND through rxe's resends, and still deliver it.
	"$TOOL" bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --listen "$IP:$port" "$@" \
		>"$T/bench.$port" 2>&1 &
	local peer=$!
	wait_for 10 grep -q '^listening' "$T/bench.$port" || fail "bench peer: $(cat "$T/bench.$port")"
	if ! "$TOOL" bench --ack-timeout 17 --min-rnr-timer 0 --timeout-ms 120000 --connect "$IP:$port" --json "$@"; then
		wait $peer
		fail "bench $*; the listening end: $(cat "$T/bench.$port")"
	fi
	wait $peer || fail "bench peer: $(cat "$T/bench.$port")"
}

# json_num JSON KEY: a number from a flat JSON object.
json_num() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1"; }
