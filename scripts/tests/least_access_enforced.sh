# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# A window exposed read-only cannot be written: EACCES, window unchanged.

DESCRIPTION="a window exposed read-only cannot be written; the window is unchanged"

test_main() {
	ensure_loaded
	local out
	start_target "$PORT" --len 4096 --access r --fill 5
	out=$(initiator "$PORT" --scenario rw --seed 5 2>&1) && fail "WRITE to a read-only window succeeded: $out"
	wait "$TARGET_PID" && fail "the target's connection did not fail"
	if [ "$REFUSED" = EACCES ]; then
		grep -q 'RDMA WRITE' <<<"$out" || fail "failed elsewhere: $out"
		grep -q 'Permission denied (os error 13)' <<<"$out" || fail "not EACCES: $out"
	else
		# The WRITE completed once sent; the request after it finds the
		# connection ended by the target's TERMINATE. Or the TERMINATE
		# closed the stream while the WRITE (4 KiB, three FPDUs) was still
		# being sent, and siw failed the WRITE itself as a local QP
		# operation error: EIO, on the WRITE only.
		grep -qE 'RDMA WRITE|IOCTL_SEND|IOCTL_RECV' <<<"$out" || fail "failed elsewhere: $out"
		grep -qE 'Connection reset by peer \(os error 104\)|RDMA WRITE: Input/output error \(os error 5\)' <<<"$out" ||
			fail "not ECONNRESET, nor EIO on the WRITE: $out"
	fi
	grep -q '^window intact after the failure$' "$T/target.$PORT" || fail "target: $(cat "$T/target.$PORT")"
	echo "  $(tail -1 <<<"$out" | sed 's/.*: //'); window intact"
}
