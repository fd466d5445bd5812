# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What every guest test may use: the setup's names, failing and comparing,
# the module, waits, devices of the provider under test, the kernel log.
# Sourced by the runner (scripts/guest-tests.sh) and the demo
# (scripts/guest-demo.sh); the tool's peers are in common-peers.sh.
# shellcheck disable=SC2034 # the names are for the tests

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
KO=$ROOT/rdma_krust.ko
TOOL=$ROOT/userspace-peer/target/release/rdma-krust
# The test kit: the commands only the tests run (fuzz, stress, block...).
KIT=$ROOT/userspace-peer/target/release/rdma-krust-kit
OUT=${KRUST_OUT:-/tmp}
NIC=${KRUST_NIC:-}
IP=${KRUST_IP:-192.0.2.1}
# The provider under test: rxe (soft-RoCE) or siw (soft-iWARP). Its first
# device is $DEV; tests that add more name them ${PROV}N.
PROV=${KRUST_PROVIDER:-rxe}
DEV=${PROV}0
# The kernel under test: main or debug (KASAN, lockdep, kmemleak and
# fault injection, kernel/debug.config), where a round of a test takes
# several times as long.
FLAVOR=${KRUST_FLAVOR:-main}

# rounds MAIN DEBUG: how many times a stress test repeats its round. The
# main kernel, run on every provider, repeats a race-hunting round often
# enough to catch the race it guards (each test says how often it failed);
# the debug kernel runs fewer, enough to take every path of the round
# under its checkers, so that its suite fits CI's time with room to spare.
rounds() {
	if [ "$FLAVOR" = debug ]; then echo "$2"; else echo "$1"; fi
}
# How a refused remote access shows at the initiator: RoCE NAKs the
# request (IB_WC_REM_ACCESS_ERR, EACCES); iWARP's target sends a TERMINATE
# and the connection ends (ECONNRESET), for a WRITE only after its local
# completion (Documentation/providers.rst).
REFUSED=EACCES
[ "$PROV" = siw ] && REFUSED=ECONNRESET
# Each test's scratch directory and first port, set by the runner for the
# test it runs; these are for a helper sourced outside a test.
T=${T:-/tmp}
PORT=${PORT:-7000}

fail() {
	echo "  $*"
	return 1
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
	[ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

loaded() { grep -q '^rdma_krust ' /proc/modules; }

# The guest tests of kernel::rdma itself load a module of their own (built
# by scripts/misuse.sh build into kernel/tests/misuse/runtime/, or a
# sample), on a soft device of their own. require_runtime_ko KO: their
# requires(), true if KO was built. runtime_ko_teardown MODULE N: their
# EXIT trap's cleanup, MODULE unloaded and the device ${PROV}N and its veth
# kvN deleted.
require_runtime_ko() {
	[ -f "$1" ] && return 0
	echo "no $1 (built by scripts/misuse.sh build on a kernel with kernel::rdma)"
	return 1
}

runtime_ko_teardown() {
	rmmod "$1" 2>/dev/null || true
	rdma link delete "${PROV}$2" 2>/dev/null || true
	ip link del "kv$2" 2>/dev/null || true
}

ensure_loaded() {
	loaded || insmod "$KO" || fail "insmod failed"
	[ -c /dev/rdma_krust ] || fail "/dev/rdma_krust missing after insmod"
}

ensure_unloaded() {
	if loaded; then rmmod rdma_krust || fail "rmmod failed"; fi
}

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds, for SECONDS of
# wall-clock time (a count of sleeps would stretch with a slow guest).
wait_for() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# start_hogs N: N busy loops in the background, which widen races that
# need the CPUs loaded; stop_hogs ends them, and so does the test's end.
# HOGS is global: the trap runs after test_main has returned.
start_hogs() {
	local i
	HOGS=()
	for ((i = 0; i < $1; i++)); do
		(while :; do :; done) &
		HOGS+=($!)
	done
	trap 'kill "${HOGS[@]}" 2>/dev/null || true' EXIT
}
stop_hogs() { kill "${HOGS[@]}" 2>/dev/null || true; }

# stacks_of PID: the kernel stacks of PID's threads, for a process that
# does not return.
stacks_of() {
	local t
	for t in /proc/"$1"/task/*; do
		# Gone already (the glob stays unexpanded), or going.
		[ -r "$t/stack" ] || { echo "  pid $1: no task left"; continue; }
		echo "  stack of $(cat "$t/comm" 2>/dev/null || true) (${t##*/}):"
		sed 's/^/    /' "$t/stack" 2>/dev/null || true
	done
}

