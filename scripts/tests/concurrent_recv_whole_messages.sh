# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Two threads receive on one file at once while the peer sends a
# two-fragment message and a small one: each gets one whole message, never
# a mix of two (the copy to user memory faults and sleeps on every page,
# so the other receiver runs in the middle of a message).
#
# Guards: a1d232d (concurrent RECVs on one file could split messages)

DESCRIPTION="two threads receiving on one file each get whole messages, never a mix"

test_main() {
	ensure_loaded
	local out big
	# The largest shared library of the (host's, read-only) root: LLVM's,
	# which clang brings, is far more than the 2 MiB needed.
	big=$(ls -S /usr/lib/x86_64-linux-gnu/*.so* | head -1)
	out=$("$KIT" recv-race --file "$big" --rounds 8 --port "$PORT" 2>&1) || fail "recv-race: $out"
	echo "$out" | tail -2 | sed 's/^/  /'
}
