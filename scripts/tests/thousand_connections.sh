# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# 1,024 connections at once in one guest, each between two files of the
# module, at the default settings: all connected, then on each a message
# out and back, every byte checked (inline, the longest inline, the
# shortest announced, 64 KiB, and every sixteenth 2 MiB, announced and
# READ), every connection still up, then all closed. The 2,048 files
# hold about half a GiB between them at wire version 2 (16 receives of
# 8 KiB each); at version 1's 40 of 64 KiB they would not have fitted the
# guest's 2 GiB. Nothing may be left behind: after the close, with the
# caches settled, the kmalloc objects in use grow by less than 512 KiB
# (256 bytes per file; a connection's Conn, cm ids, QP, CQ or one receive
# buffer leaked per file exceeds it), and SUnreclaim by less than 8 MiB.
# Under KASAN (the debug kernel) the growth is printed, not asserted, as
# in connect_cycles_no_slab_growth.

DESCRIPTION="1,024 connections in one guest: all connected, a verified message out and back on each, all closed, nothing left"

test_main() {
	ensure_loaded
	[ -r /proc/slabinfo ] || fail "no /proc/slabinfo"
	local out
	# A warm-up, so that caches created on first use are not counted.
	out=$("$KIT" many --count 4 --port "$PORT" 2>&1) || fail "warm-up: $out"
	slab_before
	out=$("$KIT" many --count 1024 --port $((PORT + 10)) 2>&1) || fail "many: $out"
	echo "$out" | sed 's/^/  /'
	grep -q '^many: 1024 connections in [0-9]* ms' <<<"$out" || fail "$out"
	grep -q '^many: 2048 messages, [0-9]* bytes, out and back on every connection, verified' <<<"$out" ||
		fail "$out"
	grep -q '^many: all 1024 closed in [0-9]* ms, each still connected before$' <<<"$out" || fail "$out"
	slab_after 2048 file $((512 * 1024)) $((8 * 1024 * 1024))
}
