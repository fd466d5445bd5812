#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install everything rdma-krust needs on a Debian 12 machine: the kernel
# build tools, the Rust pieces the kernel wants (rust-src, bindgen-cli),
# QEMU, and the rdma-core userspace used inside the guest.
#
# Checks first and installs only what is missing: dpkg's status of each apt
# package (apt-get update and install run only when one is missing),
# `command -v rustup`, `rustup component list --installed`, `bindgen
# --version`. When everything is there it installs nothing and prints
# nothing.
#
# KRUST_NO_INSTALL=1: install nothing (no apt-get, rustup or cargo
# install). If something is missing, one line on stderr names it and the
# command that installs it, and the exit status is 2. rustup itself is never
# installed here (the README's one prerequisite): without it, the same line
# and exit 2 whatever KRUST_NO_INSTALL says.
set -euo pipefail

PKGS=(
	build-essential bc flex bison cpio kmod libelf-dev libssl-dev xz-utils
	clang lld llvm libclang-dev pkg-config gcc-multilib
	linux-source-6.12
	qemu-system-x86
	iproute2 rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest linux-perf
	libibverbs-dev librdmacm-dev
	dkms
	fonts-dejavu-core python3
	git python3-ply python3-git
	python3-sphinx
)
# The version the project builds and tests with; any bindgen the kernel
# accepts (0.65.1 or later) works, so one already installed is kept.
BINDGEN_VERSION=0.73.2

# KRUST_NO_INSTALL: unset, empty or 0 installs; anything else does not.
no_install=0
[ "${KRUST_NO_INSTALL:-0}" = 0 ] || no_install=1

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export PATH="$HOME/.cargo/bin:$PATH"

# What is missing and not installed here: what it is, and the command that
# installs it. missing_exit WHY prints them in one line and exits 2.
what=()
how=()
not_installed() { # WHAT COMMAND
	what+=("$1")
	how+=("$2")
}
missing_exit() { # WHY
	local w h
	w=$(printf '; %s' "${what[@]}")
	h=$(printf ' && %s' "${how[@]}")
	echo "setup: missing ($1): ${w#; }. Install with: ${h# && }" >&2
	exit 2
}

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$no_install" = 1 ]; then
		not_installed "apt packages ${missing[*]}" "${SUDO:+$SUDO }apt-get install ${missing[*]}"
	else
		echo "setup: installing ${missing[*]}"
		$SUDO apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
fi

# Debian 12 packages no rustup; it is the one prerequisite (README). The
# components and bindgen cannot be checked without it.
if ! command -v rustup >/dev/null; then
	not_installed "rustup (https://rustup.rs)" "curl --proto '=https' -sSf https://sh.rustup.rs | sh"
	if [ "$no_install" = 1 ]; then
		missing_exit "KRUST_NO_INSTALL=$KRUST_NO_INSTALL, nothing installed"
	fi
	missing_exit "this script does not install rustup"
fi

# rust-src for the kernel's Rust build; rustfmt and clippy for make test's
# lints (a "minimal" rustup profile has neither).
installed=$(rustup component list --installed 2>/dev/null || true)
components=()
for c in rust-src rustfmt clippy; do
	grep -q "^$c" <<<"$installed" || components+=("$c")
done
if [ ${#components[@]} -gt 0 ]; then
	if [ "$no_install" = 1 ]; then
		not_installed "rustup components ${components[*]}" "rustup component add ${components[*]}"
	else
		echo "setup: rustup component add ${components[*]}"
		rustup component add "${components[@]}"
	fi
fi

# That it runs, not only that its name is on PATH (--force: a bindgen-cli
# that cargo has installed but does not run is replaced).
if ! bindgen --version >/dev/null 2>&1; then
	if [ "$no_install" = 1 ]; then
		not_installed "bindgen" "cargo install --locked bindgen-cli --version $BINDGEN_VERSION"
	else
		echo "setup: cargo install bindgen-cli $BINDGEN_VERSION (a few minutes)"
		cargo install --locked --force bindgen-cli --version "$BINDGEN_VERSION"
	fi
fi

[ ${#what[@]} = 0 ] || missing_exit "KRUST_NO_INSTALL=$KRUST_NO_INSTALL, nothing installed"