# run_bounded SECONDS CMD...: CMD's output and status; if CMD has not
# ended after SECONDS, its output so far, its threads' kernel stacks (a
# process stuck in the kernel ignores timeout's signals) and status 124.
# CMD's output goes to a file, so a CMD that never returns does not hold
# the caller's pipe open.
run_bounded() {
	local s=$1 out pid rc=0
	shift
	out=$(mktemp "$T/bounded.XXXXXX")
	"$@" >"$out" 2>&1 &
	pid=$!
	if ! wait_for "$s" eval "! kill -0 $pid"; then
		cat "$out"
		echo "still running after $s s:"
		stacks_of $pid
		kill -KILL $pid 2>/dev/null || true
		rm -f "$out"
		return 124
	fi
	wait $pid || rc=$?
	cat "$out"
	rm -f "$out"
	return $rc
}

port_active() { rdma link show "$1/1" | grep -q 'state ACTIVE'; }

# link_add NAME NETDEV: create a device of the provider under test (soft-
# RoCE or soft-iWARP) and wait for its port.
link_add() {
	rdma link add "$1" type "$PROV" netdev "$2" || fail "rdma link add $1 type $PROV failed"
	wait_for 20 port_active "$1" || fail "$1 port never became ACTIVE"
}

# veth_dev NAME N [ADDR]: a veth pair kvN/kv(N+1), both up, kvN with
# ADDR/24 if given, and a device NAME of the provider on kvN, listed by the
# module.
veth_dev() {
	local dev=$1 n=$2
	ip link add "kv$n" type veth peer name "kv$((n + 1))" || fail "veth kv$n"
	[ -z "${3:-}" ] || ip addr add "$3/24" dev "kv$n"
	ip link set "kv$n" up && ip link set "kv$((n + 1))" up
	link_add "$dev" "kv$n"
	wait_for 10 listed "$dev" || fail "$dev not listed after rdma link add"
}

listed() { "$TOOL" devices --brief | grep -q "^$1 "; }
not_listed() { ! listed "$1"; }
verbs_listed() { "$TOOL" devices --verbs --brief | grep -q "^$1 "; }
verbs_not_listed() { ! verbs_listed "$1"; }

# has_atomics: the device under test runs atomics (the ATOMIC column of
# the module's device table is not NONE: siw's is).
has_atomics() {
	[ "$("$TOOL" devices | awk -v d="$DEV" '$1 == d { print $6 }')" != NONE ]
}

# rxe_counter NAME: one of the device's hardware counters (rxe's
# completer_retry_err, duplicate_request, ...); 0 if it has none.
rxe_counter() {
	cat "/sys/class/infiniband/$DEV/ports/1/hw_counters/$1" 2>/dev/null || echo 0
}

# retry_stress ACK SECS PORT: the stress mix (multi-packet SENDs, WRITEs,
# READs and fetch-and-adds, four threads on two connections, one polled) for
# SECS seconds at local ACK timeout exponent ACK, from PORT; fails the test
# on a hang, wrong data, a lost connection, a run not verified, or one in
# which rxe never retried (it would prove nothing).
retry_stress() {
	local ack=$1 secs=$2 port=$3 out rc retries0 dups0 retries dups
	retries0=$(rxe_counter completer_retry_err)
	dups0=$(rxe_counter duplicate_request)
	# The kit takes the module's options before its subcommand.
	out=$(timeout 180 "$KIT" --ack-timeout "$ack" stress --fds 2 --polled 1 --threads 4 \
		--seconds "$secs" --port "$port" --max-msg 300000 2>&1) && rc=0 || rc=$?
	echo "$out" | sed "s/^/  /"
	retries=$(($(rxe_counter completer_retry_err) - retries0))
	dups=$(($(rxe_counter duplicate_request) - dups0))
	echo "  ack timeout $ack: $retries retries by the requester, $dups duplicate requests at the responder"
	[ "$rc" != 124 ] || fail "stress hung (killed after 180 s)"
	[ "$rc" != 3 ] || fail "stress hung: no operation finished for 30 s"
	[ "$rc" != 4 ] || fail "wrong data"
	[ "$rc" = 0 ] || fail "stress failed ($rc): a connection lost under retries"
	grep -q '^stress: all verified: ' <<<"$out" || fail "not verified"
	[ "$retries" -gt 0 ] || fail "rxe never retried: the test did not test"
}

# Kernel log lines of the module since the current test started.
klog() { dmesg | grep 'rdma_krust: '; }

# The kernel's log since boot: what earlier tests took out of the ring
# buffer (the runner's dmesg -c, kept in $OUT/dmesg.txt), then the rest.
boot_log() {
	cat "$OUT/dmesg.txt" 2>/dev/null
	dmesg
}

# The kernel's fault injection (Documentation/fault-injection/), for the
# tests that make allocations fail.
FI=/sys/kernel/debug
FI_KINDS=(failslab fail_page_alloc)

