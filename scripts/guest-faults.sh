# SPDX-License-Identifier: GPL-2.0
#
# Guest tests of what rxe and siw never do on their own: a user copy that
# stalls while the device leaves (userfaultfd), and allocations that fail
# (the kernel's fault injection, Documentation/fault-injection/). Sourced by
# scripts/guest-tests.sh, whose helpers they use.

# --- a user copy stalled while the device leaves ------------------------------

# stall_case OP EXPECT: `rdma-krust-kit stall --op OP` on a fresh device of
# the provider: the operation's user buffer has a missing page at 64 KiB that
# a userfaultfd holds back, so the module's copy to or from user memory waits
# on it. Meanwhile the device is deleted: the deletion must finish while the
# copy still waits (nothing of the device may be held across a user copy).
# Then the page is filled, and the operation must end with EXPECT ("ok", or
# an errno's text).
stall_case() {
	local op=$1 expect=$2 out=/tmp/stall.$1 rel=/tmp/stall.$1.release
	local pid del t res
	rm -f "$rel"
	veth_dev ${PROV}14 14 198.51.100.33
	"$KIT" stall --op "$op" --ip 198.51.100.33 --release "$rel" >"$out" 2>&1 &
	pid=$!
	if ! wait_for 30 grep -q '^stalled' "$out"; then
		kill $pid 2>/dev/null
		wait $pid
		rdma link delete ${PROV}14
		ip link del kv14
		fail "$op: the copy never stalled: $(cat "$out")"
	fi
	t=$(date +%s%N)
	# In the background: a deletion that waits for the copy sleeps in the
	# kernel beyond any signal; only releasing the page ends it.
	rdma link delete ${PROV}14 &
	del=$!
	if ! wait_for 20 eval "! kill -0 $del"; then
		echo "  $op: rdma link delete still waiting after 20 s; its stack:"
		sed 's/^/    /' /proc/$del/stack 2>/dev/null
		touch "$rel"
		wait $del
		wait $pid
		ip link del kv14
		fail "$op: rdma link delete waited for a stalled user copy"
	fi
	wait $del || fail "$op: rdma link delete ${PROV}14 failed"
	t=$((($(date +%s%N) - t) / 1000000))
	kill -0 $pid 2>/dev/null || fail "$op: the operation ended before its page came: $(cat "$out")"
	touch "$rel"
	wait $pid || fail "$op: stall failed: $(cat "$out")"
	ip link del kv14
	res=$(sed -n 's/^result: //p' "$out")
	echo "  $op: rdma link delete took $t ms with the copy stalled; then: $res"
	case $expect in
	ok) expect_eq "$res" ok "$op's result" ;;
	*) [[ "$res" == "$expect"* ]] || fail "$op: expected '$expect', got '$res'" ;;
	esac
	not_listed ${PROV}14 || fail "${PROV}14 still listed"
}

# Every copy between user memory and the module stalls in turn while the
# device goes. RECV, SEND, WRITE and the window's copies lose their
# connection with the device and fail with ENODEV once the page comes; a
# READ whose data had all arrived before the device went delivers it.
test_copy_stall_device_removal() {
	ensure_loaded
	stall_case recv "No such device"
	stall_case send "No such device"
	stall_case write "No such device"
	stall_case read ok
	stall_case window-read "No such device"
	stall_case window-write "No such device"
	expect_eq "$(klog | grep -c "remove ${PROV}14: 2 connection(s) torn down")" 6 "teardown messages"
}

# --- fault injection ---------------------------------------------------------

FI=/sys/kernel/debug
FI_KINDS=(failslab fail_page_alloc)

# Prints why fault injection cannot run here, if it cannot.
fault_injection_missing() {
	mountpoint -q $FI || mount -t debugfs debugfs $FI 2>/dev/null
	[ -e /proc/thread-self/fail-nth ] && [ -d $FI/failslab ] && [ -d $FI/fail_page_alloc ] &&
		[ -e $FI/failslab/require-start ] && return 1
	echo "needs CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC, FAULT_INJECTION_DEBUG_FS and FAULT_INJECTION_STACKTRACE_FILTER (the debug kernel, kernel/debug.config)"
}

