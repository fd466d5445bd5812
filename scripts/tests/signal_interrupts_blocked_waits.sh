# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A signal interrupts a blocked ACCEPT and a blocked RECV with EINTR.

DESCRIPTION="a signal interrupts a blocked ACCEPT and a blocked RECV with EINTR"

test_main() {
	ensure_loaded
	local pid out
	"$KIT" --eintr-on-usr1 kernel-echo --listen "$IP:$PORT" --count 1 --timeout-ms 60000 \
		>"$T/eintr.1" 2>&1 &
	pid=$!
	wait_for 10 grep -q '^listening' "$T/eintr.1" || fail "no listener"
	sleep 0.3
	kill -USR1 $pid
	wait $pid && fail "accept was not interrupted"
	grep -q 'IOCTL_ACCEPT: Interrupted system call (os error 4)' "$T/eintr.1" || fail "$(cat "$T/eintr.1")"
	echo "  accept: $(tail -1 "$T/eintr.1")"

	interrupted_recv $((PORT + 1))
	echo "  recv: $INTR_LINE"
}
