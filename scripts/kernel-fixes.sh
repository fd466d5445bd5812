#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The provider fixes the test kernels carry (kernel/patches/*.patch), read as
# linux-rdma would take them: each in git format-patch form, applied in
# order with git apply to the pristine 6.12 files they touch (Debian's
# linux-source-6.12, nothing else applied), checkpatch.pl --strict of
# 6.12, a subject of at most 75 characters and a Fixes: line (not asked of
# an RFC). One line per patch, then "fixes: N passed, N failed".
#
# checkpatch may report nothing but the missing Signed-off-by, which
# whoever sends a fix adds. Its UNKNOWN_COMMIT_ID check is left out: it
# looks the Fixes: ids up in the git history of the tree it runs in, and
# the tree here is the source package, without one
# (Documentation/providers.rst says how each id was checked).
#
#   scripts/kernel-fixes.sh check
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# SRC_TAR, verdict, beyond_sign_off.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"

[ "${1:-}" = check ] || {
	sed -n '3,/^set -uo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 2
}
[ -r "$SRC_TAR" ] || { echo "kernel-fixes: $SRC_TAR missing (scripts/setup.sh installs it)" >&2; exit 1; }

fixes=("$ROOT"/kernel/patches/*.patch)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The files the fixes touch, and checkpatch with its data, as 6.12 has them.
files=$(sed -n 's|^diff --git a/\([^ ]*\) b/.*|\1|p' "${fixes[@]}" | sort -u)
# shellcheck disable=SC2086 # one path per word
tar -xJf "$SRC_TAR" -C "$work" --strip-components=1 \
	$(sed 's|^|linux-source-6.12/|' <<<"$files") \
	linux-source-6.12/scripts/checkpatch.pl linux-source-6.12/scripts/spelling.txt \
	linux-source-6.12/scripts/const_structs.checkpatch \
	linux-source-6.12/{COPYING,CREDITS,Kbuild,MAINTAINERS,Makefile,README} || exit 1
# What checkpatch takes for the top of a kernel tree.
mkdir -p "$work"/{Documentation,arch,include,drivers,fs,init,ipc,kernel,lib}
git -C "$work" init -q && git -C "$work" add -A &&
	git -C "$work" -c user.name=x -c user.email=x@invalid commit -qm pristine || exit 1

for p in "${fixes[@]}"; do
	name=$(basename "$p")
	why=()
	git -C "$work" apply --whitespace=error "$p" 2>"$work/.apply" ||
		why+=("does not apply in order: $(head -1 "$work/.apply")")
	subject=$(sed -n 's/^Subject: \[[^]]*\] //p' "$p" | head -1)
	[ -n "$subject" ] || why+=("no Subject: line")
	[ "${#subject}" -le 75 ] || why+=("subject of ${#subject} characters")
	grep -q '^Subject: \[RFC' "$p" || grep -qE '^Fixes: [0-9a-f]{12} \(".+"\)$' "$p" ||
		why+=("no Fixes: line")
	cp=$(cd "$work" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict --terse -q \
		--ignore UNKNOWN_COMMIT_ID "$p" 2>&1 | beyond_sign_off)
	[ -z "$cp" ] || why+=("checkpatch: $cp")
	if [ ${#why[@]} = 0 ]; then
		verdict fixes PASS "$name: applies, checkpatch --strict clean but for the sign-off, subject ${#subject} characters"
	else
		verdict fixes FAIL "$name: ${why[*]}"
	fi
done
verdicts_end fixes
