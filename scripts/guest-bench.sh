#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the guest (scripts/guest-init.sh, KRUST_MODE=bench): perftest
# and rdma-krust's in-kernel loops on the same device (rxe0, or siw0 with
# KRUST_PROVIDER=siw), same sizes and iterations, one after the other.
# Results go to $KRUST_OUT/bench.jsonl, one JSON object per line:
# {"tool": "perftest"|"rdma-krust", "op", "mode", "bytes", "iterations",
# then the figures}; rdma-krust's latency samples to
# $KRUST_OUT/samples-<op>.txt (microseconds, one per line).
#
# KRUST_PROFILE=1 adds a profile of each side of three runs (READ latency,
# SEND latency, WRITE bandwidth at 64 KiB), each 20 times as long as the
# measured one so the loop outweighs process start-up: perf samples every
# CPU (cpu-clock; TCG has no PMU) while the run goes, and the top tasks and
# symbols go to $KRUST_OUT/profile-<tool>-<run>.txt. KRUST_PROFILE=only
# runs just the profiles.
#
# KRUST_BENCH_ROWS picks the groups of rows, a comma-separated list of:
# lat (latency), bw (64 KiB bandwidth), sweep (WRITE bandwidth against
# size), qps (WRITE and SEND bandwidth over 1 to 16 QPs, perftest's -q,
# rows write-qN/send-qN), scale (the module alone: WRITE over N
# connections for each N of KRUST_BENCH_SCALE_CONNS, comma-separated,
# default 1,16,64,256,1024, with the memory they took and the time to
# connect them, rows conns-N, and conns-N-dD with D receives per
# connection for each D of KRUST_BENCH_SCALE_DEPTHS, comma-separated,
# default 6,4), msg (the message path, below; not in the default), none.
# Default: all but msg and none. The module's latency loops run both ways by default
# (KRUST_BENCH_SPIN=both): yielding between polls, and with --spin
# (CONN_SPIN: no yield) in the rows send-spin, write-spin, read-spin and
# fadd-spin; KRUST_BENCH_SPIN=0 runs only the first, =1 only the second.
#
# KRUST_BENCH_LAT_ROUNDS=R (default 1) runs the latency rows R times: the
# first round into bench.jsonl, round r into $KRUST_OUT/bench-round-r.jsonl
# (samples in $KRUST_OUT/round-r/), perftest first in odd rounds and the
# module first in even ones. On a busy host one tool's figure moves by
# half from one minute to the next; a round puts the two within seconds
# of each other, and scripts/bench.sh takes the median ratio over every
# round of every boot.
#
# The group msg times the message path, IOCTL_SEND and IOCTL_RECV between
# two files of the module (rdma-krust-kit msg-bench: a 2-byte ping-pong,
# half its round trip, and one-way streams of the sizes of
# KRUST_BENCH_MSG_SIZES, comma-separated, default 65536,1048576),
# KRUST_BENCH_LAT_ROUNDS times. With KRUST_BENCH_MSG_OLD=DIR, a directory
# in the tree (relative to it: the guest has its own /tmp) holding another
# build's rdma_krust.ko and rdma-krust-kit, every round runs that build as well,
# the two within seconds of each other, the other build first in odd
# rounds: the same pairing as the latency rounds, between two versions of
# the module. Lines "round R BUILD: <msg-bench's line>" (BUILD "this" or
# "old") go to $KRUST_OUT/msg-rounds.txt.
#
# KRUST_TRACE=1 adds an ftrace of 200 SEND ping-pongs of each tool (and of
# the module's with --spin): the siw and TCP functions one message passes
# through, and every wake-up and context switch, in
# $KRUST_OUT/trace-<tool>.txt; scripts/trace-breakdown.sh turns each into
# where a half round trip's microseconds go; the traced runs' own figures,
# which carry the tracer's cost, go to $KRUST_OUT/traced.jsonl, not into the
# tables. KRUST_TRACE_FUNCS names more
# functions to trace, comma-separated (the guest's environment comes on the
# kernel command line, which splits at spaces).
#
# KRUST_NEIGHBOUR=1 adds a check of the emulator: how fast CPU 0 runs the
# TCP loopback path while CPU 1 idles, loops in user mode, or polls as
# perftest's and the module's ping-pongs do (see neighbour() below), four
# rounds; the lines go to $KRUST_OUT/neighbour.txt.
#
# KRUST_COUNTERS=1 adds two rounds of the SEND and WRITE ping-pongs of
# each tool (the module's spinning) with the kernel's counters read around
# each run: TCP and IP (segments, pure and delayed ACKs, bytes), NET_RX and
# timer softirqs, timer interrupts and IPIs; each counter that moved, per
# round trip, goes to $KRUST_OUT/counters-<tool>-<op>-<round>.txt, and the
# runs' figures to $KRUST_OUT/counted.jsonl.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=$ROOT/userspace-peer/target/release/rdma-krust
OUT=${KRUST_OUT:-/tmp}
IP=${KRUST_IP:-192.0.2.1}
PROV=${KRUST_PROVIDER:-rxe}
DEV=${PROV}0
# iWARP connects through rdma_cm only: perftest's -R (its own TCP exchange
# cannot bring an iWARP QP up).
CM=()
[ "$PROV" = siw ] && CM=(-R)
LAT_ITERS=${KRUST_BENCH_LAT_ITERS:-1000}
LAT_ROUNDS=${KRUST_BENCH_LAT_ROUNDS:-1}
[[ $LAT_ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "guest-bench: KRUST_BENCH_LAT_ROUNDS must be 1 or more (got '$LAT_ROUNDS')" >&2; LAT_ROUNDS=1; }
BW_ITERS=${KRUST_BENCH_BW_ITERS:-1000}
SWEEP_ITERS=${KRUST_BENCH_SWEEP_ITERS:-200}
Q_ITERS=${KRUST_BENCH_Q_ITERS:-200}
SCALE_ITERS=${KRUST_BENCH_SCALE_ITERS:-400}
SCALE_DEPTHS=${KRUST_BENCH_SCALE_DEPTHS:-6,4}
SCALE_CONNS=${KRUST_BENCH_SCALE_CONNS:-1,16,64,256,1024}
MSG_SIZES=${KRUST_BENCH_MSG_SIZES:-65536,1048576}
TRACE_FUNCS=${KRUST_TRACE_FUNCS:-}
ROWS=" ${KRUST_BENCH_ROWS:-lat bw sweep qps scale} "
ROWS=${ROWS//,/ }
DEPTH=16
port=18600
J=$OUT/bench.jsonl
: >"$J"

# next_port [N]: a fresh port, and N - 1 more after it (-q's connections).
next_port() { port=$((port + ${last_n:-1})) && last_n=${1:-1}; }
# rows GROUP: whether KRUST_BENCH_ROWS asks for GROUP.
rows() { [[ $ROWS == *" $1 "* ]]; }

# perftest NAME ARGS...: server and client of a perftest binary over $DEV;
# prints the client's output.
perftest() {
	local name=$1
	shift
	next_port
	# A run that hangs (perftest -q over rdma_cm on siw, seen at 16 QPs)
	# costs its row, not the boot.
	timeout 120 "$name" -d $DEV -F -p $port "${CM[@]}" "$@" >/tmp/pt-server.log 2>&1 &
	local srv=$!
	sleep 0.5
	local out try
	for try in 1 2 3 4 5 6 7 8 9 10; do
		out=$(timeout 120 "$name" -d $DEV -F -p $port "${CM[@]}" "$@" "$IP" 2>&1) && break
		sleep 0.5
	done
	wait $srv || echo "guest-bench: perftest $name $*: server: $(tail -1 /tmp/pt-server.log)" >&2
	echo "$out"
}

# The data row of a perftest report: the line after the column header.
pt_row() { awk '/#bytes/ { getline; print; exit }'; }

pt_lat() { # OP BIN SIZE
	local row
	row=$(perftest "$2" -s "$3" -n "$LAT_ITERS" | pt_row)
	set -- "$1" $row
	[ $# -ge 10 ] || { echo "guest-bench: perftest $1 lat gave no result" >&2; return; }
	echo "{\"tool\":\"perftest\",\"op\":\"$1\",\"mode\":\"lat\",\"bytes\":$2,\"iterations\":$3,\"t_min\":$4,\"t_max\":$5,\"t_typical\":$6,\"t_avg\":$7,\"t_stdev\":$8,\"p99\":$9,\"p999\":${10}}" >>"$J"
}

pt_bw() { # OP BIN SIZE ITERS [ARG...]
	local row
	row=$(perftest "$2" -s "$3" -n "$4" -t $DEPTH "${@:5}" | pt_row)
	set -- "$1" $row
	[ $# -ge 6 ] || { echo "guest-bench: perftest $1 bw gave no result" >&2; return; }
	echo "{\"tool\":\"perftest\",\"op\":\"$1\",\"mode\":\"bw\",\"bytes\":$2,\"iterations\":$3,\"bw_peak\":$4,\"bw_avg\":$5,\"msg_rate\":$6}" >>"$J"
}

# ours OP MODE SIZE ITERS [FLAG...]: the module's loop, both ends in the
# kernel; the FLAGs go to both ends. OP may end in -spin (the same loop
# with --spin) or -qN (with -q N), and is reported under that name; OP
# conns-N is WRITE over N connections waiting on events (-q N -e), with
# the memory they took per connection end (both ends are in this guest);
# conns-N-dD the same with D receives per connection (--recv-depth D).
ours() {
	local op=${1%%-*} name=$1 mode=$2 size=$3 iters=$4 n=1
	shift 4
	case "$name" in
	*-spin) set -- "$@" --spin ;;
	*-q*) n=${name##*-q} && set -- "$@" -q "$n" ;;
	conns-*-d*) op=write n=${name#conns-} && n=${n%-d*} &&
		set -- "$@" -q "$n" -e --meminfo --recv-depth "${name##*-d}" ;;
	conns-*) op=write n=${name#conns-} && set -- "$@" -q "$n" -e --meminfo ;;
	esac
	next_port "$n"
	"$TOOL" bench --listen "$IP:$port" --op "$op" --mode "$mode" --size "$size" --iters "$iters" --depth $DEPTH \
		"$@" >/tmp/kb-peer.log 2>&1 &
	local peer=$! i
	for i in $(seq 100); do
		grep -q '^listening' /tmp/kb-peer.log && break
		sleep 0.1
	done
	local line
	line=$("$TOOL" bench --connect "$IP:$port" --op "$op" --mode "$mode" --size "$size" --iters "$iters" \
		--depth $DEPTH --json --samples-to "${SAMPLES_DIR:-$OUT}/samples-$name.txt" "$@" 2>&1)
	wait $peer
	case "$line" in
	"{"*) line="{\"tool\":\"rdma-krust\",${line#\{}"
		[ "$name" = "$op" ] || line=${line/\"op\":\"$op\"/\"op\":\"$name\"}
		case "$name" in conns-*) line=$(per_end "$line" "$n") ;; esac
		echo "$line" >>"$J" ;;
	*) echo "guest-bench: rdma-krust $name $mode $size: $line" >&2 ;;
	esac
}

# per_end LINE N: LINE with the memory of N connections per connection
# end added: mem_per_end_kib and slab_per_end_kib.
per_end() {
	local free slab
	free=$(sed -nE 's/.*"mem_free_drop_kib":([0-9]+).*/\1/p' <<<"$1")
	slab=$(sed -nE 's/.*"slab_growth_kib":([0-9]+).*/\1/p' <<<"$1")
	if [ -z "$free" ] || [ -z "$slab" ]; then
		echo "$1"
		return
	fi
	echo "${1%\}},\"mem_per_end_kib\":$((free / (2 * $2))),\"slab_per_end_kib\":$((slab / (2 * $2)))}"
}

# lat_rows [module-first]: the latency rows, the module's as
# KRUST_BENCH_SPIN says; per operation perftest runs first, or last with
# module-first.
lat_rows() {
	local s first=${1:-}
	case "${KRUST_BENCH_SPIN:-both}" in
	1) s=(-spin) ;;
	0) s=("") ;;
	*) s=("" -spin) ;;
	esac
	# lat_op PERFTEST-ARGS -- OURS-OP MODE SIZE: one operation's rows.
	lat_op() {
		local pt=("${@:1:3}") op=$5 mode=$6 size=$7 x
		[ -n "$first" ] || pt_lat "${pt[@]}"
		for x in "${s[@]}"; do ours "$op$x" "$mode" "$size" "$LAT_ITERS"; done
		[ -z "$first" ] || pt_lat "${pt[@]}"
	}
	lat_op send ib_send_lat 2 -- send lat 2
	lat_op write ib_write_lat 2 -- write pingpong 2
	lat_op read ib_read_lat 2 -- read lat 2
	if [ "$PROV" = siw ]; then
		echo "guest-bench: no atomic rows: siw has no atomics (atomic_cap 0)"
	else
		lat_op atomic ib_atomic_lat 8 -- fadd lat 8
	fi
}

