#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the cached rdma-krust kernel in QEMU with the host's root filesystem
# (read-only, over virtio-9p), bring up a software RDMA provider on the
# guest's NIC (soft-RoCE, rxe, or soft-iWARP, siw), load rdma_krust.ko and
# run the guest test suite (scripts/guest-tests.sh).
#
#   scripts/qemu-test.sh                 all guest tests
#   scripts/qemu-test.sh NAME [NAME...]  only these tests (see --list)
#   scripts/qemu-test.sh --list          list the tests
#   scripts/qemu-test.sh --demo          the demo: device tables from both views,
#                                        one of each operation, validated
#   scripts/qemu-test.sh --kvm ...       use KVM instead of TCG
#   scripts/qemu-test.sh --pair [NAME...] the two-host suite: two guests joined
#                                        by a link the host's relay can make
#                                        lossy or cut (scripts/qemu-pair.sh)
#   scripts/qemu-test.sh --repro         the provider fixes' reproducers
#                                        (kernel/patches/repro/, by
#                                        scripts/guest-repro.sh); with
#                                        KRUST_FLAVOR=upstream on unpatched 6.12
#
# It installs (scripts/setup.sh) and builds (kernel, module, userspace tools)
# whatever is missing first, so it works on a fresh Debian 12 machine.
#
# The run fails on any failed test and on any WARNING, BUG, Oops, KASAN or
# lockdep report in the guest's dmesg, from boot (test boot_clean) to after
# the last test (quiet_after_suite). The last line is "N passed, N failed",
# also when setup, a build or the boot fails.
# The guest console and dmesg are kept in a log directory, printed on failure.
#
# Environment: KRUST_PROVIDER (rxe, siw, or both: one boot each, counts
# summed; default rxe), KRUST_TIMEOUT (seconds, default 1200), KRUST_LOGDIR, KRUST_SMP,
# KRUST_MEM, KRUST_FLAVOR (main, debug or upstream), KRUST_FUZZ_SECONDS and
# KRUST_FUZZ_SEED, KRUST_FUZZ_TRACE (ioctl_fuzz: 20, its --seed, --trace),
# KRUST_HOSTILE_SECONDS (hostile_peer_costs_only_its_connection, 60),
# KRUST_HOSTILE_SEED, KRUST_HOSTILE_LIES (its --seed and --lie),
# KRUST_READ_KILL_ROUNDS (read_stream_peer_killed, 40), KRUST_ACCESS_CLOSE_ROUNDS
# (access_error_survives_peer_close, 30), KRUST_FI_SECONDS and
# KRUST_FI_PROBABILITY, KRUST_FI_INTERVAL (fault_injection: 150 s, 2 percent
# of every 10th allocation with the module on the stack).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$HOME/.cargo/bin:$PATH"

mode=test
accel=tcg
tests=()
while [ $# -gt 0 ]; do
	case "$1" in
	--demo) mode=demo ;;
	--bench) mode=bench ;;
	--pair) mode=pair ;;
	--repro) mode=repro ;;
	--list) exec bash "$ROOT/scripts/guest-tests.sh" --list ;;
	--kvm) accel=kvm ;;
	-h | --help)
		sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "qemu-test: unknown option $1" >&2
		exit 2
		;;
	*) tests+=("$1") ;;
	esac
	shift
done

if [ ${#tests[@]} -gt 0 ] && [ "$mode" = test ]; then
	known=$(bash "$ROOT/scripts/guest-tests.sh" --list)
	for t in "${tests[@]}"; do
		grep -qx "$t" <<<"$known" || { echo "qemu-test: no test named '$t' (see --list)" >&2; exit 2; }
	done
fi

# --- install and build what is missing ----------------------------------------
# A failure here still ends with the verdict line, so it is counted.
PROVIDER=${KRUST_PROVIDER:-rxe}
case "$PROVIDER" in
rxe | siw) ;;
both)
	# One boot per provider; the counts add up. The pair suite runs on rxe
	# only (Documentation/providers.rst says why).
	[ "$mode" = test ] || { echo "qemu-test: KRUST_PROVIDER=both is for the test suite" >&2; exit 2; }
	tp=0 tf=0 ts=0
	for p in rxe siw; do
		out=$(mktemp)
		KRUST_PROVIDER=$p KRUST_LOGDIR= bash "$0" "${tests[@]}" | tee "$out" || true
		read -r p_ f_ < <(sed -n 's/^guest: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
		s_=$(sed -n 's/^guest: \([0-9]*\) skipped on .*/\1/p' "$out" | tail -1)
		echo "qemu-test: $p: ${p_:-0} passed, ${f_:-1} failed, ${s_:-0} skipped"
		tp=$((tp + ${p_:-0})) tf=$((tf + ${f_:-1})) ts=$((ts + ${s_:-0}))
		rm -f "$out"
	done
	echo "guest: $ts skipped on siw or rxe (reasons in the SKIP lines)"
	echo "guest: $tp passed, $tf failed"
	[ "$tf" = 0 ]
	exit
	;;
*)
	echo "qemu-test: KRUST_PROVIDER must be rxe, siw or both, not '$PROVIDER'" >&2
	exit 2
	;;
