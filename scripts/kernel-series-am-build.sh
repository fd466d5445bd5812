#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel::rdma series as a maintainer would take it: `git am` of
# kernel/patches/rust-rdma/ onto a pristine 6.12 tree (Debian's
# linux-source-6.12, nothing else applied), a build after every patch with
# the test kernel's config (kernel/rdma-krust.config on allnoconfig, so
# CONFIG_RUST_RDMA_ABSTRACTIONS once the series has it) that must print no
# warning, and checkpatch --strict on every patch, which may report nothing
# but the missing sign-off. One line per patch, then "am-build: N passed,
# N failed".
#
# The pristine tree is extracted and committed once, into the cache
# (KRUST_CACHE, as scripts/build-kernel.sh); each run resets it to that
# commit, so builds after the first are incremental. A full build takes as
# long as the test kernel's (about 10 minutes on two cores).
#
#   scripts/kernel-series.sh am-build
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# SRC_TAR, CACHE, series_patches, verdict, beyond_sign_off.
# shellcheck source=scripts/kernel-common.sh
. "$ROOT/scripts/kernel-common.sh"
JOBS=${KRUST_JOBS:-$(nproc)}
export PATH="$HOME/.cargo/bin:$PATH"

tree=$CACHE/series-am-$(stat -c '%s-%Y' "$SRC_TAR" | sha256sum | cut -c1-16)
# No automatic gc: it would run in the background on the tree's 80000
# objects, holding locks, as the next step starts.
gitq() { git -c user.name=am-build -c user.email=am-build@localhost -c init.defaultBranch=pristine \
	-c gc.auto=0 -c maintenance.auto=false "$@"; }

if [ ! -d "$tree/.git" ]; then
	echo "am-build: extracting and committing the pristine tree into $tree (once)"
	rm -rf "$tree" "$tree.tmp"
	mkdir -p "$tree.tmp"
	tar -xJf "$SRC_TAR" -C "$tree.tmp" --strip-components=1 || exit 1
	# -f: Debian's top-level .gitignore ignores everything at the top level.
	(cd "$tree.tmp" && gitq init -q && gitq add -f -A && gitq commit -q -m "linux-source-6.12, pristine" && gitq tag base) || exit 1
	mv "$tree.tmp" "$tree"
fi
cd "$tree" || exit 1
[ ! -d .git/rebase-apply ] || gitq am --abort
# A branch of its own at the pristine commit (tag base); untracked files
# the series added go, ignored ones (the last run's build) stay.
gitq checkout -q -f -B series base && gitq clean -q -fd || exit 1

# The test kernel's config, made again after each patch: a symbol the
# series adds (CONFIG_RUST_RDMA_ABSTRACTIONS) only takes the fragment's value
# once it exists.
config() { make -s LLVM=1 KCONFIG_ALLCONFIG="$ROOT/kernel/rdma-krust.config" allnoconfig >/dev/null; }
config || exit 1
# checkpatch's SPDX check runs scripts/spdxcheck.py with the python3 on
# PATH; the system's has python3-ply (scripts/setup.sh).
checkpatch() { PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict "$@" 2>&1; }

while read -r p <&3; do
	name=$(basename "$p")
	if ! gitq am -q "$p"; then
		verdict am-build FAIL "$name: git am"
		break
	fi
	config
	t=$(date +%s)
	log=$(mktemp)
	if make -s LLVM=1 -j"$JOBS" >"$log" 2>&1 && ! grep -q '^warning' "$log"; then
		built="built in $(($(date +%s) - t)) s, no warning"
	else
		grep -A12 '^warning' "$log" | head -40
		tail -20 "$log"
		built=
	fi
	rm -f "$log"
	cp=$(checkpatch --terse -q "$p" | beyond_sign_off)
	cp_sum=$(checkpatch "$p" | grep '^total:')
	if [ -n "$built" ] && [ -z "$cp" ] && [[ "$cp_sum" == "total: 1 errors, 0 warnings, 0 checks, "* ]]; then
		verdict am-build PASS "$name: applied, $built, checkpatch --strict: $cp_sum"
	else
		[ -n "$cp" ] && echo "$cp"
		verdict am-build FAIL "$name: ${built:-build failed}, checkpatch --strict: $cp_sum"
	fi
done 3< <(series_patches)
grep -q '^CONFIG_RUST_RDMA_ABSTRACTIONS=y' .config &&
	echo "am-build: CONFIG_RUST_RDMA_ABSTRACTIONS=y" ||
	verdict am-build FAIL "CONFIG_RUST_RDMA_ABSTRACTIONS is not set at the end"
verdicts_end am-build