# fi_setup PROBABILITY INTERVAL: every allocation with the module on the
# stack (in a syscall of any task, a CM handler, a completion worker) fails
# with PROBABILITY percent of every INTERVAL-th, sleeping ones too; each kind counts down from
# FI_TIMES, so that what is left tells how many were injected. fail-nth,
# armed per call, ignores the probability and the filters. verbose 0: a
# report's stack dump would read as a splat.
FI_TIMES=1000000
fi_setup() {
	local k base size m end
	# (No process substitution: the guest has no /dev/fd.)
	m=$(awk '$1 == "rdma_krust" { print $6, $2 }' /proc/modules)
	[ -n "$m" ] || fail "rdma_krust not in /proc/modules"
	base=${m% *} size=${m#* }
	[ "$((base))" != 0 ] || fail "/proc/modules hides the module's address"
	# In hex: as a signed decimal a kernel address is negative, which the
	# attribute refuses.
	end=$(printf '0x%x' $((base + size)))
	for k in "${FI_KINDS[@]}"; do
		echo 0 >$FI/$k/probability
		echo N >$FI/$k/ignore-gfp-wait
		echo N >$FI/$k/task-filter
		echo 0 >$FI/$k/verbose
		echo "$2" >$FI/$k/interval
		echo 0 >$FI/$k/space
		echo $FI_TIMES >$FI/$k/times
		echo 32 >$FI/$k/stacktrace-depth
		echo $base >$FI/$k/require-start
		echo $end >$FI/$k/require-end
		echo "$1" >$FI/$k/probability
	done
	echo 0 >$FI/fail_page_alloc/min-order
}

# fi_off: injection off; prints how many failures each kind injected.
fi_off() {
	local k
	for k in "${FI_KINDS[@]}"; do
		echo 0 >$FI/$k/probability
		echo -n "$k $((FI_TIMES - $(cat $FI/$k/times))) "
		echo 0 >$FI/$k/require-start
		echo 0 >$FI/$k/require-end
	done
	echo
}

# sweep OP: `rdma-krust-kit fail-sweep --op OP` on $DEV, fail-nth armed for
# each allocation of the call in turn.
sweep() {
	local out rc
	out=$(run_bounded 600 "$KIT" fail-sweep --op "$1" --ip "$IP" --port 7965) && rc=0 || rc=$?
	echo "$out" | tail -3 | sed "s/^/  $1: /"
	[ $rc = 0 ] || fail "fail-sweep --op $1 failed ($rc)"
	grep -q '^fail-sweep: every one of [1-9][0-9]* point(s) failed in turn' <<<"$out" ||
		fail "fail-sweep --op $1 did not reach a clean pass"
}

# Each allocation of a CONNECT (the id, PD, CQ, QP and its slots, every
# receive, the device's user record), of a 2 MiB SEND and of a 2 MiB RECV
# fails in turn: each call succeeds or fails with an errno, a failed
# CONNECT leaves its file CLOSED and tears down what it built, and a
# failed SEND or RECV leaves the connection whole (the same message then
# goes through, checked byte by byte: no fragment lost or sent twice, no
# credit or receive lost). The sweep's "0 allocations of the call
# failed" end proves every point was reached.
test_alloc_failure_sweep() {
	ensure_loaded
	local k
	for k in "${FI_KINDS[@]}"; do
		echo N >$FI/$k/ignore-gfp-wait
		echo 0 >$FI/$k/probability
		echo 0 >$FI/$k/verbose
	done
	echo 0 >$FI/fail_page_alloc/min-order
	sweep connect
	sweep send
	sweep recv
}

# fi_run NAME SECONDS CMD...: CMD under injection, bounded: exit 0 or 1 (a
# call failed with an errno) pass; a hang (124), a watchdog's verdict (3),
# a data mismatch (4), a panic or a signal fail. Output appended to
# /tmp/fi.log, its IOCTL_* errors counted there.
fi_run() {
	local name=$1 s=$2 out rc
	shift 2
	out=$(run_bounded "$s" "$@") && rc=0 || rc=$?
	{ echo "== $name ($rc)"; echo "$out"; } >>/tmp/fi.log
	case $rc in
	0 | 1) return 0 ;;
	*)
		echo "$out" | tail -20 | sed 's/^/    /'
		fail "$name: exit status $rc under fault injection"
		return 1
		;;
	esac
}

# fi_pair NAME LISTENER_ARGS -- CONNECTOR_ARGS: two tool processes, the
# listener in the background. The connector is bounded as by fi_run; the
# listener, done or waiting for a connection that failed, gets 15 s more,
# then SIGINT (an interrupted wait, a path of its own), then 15 s to end.
fi_pair() {
	local name=$1 largs=() bg rc=0 lrc=0
	shift
	while [ "$1" != -- ]; do
		largs+=("$1")
		shift
	done
	shift
	"$TOOL" "${largs[@]}" >/tmp/fi.bg 2>&1 &
	bg=$!
	sleep 0.3
	fi_run "$name" 60 "$TOOL" "$@" || rc=1
	if ! wait_for 15 eval "! kill -0 $bg"; then
		kill -INT $bg
		if ! wait_for 15 eval "! kill -0 $bg"; then
			stacks_of $bg
			kill -KILL $bg
			fail "$name: the listener did not end 15 s after SIGINT"
			return 1
		fi
	fi
	wait $bg || lrc=$?
	{ echo "== $name (listener) ($lrc)"; cat /tmp/fi.bg; } >>/tmp/fi.log
	case $lrc in
	0 | 1 | 130) ;;
	*)
		tail -20 /tmp/fi.bg | sed 's/^/    /'
		fail "$name: the listener's exit status $lrc under fault injection"
		return 1
		;;
	esac
	return $rc
}

