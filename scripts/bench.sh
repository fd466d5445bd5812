#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boot the guest KRUST_BENCH_BOOTS times (default 3), each
# time running perftest and rdma-krust's in-kernel loops on the same device
# (rxe, or siw with KRUST_PROVIDER=siw) with the same sizes and iterations
# (scripts/guest-bench.sh), and print each boot's side-by-side table; then
# the table over the boots: per row the medians, the median ratio and its
# spread (min-max), and "faster"/"slower" only where the spread does not
# cross 1.0. One boot's ratio moves by 0.4 from boot to boot here.
#
# Results stay in the run's log directory (printed): boot-N/out/ per boot
# with bench.jsonl (every figure of both tools) and samples-<op>.txt
# (rdma-krust's latency samples), medians.txt, and plots/*.png of the
# median boot (the one whose ratios are nearest the medians).
# With --update-docs the raw results go to
# results/<date>/<provider>/<kind>/ (results/README.md): the run's date
# (date +%F), KRUST_PROVIDER (rxe by default), and the kind of run,
# KRUST_BENCH_KIND if set, else "pair" (--pair), "main" (every group of
# rows, the default), "rounds" (KRUST_BENCH_LAT_ROUNDS above 1), or the
# groups of KRUST_BENCH_ROWS joined by "-" ("scale", "lat", "lat-qps"...);
# a folder already there gets "-2", "-3"... Into it: each boot's
# bench.jsonl as bench-boot-N.jsonl, the median boot's as bench.jsonl,
# medians.txt, and with rounds bench-boot-N-round-R.jsonl,
# medians-rounds.txt and rounds-by-load.txt. Only the plots go to
# Documentation/perf/ (Documentation/perf/siw/ with KRUST_PROVIDER=siw),
# replacing those of the same name, for Documentation/performance.rst.
# With --pair the same cases run across two guests
# (scripts/qemu-test.sh --pair bench_across, Documentation/two-hosts.rst):
# servers on one, the measuring side on the other, over the host's relay;
# with --update-docs too its bench.jsonl goes to results/ (no plots).
# With KRUST_BENCH_LAT_ROUNDS=R (scripts/guest-bench.sh) each boot runs
# the latency rows R times, and medians-rounds.txt has their table over
# every round of every boot.
# Environment: KRUST_BENCH_BOOTS, KRUST_BENCH_LAT_ITERS, KRUST_BENCH_BW_ITERS,
# KRUST_BENCH_MSG_OLD (the group msg: another build to pair with),
# KRUST_BENCH_MSG_SIZES (its streams' sizes),
# KRUST_BENCH_LAT_ROUNDS, KRUST_BENCH_KIND,
# KRUST_BENCH_SWEEP_ITERS, KRUST_PROFILE (passed to the guest; see
# scripts/guest-bench.sh), plus qemu-test.sh's. Profiles alone:
# KRUST_PROFILE=only scripts/qemu-test.sh --bench.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"
# Setup first: the tool built below needs what it installs (rdma-sys
# links libibverbs and librdmacm; the plots use fonts-dejavu-core).
# qemu-test.sh runs it again, which finds nothing to do.
bash "$ROOT/scripts/setup.sh"
LOGDIR=${KRUST_LOGDIR:-$(mktemp -d /tmp/rdma-krust-bench.XXXXXX)}
export KRUST_LOGDIR=$LOGDIR KRUST_TIMEOUT=${KRUST_TIMEOUT:-1800}

RUN_DATE=$(date +%F)
pair=0 update=0
for arg in "$@"; do
	case $arg in
	--pair) pair=1 ;;
	--update-docs) update=1 ;;
	*) echo "bench: unknown argument '$arg' (--pair, --update-docs)" >&2; exit 2 ;;
	esac
done