insmod "$ROOT/rdma_krust.ko" || exit 1
if [ "${KRUST_PROFILE:-}" != only ]; then

if rows lat; then
	echo "guest-bench: latency, $LAT_ITERS iterations, $LAT_ROUNDS round(s)"
	lat_rows
	# Further rounds, each in a file of its own, the module first in every
	# other one: each pairs the tools within seconds of each other.
	for r in $(seq 2 "$LAT_ROUNDS"); do
		J=$OUT/bench-round-$r.jsonl SAMPLES_DIR=$OUT/round-$r
		: >"$J"
		mkdir -p "$SAMPLES_DIR"
		lat_rows $([ $((r % 2)) = 0 ] && echo module-first)
	done
	J=$OUT/bench.jsonl
	unset SAMPLES_DIR
fi

if rows bw; then
	echo "guest-bench: bandwidth at 64 KiB, $BW_ITERS iterations, depth $DEPTH"
	pt_bw send ib_send_bw 65536 "$BW_ITERS";   ours send bw 65536 "$BW_ITERS"
	pt_bw write ib_write_bw 65536 "$BW_ITERS"; ours write bw 65536 "$BW_ITERS"
	pt_bw read ib_read_bw 65536 "$BW_ITERS";   ours read bw 65536 "$BW_ITERS"
