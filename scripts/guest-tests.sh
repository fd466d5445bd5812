#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest test suite's runner. Runs inside the QEMU guest as root
# (scripts/guest-init.sh starts it). Each test is a file
# scripts/tests/NAME.sh (DESCRIPTION, an optional requires, test_main; see
# Documentation/testing.rst), run in the order of scripts/tests/ORDER; the
# runner adds boot_clean first, then final_unload, kmemleak_clean (a kernel
# with kmemleak) and quiet_after_suite. A test fails if its test_main fails
# or if the kernel logged a splat (WARNING, BUG, Oops, KASAN, lockdep, ...)
# while it ran.
#
#   guest-tests.sh --list
#   guest-tests.sh --mode test|demo [--tests a,b,c]
#
# Each test runs in a subshell with its own scratch directory $T (removed
# after a pass, copied to $KRUST_OUT/scratch/ after a failure) and its own
# ports, $PORT to $PORT + PORT_SPAN - 1. Results are KTAP
# (Documentation/dev-tools/ktap.rst), on the console and in
# $KRUST_OUT/results.ktap; also results (PASS, FAIL and SKIP lines), summary
# ("P F S"), dmesg.txt (the whole kernel log, test by test).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTS=$ROOT/scripts/tests
# shellcheck source=scripts/tests/common.sh
. "$TESTS/common.sh"

# Ports: test number i (boot_clean is 1) gets PORT_SPAN of them from
# PORT_BASE on, cycling through PORT_SLOTS blocks: 10000 to 32499, under
# the ephemeral range (32768 on), where siw's TCP connections take theirs.
PORT_BASE=10000 PORT_SPAN=300 PORT_SLOTS=75

# Tests that make allocations fail on purpose: the kernel's reports of
# those failures are not splats (see run_test).
declare -A ALLOC_FAILURES_EXPECTED=(
	[alloc_failure_sweep]=1
	[fault_injection]=1
)

SPLAT_RE='WARNING:|BUG:|Oops|KASAN|UBSAN|circular locking|recursive locking|inconsistent lock state|possible deadlock|unreferenced object|Call Trace:|rcu.*stall|blocked for more than|soft lockup|general protection|Kernel panic'

# The names in scripts/tests/ORDER; fails if a test file is missing from it
# or a name has no file. (No process substitution: the guest has no
# /dev/fd.)
list_tests() {
	local names f bad=
	names=$(sed 's/#.*//; /^[[:space:]]*$/d' "$TESTS/ORDER")
	for f in $names; do
		[ -f "$TESTS/$f.sh" ] || bad+=" $f (no file)"
	done
	for f in "$TESTS"/*.sh; do
		f=${f##*/} f=${f%.sh}
		[[ $f == common* ]] || grep -qx "$f" <<<"$names" || bad+=" $f (not in ORDER)"
	done
	for f in $(sort <<<"$names" | uniq -d); do bad+=" $f (twice in ORDER)"; done
	[ -z "$bad" ] || { echo "guest-tests: scripts/tests/ORDER and the files differ:$bad" >&2; return 1; }
	echo "$names"
}

mode='test'
only=
while [ $# -gt 0 ]; do
	case "$1" in
	--list)
		list_tests
		exit
		;;
	--mode) mode=$2; shift ;;
	--tests) only=$2; shift ;;
	*) echo "guest-tests: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

[ -x "$TOOL" ] || { echo "guest-tests: $TOOL missing" >&2; exit 1; }
[ -n "$NIC" ] || { echo "guest-tests: no NIC" >&2; exit 1; }

echo "guest: kernel $(uname -r), NIC $NIC, $(nproc) CPUs"
if ! link_add "$DEV" "$NIC"; then
	echo "guest: $PROV setup on $NIC failed" >&2
	exit 1
fi

[ "$mode" = demo ] && exec bash "$ROOT/scripts/guest-demo.sh"

all=$(list_tests) || exit 1
if [ -n "$only" ]; then
	IFS=, read -r -a tests <<<"$only"