# results/<date>/<provider>/<kind>/ of this run (results/README.md), a
# new folder: "-2", "-3"... after a kind already run that day.
results_dir() {
	local kind=${KRUST_BENCH_KIND:-} rows
	if [ -z "$kind" ]; then
		rows=${KRUST_BENCH_ROWS:-lat,bw,sweep,qps,scale}
		rows=$(echo "$rows" | tr ' ' ',' | tr ',' '\n' | sed '/^$/d' | sort -u | paste -sd, -)
		if [ "$pair" = 1 ]; then
			kind=pair
		elif [ "$rows" = bw,lat,qps,scale,sweep ]; then
			kind=main
		elif [ "${KRUST_BENCH_LAT_ROUNDS:-1}" != 1 ]; then
			kind=rounds
		else
			kind=${rows//,/-}
		fi
	fi
	[[ $kind =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || { echo "bench: KRUST_BENCH_KIND must be a folder name (got '$kind')" >&2; exit 2; }
	local base=$ROOT/results/$RUN_DATE/${KRUST_PROVIDER:-rxe}/$kind
	local dir=$base n=2
	while [ -e "$dir" ]; do dir=$base-$n; n=$((n + 1)); done
	echo "$dir"
}

res=
[ "$update" = 0 ] || res=$(results_dir)

if [ "$pair" = 1 ]; then
	"$ROOT/scripts/qemu-test.sh" --pair bench_across
	[ -s "$LOGDIR/ctl/bench.jsonl" ] || { echo "bench: no results; see $LOGDIR" >&2; exit 1; }
	echo
	echo "bench: across two guests (perftest and rdma-krust, servers on B, measured on A)"
	"$ROOT/userspace-peer/target/release/rdma-krust" bench-report "$LOGDIR/ctl/bench.jsonl"
	if [ "$update" = 1 ]; then
		mkdir -p "$res"
		cp "$LOGDIR/ctl/bench.jsonl" "$res/"
		echo "bench: bench.jsonl copied to ${res#"$ROOT"/}/"
	fi
	echo "bench: results in $LOGDIR/ctl/bench.jsonl"
	exit 0
fi

boots=${KRUST_BENCH_BOOTS:-3}
[[ $boots =~ ^[1-9][0-9]*$ ]] || { echo "bench: KRUST_BENCH_BOOTS must be a count of boots, 1 or more (got '$boots')" >&2; exit 2; }

# The plotting code is a cargo feature, so the test suite does not build it;
# its binary has a target directory of its own. The message path alone
# (KRUST_BENCH_ROWS=msg) has no plots.
[ "${KRUST_BENCH_ROWS:-}" = msg ] ||
	(cd "$ROOT/userspace-peer" && cargo build --release --quiet -p rdma-krust --features plot --target-dir target/plot)
TOOL=$ROOT/userspace-peer/target/release/rdma-krust
runs=() rounds=() msgs=()
for i in $(seq 1 "$boots"); do
	echo "bench: boot $i of $boots"
	KRUST_LOGDIR=$LOGDIR/boot-$i "$ROOT/scripts/qemu-test.sh" --bench
	run=$LOGDIR/boot-$i/out/bench.jsonl
	msg=$LOGDIR/boot-$i/out/msg-rounds.txt
	[ -s "$run" ] || [ -s "$msg" ] || { echo "bench: boot $i gave no results; see $LOGDIR/boot-$i" >&2; exit 1; }
	[ ! -s "$msg" ] || msgs+=("$msg")
	[ -s "$run" ] || continue
	echo
	echo "bench: boot $i of $boots"
	"$TOOL" bench-report "$run"
	echo
	runs+=("$run")
	for r in "$LOGDIR/boot-$i/out"/bench-round-*.jsonl; do
		[ ! -s "$r" ] || rounds+=("$r")
	done
done
if [ ${#msgs[@]} -gt 0 ]; then
	# Group msg: the message path's rounds, paired with
	# KRUST_BENCH_MSG_OLD's build when given.
	echo "bench: the message path over ${#msgs[@]} boot(s) (scripts/msg-rounds.py)"
	python3 "$ROOT/scripts/msg-rounds.py" "${msgs[@]}" | tee "$LOGDIR/msg-medians.txt"
	echo
	for i in $(seq 1 "$boots"); do
		sed "s/^/boot $i /" "$LOGDIR/boot-$i/out/msg-rounds.txt" 2>/dev/null
	done >"$LOGDIR/msg-rounds.txt"
fi
if [ ${#runs[@]} = 0 ]; then
	# Only the message path ran.
	if [ "$update" = 1 ]; then
		mkdir -p "$res"
		cp "$LOGDIR/msg-rounds.txt" "$LOGDIR/msg-medians.txt" "$res/"
		echo "bench: results in ${res#"$ROOT"/}"
	fi
	exit 0
fi
best=1
if [ "$boots" -gt 1 ]; then
	"$TOOL" bench-report "${runs[@]}" | tee "$LOGDIR/medians.txt"
	best=$(sed -nE 's/^median boot: ([0-9]+) .*/\1/p' "$LOGDIR/medians.txt")
	echo
fi
if [ ${#rounds[@]} -gt 0 ]; then
	# KRUST_BENCH_LAT_ROUNDS: the latency rows over every round of every
	# boot, each round's ratio from figures taken seconds apart.
	n=$((${#runs[@]} + ${#rounds[@]}))
	echo "bench: latency over $boots boot(s) of ${KRUST_BENCH_LAT_ROUNDS:-1} rounds ($n pairs)"
	"$TOOL" bench-report "${runs[@]}" "${rounds[@]}" |
		awk -v n="$n" '$1 == "op" { sub("medians over " n " boots", "medians over " n " rounds") }
			$1 == "op" || $2 == "lat"' | tee "$LOGDIR/medians-rounds.txt"
	echo
	# The same rounds pooled, and in thirds by the host's load.
	echo "bench: latency ratios over $n rounds, by load (scripts/rounds-by-load.py)"
	python3 "$ROOT/scripts/rounds-by-load.py" "${runs[@]}" "${rounds[@]}" | tee "$LOGDIR/rounds-by-load.txt"
	echo
fi
OUT=$LOGDIR/boot-$best/out
"$ROOT/userspace-peer/target/plot/release/rdma-krust" bench-plot "$OUT" --out "$OUT/plots"
if [ "$update" = 1 ]; then
	# The raw results to results/<date>/<provider>/<kind>/; the plots,
	# rxe's to Documentation/perf/, siw's to Documentation/perf/siw/.
	mkdir -p "$res"
	cp "$OUT/bench.jsonl" "$res/"
	for i in $(seq 1 "$boots"); do
		cp "${runs[i - 1]}" "$res/bench-boot-$i.jsonl"
		for r in "$LOGDIR/boot-$i/out"/bench-round-*.jsonl; do
			[ ! -s "$r" ] || cp "$r" "$res/bench-boot-$i-round-$(basename "$r" .jsonl | sed 's/^bench-round-//').jsonl"
		done
	done
	for f in medians.txt medians-rounds.txt rounds-by-load.txt msg-rounds.txt msg-medians.txt; do
		[ ! -f "$LOGDIR/$f" ] || cp "$LOGDIR/$f" "$res/"
	done
	docs=$ROOT/Documentation/perf
	[ "${KRUST_PROVIDER:-rxe}" = rxe ] || docs=$docs/$KRUST_PROVIDER
	mkdir -p "$docs"
	plots=("$OUT"/plots/*.png)
	[ ! -e "${plots[0]}" ] || cp "${plots[@]}" "$docs/"
	echo "bench: each boot's bench.jsonl and the tables copied to ${res#"$ROOT"/}/, the plots (boot $best's) to ${docs#"$ROOT"/}/"
fi
echo "bench: results in $LOGDIR (plots of boot $best in $OUT/plots)"
