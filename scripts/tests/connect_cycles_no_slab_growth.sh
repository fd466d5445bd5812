# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# 100 cycles of two files of the module connecting (kernel to kernel),
# echoing one 4 KiB message (verified), disconnecting (either side, or by
# closing) and closing leave nothing behind. After a warm-up of 10 cycles
# and with the caches settled, the kmalloc objects in use must grow by less
# than 64 KiB over the 100 cycles (655 B per cycle), and SUnreclaim by less
# than 2 MiB. Measured on the main kernel over 100 cycles, in 13 runs:
# kmalloc objects -1 to +13 KiB (idle 2 s: -0.5 to 0), SUnreclaim -106 to
# +315 KiB. Each cycle allocates, per connection, a Conn, cm ids, a QP and
# CQs (objects of 328 B and more) and 16 receive buffers of 8 KiB (objects
# of kmalloc-8k): one of them leaked per cycle exceeds a threshold. Under KASAN (the debug kernel) freed objects wait in
# a quarantine: the growth is printed, not asserted; kmemleak_clean looks
# for leaks there.

DESCRIPTION="100 connect, echo, disconnect and close cycles leave the slab caches where they were"

test_main() {
	ensure_loaded
	[ -r /proc/slabinfo ] || fail "no /proc/slabinfo"
	local out
	out=$("$KIT" cycles --count 10 --port "$PORT" 2>&1) || fail "warm-up: $out"
	slab_before
	out=$("$KIT" cycles --count 100 --port "$PORT" 2>&1) || fail "cycles: $out"
	echo "  $out"
	grep -q '^cycles: 100 connect/disconnect cycles, 200 messages of 4096 bytes verified' <<<"$out" ||
		fail "cycles: $out"
	slab_after 100 cycle $((64 * 1024)) $((2 * 1024 * 1024))
}