fi

if rows sweep; then
	echo "guest-bench: WRITE bandwidth against size, $SWEEP_ITERS iterations"
	for size in 64 1024 4096 16384 262144 1048576; do
		pt_bw write ib_write_bw $size "$SWEEP_ITERS"
		ours write bw $size "$SWEEP_ITERS"
	done
fi

if rows qps; then
	echo "guest-bench: several QPs at 64 KiB, $Q_ITERS iterations per QP, depth $DEPTH"
	for n in 1 2 4 8 16; do
		pt_bw write-q$n ib_write_bw 65536 "$Q_ITERS" -q $n
		ours write-q$n bw 65536 "$Q_ITERS"
		pt_bw send-q$n ib_send_bw 65536 "$Q_ITERS" -q $n
		ours send-q$n bw 65536 "$Q_ITERS"
	done
fi

# msg_run BUILD KO KIT ROUND: msg-bench with that build's module loaded.
msg_run() {
	local out
	rmmod rdma_krust 2>/dev/null
	insmod "$2" || { echo "guest-bench: insmod $2 failed" >&2; return; }
	out=$(timeout 300 "$3" msg-bench --ip "$IP" --port $((port + 1)) --sizes "$MSG_SIZES" 2>&1) ||
		echo "guest-bench: msg-bench ($1): $(tail -1 <<<"$out")" >&2
	next_port
	grep '^msg-bench:' <<<"$out" | sed "s/^/round $4 $1: /" >>"$OUT/msg-rounds.txt"
	rmmod rdma_krust
}

