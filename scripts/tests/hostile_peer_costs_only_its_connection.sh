# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# rdma-krust-kit hostile for KRUST_HOSTILE_SECONDS (60): a userspace peer that
# speaks the message protocol and lies (grants of u32::MAX, 1 and random,
# lengths over the maximum, fragments out of order, duplicated, missing or
# longer than announced, unknown flags and versions, FIRST in the middle,
# garbage, credit messages with data and in a flood, a disconnect in the
# middle of a message), one lie per connection, the module listening and
# connecting by turns. The module's file must get the honest messages
# intact, then EPROTO (ECONNRESET for the disconnect) with the connection
# closed on it; a bystander connection of the module echoes pattern messages
# throughout and checks every byte. Then the module unloads: no file, id or
# reference leaked. The module logs the violations, rate-limited.

DESCRIPTION="a peer that lies in the message protocol costs only its own connection"

test_main() {
	ensure_loaded
	local secs=${KRUST_HOSTILE_SECONDS:-60} out rc last n
	# --verbose: a line per round before it runs, so a hang shows where.
	out=$(timeout $((secs + 120)) "$KIT" hostile --verbose --seconds "$secs" --port "$PORT" \
		--seed "${KRUST_HOSTILE_SEED:-$RANDOM}" ${KRUST_HOSTILE_LIES:+--lie "$KRUST_HOSTILE_LIES"} 2>&1) &&
		rc=0 || rc=$?
	grep -v '^negotiated \|^hostile: round ' <<<"$out" | sed 's/^/  /'
	if [ $rc != 0 ]; then
		echo "  the last rounds:"
		grep '^hostile: round ' <<<"$out" | tail -3 | sed 's/^/    /'
	fi
	[ $rc != 124 ] || fail "hostile hung (killed after $((secs + 120)) s)"
	[ $rc = 0 ] || fail "hostile failed ($rc)"
	last=$(grep '^hostile: [0-9]* rounds' <<<"$out" | tail -1)
	[[ "$last" =~ ^hostile:\ ([0-9]+)\ rounds,\ [0-9]+\ kinds,\ all\ answered\ as\ the\ rules\ say\;\ bystander:\ ([0-9]+)\ round\ trips\ verified ]] ||
		fail "last line: $last"
	[ "${BASH_REMATCH[2]}" -gt 0 ] || fail "the bystander made no round trip"
	n=$(klog | grep -c 'peer broke the message protocol\|peer sent bad setup data') || n=0
	# Some lies alone are caught only by the provider (on siw a revoked
	# announce's READ ends in a TERMINATE, ECONNRESET, not a log line):
	# all of them, the default, are not.
	[ "$n" -gt 0 ] || [ -n "${KRUST_HOSTILE_LIES:-}" ] || fail "no violation logged"
	echo "  module log: $n violation lines (rate-limited)"
	rmmod rdma_krust || fail "rmmod after the hostile peer failed"
	insmod "$KO" || fail "insmod after the hostile peer failed"
}
