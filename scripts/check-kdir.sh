#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Can rdma_krust.ko be built against KDIR? The Makefile asks before it hands
# KDIR to Kbuild, whose own errors for an unfit kernel come late and say
# little (a missing crate, a bindgen failure on GCC's flags).
#
#   scripts/check-kdir.sh KDIR
#
# Fit: prints nothing, exits 0. Unfit: prints one line saying why (on
# stdout, for the Makefile's $(shell)), exits 2.
set -euo pipefail

kdir=${1:?usage: check-kdir.sh KDIR}
see="see Documentation/real-hosts.rst"

unfit() {
	echo "KDIR=$kdir: $*; $see"
	exit 2
}

[[ -d $kdir ]] || unfit "no such directory"
[[ -f $kdir/.config ]] || unfit "not a configured kernel tree (no .config)"
config=$kdir/.config
grep -q '^CONFIG_RUST=y$' "$config" ||
	unfit "CONFIG_RUST is not set in its .config, and the module is written in Rust"
if ! grep -q '^CONFIG_CC_IS_CLANG=y$' "$config"; then
	cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*\)"$/\1/p' "$config")
	unfit "the kernel was not built with clang (CONFIG_CC_IS_CLANG is not set; it was built with ${cc:-an unknown compiler}); build it with LLVM=1"
fi
[[ -f $kdir/rust/libkernel.rmeta ]] ||
	unfit "no rust/libkernel.rmeta: the kernel is configured but not built, or this is a headers tree without the kernel's Rust crates"
exit 0
