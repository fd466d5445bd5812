#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo (scripts/qemu-test.sh --demo): the device tables from both
# views, then one of each operation between the module and the userspace
# peer, every one's data verified. Run by scripts/guest-tests.sh --mode demo
# once the provider's device is up; writes $KRUST_OUT/done if every step
# passed.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/tests/common.sh
. "$ROOT/scripts/tests/common.sh"
# The listening sides' output, one file each.
D=$(mktemp -d /tmp/krust-demo.XXXXXX)

ensure_loaded || exit 1
demo_failed=0
title() {
	echo
	echo "### $*"
}
show() { sed "s/^/    ${1:-}/"; }
# check STATUS WHAT: counts a failed step; the demo then fails.
check() {
	[ "$1" = 0 ] && return 0
	echo "    FAILED: $2 (status $1)"
	demo_failed=$((demo_failed + 1))
}
# bg NAME COMMAND...: a listening side in the background, output in
# $D/NAME, pid in BG; waits until it listens.
bg() {
	local name=$1
	shift
	"$@" >"$D/$name" 2>&1 &
	BG=$!
	wait_for 10 grep -q '^listening' "$D/$name" || check 1 "$name never listened"
}

title "RDMA devices, as the module's ib_client sees them"
"$TOOL" devices 2>&1 | show
check "${PIPESTATUS[0]}" "devices"
title "The same devices through libibverbs"
"$TOOL" devices --verbs 2>&1 | show
check "${PIPESTATUS[0]}" "devices --verbs"

title "SEND/RECV: the module sends 1 B, 64 KiB and 1 MiB to the userspace peer, which echoes; data checked"
bg serve "$TOOL" serve --listen "$IP:7600" --mode echo --count 3
"$TOOL" kernel-ping --connect "$IP:7600" --sizes 1,65536,1048576 2>&1 | show
check "${PIPESTATUS[0]}" "kernel-ping"
wait $BG
check $? "serve --mode echo"

title "SEND/RECV the other way: the userspace peer sends, the module echoes; data checked"
bg echo "$TOOL" kernel-echo --listen "$IP:7603" --count 3
"$TOOL" ping --connect "$IP:7603" --sizes 1,65536,1048576 2>&1 | show
check "${PIPESTATUS[0]}" "ping"
wait $BG
check $? "kernel-echo"
grep '^echoed' "$D/echo" | show "module: "

title "RDMA READ and WRITE: the module on a 64 KiB window of the userspace peer; both sides check"
bg t1 "$TOOL" serve --listen "$IP:7601" --mode target --len 65536 --access rw --fill 42
"$TOOL" kernel-initiator --connect "$IP:7601" --scenario rw --seed 42 2>&1 | show
check "${PIPESTATUS[0]}" "kernel-initiator rw"
wait $BG
check $? "serve --mode target"

title "A kernel window: the module exposes 64 KiB; the userspace peer READs, WRITEs and reads back; the module checks"
bg kt "$TOOL" kernel-target --listen "$IP:7604" --len 65536 --access rw --fill 43
"$TOOL" initiate --connect "$IP:7604" --scenario rw --seed 43 2>&1 | show
check "${PIPESTATUS[0]}" "initiate rw"
wait $BG
check $? "kernel-target"
grep '^window addr' "$D/kt" | show "module: "

if has_atomics; then
	title "Atomics: the module runs CAS and FADD on the userspace peer's memory"
	bg t2 "$TOOL" serve --listen "$IP:7602" --mode target --len 8 --access a
	"$TOOL" kernel-initiator --connect "$IP:7602" --scenario atomic --adds 5 2>&1 | show
	check "${PIPESTATUS[0]}" "kernel-initiator atomic"
	wait $BG
	check $? "serve --mode target (atomics)"
	grep 'window value' "$D/t2" | show "userspace peer: "
else
	title "Atomics: none on $PROV (atomic_cap 0); the module refuses them with EOPNOTSUPP"
fi

title "Revoke: the module revokes its window; the userspace peer's READ with the old key is refused"
bg kr "$TOOL" kernel-target --listen "$IP:7605" --len 4096 --access rw --fill 44
out=$("$TOOL" initiate --connect "$IP:7605" --scenario revoke 2>&1)
check $? "initiate revoke"
echo "$out" | show
grep -q '^read with a revoked key refused: EACCES' <<<"$out" || check 1 "no EACCES after revoke"
wait $BG # its connection breaks with the refused READ
grep -q '^revoked$' "$D/kr" || check 1 "the module did not revoke"
grep -E '^(revoked|window intact|window not readable)' "$D/kr" | show "module: "

title "rdma-core's rping -c -V against the module as rping server"
bg rping "$TOOL" rping --server --addr "$IP:7174" --timeout-ms 60000
rping -c -a "$IP" -p 7174 -C 5 -S 64 -V -v 2>&1 | show "rping: "
check "${PIPESTATUS[0]}" "rping -c -V"
wait $BG
check $? "module as rping server"
show "module: " <"$D/rping"

echo
rmmod rdma_krust || check 1 "rmmod"
if [ "$demo_failed" = 0 ]; then
	echo "demo: every step ran and its data was verified"
	touch "$OUT/done"
else
	echo "demo: $demo_failed step(s) failed"
fi
exit 0
