# SPDX-License-Identifier: GPL-2.0
#
# Sourced by scripts/build-kernel.sh, scripts/kernel-series.sh,
# scripts/kernel-series-am-build.sh, scripts/kernel-fixes.sh and
# scripts/upstream-check.sh: where the kernel source is, where the cache is,
# which patches the test kernels carry, and how a check of patches reports.
# Expects ROOT set.

# Debian's linux-source-6.12 (scripts/setup.sh installs it).
SRC_TAR=/usr/src/linux-source-6.12.tar.xz

# The cache, outside the repository: KRUST_CACHE, else by the XDG base
# directory spec $XDG_CACHE_HOME/rdma-krust when that is an absolute path,
# else ~/.cache/rdma-krust. Absolute: builds run in other directories.
cache_home=${XDG_CACHE_HOME:-}
case "$cache_home" in
/*) ;;
*) cache_home=$HOME/.cache ;;
esac
CACHE=${KRUST_CACHE:-$cache_home/rdma-krust}
[[ "$CACHE" = /* ]] || CACHE=$PWD/$CACHE

# series_patches: the kernel::rdma series' patches, in order, one path a
# line; the cover letter, which is not applied, left out.
series_patches() {
	local p
	for p in "$ROOT"/kernel/patches/rust-rdma/0*.patch; do
		[ -e "$p" ] && [ "${p##*/}" != 0000-cover-letter.patch ] && echo "$p"
	done
	return 0
}

# verdict PREFIX PASS|FAIL TEXT: the line "PREFIX: PASS TEXT" (or FAIL),
# counted; verdicts_end PREFIX: the closing "PREFIX: N passed, N failed",
# and failure if any verdict failed.
passed=0
failed=0
verdict() {
	echo "$1: $2 $3"
	if [ "$2" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}
verdicts_end() {
	echo "$1: $passed passed, $failed failed"
	[ "$failed" = 0 ]
}

# beyond_sign_off: of checkpatch --terse output on stdin, what is more than
# the one complaint the patches may draw, their missing Signed-off-by (the
# sender adds it), and the closing total.
beyond_sign_off() {
	grep -v '^total:' | grep -v ': ERROR: Missing Signed-off-by: line(s)$'
}

# kernel_patches: every patch the test kernels carry, in the order
# applied: the fixes (kernel/patches/*.patch), then the series.
kernel_patches() {
	local p
	for p in "$ROOT"/kernel/patches/*.patch; do
		[ -e "$p" ] && echo "$p"
	done
	series_patches
}
