# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# rdma-core's rping client (-V: it checks every echo) against the module as
# rping server, at three sizes.

DESCRIPTION="rdma-core's rping client, validating, against the module as rping server"

test_main() {
	ensure_loaded
	local size port=$PORT out
	for size in 64 1000 65535; do
		port=$((port + 1))
		"$TOOL" rping --server --addr "$IP:$port" --timeout-ms 60000 >"$T/rping.$port" 2>&1 &
		local srv=$!
		wait_for 10 grep -q '^listening' "$T/rping.$port" || fail "server: $(cat "$T/rping.$port")"
		out=$(timeout 120 rping -c -a "$IP" -p $port -C 20 -S $size -V 2>&1) ||
			fail "rping -c -S $size failed: $out"
		wait $srv || fail "module server: $(cat "$T/rping.$port")"
		grep -q '^rping server: 20 ping(s) served$' "$T/rping.$port" || fail "$(cat "$T/rping.$port")"
		echo "  rping -c -C 20 -S $size -V: ok, module served 20"
	done
}
