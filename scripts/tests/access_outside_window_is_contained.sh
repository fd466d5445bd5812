# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Accesses outside a window fail with EACCES for that connection alone: a
# READ past the end, a WRITE across the end (4 bytes inside, 4 past). Not
# one byte of the window changes, and another connection, live throughout,
# moves its data intact.

DESCRIPTION="accesses outside a window fail for that connection alone, the window unchanged"

test_main() {
	ensure_loaded
	start_bystander "$PORT" 4
	bad_access $((PORT + 1)) outside "read outside the window refused" --access rw
	bad_access $((PORT + 2)) outside-write "write across the window's end refused" --access rw
	check_bystander "$PORT"
}
