#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: boot the guest once, run perftest and rdma-krust's in-kernel
# loops on the same device (rxe, or siw with KRUST_PROVIDER=siw) with the
# same sizes and iterations (scripts/guest-bench.sh), then print the
# side-by-side table.
#
# Results stay in the run's log directory (printed): bench.jsonl (every
# figure of both tools), samples-<op>.txt (rdma-krust's latency samples),
# plots/*.png. With --update-docs the plots and bench.jsonl also go to
# Documentation/perf/ (Documentation/perf/siw/ with KRUST_PROVIDER=siw).
# With --pair the same cases run across two guests
# (scripts/qemu-test.sh --pair bench_across, Documentation/two-hosts.rst):
# servers on one, the measuring side on the other, over the host's relay.
# Environment: KRUST_BENCH_LAT_ITERS, KRUST_BENCH_BW_ITERS,
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

if [ "${1:-}" = --pair ]; then
	"$ROOT/scripts/qemu-test.sh" --pair bench_across
	[ -s "$LOGDIR/ctl/bench.jsonl" ] || { echo "bench: no results; see $LOGDIR" >&2; exit 1; }
	echo
	echo "bench: across two guests (perftest and rdma-krust, servers on B, measured on A)"
	"$ROOT/userspace-peer/target/release/rdma-krust" bench-report "$LOGDIR/ctl/bench.jsonl"
	echo "bench: results in $LOGDIR/ctl/bench.jsonl"
	exit 0
fi

# The plotting code is a cargo feature, so the test suite does not build it;
# its binary has a target directory of its own.
(cd "$ROOT/userspace-peer" && cargo build --release --quiet --features plot --target-dir target/plot)
"$ROOT/scripts/qemu-test.sh" --bench
OUT=$LOGDIR/out
[ -s "$OUT/bench.jsonl" ] || { echo "bench: no results; see $LOGDIR" >&2; exit 1; }
echo
"$ROOT/userspace-peer/target/release/rdma-krust" bench-report "$OUT/bench.jsonl"
echo
"$ROOT/userspace-peer/target/plot/release/rdma-krust" bench-plot "$OUT" --out "$OUT/plots"
if [ "${1:-}" = --update-docs ]; then
	# rxe's figures in Documentation/perf/, siw's in Documentation/perf/siw/.
	docs=$ROOT/Documentation/perf
	[ "${KRUST_PROVIDER:-rxe}" = rxe ] || docs=$docs/$KRUST_PROVIDER
	mkdir -p "$docs"
	cp "$OUT"/plots/*.png "$OUT/bench.jsonl" "$docs/"
	echo "bench: plots and bench.jsonl copied to ${docs#"$ROOT"/}/"
fi
echo "bench: results in $OUT"
