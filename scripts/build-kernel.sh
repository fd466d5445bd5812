#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the rdma-krust guest kernel (Debian's linux-source-6.12, LLVM=1,
# CONFIG_RUST=y) from allnoconfig plus kernel/rdma-krust.config and cache it
# outside the repository.
#
# The cache key covers everything that changes the result: the kernel source
# package version, the config fragment(s), kernel/patches/*, the toolchain
# versions (rustc, clang, bindgen), and BUILD_RECIPE below, which stands for
# this script: it is bumped whenever the way the script builds changes (edits
# that do not change the build, such as comments, keep the cache). A rerun
# with the same key reuses the build; any change rebuilds into a new
# directory.
#
#   scripts/build-kernel.sh                 build (or reuse) the main kernel
#   scripts/build-kernel.sh --print-kdir    print the build directory only
#   KRUST_FLAVOR=debug scripts/build-kernel.sh   also apply kernel/debug.config
#
# Environment: KRUST_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rdma-krust),
# KRUST_JOBS.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The XDG base directory spec: $XDG_CACHE_HOME when it is an absolute path,
# else ~/.cache.
cache_home=${XDG_CACHE_HOME:-}
case "$cache_home" in
/*) ;;
*) cache_home=$HOME/.cache ;;
esac
CACHE=${KRUST_CACHE:-$cache_home/rdma-krust}
FLAVOR=${KRUST_FLAVOR:-main}
SRC_TAR=/usr/src/linux-source-6.12.tar.xz
BUILD_RECIPE=1
export PATH="$HOME/.cargo/bin:$PATH"

fragments=("$ROOT/kernel/rdma-krust.config")
[ "$FLAVOR" = main ] || fragments+=("$ROOT/kernel/$FLAVOR.config")

cache_key() {
	{
		dpkg-query -W -f='${Version}\n' linux-source-6.12 2>/dev/null || echo "no linux-source"
		cat "${fragments[@]}"
		cat "$ROOT"/kernel/patches/*.patch 2>/dev/null || true
		echo "recipe $BUILD_RECIPE"
		rustc --version 2>/dev/null || echo "no rustc"
		{ clang --version 2>/dev/null || echo "no clang"; } | head -1
		bindgen --version 2>/dev/null || echo "no bindgen"
	} | sha256sum | cut -c1-16
}

KDIR="$CACHE/linux-$FLAVOR-$(cache_key)"
if [ "${1:-}" = "--print-kdir" ]; then
	echo "$KDIR"
	exit 0
fi

if [ -f "$KDIR/.krust-built" ]; then
	echo "build-kernel: cached: $KDIR"
	exit 0
fi

[ -f "$SRC_TAR" ] || { echo "build-kernel: $SRC_TAR missing: run scripts/setup.sh" >&2; exit 1; }
for tool in rustc bindgen clang ld.lld flex bison; do
	command -v "$tool" >/dev/null || { echo "build-kernel: $tool missing: run scripts/setup.sh" >&2; exit 1; }
done

echo "build-kernel: building $KDIR"
start=$(date +%s)
rm -rf "$KDIR" "$KDIR.tmp"
mkdir -p "$KDIR.tmp"
tar -xf "$SRC_TAR" -C "$KDIR.tmp" --strip-components=1
mv "$KDIR.tmp" "$KDIR"
cd "$KDIR"

for p in "$ROOT"/kernel/patches/*.patch; do
	[ -e "$p" ] || continue
	echo "build-kernel: applying $(basename "$p")"
	patch -p1 --forward --quiet <"$p"
done

cat "${fragments[@]}" >.krust-fragment
make -s LLVM=1 KCONFIG_ALLCONFIG=.krust-fragment allnoconfig
make -s LLVM=1 olddefconfig

# Every option the fragments ask for must have survived dependency resolution.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		if ! grep -qx "$line" .config; then
			echo "build-kernel: option not set as asked: $line (got: $(grep "^${line%%=*}=" .config || echo unset))" >&2
			bad=1
		fi
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" .config; then
			echo "build-kernel: option should be unset: $opt" >&2
			bad=1
		fi
		;;
	esac
done <.krust-fragment
[ "$bad" = 0 ] || exit 1

make -s LLVM=1 -j"${KRUST_JOBS:-$(($(nproc) + 1))}"
touch .krust-built
echo "build-kernel: done in $(($(date +%s) - start)) s: $KDIR"
