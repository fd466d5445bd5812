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
BW_ITERS=${KRUST_BENCH_BW_ITERS:-1000}
SWEEP_ITERS=${KRUST_BENCH_SWEEP_ITERS:-200}
DEPTH=16
port=18600
J=$OUT/bench.jsonl
: >"$J"

next_port() { port=$((port + 1)); }

# perftest NAME ARGS...: server and client of a perftest binary over $DEV;
# prints the client's output.
perftest() {
	local name=$1
	shift
	next_port
	"$name" -d $DEV -F -p $port "${CM[@]}" "$@" >/tmp/pt-server.log 2>&1 &
	local srv=$!
	sleep 0.5
	local out try
	for try in 1 2 3 4 5 6 7 8 9 10; do
		out=$("$name" -d $DEV -F -p $port "${CM[@]}" "$@" "$IP" 2>&1) && break
		sleep 0.5
	done
	wait $srv
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

pt_bw() { # OP BIN SIZE ITERS
	local row
	row=$(perftest "$2" -s "$3" -n "$4" -t $DEPTH | pt_row)
	set -- "$1" $row
	[ $# -ge 6 ] || { echo "guest-bench: perftest $1 bw gave no result" >&2; return; }
	echo "{\"tool\":\"perftest\",\"op\":\"$1\",\"mode\":\"bw\",\"bytes\":$2,\"iterations\":$3,\"bw_peak\":$4,\"bw_avg\":$5,\"msg_rate\":$6}" >>"$J"
}

# ours OP MODE SIZE ITERS: the module's loop, both ends in the kernel.
ours() {
	next_port
	"$TOOL" bench --listen "$IP:$port" --op "$1" --mode "$2" --size "$3" --iters "$4" --depth $DEPTH \
		>/tmp/kb-peer.log 2>&1 &
	local peer=$! i
	for i in $(seq 100); do
		grep -q '^listening' /tmp/kb-peer.log && break
		sleep 0.1
	done
	local line
	line=$("$TOOL" bench --connect "$IP:$port" --op "$1" --mode "$2" --size "$3" --iters "$4" \
		--depth $DEPTH --json --samples-to "${SAMPLES_DIR:-$OUT}/samples-$1.txt" 2>&1)
	wait $peer
	case "$line" in
	"{"*) echo "{\"tool\":\"rdma-krust\",${line#\{}" >>"$J" ;;
	*) echo "guest-bench: rdma-krust $1 $2 $3: $line" >&2 ;;
	esac
}

insmod "$ROOT/rdma_krust.ko" || exit 1
if [ "${KRUST_PROFILE:-}" != only ]; then

echo "guest-bench: latency, $LAT_ITERS iterations"
pt_lat send ib_send_lat 2;    ours send lat 2 "$LAT_ITERS"
pt_lat write ib_write_lat 2;  ours write pingpong 2 "$LAT_ITERS"
pt_lat read ib_read_lat 2;    ours read lat 2 "$LAT_ITERS"
if [ "$PROV" = siw ]; then
	echo "guest-bench: no atomic rows: siw has no atomics (atomic_cap 0)"
else
	pt_lat atomic ib_atomic_lat 8; ours fadd lat 8 "$LAT_ITERS"
fi

echo "guest-bench: bandwidth at 64 KiB, $BW_ITERS iterations, depth $DEPTH"
pt_bw send ib_send_bw 65536 "$BW_ITERS";   ours send bw 65536 "$BW_ITERS"
pt_bw write ib_write_bw 65536 "$BW_ITERS"; ours write bw 65536 "$BW_ITERS"
pt_bw read ib_read_bw 65536 "$BW_ITERS";   ours read bw 65536 "$BW_ITERS"

echo "guest-bench: WRITE bandwidth against size, $SWEEP_ITERS iterations"
for size in 64 1024 4096 16384 262144 1048576; do
	pt_bw write ib_write_bw $size "$SWEEP_ITERS"
	ours write bw $size "$SWEEP_ITERS"
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