esac
export KRUST_PROVIDER=$PROVIDER

trap 'echo "qemu-test: setup or build failed: $BASH_COMMAND" >&2; echo "0 passed, 1 failed"' ERR
bash "$ROOT/scripts/setup.sh"
KDIR=$(KRUST_FLAVOR=${KRUST_FLAVOR:-main} "$ROOT/scripts/build-kernel.sh" --print-kdir)
KRUST_FLAVOR=${KRUST_FLAVOR:-main} "$ROOT/scripts/build-kernel.sh"
make -s -C "$ROOT" KDIR="$KDIR" modules >/dev/null
# The run-time misuse checks of kernel::rdma (test kernel_rdma_misuse),
# on a kernel that carries the series.
if grep -q '^CONFIG_RUST_RDMA_ABSTRACTIONS=y' "$KDIR/.config"; then
	"$ROOT/scripts/misuse.sh" build "$KDIR" >/dev/null
fi
(cd "$ROOT/userspace-peer" && cargo build --release --quiet)
# A C caller of the ioctls on the uapi header, 32-bit (test
# compat_ioctl_32bit_caller) and 64-bit (test uapi_header_c_program).
gcc -m32 -static -O2 -Wall -Wextra -Werror -I "$ROOT/include/uapi" \
	-o "$ROOT/userspace-peer/target/compat32" "$ROOT/scripts/compat32.c"
gcc -O2 -Wall -Wextra -Werror -I "$ROOT/include/uapi" \
	-o "$ROOT/userspace-peer/target/uapi64" "$ROOT/scripts/compat32.c"

BZIMAGE="$KDIR/arch/x86/boot/bzImage"
[ -f "$BZIMAGE" ] || { echo "qemu-test: no $BZIMAGE" >&2; echo "0 passed, 1 failed"; exit 1; }
trap - ERR

# --- boot --------------------------------------------------------------------
if [ "$mode" = pair ]; then
	export BZIMAGE KDIR ROOT
	exec bash "$ROOT/scripts/qemu-pair.sh" "${tests[@]}"
fi
LOGDIR=${KRUST_LOGDIR:-$(mktemp -d /tmp/rdma-krust-run.XXXXXX)}
mkdir -p "$LOGDIR/out"
CONSOLE="$LOGDIR/console.log"

accel_opts=(-accel tcg -cpu max)
[ "$accel" = kvm ] && accel_opts=(-accel kvm -cpu host)

# Kernel parameters with '=' that the kernel does not know become init's
# environment: that is how the guest learns what to run. The repository is
# also shared on its own (krust_src): the guest mounts a tmpfs on /tmp, which
# would hide a checkout that lives under the host's /tmp.
source "$ROOT/scripts/qemu-guest.sh"
qemu_guest "$LOGDIR/out"
append=$GUEST_APPEND
# The debug kernel evaluates ACPI's _PRT so slowly under KASAN and TCG that
# ACPICA's loop timeout fires; pci=noacpi routes PCI interrupts without it.
# It also makes x86 skip the MADT, and QEMU's MP table lists only CPU 0, so
# that guest runs on one CPU. The main kernel keeps ACPI and both vCPUs.
[ "${KRUST_FLAVOR:-main}" = debug ] && append+=" pci=noacpi"
# The flavour sets how many rounds a stress test runs (rounds() in
# scripts/tests/common.sh).
append+=" KRUST_FLAVOR=${KRUST_FLAVOR:-main}"
# On the debug kernel only kernel::rdma's doctests run: 6.12's own example
# at rust/kernel/task.rs:52 panics there (Task::current()'s misaligned
# dereference, caught by CONFIG_RUST_DEBUG_ASSERTIONS), outside the series.
[ "${KRUST_FLAVOR:-main}" = debug ] &&
	append+=" kunit.filter_glob=rust_doctests_kernel.rust_doctest_kernel_rdma_*"
