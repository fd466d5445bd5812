# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Two files that both SEND and never read trade credit-only messages: a
# SEND short of credits still ends with ETIMEDOUT at its timeout_ms.
#
# Guards: a1d232d (SEND restarted its timeout on every wake-up, and never timed out)

DESCRIPTION="a SEND short of credits ends with ETIMEDOUT while credit-only messages flow"

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" credit-livelock --port "$PORT" 2>&1) || fail "credit-livelock: $out"
	grep -c "SEND: ETIMEDOUT after" <<<"$out" | grep -qx 2 || fail "$out"
	grep "ETIMEDOUT after" <<<"$out" | sed 's/^credit-livelock: /  /'
}