else
	mapfile -t tests <<<"$all"
fi

# kmemleak_clean runs on a kernel with kmemleak (the debug variant); known
# now, so that the plan can count it.
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
kmemleak=0
[ -e /sys/kernel/debug/kmemleak ] && kmemleak=1
# boot_clean, the tests, final_unload, kmemleak_clean, quiet_after_suite.
total=$((1 + ${#tests[@]} + 1 + kmemleak + 1))
index=0

passed=0
failed=0
skipped=0
KTAP=$OUT/results.ktap
: >"$OUT/results"
: >"$OUT/dmesg.txt"
SCRATCH=$(mktemp -d /tmp/krust-tests.XXXXXX)

# ktap LINE...: a line of the KTAP output, to the console and results.ktap.
ktap() { printf '%s\n' "$@" | tee -a "$KTAP"; }
: >"$KTAP"
ktap "KTAP version 1" "1..$total"

record() { # NAME VERDICT [DETAIL [NUMBER]]: NUMBER shows on the console only
	echo "$2 $1${3:+: $3}" >>"$OUT/results"
	case $2 in
	PASS) passed=$((passed + 1)); ktap "ok $index $1" ;;
	SKIP) skipped=$((skipped + 1)); ktap "ok $index $1 # SKIP $3" ;;
	*) failed=$((failed + 1)); ktap "not ok $index $1" ;;
	esac
	echo "guest: $2 ${4:+$4 }$1${3:+: $3}"
}

# stopped_at: the ERR trap of a test: the command that failed, and where,
# with the calls that led there (innermost first).
stopped_at() {
	local i where=
	for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
		[ "${FUNCNAME[i]}" != run_test ] || break
		where+="${where:+ < }${FUNCNAME[i]} (${BASH_SOURCE[i]##*/} line ${BASH_LINENO[i - 1]})"
	done
	echo "  stopped at: $BASH_COMMAND; in $where"
}

# run_test NAME: the test of scripts/tests/NAME.sh, or the runner's own
# function runner_NAME.
run_test() {
	local name=$1 file=$TESTS/$1.sh rc splat start log why desc line
	index=$((index + 1))
	if [ -f "$file" ]; then
		# A file that does not load is run, and fails, with bash's error.
		# shellcheck disable=SC1090
		why=$(. "$file" 2>/dev/null || exit 125; ! declare -F requires >/dev/null || requires)
		case $? in
		0 | 125) ;;
		*)
			record "$name" SKIP "$why" "[$index/$total]"
			return
			;;
		esac
		# shellcheck disable=SC1090
		desc=$(. "$file" 2>/dev/null; echo "${DESCRIPTION:-(no DESCRIPTION)}")
	else
		desc=${RUNNER_TESTS[$name]:-no such test}
	fi
	T=$SCRATCH/$(printf %02d $index)-$name
	PORT=$((PORT_BASE + PORT_SPAN * ((index - 1) % PORT_SLOTS)))
	export T PORT
	mkdir -p "$T"
	: >"$T.log"
	echo "guest: RUN  [$index/$total] $name"
	ktap "# $name: $desc"
	start=$(date +%s%N)
	# The test's lines go out as it prints them, so a long test shows its
	# progress. They go through a file, not a pipe: a process the test
	# left behind cannot hold the runner up.
	# shellcheck disable=SC1090
	(
		set -eE
		trap stopped_at ERR
		if [ -f "$file" ]; then . "$file"; test_main; else "runner_$name"; fi
	) >"$T.log" 2>&1 &
	local pid=$!
	tail -n +1 -s 0.1 -f --pid=$pid "$T.log" 2>/dev/null | sed -u 's/^/# /' | tee -a "$KTAP" &
	local tailer=$!
	wait $pid
	rc=$?
	wait $tailer
	log=$(dmesg -c)
	{ echo "=== $name"; echo "$log"; } >>"$OUT/dmesg.txt"
	# A test that makes allocations fail on purpose (its name in
	# ALLOC_FAILURES_EXPECTED) gets the kernel's report of each failed page
	# or vmalloc allocation (warn_alloc(): a stack and the memory state):
	# counted, and left out of the scan, up to the end of its stack.
	if [ -n "${ALLOC_FAILURES_EXPECTED[$name]:-}" ]; then
		ktap "#   $(grep -cE 'page allocation failure:|vmalloc error:' <<<"$log") allocation failure report(s) (warn_alloc)"
		log=$(awk '/page allocation failure:|vmalloc error:/ { skip = 1 } !skip { print } skip && /<\/TASK>/ { skip = 0 }' <<<"$log")
	fi
	splat=$(grep -E "$SPLAT_RE" <<<"$log" | head -5)
	if [ -n "$splat" ]; then
		ktap "#   kernel splat during $name:"
		while read -r line; do ktap "#     $line"; done <<<"$splat"
		rc=1
	fi
	ktap "# $name took $((($(date +%s%N) - start) / 1000000)) ms"
	if [ $rc = 0 ]; then
		rm -rf "$T" "$T.log"
		record "$name" PASS
	else
		mkdir -p "$OUT/scratch"
		cp -r "$T" "$OUT/scratch/" 2>/dev/null
		ktap "# scratch directory kept: $T, copied to \$KRUST_OUT/scratch/${T##*/}"
		record "$name" FAIL
	fi
}

