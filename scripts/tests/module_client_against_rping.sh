# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The module as rping client (validating) against rdma-core's rping server.

DESCRIPTION="the module as rping client, validating, against rdma-core's rping server"

test_main() {
	ensure_loaded
	local size port=$PORT out
	for size in 64 1000 65535; do
		port=$((port + 1))
		timeout 120 rping -s -V -a "$IP" -p $port -S $size >"$T/rping-s.$port" 2>&1 &
		local srv=$! try
		for try in 1 2 3 4 5 6 7 8 9 10; do
			out=$("$TOOL" rping --client --addr "$IP:$port" -C 20 -S $size -V 2>&1) && break
			grep -q 'Connection refused' <<<"$out" || break
			sleep 0.2
		done
		grep -q "^rping client: 20 ping(s) of $size bytes, validated$" <<<"$out" ||
			fail "module client (-S $size): $out; rping -s: $(cat "$T/rping-s.$port")"
		wait $srv || fail "rping -s: $(cat "$T/rping-s.$port")"
		echo "  module -> rping -s -S $size: 20 validated"
	done
}
