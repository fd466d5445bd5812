# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Two files that both SEND and never read trade credit-only messages: a
# SEND short of credits still ends with ETIMEDOUT at its timeout_ms. Since
# wire version 2 every message takes one receive, so the one credit the
# connector's read returns lets the listener's SEND through; the
# connector's, with no receive of the listener's ever reposted, times out.
#
# Guards: a1d232d (SEND restarted its timeout on every wake-up, and never timed out)

DESCRIPTION="a SEND short of credits ends with ETIMEDOUT while credit-only messages flow"

test_main() {
	ensure_loaded
	local out
	out=$("$KIT" credit-livelock --port "$PORT" 2>&1) || fail "credit-livelock: $out"
	grep -q "the connector's SEND: ETIMEDOUT after" <<<"$out" || fail "$out"
	grep -q "the listener's SEND went through after" <<<"$out" || fail "$out"
	grep -E "ETIMEDOUT after|went through" <<<"$out" | sed 's/^credit-livelock: /  /'
}