if rows msg; then
	old=${KRUST_BENCH_MSG_OLD:-}
	# Relative to the tree: the guest sees the tree, not the host's /tmp.
	[ -z "$old" ] || [[ $old == /* ]] || old=$ROOT/$old
	echo "guest-bench: the message path, $LAT_ROUNDS round(s)${old:+, paired with $old}"
	: >"$OUT/msg-rounds.txt"
	for r in $(seq "$LAT_ROUNDS"); do
		if [ -n "$old" ] && [ $((r % 2)) = 1 ]; then
			msg_run old "$old/rdma_krust.ko" "$old/rdma-krust-kit" "$r"
		fi
		msg_run this "$ROOT/rdma_krust.ko" "$ROOT/userspace-peer/target/release/rdma-krust-kit" "$r"
		if [ -n "$old" ] && [ $((r % 2)) = 0 ]; then
			msg_run old "$old/rdma_krust.ko" "$old/rdma-krust-kit" "$r"
		fi
	done
	insmod "$ROOT/rdma_krust.ko"
	cat "$OUT/msg-rounds.txt"
fi

if rows scale; then
	echo "guest-bench: WRITE over $SCALE_CONNS connections, 4 KiB, $SCALE_ITERS iterations each"
	for n in ${SCALE_CONNS//,/ }; do
		ours conns-$n bw 4096 "$SCALE_ITERS"
		for d in ${SCALE_DEPTHS//,/ }; do
			ours conns-$n-d$d bw 4096 "$SCALE_ITERS"
		done
	done
fi
fi

# trace NAME COMMAND...: ftrace while COMMAND (a function of this script)
# runs: the functions a SEND passes through on siw (or rxe), and the
# scheduler's wake-ups and switches; the trace goes to
# $KRUST_OUT/trace-NAME.txt (timestamps in TSC cycles on x86, under a
# "# tsc_mhz:" line), its figures to $KRUST_OUT/traced.jsonl.
trace() {
	local name=$1 t=/sys/kernel/tracing
	shift
	[ -d $t/events ] || mount -t tracefs nodev $t 2>/dev/null
	[ -w $t/set_ftrace_filter ] || { echo "guest-bench: no ftrace in this kernel" >&2; return; }
	echo 0 >$t/tracing_on
	echo nop >$t/current_tracer
	: >$t/trace
	echo 8192 >$t/buffer_size_kb
	# The default clock prints whole microseconds; x86's TSC clock prints
	# cycles, which scripts/trace-breakdown.sh turns into fractions of a
	# microsecond with the frequency written at the top of the trace.
	local clock=local mhz
	mhz=$(awk '/^cpu MHz/ { print $4; exit }' /proc/cpuinfo)
	grep -qw x86-tsc $t/trace_clock && [ -n "$mhz" ] && clock=x86-tsc
	echo $clock >$t/trace_clock
	local f funcs=()
	for f in siw_post_send siw_sq_start siw_qp_sq_process siw_tcp_rx_data siw_rqe_complete \
		siw_sqe_complete rxe_post_send rxe_requester rxe_receiver rxe_completer tcp_sendmsg_locked \
		${TRACE_FUNCS//,/ }; do
		grep -qx "$f" $t/available_filter_functions && funcs+=("$f")
	done
	printf '%s\n' "${funcs[@]}" >$t/set_ftrace_filter
	echo function >$t/current_tracer
	echo 1 >$t/events/sched/sched_wakeup/enable
	echo 1 >$t/events/sched/sched_switch/enable
	echo 1 >$t/tracing_on
	J=$OUT/traced.jsonl SAMPLES_DIR=/tmp "$@" >/dev/null
	echo 0 >$t/tracing_on
	{
		[ $clock = x86-tsc ] && echo "# tsc_mhz: $mhz"
		cat $t/trace
	} >"$OUT/trace-$name.txt"
	echo local >$t/trace_clock
	echo 0 >$t/events/sched/sched_wakeup/enable
	echo 0 >$t/events/sched/sched_switch/enable
	echo nop >$t/current_tracer
	: >$t/set_ftrace_filter
	: >$t/trace
}

if [ -n "${KRUST_TRACE:-}" ]; then
	echo "guest-bench: traces"
	LAT_ITERS=200
	trace perftest-send-lat pt_lat send ib_send_lat 2
	trace rdma-krust-send-lat ours send lat 2 "$LAT_ITERS"
	trace rdma-krust-send-spin-lat ours send-spin lat 2 "$LAT_ITERS"
fi

# neighbour NAME: the TCP loopback path's speed on CPU 0
# (scripts/tcp-pingpong.py, a half round trip in us) while CPU 1 runs
# what NAME says: nothing (idle), a shell loop in user mode (userloop),
# perftest's SEND ping-pong with both ends on CPU 1, which poll in user
# mode (perftest), or the module's spinning SEND ping-pong with both ends
# on CPU 1, which poll in the kernel (rdma-krust-spin). Both ping-pongs
# take turns on CPU 1 at the scheduler's tick, so it polls throughout.
# Lines "NAME US" go to $KRUST_OUT/neighbour.txt.
neighbour() {
	local name=$1 pids=() p
	next_port
	case "$name" in
	userloop)
		taskset -c 1 sh -c 'while :; do :; done' &
		pids=($!)
		;;
	perftest)
		taskset -c 1 ib_send_lat -d $DEV -F -p $port "${CM[@]}" -s 2 -n 1000000 >/dev/null 2>&1 &
		pids=($!)
		sleep 0.5
		taskset -c 1 ib_send_lat -d $DEV -F -p $port "${CM[@]}" -s 2 -n 1000000 $IP >/dev/null 2>&1 &
		pids+=($!)
		;;
	rdma-krust-spin)
		taskset -c 1 "$TOOL" bench --listen "$IP:$port" --op send --mode lat --size 2 \
			--iters 1000000 --spin --timeout-ms 60000 >/tmp/kb-peer.log 2>&1 &
		pids=($!)
		for p in $(seq 50); do
			grep -q '^listening' /tmp/kb-peer.log && break
			sleep 0.1
		done
		taskset -c 1 "$TOOL" bench --connect "$IP:$port" --op send --mode lat --size 2 \
			--iters 1000000 --spin --timeout-ms 60000 >/dev/null 2>&1 &
		pids+=($!)
		;;
	esac
	sleep 2
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null || echo "guest-bench: neighbour $name: its load on CPU 1 ended early" >&2
	done
	echo "$name $(python3 "$ROOT/scripts/tcp-pingpong.py" 20000)" >>"$OUT/neighbour.txt"
	[ ${#pids[@]} = 0 ] || { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
	sleep 1
}

if [ -n "${KRUST_NEIGHBOUR:-}" ]; then
	echo "guest-bench: CPU 0's TCP loopback beside CPU 1's polling"
	for round in 1 2 3 4; do
		for n in idle userloop perftest rdma-krust-spin; do neighbour $n; done
	done
fi

# counters: every counter of /proc/net/snmp and /proc/net/netstat (Ip,
# Tcp, TcpExt, ...), the NET_RX, TIMER and HRTIMER softirqs, and the local
# timer interrupts and the rescheduling and function-call IPIs (LOC, RES,
# CAL), each summed over the CPUs; one line "GROUP.NAME VALUE" each.
counters() {
	awk 'FNR % 2 == 1 { split($0, k) } FNR % 2 == 0 { for (i = 2; i <= NF; i++) print k[1] k[i], $i }' \
		/proc/net/snmp /proc/net/netstat
	awk '/NET_RX|TIMER|HRTIMER/ { s = 0; for (i = 2; i <= NF; i++) s += $i; print "softirq." $1, s }' /proc/softirqs
	awk '/CAL:|RES:|LOC:/ { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print "irq." $1, s }' /proc/interrupts
}

# counted NAME ITERS COMMAND...: what COMMAND (a latency run of ITERS
# iterations) cost in packets, TCP's ACK decisions, softirqs and IPIs:
# each counter that moved, per iteration, to $KRUST_OUT/counters-NAME.txt.
counted() {
	local name=$1 iters=$2 before=/tmp/counters-before.txt
	shift 2
	counters >"$before"
	J=$OUT/counted.jsonl SAMPLES_DIR=/tmp "$@" >/dev/null
	counters | awk -v n="$iters" -v name="$name" 'NR == FNR { b[$1] = $2; next }
		($1 in b) && $2 != b[$1] { printf "%s %s %.3f\n", name, $1, ($2 - b[$1]) / n }' \
		"$before" - >"$OUT/counters-$name.txt"
}

if [ -n "${KRUST_COUNTERS:-}" ]; then
	echo "guest-bench: counters of the latency ping-pongs"
	for round in 1 2; do
		counted perftest-send-$round "$LAT_ITERS" pt_lat send ib_send_lat 2
		counted rdma-krust-send-spin-$round "$LAT_ITERS" ours send-spin lat 2 "$LAT_ITERS"
		counted perftest-write-$round "$LAT_ITERS" pt_lat write ib_write_lat 2
		counted rdma-krust-write-spin-$round "$LAT_ITERS" ours write-spin pingpong 2 "$LAT_ITERS"
	done
fi

# profile NAME COMMAND...: perf samples the whole guest while COMMAND (a
# function of this script) runs; its results are not kept.
profile() {
	local name=$1 data=/tmp/perf-$1.data
	shift
	perf record -a -F 2000 -o "$data" >/dev/null 2>/tmp/perf-record.log &
	local rec=$!
	sleep 1
	J=/dev/null SAMPLES_DIR=/tmp "$@" >/dev/null
	kill -INT $rec
	wait $rec # perf exits with the signal's status
	[ -s "$data" ] || { echo "guest-bench: perf record $name: $(tail -1 /tmp/perf-record.log)" >&2; return; }
	{
		echo "# $name: $*"
		echo "# by task"
		perf report -i "$data" --stdio --no-children --sort comm -g none 2>/dev/null |
			grep -v '^#' | grep -v '^$' | head -12
		echo "# by symbol"
		perf report -i "$data" --stdio --no-children --sort sym -g none 2>/dev/null |
			grep -v '^#' | grep -v '^$' | head -25
	} >"$OUT/profile-$name.txt"
}

if [ -n "${KRUST_PROFILE:-}" ] && command -v perf >/dev/null; then
	echo "guest-bench: profiles"
	LAT_ITERS=$((LAT_ITERS * 20))
	profile perftest-read-lat pt_lat read ib_read_lat 2
	profile rdma-krust-read-lat ours read lat 2 "$LAT_ITERS"
	profile perftest-send-lat pt_lat send ib_send_lat 2
	profile rdma-krust-send-lat ours send lat 2 "$LAT_ITERS"
	profile perftest-write-bw pt_bw write ib_write_bw 65536 $((BW_ITERS * 20))
	profile rdma-krust-write-bw ours write bw 65536 $((BW_ITERS * 20))
fi

rmmod rdma_krust
echo "guest-bench: $(wc -l <"$J") results"
touch "$OUT/done"
