# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# One-way streams: the sender sends every message back to back and only
# then waits for the sink's count, so no reply carries credits back: they
# return in credit-only messages alone. Large messages after one another
# (1 MiB then 2 MiB: the second needs more credits than the first left)
# must flow without a stall, kernel to kernel (event-driven and polled),
# kernel to userspace and userspace to kernel. Every message is checked by
# the sink. A stall (credits the sender needs, never granted) shows as
# the sender's SEND failing with ETIMEDOUT, as it did before the grant batch
# was fixed; the time each leg takes is reported, not asserted: a debug
# kernel under TCG takes 5 to 15 times as long as the main one and is
# still right.
#
# Guards: 10ac849 (a credit stall on one-way streams: the sender's SEND ETIMEDOUT)

DESCRIPTION="one-way streams of large messages flow without a credit stall, kernel and userspace, both ways"

test_main() {
	ensure_loaded
	local sizes=1048576,2097152,2097152,1,1048576,2097152,65536,2097152 n=8 port=$PORT
	stream_leg "kernel -> kernel" echo kernel-ping
	stream_leg "kernel -> kernel (polled)" echo kernel-ping --poll
	stream_leg "kernel -> userspace" serve kernel-ping
	stream_leg "userspace -> kernel" echo ping
}

# stream_leg LABEL SINK SENDER [--poll]: one stream of test_main ($sizes,
# $n messages, on the next $port): SINK is the module
# (echo: kernel-echo --sink) or the userspace peer (serve --mode sink),
# SENDER kernel-ping or ping.
stream_leg() {
	local label=$1 sink=$2 sender=$3 poll=${4:-} out t pid log
	port=$((port + 1))
	if [ "$sink" = echo ]; then
		start_echo $port $n --sink --seed 5 $poll
		pid=$ECHO_PID log=$T/echo.$port
	else
		start_serve $port --mode sink --count $n --seed 5
		pid=$SERVE_PID log=$T/serve.$port
	fi
	t=$(date +%s%N)
	out=$("$TOOL" "$sender" --connect "$IP:$port" --sizes $sizes --seed 5 --one-way $poll 2>&1) ||
		fail "$label: $sender --one-way: $out"
	wait "$pid" || fail "$label: the sink: $(cat "$log")"
	grep -q "^$n message(s) streamed and verified by the sink$" <<<"$out" || fail "$label: $out"
	grep -q "^received and verified $n message(s)$" "$log" || fail "$label: the sink: $(cat "$log")"
	t=$((($(date +%s%N) - t) / 1000000))
	echo "  $label: $n messages, 12 MiB, in $t ms"
}
