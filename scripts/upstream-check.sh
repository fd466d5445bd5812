#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Each provider fix's reproducer (kernel/patches/repro/), on 6.12 as Debian
# ships it and on the test kernel that carries the fixes: a reproducer must
# show its bug on the first (exit 1) and the fixed behaviour on the second
# (exit 0). Boots one guest per kernel (scripts/qemu-test.sh --repro); the
# unpatched kernel is one more cached build (KRUST_FLAVOR=upstream,
# scripts/build-kernel.sh), about as long as the test kernel's the first
# time. Not part of make test: make upstream-check.
#
# One line per reproducer, then "upstream-check: N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# verdict.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"
declare -A got
for flavor in upstream main; do
	log=$(mktemp)
	KRUST_FLAVOR=$flavor KRUST_PROVIDER=siw bash "$ROOT/scripts/qemu-test.sh" --repro >"$log" 2>&1
	grep -E '^(  |repro: )' "$log" | sed "s/^/[$flavor] /"
	while read -r n rc; do
		got[$flavor.$n]=$rc
	done < <(sed -n 's/^repro: \([0-9]\{4\}\) exit \([0-9]*\).*/\1 \2/p' "$log")
	rm -f "$log"
done

for r in "$ROOT"/kernel/patches/repro/[0-9][0-9][0-9][0-9]-*.sh; do
	n=$(basename "$r" | cut -c1-4)
	u=${got[upstream.$n]:-none} m=${got[main.$n]:-none}
	if [ "$u" = 1 ] && [ "$m" = 0 ]; then
		verdict upstream-check PASS "$n: the bug on 6.12 (exit $u), fixed with the patch (exit $m)"
	else
		verdict upstream-check FAIL "$n: exit $u on 6.12 (want 1), $m with the patch (want 0)"
	fi
done
verdicts_end upstream-check
