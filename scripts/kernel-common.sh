# SPDX-License-Identifier: GPL-2.0
#
# Sourced by scripts/build-kernel.sh, scripts/kernel-series.sh and
# scripts/kernel-series-am-build.sh: where the kernel source is, where the
# cache is, and which patches the test kernels carry. Expects ROOT set.

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

# kernel_patches: every patch the test kernels carry, in the order
# applied: the fixes (kernel/patches/*.patch), then the series.
kernel_patches() {
	local p
	for p in "$ROOT"/kernel/patches/*.patch; do
		[ -e "$p" ] && echo "$p"
	done
	series_patches
}