# The module's operations for FI_SECONDS (default 150) with every
# allocation that has the module on its stack failing at random (1 in 50):
# connect and accept, SEND/RECV of every size, expose and revoke, READ,
# WRITE and atomics, the benchmarks, many threads on several connections,
# device removal under traffic. Each command ends (bounded) with success
# or an errno; no splat, no leak (kmemleak_clean, at the end); then, with
# injection off, a fresh connection moves 2 MiB verified and the module
# unloads. Prints how many failures were injected and which ioctls saw
# them.
test_fault_injection() {
	ensure_loaded
	local end=$((SECONDS + ${KRUST_FI_SECONDS:-150})) round=0 port atom=() sizes counts b
	local benches=("write bw 65536" "send lat 8" "read bw 65536")
	has_atomics || atom=(--no-atomics)
	sizes=1,64,4096,65535,65536,65537,1048576,2097152
	: >/tmp/fi.log
	fi_setup "${KRUST_FI_PROBABILITY:-2}" "${KRUST_FI_INTERVAL:-10}"
	while [ $SECONDS -lt $end ]; do
		round=$((round + 1))
		port=$((7970 + round % 20 * 5))
		fi_pair "echo" kernel-echo --listen "$IP:$port" --count 8 --timeout-ms 10000 \
			-- kernel-ping --connect "$IP:$port" --sizes $sizes --timeout-ms 10000 || break
		fi_pair "target rw" kernel-target --listen "$IP:$((port + 1))" --len 65536 --fill 3 \
			--timeout-ms 10000 -- kernel-initiator --connect "$IP:$((port + 1))" --scenario rw --seed 3 || break
		fi_pair "target revoke" kernel-target --listen "$IP:$((port + 2))" --timeout-ms 10000 \
			-- kernel-initiator --connect "$IP:$((port + 2))" --scenario revoke || break
		b=(${benches[round % 3]})
		fi_pair "bench ${b[*]}" bench --timeout-ms 10000 --listen "$IP:$((port + 3))" --op ${b[0]} --mode ${b[1]} \
			-s ${b[2]} -n 200 -- bench --timeout-ms 10000 --connect "$IP:$((port + 3))" --op ${b[0]} --mode ${b[1]} -s ${b[2]} -n 200 || break
		fi_run "stress" 90 "$KIT" --msg-timeout-ms 5000 stress --fds 2 --threads 3 --seconds 5 --port $((7900 + round % 10 * 4)) \
			--max-msg 300000 "${atom[@]}" || break
		fi_run "cycles" 90 "$KIT" cycles --count 5 --port 7968 --size 65537 || break
		if [ $((round % 3)) = 0 ]; then
			fi_device_removal || break
		fi
	done
	counts=$(fi_off)
	# Failed calls, by ioctl and errno.
	echo "  $round round(s); injected: $counts"
	grep -oE 'IOCTL_[A-Z_]+: [A-Za-z ]+' /tmp/fi.log | sort | uniq -c | sort -rn | head -20 | sed 's/^/    /'
	[ "$(grep -oE 'IOCTL_[A-Z_]+: ' /tmp/fi.log | wc -l)" -gt 0 ] || fail "no call failed: nothing was injected"
	[ $SECONDS -ge $end ] || fail "stopped after $round round(s)"
	# Afterwards: a fresh connection moves 2 MiB, verified; the module
	# unloads (nothing left holding it).
	start_echo 7969 2
	"$TOOL" kernel-ping --connect "$IP:7969" --sizes 2097152,2097152 >/tmp/fi.after 2>&1 ||
		fail "after injection: $(cat /tmp/fi.after)"
	wait $ECHO_PID || fail "echo after injection: $(cat /tmp/echo.7969)"
	grep -c '^ok 2097152 bytes' /tmp/fi.after | grep -qx 2 || fail "after injection: $(cat /tmp/fi.after)"
	wait_for 10 rmmod rdma_krust || fail "the module does not unload after injection"
}

# Under injection: a device of the provider, two connections on it moving
# 1 MiB messages, and the device deleted mid-traffic: the deletion ends
# (bounded) and both sides end.
fi_device_removal() {
	veth_dev ${PROV}16 16 198.51.100.41 >/dev/null || return 1
	"$TOOL" kernel-echo --listen 198.51.100.41:7995 --count 50 --timeout-ms 10000 >>/tmp/fi.log 2>&1 &
	local e=$! sizes
	sizes=$(printf '1048576,%.0s' $(seq 50))
	sleep 0.3
	"$TOOL" kernel-ping --connect 198.51.100.41:7995 --sizes "${sizes%,}" --timeout-ms 10000 >>/tmp/fi.log 2>&1 &
	local p=$!
	sleep 1
	run_bounded 30 rdma link delete ${PROV}16 >>/tmp/fi.log || {
		ip link del kv16
		fail "rdma link delete under injection hung or failed"
	}
	ip link del kv16
	wait_for 30 eval "! kill -0 $e && ! kill -0 $p" || {
		stacks_of $e
		stacks_of $p
		fail "the connections on the deleted device did not end"
	}
	wait $e $p 2>/dev/null
	return 0
}