# fault_injection_available: fault injection runs here; if not, prints
# why and fails (the requires of the tests that inject).
fault_injection_available() {
	mountpoint -q $FI || mount -t debugfs debugfs $FI 2>/dev/null
	[ -e /proc/thread-self/fail-nth ] && [ -d $FI/failslab ] && [ -d $FI/fail_page_alloc ] &&
		[ -e $FI/failslab/require-start ] && return 0
	echo "needs CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC, FAULT_INJECTION_DEBUG_FS and FAULT_INJECTION_STACKTRACE_FILTER (the debug kernel, kernel/debug.config)"
	return 1
}

# shellcheck source=scripts/tests/common-peers.sh
. "$ROOT/scripts/tests/common-peers.sh"

# The slab caches, for the tests that look for leaks
# (connect_cycles_no_slab_growth, thousand_connections).

# slab_shrink: SLUB gives back its per-CPU slabs, whose free objects
# /proc/slabinfo would otherwise count as active.
slab_shrink() {
	local f
	for f in /sys/kernel/slab/*/shrink; do echo 1 >"$f" 2>/dev/null || true; done
}

# slab_settle: drop the page cache with its dentries and inodes, give RCU
# callbacks and deferred frees a second, then shrink the slabs.
slab_settle() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	sleep 1
	slab_shrink
}

# kmalloc_bytes: bytes of objects in use (active_objs * objsize) in the
# kmalloc caches, where the module, rdma_cm, ib_cm, ib_core and rxe allocate
# their objects. The other caches follow the test's own processes and files
# (proc inodes, task structs: +13 KiB in 2 s of idling) and vmalloc's lazily
# freed bookkeeping (vmap_area: +/- 43 KiB).
kmalloc_bytes() { awk 'NR > 2 && $1 ~ /kmalloc-/ { s += $2 * $4 } END { print s }' /proc/slabinfo; }

# sunreclaim: unreclaimable slab memory in bytes; it also counts kmallocs too
# large for a slab cache (a raw connection's 64 KiB receive buffers), which
# slabinfo does not.
sunreclaim() { awk '/^SUnreclaim:/ { print $2 * 1024 }' /proc/meminfo; }

# slab_growers BEFORE AFTER: the caches that grew most between two copies of
# /proc/slabinfo.
slab_growers() {
	awk 'NR > 2 { print $1, $2 * $4 }' "$1" | sort >"$T/slab.b"
	awk 'NR > 2 { print $1, $2 * $4 }' "$2" | sort >"$T/slab.a"
	join "$T/slab.b" "$T/slab.a" | awk '$3 > $2 { print $3 - $2, $1 }' | sort -rn | head -5
}

# slab_before: settles the caches and records the kmalloc objects and
# SUnreclaim in use, for slab_after.
slab_before() {
	slab_settle
	cp /proc/slabinfo "$T/slabinfo.before"
	SLAB_OBJ0=$(kmalloc_bytes)
	SLAB_UNR0=$(sunreclaim)
}

# slab_after N UNIT OBJ_LIMIT UNR_LIMIT: settles the caches again, prints
# the growth since slab_before, also per UNIT over N of them, and fails if
# the kmalloc objects grew by OBJ_LIMIT bytes or more or SUnreclaim by
# UNR_LIMIT, naming the caches that grew most. Printed, not asserted, under
# KASAN, whose quarantine keeps freed objects in use.
slab_after() {
	local n=$1 unit=$2 obj_limit=$3 unr_limit=$4 obj unr d_obj d_unr
	slab_settle
	cp /proc/slabinfo "$T/slabinfo.after"
	obj=$(kmalloc_bytes)
	unr=$(sunreclaim)
	d_obj=$((obj - SLAB_OBJ0))
	d_unr=$((unr - SLAB_UNR0))
	echo "  kmalloc objects: $SLAB_OBJ0 -> $obj bytes: $d_obj bytes, $((d_obj / n)) per $unit"
	echo "  SUnreclaim:      $SLAB_UNR0 -> $unr bytes: $d_unr bytes, $((d_unr / n)) per $unit"
	if grep -qw __asan_load8 /proc/kallsyms; then
		echo "  KASAN kernel: quarantined objects count as in use; growth not asserted"
		return 0
	fi
	if [ $d_obj -ge "$obj_limit" ] || [ $d_unr -ge "$unr_limit" ]; then
		slab_growers "$T/slabinfo.before" "$T/slabinfo.after" | sed 's/^/  grew: /'
		fail "growth over $n ${unit}s: kmalloc objects $d_obj bytes (limit $obj_limit), SUnreclaim $d_unr (limit $unr_limit)"
	fi
}