# The runner's own tests, with their descriptions.
declare -A RUNNER_TESTS=(
	[boot_clean]="the kernel log from boot to here ($DEV included) holds no splat, and the kernel reports hung tasks and soft lockups"
	[final_unload]="the module unloads cleanly at the end"
	[kmemleak_clean]="on a kernel with kmemleak, no leak after the suite"
	[quiet_after_suite]="whatever the kernel logged after the last test holds no splat"
)

# The first "test" scans the boot log, as run_test does every test's.
runner_boot_clean() {
	echo "  $(wc -l <<<"$(dmesg)") boot log lines scanned"
	# A test kernel as strict as a distro's: a wait that never ends is
	# reported (hung task), as is a CPU that never schedules (soft lockup).
	local k=/proc/sys/kernel
	[ -r $k/hung_task_timeout_secs ] || fail "no hung task detector (CONFIG_DETECT_HUNG_TASK)"
	[ "$(cat $k/hung_task_timeout_secs)" -gt 0 ] || fail "hung task detector off"
	[ "$(cat $k/soft_watchdog 2>/dev/null)" = 1 ] || fail "no soft lockup detector (CONFIG_SOFTLOCKUP_DETECTOR)"
	echo "  hung task timeout $(cat $k/hung_task_timeout_secs) s, soft lockup detector on"
}

runner_final_unload() {
	ensure_unloaded
}

runner_kmemleak_clean() {
	local k=/sys/kernel/debug/kmemleak n
	echo scan >$k
	sleep 6
	echo scan >$k
	n=$(grep -c '^unreferenced object' $k || true)
	# Each object with its size and the first frames of its allocation.
	[ "$n" = 0 ] || {
		awk '/^unreferenced object/ { print; next } /backtrace/ { f = 4; next } f > 0 { print; f-- }' $k | head -150
		fail "kmemleak: $n unreferenced object(s)"
	}
	echo "  kmemleak: 0 unreferenced objects"
}

# A late warning from a worker, say, is scanned like a test's log.
runner_quiet_after_suite() {
	sleep 1
}

run_test boot_clean
for t in "${tests[@]}"; do
	run_test "$t"
done
run_test final_unload
[ "$kmemleak" = 0 ] || run_test kmemleak_clean
run_test quiet_after_suite
rmdir "$SCRATCH" 2>/dev/null

ktap "# Totals: pass:$passed fail:$failed skip:$skipped total:$total"
echo "$passed $failed $skipped" >"$OUT/summary"
[ "$skipped" = 0 ] || echo "guest: $skipped skipped on $PROV (reasons in the SKIP lines)"
echo "guest: $passed passed, $failed failed"
