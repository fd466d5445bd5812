# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The userspace peer is killed while the module is sending to it: the
# module's side fails with a clear errno instead of hanging, and everything
# is freed (the module still unloads at the end, with no splat).
#
# Guards: 71e900a (a post siw refused passed ENOTCONN on instead of closing with ECONNRESET)

DESCRIPTION="the userspace peer is killed mid-transfer: the module fails with a clear errno, no hang, no leak"

test_main() {
	ensure_loaded
	start_serve "$PORT" --mode echo --count 1000
	local sizes out
	sizes=$(printf '1048576,%.0s' $(seq 200))
	"$TOOL" kernel-ping --connect "$IP:$PORT" --sizes "${sizes%,}" >"$T/killed.out" 2>&1 &
	local ping=$!
	wait_for 20 grep -q '^ok 1048576 bytes' "$T/killed.out" || fail "no traffic: $(cat "$T/killed.out")"
	kill -9 "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	if wait $ping; then
		fail "kernel-ping finished although its peer was killed"
	fi
	out=$(tail -1 "$T/killed.out")
	echo "  after $(grep -c '^ok ' "$T/killed.out") messages: $out"
	# Not ENOTCONN: a post siw refuses (its QP closing) closes the
	# connection with ECONNRESET instead of passing siw's errno on. siw
	# fails the SEND it was transmitting when the stream breaks with
	# LOC_QP_OP_ERR, which is EIO (providers.rst).
	local expect='Connection reset by peer'
	[ "$PROV" = siw ] && expect+='|Input/output error'
	grep -qE "$expect" <<<"$out" || fail "unexpected: $out"
}
