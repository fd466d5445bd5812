# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# responder_resources / initiator_depth: what each side asked, what it got,
# clamping to the device, and the passive side bounded by the request.

DESCRIPTION="responder resources and initiator depth: what each side asked and got, clamped to the device"

test_main() {
	ensure_loaded
	local c s
	# Both within the device: the passive side serves what the active side
	# will issue, and issues what the active side will serve.
	start_echo "$PORT" 1
	c=$("$TOOL" kernel-ping --connect "$IP:$PORT" --resp 4 --init 2 --sizes 8 | grep '^conn:') ||
		fail "connect failed"
	wait "$ECHO_PID" || fail "echo failed"
	s=$(grep '^conn:' "$T/echo.$PORT")
	echo "  active:  $c"
	echo "  passive: $s"
	expect_eq "$(conn_field "$c" asked_resp)/$(conn_field "$c" asked_init)" 4/2 "active asked"
	expect_eq "$(conn_field "$c" resp)/$(conn_field "$c" init)" 4/2 "active got"
	expect_eq "$(conn_field "$s" peer_resp)/$(conn_field "$s" peer_init)" 2/4 "passive saw"
	expect_eq "$(conn_field "$s" resp)/$(conn_field "$s" init)" 2/4 "passive got"

	# Asking more than the device has is clamped to it, never ignored; the
	# passive side's caps bound what it offers.
	local max
	max=$(conn_field "$c" dev_rd_atom)
	start_echo $((PORT + 1)) 1 --resp 8 --init 16
	c=$("$TOOL" kernel-ping --connect "$IP:$((PORT + 1))" --resp 1000 --init 1000 --sizes 8 | grep '^conn:') ||
		fail "connect failed"
	wait "$ECHO_PID" || fail "echo failed"
	s=$(grep '^conn:' "$T/echo.$((PORT + 1))")
	echo "  active:  $c"
	echo "  passive: $s"
	expect_eq "$(conn_field "$c" asked_resp)" "$max" "active asked resp, clamped"
	if [ "$(conn_field "$c" iwarp)" = 1 ]; then
		# siw's relaxed negotiation raises the passive side's IRD to the
		# peer's ORD; its ORD stays 16. The active side then runs with
		# ORD 128 and IRD 16, which siw reports swapped in a way that
		# fits what was asked either way: only the pair can be checked
		# (Documentation/ird-ord.rst, "On iWARP").
		expect_eq "$(conn_field "$s" resp)/$(conn_field "$s" init)" "$max/16" "passive got (siw)"
		expect_eq "$(printf '%s\n' "$(conn_field "$c" resp)" "$(conn_field "$c" init)" | sort -n | paste -sd/)" \
			"16/$max" "active got, either way (siw)"
		return
	fi
	expect_eq "$(conn_field "$s" resp)/$(conn_field "$s" init)" 8/16 "passive got"
	expect_eq "$(conn_field "$c" resp)/$(conn_field "$c" init)" 16/8 "active got"
}
