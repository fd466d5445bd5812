#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything rdma-krust needs on a Debian 12 machine: the kernel
# build tools, the Rust pieces the kernel wants (rust-src, bindgen-cli),
# QEMU, and the rdma-core userspace used inside the guest.
#
# Idempotent: every step is skipped when its result is already there.
set -euo pipefail

PKGS=(
	build-essential bc flex bison cpio kmod libelf-dev libssl-dev xz-utils
	clang lld llvm libclang-dev pkg-config gcc-multilib
	linux-source-6.12
	qemu-system-x86
	iproute2 rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest linux-perf
	libibverbs-dev librdmacm-dev
	fonts-dejavu-core python3
)

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

export PATH="$HOME/.cargo/bin:$PATH"
# Debian 12 packages no rustup; it is the one prerequisite (README).
command -v rustup >/dev/null || {
	echo "setup: rustup not found; install it first: https://rustup.rs" \
		"(curl --proto '=https' -sSf https://sh.rustup.rs | sh)" >&2
	exit 1
}

# rust-src for the kernel's Rust build; rustfmt and clippy for make test's
# lints (a "minimal" rustup profile has neither).
installed=$(rustup component list --installed 2>/dev/null)
for c in rust-src rustfmt clippy; do
	if ! grep -q "^$c" <<<"$installed"; then
		echo "setup: rustup component add $c"
		rustup component add "$c"
	fi
done

# The version the project builds and tests with; any bindgen the kernel
# accepts (0.65.1 or later) works, so one already installed is kept.
BINDGEN_VERSION=0.73.2
if ! command -v bindgen >/dev/null; then
	echo "setup: cargo install bindgen-cli $BINDGEN_VERSION (a few minutes)"
	cargo install --locked bindgen-cli --version "$BINDGEN_VERSION"
fi
