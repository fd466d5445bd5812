# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A window's key dies with its connection: once the target's fd is closed,
# the key it advertised is refused on a new connection to a new target,
# although the new window has the same address.

DESCRIPTION="a window's key dies with its connection: refused on a new one"

test_main() {
	ensure_loaded
	local out old new
	start_target "$PORT" --len 4096 --access rw --fill 3
	out=$(initiator "$PORT" --scenario rw --seed 3) || fail "first connection: $out"
	wait "$TARGET_PID" || fail "target: $(cat "$T/target.$PORT")"
	old=$(sed -n 's/^window addr=\(0x[0-9a-f]*\) rkey=\(0x[0-9a-f]*\) .*/\1:\2/p' <<<"$out")
	[ -n "$old" ] || fail "no key in: $out"
	start_target $((PORT + 1)) --len 4096 --access rw --fill 4
	out=$("$KIT" stale-read --connect "$IP:$((PORT + 1))" --key "$old" 2>&1) || fail "stale key: $out"
	wait "$TARGET_PID" || true # its connection broke with the refused READ
	new=$(sed -n 's/^window addr=\(0x[0-9a-f]*\) rkey=\(0x[0-9a-f]*\) .*/\1:\2/p' <<<"$out")
	grep -q '^read with a stale key refused' <<<"$out" || fail "$out"
	echo "  old window $old, new $new: $(tail -1 <<<"$out")"
}
