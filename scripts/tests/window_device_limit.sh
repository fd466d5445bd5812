# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The largest window the device can register (the module's MAX_WINDOW
# column: rxe's 512-page fast-registration list takes the ABI's 2 MiB, siw's
# 256 pages of 4 KiB 1 MiB) is exposed and read back whole by the peer; one
# byte more is refused with a clear errno before anything is registered
# (EMSGSIZE, naming the device's limit; EINVAL past the ABI's 2 MiB).

DESCRIPTION="the largest window the device registers is read and written whole; a byte more is refused with a clear errno"

test_main() {
	ensure_loaded
	local max want out errno
	max=$("$TOOL" devices | awk -v d=$DEV '$1 == d { print $NF }')
	want=2097152
	[ "$PROV" != siw ] || want=1048576
	expect_eq "$max" "$want" "$DEV's MAX_WINDOW"
	start_target "$PORT" --len "$max" --fill 5 --timeout-ms 20000
	out=$(initiator "$PORT" --scenario rw --seed 5) || fail "window of $max bytes: $out"
	wait $TARGET_PID || fail "target of $max bytes: $(cat "$T/target.$PORT")"
	grep -q "^window addr=.* len=$max " "$T/target.$PORT" || fail "no window line: $(cat "$T/target.$PORT")"
	echo "  $max bytes: exposed, read and written whole"
	errno="Message too long (os error 90)"
	[ "$max" -lt 2097152 ] || errno="Invalid argument (os error 22)"
	start_target $((PORT + 1)) --len $((max + 1)) --timeout-ms 20000
	initiator $((PORT + 1)) --scenario rw --seed 5 --timeout-ms 10000 >"$T/init.$((PORT + 1))" 2>&1 &&
		fail "the initiator went through a window that was never exposed"
	wait $TARGET_PID && fail "a window of $((max + 1)) bytes was exposed"
	out=$(grep 'IOCTL_EXPOSE' "$T/target.$((PORT + 1))") || fail "target: $(cat "$T/target.$((PORT + 1))")"
	echo "  $((max + 1)) bytes: $out"
	[[ "$out" == *"$errno" ]] || fail "expected $errno"
	[ "$max" -ge 2097152 ] || [[ "$out" == *"$DEV registers windows of at most $max bytes"* ]] ||
		fail "the message does not name the limit"
}