# The kernel's build directory: the samples built as modules are there
# (test kernel_rdma_client_sample).
append+=" KRUST_KDIR=$KDIR"
append+=" KRUST_MODE=$mode KRUST_TESTS=$(IFS=,; echo "${tests[*]:-}")"
# A reproducer that oopses the unpatched kernel would otherwise leave it
# oopsing until the timeout: panic, and so end the guest (panic=-1). Its
# warnings go to the console too (loglevel 5), so that a guest the bug
# hangs after warning still shows what it hit.
[ "$mode" = repro ] && append+=" oops=panic loglevel=5"
for v in KRUST_PROVIDER KRUST_BENCH_LAT_ITERS KRUST_BENCH_LAT_ROUNDS KRUST_BENCH_BW_ITERS KRUST_BENCH_SWEEP_ITERS KRUST_BENCH_Q_ITERS KRUST_BENCH_SCALE_ITERS KRUST_BENCH_SCALE_DEPTHS KRUST_BENCH_ROWS KRUST_BENCH_MSG_OLD KRUST_BENCH_MSG_SIZES KRUST_BENCH_SPIN KRUST_TRACE KRUST_TRACE_FUNCS KRUST_NEIGHBOUR KRUST_COUNTERS KRUST_PROFILE KRUST_FUZZ_SECONDS KRUST_FUZZ_SEED KRUST_FUZZ_TRACE KRUST_HOSTILE_SECONDS KRUST_HOSTILE_SEED KRUST_HOSTILE_LIES KRUST_READ_KILL_ROUNDS KRUST_ACCESS_CLOSE_ROUNDS KRUST_RETRY_ACK_TIMEOUT KRUST_RETRY_SECONDS KRUST_FI_SECONDS KRUST_FI_PROBABILITY KRUST_FI_INTERVAL; do
	[ -n "${!v:-}" ] && append+=" $v=${!v}"
done

echo "qemu-test: booting $(basename "$KDIR") under ${accel^^} with $PROVIDER; log: $LOGDIR"
start=$(date +%s)
set +e
timeout --foreground -k 10 "${KRUST_TIMEOUT:-1200}" \
	qemu-system-x86_64 "${accel_opts[@]}" \
	-smp "${KRUST_SMP:-2}" -m "${KRUST_MEM:-2G}" \
	-kernel "$BZIMAGE" -append "$append" "${GUEST_ARGS[@]}" \
	-netdev hubport,id=n0,hubid=0 -device virtio-net-pci,netdev=n0 \
	</dev/null 2>&1 | tee "$CONSOLE"
qemu_rc=${PIPESTATUS[0]}
set -e
echo "qemu-test: guest ran $(($(date +%s) - start)) s (qemu exit $qemu_rc)"

# --- verdict -----------------------------------------------------------------
if [ "$mode" = demo ] || [ "$mode" = bench ] || [ "$mode" = repro ]; then
	[ -f "$LOGDIR/out/done" ] && exit 0
	echo "qemu-test: the $mode did not finish; see $LOGDIR" >&2
	exit 1
fi

summary="$LOGDIR/out/summary"
if [ ! -f "$summary" ]; then
	[ "$qemu_rc" = 124 ] && echo "qemu-test: guest timed out" >&2
	echo "qemu-test: the guest wrote no results; console: $CONSOLE" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
read -r passed failed skipped <"$summary"
if [ "$failed" != 0 ]; then
	echo "qemu-test: failures:" >&2
	grep '^FAIL' "$LOGDIR/out/results" >&2 || true
	echo "qemu-test: console: $CONSOLE, guest dmesg: $LOGDIR/out/dmesg.txt, KTAP: $LOGDIR/out/results.ktap, failed tests' files: $LOGDIR/out/scratch/" >&2
fi
[ "${skipped:-0}" = 0 ] || echo "guest: $skipped skipped on $PROVIDER (reasons in the SKIP lines)"
echo "guest: $passed passed, $failed failed"
[ "$failed" = 0 ]
