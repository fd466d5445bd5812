# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The module's operations for FI_SECONDS (default 150) with every
# allocation that has the module on its stack failing at random (1 in 50):
# connect and accept, SEND/RECV of every size, expose and revoke, READ,
# WRITE and atomics, the benchmarks, many threads on several connections,
# device removal under traffic. Each command ends (bounded) with success
# or an errno; no splat, no leak (kmemleak_clean, at the end); then, with
# injection off, a fresh connection moves 2 MiB verified and the module
# unloads. Prints how many failures were injected and which ioctls saw
# them.

DESCRIPTION="the module's operations with allocations failing at random: every call ends, no splat or leak"

requires() { fault_injection_available; }

test_main() {
	ensure_loaded
	local end=$((SECONDS + ${KRUST_FI_SECONDS:-150})) round=0 port atom=() sizes counts b
	local benches=("write bw 65536" "send lat 8" "read bw 65536")
	has_atomics || atom=(--no-atomics)
	sizes=1,64,4096,65535,65536,65537,1048576,2097152
	: >"$T/fi.log"
	fi_setup "${KRUST_FI_PROBABILITY:-2}" "${KRUST_FI_INTERVAL:-10}"
	while [ $SECONDS -lt $end ]; do
		round=$((round + 1))
		port=$((PORT + round % 20 * 5))
		fi_pair "echo" kernel-echo --listen "$IP:$port" --count 8 --timeout-ms 10000 \
			-- kernel-ping --connect "$IP:$port" --sizes $sizes --timeout-ms 10000 || break
		fi_pair "target rw" kernel-target --listen "$IP:$((port + 1))" --len 65536 --fill 3 \
			--timeout-ms 10000 -- kernel-initiator --connect "$IP:$((port + 1))" --scenario rw --seed 3 || break
		fi_pair "target revoke" kernel-target --listen "$IP:$((port + 2))" --timeout-ms 10000 \
			-- kernel-initiator --connect "$IP:$((port + 2))" --scenario revoke || break
		b=(${benches[round % 3]})
		fi_pair "bench ${b[*]}" bench --timeout-ms 10000 --listen "$IP:$((port + 3))" --op ${b[0]} --mode ${b[1]} \
			-s ${b[2]} -n 200 -- bench --timeout-ms 10000 --connect "$IP:$((port + 3))" --op ${b[0]} --mode ${b[1]} -s ${b[2]} -n 200 || break
		fi_run "stress" 90 "$KIT" --msg-timeout-ms 5000 stress --fds 2 --threads 3 --seconds 5 --port $((PORT + 100 + round % 10 * 4)) \
			--max-msg 300000 "${atom[@]}" || break
		fi_run "cycles" 90 "$KIT" cycles --count 5 --port $((PORT + 140)) --size 65537 || break
		if [ $((round % 3)) = 0 ]; then
			fi_device_removal || break
		fi
	done
	counts=$(fi_off)
	# Failed calls, by ioctl and errno.
	echo "  $round round(s); injected: $counts"
	grep -oE 'IOCTL_[A-Z_]+: [A-Za-z ]+' "$T/fi.log" | sort | uniq -c | sort -rn | head -20 | sed 's/^/    /'
	[ "$(grep -oE 'IOCTL_[A-Z_]+: ' "$T/fi.log" | wc -l)" -gt 0 ] || fail "no call failed: nothing was injected"
	[ $SECONDS -ge $end ] || fail "stopped after $round round(s)"
	# Afterwards: a fresh connection moves 2 MiB, verified; the module
	# unloads (nothing left holding it).
	start_echo $((PORT + 141)) 2
	"$TOOL" kernel-ping --connect "$IP:$((PORT + 141))" --sizes 2097152,2097152 >"$T/fi.after" 2>&1 ||
		fail "after injection: $(cat "$T/fi.after")"
	wait $ECHO_PID || fail "echo after injection: $(cat "$T/echo.$((PORT + 141))")"
	grep -c '^ok 2097152 bytes' "$T/fi.after" | grep -qx 2 || fail "after injection: $(cat "$T/fi.after")"
	wait_for 10 rmmod rdma_krust || fail "the module does not unload after injection"
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

# fi_run NAME SECONDS CMD...: CMD under injection, bounded: exit 0 or 1 (a
# call failed with an errno) pass; a hang (124), a watchdog's verdict (3),
# a data mismatch (4), a panic or a signal fail. Output appended to
# $T/fi.log, its IOCTL_* errors counted there.
fi_run() {
	local name=$1 s=$2 out rc
	shift 2
	out=$(run_bounded "$s" "$@") && rc=0 || rc=$?
	{ echo "== $name ($rc)"; echo "$out"; } >>"$T/fi.log"
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
	"$TOOL" "${largs[@]}" >"$T/fi.bg" 2>&1 &
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
	{ echo "== $name (listener) ($lrc)"; cat "$T/fi.bg"; } >>"$T/fi.log"
	case $lrc in
	0 | 1 | 130) ;;
	*)
		tail -20 "$T/fi.bg" | sed 's/^/    /'
		fail "$name: the listener's exit status $lrc under fault injection"
		return 1
		;;
	esac
	return $rc
}

# Under injection: a device of the provider, two connections on it moving
# 1 MiB messages, and the device deleted mid-traffic: the deletion ends
# (bounded) and both sides end.
fi_device_removal() {
	veth_dev ${PROV}16 16 198.51.100.41 >/dev/null || return 1
	"$TOOL" kernel-echo --listen 198.51.100.41:$((PORT + 142)) --count 50 --timeout-ms 10000 >>"$T/fi.log" 2>&1 &
	local e=$! sizes
	sizes=$(printf '1048576,%.0s' $(seq 50))
	sleep 0.3
	"$TOOL" kernel-ping --connect 198.51.100.41:$((PORT + 142)) --sizes "${sizes%,}" --timeout-ms 10000 >>"$T/fi.log" 2>&1 &
	local p=$!
	sleep 1
	run_bounded 30 rdma link delete ${PROV}16 >>"$T/fi.log" || {
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
