#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Each provider fix's reproducer (kernel/patches/repro/), on 6.12 as Debian
# ships it and on the test kernel that carries the fixes: a reproducer must
# show its bug on the first (exit 1) and the fixed behaviour on the second
# (exit 0); a guest that dies with a kernel report in its console counts as
# the bug shown. Boots a guest per reproducer and kernel
# (scripts/qemu-test.sh --repro NNNN, which panics on an oops); the
# unpatched kernel is one more cached build (KRUST_FLAVOR=upstream,
# scripts/build-kernel.sh), about as long as the test kernel's the first
# time. Not part of make test: make upstream-check.
#
#   scripts/upstream-check.sh [NNNN...]   only those reproducers
#
# One line per reproducer, then "upstream-check: N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# verdict.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"
declare -A got
repros=()
for r in "$ROOT"/kernel/patches/repro/[0-9][0-9][0-9][0-9]-*.sh; do
	n=$(basename "$r" | cut -c1-4)
	[ $# = 0 ] || [[ " $* " == *" $n "* ]] && repros+=("$n")
done
# One guest per reproducer and kernel: a reproducer that crashes or hangs
# the unpatched kernel takes only its own result with it.
for n in "${repros[@]}"; do
	for flavor in upstream main; do
		dir=$(mktemp -d)
		KRUST_LOGDIR=$dir KRUST_FLAVOR=$flavor KRUST_PROVIDER=siw KRUST_TIMEOUT=${KRUST_TIMEOUT:-900} \
			bash "$ROOT/scripts/qemu-test.sh" --repro "$n" >"$dir/log" 2>&1
		if [ -f "$dir/out/repro.txt" ]; then
			sed "s/^/[$flavor] /" "$dir/out/repro.txt"
			got[$flavor.$n]=$(sed -n "s/^repro: $n exit \([0-9]*\).*/\1/p" "$dir/out/repro.txt")
		else
			# The guest died: a kernel report in its console is the
			# bug shown (a reproducer's exit 1), on either kernel.
			splat=$(grep -m1 -E 'BUG:|Oops|Kernel panic|rcu: INFO|WARNING:' "$dir/console.log")
			echo "[$flavor] repro: $n gave no result, the guest died${splat:+: $splat}"
			[ -n "$splat" ] && got[$flavor.$n]=1
		fi
		rm -rf "$dir"
	done
done

for n in "${repros[@]}"; do
	u=${got[upstream.$n]:-none} m=${got[main.$n]:-none}
	if [ "$u" = 1 ] && [ "$m" = 0 ]; then
		verdict upstream-check PASS "$n: the bug on 6.12 (exit $u), fixed with the patch (exit $m)"
	else
		verdict upstream-check FAIL "$n: exit $u on 6.12 (want 1), $m with the patch (want 0)"
	fi
done
verdicts_end upstream-check
